"""Writing Arrow batches to Kafka in a Spark task, every delivery report checked.

Two input layouts: OpenCDC rows (encoded with the destination's format) and message rows
(``value``, optional ``key``, ``headers``, ``topic``, ``partition``: written as they are, as
Spark's own Kafka sink does). A task returns only when librdkafka has reported on every
message it was given: delivered, or failed (the task fails, naming topic and reason).
``message.timeout.ms`` is bounded by ``deliveryTimeoutMs``; librdkafka's default of 300 s
would hang a task on a stopped broker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka import Message as KafkaMessage

from cdc_connectors.connectors.kafka_settings import (
    CONNECTOR,
    DestinationSettings,
    kafka_config,
)
from cdc_connectors.connectors.messages import DLQ_ERROR, SettingError, encode_rows, open_format
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.opencdc import keys

OPENCDC = "opencdc"
MESSAGES = "messages"
_OPENCDC_COLUMNS = frozenset({"position", "operation", "metadata", "key", "payload"})
NODE_ID = CONNECTOR

# `{collection}` and Conduit's `{{ index .Metadata "opencdc.collection" }}`.
_PLACEHOLDER = re.compile(r'\{\{\s*index\s+\.Metadata\s+"([^"]+)"\s*\}\}|\{(collection)\}')


class TopicTemplate:
    """A topic name, or a template over each record's metadata.

    ``{collection}`` is the record's ``opencdc.collection``; Conduit's
    ``{{ index .Metadata "KEY" }}`` is any metadata value. Nothing else may use braces.
    """

    def __init__(self, text: str):
        self.text = text
        self.parts: list[tuple[str, str | None]] = []
        position = 0
        for found in _PLACEHOLDER.finditer(text):
            self.parts.append((text[position : found.start()], None))
            metadata_key = found.group(1) or keys.COLLECTION
            self.parts.append(("", metadata_key))
            position = found.end()
        self.parts.append((text[position:], None))
        literal = "".join(t for t, k in self.parts if k is None)
        if "{" in literal or "}" in literal:
            raise SettingError(
                f"{CONNECTOR} setting 'topic': {text!r} is not a topic name or template "
                '(use {collection} or {{ index .Metadata "KEY" }})'
            )
        self.fixed = all(k is None for _, k in self.parts)

    def render(self, metadata: Mapping[str, str], position: str) -> str:
        out: list[str] = []
        for literal, metadata_key in self.parts:
            if metadata_key is None:
                out.append(literal)
                continue
            value = metadata.get(metadata_key)
            if not value:
                raise ValueError(
                    f"{CONNECTOR}: the record at position {position!r} has no metadata "
                    f"{metadata_key!r}, which the topic template {self.text!r} needs"
                )
            out.append(value)
        return "".join(out)


def layout(names: Iterable[str]) -> str:
    """Which input layout columns ``names`` are; :class:`SettingError` for neither."""
    columns = set(names)
    if columns >= _OPENCDC_COLUMNS:
        return OPENCDC
    if "value" in columns:
        return MESSAGES
    raise SettingError(
        f"{CONNECTOR} destination: input columns {sorted(columns)} are neither OpenCDC "
        "(position, operation, metadata, key, payload) nor messages (value, key, headers, topic)"
    )


@dataclass
class Deliveries:
    """librdkafka's delivery reports for one task."""

    delivered: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)

    def __call__(self, error: KafkaError | None, message: KafkaMessage) -> None:
        if error is None:
            self.delivered += 1
        else:
            self.failed.append((str(message.topic()), f"{error.str()} ({error.name()})"))

    def check(self) -> None:
        if self.failed:
            topic, reason = self.failed[0]
            raise RuntimeError(
                f"{CONNECTOR}: {len(self.failed)} message(s) not delivered "
                f"({self.delivered} delivered); first to topic {topic!r}: {reason}"
            )


def producer_config(settings: DestinationSettings) -> dict[str, Any]:
    config: dict[str, Any] = {"linger.ms": 20}
    config.update(kafka_config(settings.servers, settings.kafka))
    config["enable.idempotence"] = True
    config["message.timeout.ms"] = settings.delivery_timeout_ms
    return config


