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
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka import Message as KafkaMessage

from cdc_connectors.connectors.arrow_bytes import binary_slices
from cdc_connectors.connectors.errors import ConnectorError
from cdc_connectors.connectors.kafka_settings import (
    CONNECTOR,
    DestinationSettings,
    kafka_config,
)
from cdc_connectors.connectors.messages import DLQ_ERROR, SettingError, encode_rows, open_format
from cdc_connectors.formats.base import Format
from cdc_connectors.opencdc import keys
from cdc_connectors.options import FALSE

OPENCDC = "opencdc"
MESSAGES = "messages"
_OPENCDC_COLUMNS = frozenset({"position", "operation", "metadata", "key", "payload"})
NODE_ID = CONNECTOR
#: Delivery reports are served (and a failure noticed) at least every this many messages.
POLL_EVERY = 1000
#: librdkafka's name for requests in flight on a connection, and its alias.
IN_FLIGHT = ("max.in.flight.requests.per.connection", "max.in.flight")
#: librdkafka's names of the producer's compression codec.
COMPRESSION = ("compression.type", "compression.codec")
#: The codec unless a ``kafka.*`` setting names one: Snappy, the default of Conduit's Kafka
#: destination. Batches a third of their size cost the broker a third of the work (a copy
#: of Debezium events on one Tansu broker: 1.8x the messages a second of an uncompressed
#: one), and consumers read the same bytes.
DEFAULT_COMPRESSION = "snappy"
#: librdkafka's ``queue.buffering.max.kbytes`` unless a ``kafka.*`` setting says otherwise.
QUEUE_KBYTES = 16 * 1024
#: How long a task waits, at a time, for room in a full local queue.
ROOM_WAIT_S = 0.005
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


class Deliveries:
    """librdkafka's reports of failed deliveries for one task (the producer reports no
    successes: a message neither queued nor failed was delivered); the first is kept."""

    def __init__(self, timeout_ms: int, servers: str = ""):
        self.timeout_ms = timeout_ms
        self.servers = servers  # named in the error, as the place written to
        self.failed = 0
        self.first: tuple[str, int, KafkaError] | None = None

    def __call__(self, error: KafkaError | None, message: KafkaMessage) -> None:
        if error is None:
            return
        self.failed += 1
        if self.first is None:
            self.first = (str(message.topic()), int(message.partition() or 0), error)

    def check(self, sent: int, unreported: int) -> None:
        """:class:`ConnectorError` for the first failed delivery, if there is one;
        ``unreported``: messages still queued or in flight."""
        if self.first is None:
            return
        topic, partition, error = self.first
        where = f"topic {topic!r} " + (
            f"partition {partition}" if partition >= 0 else "(no partition assigned yet)"
        )
        if self.servers:
            where += f" on {self.servers}"
        why = f"{error.str()} ({error.name()})"
        if error.code() == KafkaError._MSG_TIMED_OUT:
            why += f", not acknowledged within deliveryTimeoutMs ({self.timeout_ms} ms)"
        acknowledged = max(0, sent - unreported - self.failed)
        raise ConnectorError(
            f"{CONNECTOR}: message(s) not delivered to {where}: {why}; the task stopped "
            f"with {acknowledged} of {sent} message(s) acknowledged"
        )


