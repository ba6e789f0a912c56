"""Writing Arrow batches to Kafka in a Spark task, every delivery report checked.

Two input layouts: OpenCDC rows (encoded with the destination's format) and message rows
(``value``, optional ``key``, ``headers``, ``topic``, ``partition``: written as they are, as
Spark's own Kafka sink does). A task returns only when librdkafka has reported on every
message it was given: delivered, or failed. ``message.timeout.ms`` is ``deliveryTimeoutMs``
(librdkafka's default of 300 s would hang a task on a stopped broker), and the first failed
delivery stops the task at once: nothing more is queued, what is queued is dropped, and the
task fails with one line naming the topic, the partition and the reason. A broker lost
mid-write so fails the task ``deliveryTimeoutMs`` after its loss (plus librdkafka's timeout
scan, once a second), not after the timeouts of everything queued since.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka import Message as KafkaMessage

from cdc_connectors.connectors.errors import ConnectorError
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
#: Delivery reports are served (and a failure noticed) at least every this many messages.
POLL_EVERY = 1000
#: How long past ``deliveryTimeoutMs`` a task waits for reports librdkafka owes it.
REPORT_MARGIN_S = 5.0

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
                raise ConnectorError(
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
    """librdkafka's delivery reports for one task; the first failure is kept."""

    timeout_ms: int
    delivered: int = 0
    failed: int = 0
    first: tuple[str, int, KafkaError] | None = None

    def __call__(self, error: KafkaError | None, message: KafkaMessage) -> None:
        if error is None:
            self.delivered += 1
            return
        self.failed += 1
        if self.first is None:
            self.first = (str(message.topic()), int(message.partition() or 0), error)

    def check(self, sent: int) -> None:
        """:class:`ConnectorError` for the first failed delivery, if there is one."""
        if self.first is None:
            return
        topic, partition, error = self.first
        where = f"topic {topic!r} " + (
            f"partition {partition}" if partition >= 0 else "(no partition assigned yet)"
        )
        why = f"{error.str()} ({error.name()})"
        if error.code() == KafkaError._MSG_TIMED_OUT:
            why += f", not acknowledged within deliveryTimeoutMs ({self.timeout_ms} ms)"
        raise ConnectorError(
            f"{CONNECTOR}: message(s) not delivered to {where}: {why}; the task stopped "
            f"with {self.delivered} of {sent} message(s) acknowledged"
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
            raise ConnectorError(
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
        raise ConnectorError(
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
    """Produce every row of ``batches``; the number delivered, or a :class:`ConnectorError`
    naming what failed. Returns only after every delivery report is in; the first failed
    delivery stops it (module docstring)."""
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
    out = _Output(settings)
    try:
        for batch in batches:
            if fmt is not None:
                assert template is not None
                rows = _opencdc_rows(batch, settings, template, fmt)
            else:
                rows = _message_rows(batch, template)
            for topic, partition, message in rows:
                out.produce(topic, partition, message)
            out.serve()
        out.finish()
    except BaseException:
        out.abandon()
        raise
    return out.reports.delivered


class _Output:
    """One task's producer, its delivery reports and how many messages it was given."""

    def __init__(self, settings: DestinationSettings):
        self.settings = settings
        self.producer = Producer(producer_config(settings))
        self.reports = Deliveries(settings.delivery_timeout_ms)
        self.sent = 0

    def serve(self, timeout: float = 0) -> None:
        """Serve delivery reports; :class:`ConnectorError` once a delivery failed."""
        self.producer.poll(timeout)
        self.reports.check(self.sent)

    def produce(self, topic: str, partition: int | None, message: Message) -> None:
        extra: dict[str, Any] = {} if partition is None else {"partition": partition}
        while True:
            try:
                self.producer.produce(
                    topic,
                    value=message.value,
                    key=message.key,
                    headers=list(message.headers) or None,
                    on_delivery=self.reports,
                    **extra,
                )
                break
            except BufferError:  # the local queue is full: serve delivery reports, then retry
                self.serve(0.1)
            except KafkaException as exc:  # refused before sending: too large, bad topic...
                raise ConnectorError(
                    f"{CONNECTOR}: cannot produce to topic {topic!r}: {exc}"
                ) from None
        self.sent += 1
        if self.sent % POLL_EVERY == 0:
            self.serve()

    def finish(self) -> None:
        """Wait for the report of every message; the first failure ends the wait."""
        # Every message gets its report within message.timeout.ms of being queued, and all
        # were queued before now; the margin covers librdkafka's once-a-second scan.
        limit = self.settings.delivery_timeout_ms / 1000 + REPORT_MARGIN_S
        deadline = time.monotonic() + limit
        while self.producer.flush(0.1):
            self.reports.check(self.sent)
            if time.monotonic() > deadline:
                raise ConnectorError(
                    f"{CONNECTOR}: {len(self.producer)} of {self.sent} message(s) got no "
                    f"delivery report within {limit:.0f}s (setting deliveryTimeoutMs)"
                )
        self.reports.check(self.sent)

    def abandon(self) -> None:
        """The task failed: drop what is queued rather than keep sending it."""
        self.producer.purge()
        self.producer.poll(0)