def _text(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _message_rows(
    batch: pa.RecordBatch, template: TopicTemplate | None
) -> Iterator[tuple[str, int | None, Message]]:
    names = batch.schema.names
    rows = batch.num_rows

    def column(name: str) -> list[Any]:
        return batch.column(name).to_pylist() if name in names else [None] * rows

    values, found_keys, headers = column("value"), column("key"), column("headers")
    topics, partitions = column("topic"), column("partition")
    for index in range(rows):
        topic = template.text if template is not None else topics[index]
        if not topic:
            raise ValueError(
                f"{CONNECTOR}: row {index} of a batch has no topic (set the setting 'topic' "
                "or a 'topic' column)"
            )
        pairs = [(h["key"], _text(h["value"])) for h in headers[index] or []]
        message = Message(_text(values[index]), _text(found_keys[index]), pairs)
        yield topic, partitions[index], message


def _opencdc_rows(
    batch: pa.RecordBatch, settings: DestinationSettings, template: TopicTemplate, fmt: Format
) -> Iterator[tuple[str, int | None, Message]]:
    messages, letters = encode_rows(fmt, batch, node_id=NODE_ID)
    if letters:
        first = letters[0]
        raise ValueError(
            f"{CONNECTOR}: cannot encode the record at position "
            f"{first.position.decode('utf-8', 'backslashreplace')!r} as "
            f"{settings.format_settings['format']}: {first.metadata.get(DLQ_ERROR)} "
            f"({len(letters)} of {batch.num_rows} rows of this batch failed)"
        )
    if template.fixed:
        for message in messages:
            yield template.text, None, message
        return
    metadata = batch.column("metadata").to_pylist()
    positions = batch.column("position").to_pylist()
    for message, pairs, position in zip(messages, metadata, positions, strict=True):
        where = bytes(position).decode("utf-8", "backslashreplace")
        yield template.render(dict(pairs or []), where), None, message


def write_batches(
    settings: DestinationSettings, kind: str, batches: Iterator[pa.RecordBatch]
) -> int:
    """Produce every row of ``batches``; the number delivered, or an error naming what
    failed. Returns only after every delivery report is in."""
    template = TopicTemplate(settings.topic) if settings.topic is not None else None
    fmt: Format | None = None
    if kind == OPENCDC:
        if template is None:
            raise SettingError(f"{CONNECTOR} setting 'topic' is required for OpenCDC rows")
        fmt = open_format(
            settings.format_settings,
            default=settings.format_settings["format"],
            registry=settings.registry,
            connector=CONNECTOR,
        )
    producer = Producer(producer_config(settings))
    reports = Deliveries()
    sent = 0
    for batch in batches:
        if fmt is not None:
            assert template is not None
            rows = _opencdc_rows(batch, settings, template, fmt)
        else:
            rows = _message_rows(batch, template)
        for topic, partition, message in rows:
            _produce(producer, topic, partition, message, reports)
            sent += 1
        producer.poll(0)
        if reports.failed:
            break
    _flush(producer, settings, sent, reports)
    reports.check()
    return reports.delivered


def _produce(
    producer: Producer, topic: str, partition: int | None, message: Message, reports: Deliveries
) -> None:
    extra: dict[str, Any] = {} if partition is None else {"partition": partition}
    while True:
        try:
            producer.produce(
                topic,
                value=message.value,
                key=message.key,
                headers=list(message.headers) or None,
                on_delivery=reports,
                **extra,
            )
            return
        except BufferError:  # the local queue is full: serve delivery reports, then retry
            producer.poll(0.1)
        except KafkaException as exc:  # refused before sending: too large, bad topic name...
            raise RuntimeError(f"{CONNECTOR}: cannot produce to topic {topic!r}: {exc}") from None


def _flush(
    producer: Producer, settings: DestinationSettings, sent: int, reports: Deliveries
) -> None:
    # Every message gets a report within message.timeout.ms; the margin covers the rest.
    left = producer.flush(settings.delivery_timeout_ms / 1000 * 2 + 10)
    if left:
        raise RuntimeError(
            f"{CONNECTOR}: {left} of {sent} message(s) got no delivery report within "
            f"{settings.delivery_timeout_ms * 2 / 1000 + 10:.0f}s (setting deliveryTimeoutMs)"
        )