def producer_config(settings: DestinationSettings, reports: Deliveries) -> dict[str, Any]:
    """librdkafka's settings for a task's producer: ``kafka.*`` settings win over the
    defaults here, not over what the guarantees need (messages of a partition in the order
    produced, the delivery timeout, failure reports to ``reports``).

    Batches are compressed with :data:`DEFAULT_COMPRESSION` unless ``kafka.compression.type``
    (or its alias ``compression.codec``) names another codec or ``none``.

    The producer is idempotent unless ``kafka.enable.idempotence`` is ``false`` (a broker
    without idempotent producers, or one where they are slow); then one request is in
    flight at a time, so that a retry cannot put a message before an earlier one."""
    config: dict[str, Any] = {
        "linger.ms": 20,
        # What a task may have queued: bounded memory, and enough to keep a broker busy.
        "queue.buffering.max.kbytes": QUEUE_KBYTES,
    }
    given = kafka_config(settings.servers, settings.kafka)
    if not any(name in COMPRESSION for name in given):
        config[COMPRESSION[0]] = DEFAULT_COMPRESSION
    largest = _integer(given.get("message.max.bytes"))
    if largest is not None and "queue.buffering.max.kbytes" not in given:
        # room for the largest message the producer takes: one larger than the local queue
        # would find the queue full however empty it is
        config["queue.buffering.max.kbytes"] = max(QUEUE_KBYTES, -(-largest // 1024) + 1)
    config.update(given)
    idempotent = str(config.get("enable.idempotence", "true")).strip().lower()
    if idempotent in FALSE:
        config["enable.idempotence"] = False
        for name in IN_FLIGHT:  # librdkafka applies properties in order: one name, last
            config.pop(name, None)
        config[IN_FLIGHT[0]] = 1
    else:
        config["enable.idempotence"] = True
    config["message.timeout.ms"] = settings.delivery_timeout_ms
    config["delivery.report.only.error"] = True
    config["on_delivery"] = reports
    return config


def _integer(text: Any) -> int | None:
    try:
        return int(str(text).strip())
    except ValueError:
        return None


def _text(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


#: What ``produce`` takes as a key or a value: bytes, or a zero-copy Arrow slice.
Payload: TypeAlias = "bytes | pa.Buffer | None"


@dataclass
class Outgoing:
    """Messages to produce, by column: a topic for all (``str``) or one each; a partition
    each or none chosen; headers each or none at all."""

    topics: str | list[str]
    values: list[Payload]
    keys: list[Payload]
    partitions: list[int | None] | None = None
    headers: list[list[tuple[str, bytes | None]] | None] | None = None


def _payloads(batch: pa.RecordBatch, name: str) -> list[Payload]:
    rows = batch.num_rows
    if name not in batch.schema.names:
        return [None] * rows
    column = batch.column(name)
    try:
        return list(binary_slices(column))
    except TypeError:  # neither binary nor text: bytes of each value as Python sees it
        return [_text(value) for value in column.to_pylist()]


def message_rows(batch: pa.RecordBatch, template: TopicTemplate | None) -> Outgoing:
    names = batch.schema.names
    rows = batch.num_rows
    topics: str | list[str]
    if template is not None:
        topics = template.text
    else:
        topics = batch.column("topic").to_pylist() if "topic" in names else [""] * rows
        for index, topic in enumerate(topics):
            if not topic:
                raise ConnectorError(
                    f"{CONNECTOR}: row {index} of a batch has no topic (set the setting "
                    "'topic' or a 'topic' column)"
                )
    out = Outgoing(topics, _payloads(batch, "value"), _payloads(batch, "key"))
    if "partition" in names and batch.column("partition").null_count < rows:
        out.partitions = batch.column("partition").to_pylist()
    if "headers" in names and _any_headers(batch.column("headers")):
        out.headers = [
            [(h["key"], _text(h["value"])) for h in found] if found else None
            for found in batch.column("headers").to_pylist()
        ]
    return out


def _any_headers(column: pa.Array) -> bool:
    """Whether a headers column holds a header at all (not only nulls and empty lists)."""
    if column.null_count == len(column) or not pa.types.is_list(column.type):
        return bool(column.null_count < len(column))
    return bool(pc.sum(pc.list_value_length(column)).as_py() or 0)


def _opencdc_rows(
    batch: pa.RecordBatch, settings: DestinationSettings, template: TopicTemplate, fmt: Format
) -> Outgoing:
    messages, letters = encode_rows(fmt, batch, node_id=NODE_ID)
    if letters:
        first = letters[0]
        raise ConnectorError(
            f"{CONNECTOR}: cannot encode the record at position "
            f"{first.position.decode('utf-8', 'backslashreplace')!r} as "
            f"{settings.format_settings['format']}: {first.metadata.get(DLQ_ERROR)} "
            f"({len(letters)} of {batch.num_rows} rows of this batch failed)"
        )
    topics: str | list[str] = template.text
    if not template.fixed:
        metadata = batch.column("metadata").to_pylist()
        positions = batch.column("position").to_pylist()
        topics = [
            template.render(dict(pairs or []), bytes(position).decode("utf-8", "backslashreplace"))
            for pairs, position in zip(metadata, positions, strict=True)
        ]
    out = Outgoing(topics, [m.value for m in messages], [m.key for m in messages])
    if any(m.headers for m in messages):
        out.headers = [list(m.headers) or None for m in messages]
    return out


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
    out = Output(settings)
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            if fmt is not None:
                assert template is not None
                out.produce(_opencdc_rows(batch, settings, template, fmt))
            else:
                out.produce(message_rows(batch, template))
            out.serve()
        out.finish()
    except BaseException:
        out.abandon()
        raise
    return out.sent - out.reports.failed


class MessageTooLarge(ConnectorError):
    """A message larger than the producer takes (:attr:`reason`: why, without the topic)."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason or message


class Output:
    """One task's producer, its delivery reports and how many messages it was given.

    With ``letters``, a message the producer refuses as larger than it takes is not an
    error of the task but one of :attr:`refused` (its row in the rows given to
    :meth:`produce`, and why), for the pipeline to make a dead letter of; the others go on.
    """

    def __init__(self, settings: DestinationSettings, letters: bool = False):
        self.settings = settings
        self.reports = Deliveries(settings.delivery_timeout_ms, settings.servers)
        self.producer = Producer(producer_config(settings, self.reports))
        self.sent = 0
        self.letters = letters
        self.refused: list[tuple[int, str]] = []

    def serve(self, timeout: float = 0) -> None:
        """Serve delivery reports; :class:`ConnectorError` once a delivery failed."""
        self.producer.poll(timeout)
        self.reports.check(self.sent, len(self.producer))

    def produce(self, rows: Outgoing) -> None:
        """Queue every message of ``rows``, serving reports every :data:`POLL_EVERY`."""
        count = len(rows.values)
        for start in range(0, count, POLL_EVERY):
            end = min(start + POLL_EVERY, count)
            if isinstance(rows.topics, str) and rows.partitions is None and rows.headers is None:
                self._plain(rows.topics, rows.values, rows.keys, start, end)
            else:
                self._each(rows, start, end)
            self.serve()

    def _plain(
        self, topic: str, values: list[Payload], keys: list[Payload], start: int, end: int
    ) -> None:
        """Messages with nothing but a key and a value, to one topic: the common case."""
        produce = self.producer.produce
        for index in range(start, end):
            try:
                produce(topic, values[index], keys[index])
            except BufferError:
                self._when_room(topic, values[index], keys[index])
            except KafkaException as exc:
                self._not_sent(index, self._refused(topic, exc, values[index], keys[index]))
                continue
            self.sent += 1

    def _each(self, rows: Outgoing, start: int, end: int) -> None:
        for index in range(start, end):
            topic = rows.topics if isinstance(rows.topics, str) else rows.topics[index]
            extra: dict[str, Any] = {}
            if rows.partitions is not None and rows.partitions[index] is not None:
                extra["partition"] = rows.partitions[index]
            if rows.headers is not None and rows.headers[index]:
                extra["headers"] = rows.headers[index]
            try:
                self.producer.produce(topic, rows.values[index], rows.keys[index], **extra)
            except BufferError:
                self._when_room(topic, rows.values[index], rows.keys[index], **extra)
            except KafkaException as exc:
                refused = self._refused(topic, exc, rows.values[index], rows.keys[index])
                self._not_sent(index, refused)
                continue
            self.sent += 1

    def _not_sent(self, index: int, refused: ConnectorError) -> None:
        """A message the producer refused: one of :attr:`refused` if it is too large and
        the caller takes such messages as dead letters, else the task's error."""
        if self.letters and isinstance(refused, MessageTooLarge):
            self.refused.append((index, refused.reason))
            return
        raise refused from None

    def _when_room(self, topic: str, value: Payload, key: Payload, **extra: Any) -> None:
        """The local queue is full: serve delivery reports until the message fits (briefly
        each time: successful deliveries make no report that would end a longer wait)."""
        while True:
            self.serve(ROOM_WAIT_S)
            try:
                self.producer.produce(topic, value, key, **extra)
                return
            except BufferError:
                if not len(self.producer):  # an empty queue has no room for it: never will
                    raise ConnectorError(
                        f"{CONNECTOR}: cannot produce to topic {topic!r}: a message of "
                        f"{len(value or b'') + len(key or b'')} bytes of key and value is "
                        "larger than the producer's local queue holds: raise setting "
                        "'kafka.queue.buffering.max.kbytes'"
                    ) from None
                continue
            except KafkaException as exc:
                raise self._refused(topic, exc, value, key) from None

    def _refused(
        self, topic: str, exc: KafkaException, value: Payload = None, key: Payload = None
    ) -> ConnectorError:
        """Refused before sending: too large, a bad topic name..."""
        error = exc.args[0] if exc.args else None
        if isinstance(error, KafkaError) and error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
            size = len(value or b"") + len(key or b"")
            limit = self.settings.kafka.get("message.max.bytes", "1000000")
            reason = (
                f"a message of {size} bytes of key and value (headers and framing count "
                f"too) is larger than the producer takes, {limit} bytes: raise setting "
                "'kafka.message.max.bytes' (the broker's message.max.bytes and the topic's "
                "max.message.bytes limit it too)"
            )
            return MessageTooLarge(
                f"{CONNECTOR}: cannot produce to topic {topic!r}: {reason}", reason
            )
        return ConnectorError(f"{CONNECTOR}: cannot produce to topic {topic!r}: {exc}")

    def finish(self) -> None:
        """Wait for the report of every message; the first failure ends the wait."""
        # Every message gets its report within message.timeout.ms of being queued, and all
        # were queued before now; the margin covers librdkafka's once-a-second scan.
        limit = self.settings.delivery_timeout_ms / 1000 + REPORT_MARGIN_S
        deadline = time.monotonic() + limit
        while self.producer.flush(0.1):
            self.reports.check(self.sent, len(self.producer))
            if time.monotonic() > deadline:
                raise ConnectorError(
                    f"{CONNECTOR}: {len(self.producer)} of {self.sent} message(s) got no "
                    f"delivery report within {limit:.0f}s (setting deliveryTimeoutMs)"
                )
        self.reports.check(self.sent, 0)

    def abandon(self) -> None:
        """The task failed: drop what is queued rather than keep sending it."""
        self.producer.purge()
        self.producer.poll(0)
