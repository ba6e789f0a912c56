"""Reading one planned range of a Kafka partition into Arrow batches, in a Spark task.

A task gets a :class:`~cdc_connectors.connectors.kafka_offsets.KafkaRange` and the source
settings, both unpickled in an executor process: it opens its own consumer, assigns the
partition at the range's start, reads to the range's end, and closes the consumer whatever
happens (Spark never calls a reader's ``stop()`` there).
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from contextlib import closing

import numpy as np
import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka import Message as KafkaMessage
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from cdc_connectors.connectors.arrow_bytes import binary_array
from cdc_connectors.connectors.errors import ConnectorError
from cdc_connectors.connectors.kafka_offsets import TRANSIENT, KafkaRange, consumer_config
from cdc_connectors.connectors.kafka_settings import CONNECTOR, SourceSettings
from cdc_connectors.connectors.messages import decode_messages, decode_typed, open_format
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder

#: Spark's own Kafka source layout, for ``format: raw``.
RAW_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField(
            "headers",
            ArrayType(
                StructType([StructField("key", StringType()), StructField("value", BinaryType())])
            ),
        ),
    ]
)
RAW_ARROW_SCHEMA: pa.Schema = to_arrow_schema(RAW_SCHEMA, timezone="UTC")
_HEADERS = RAW_ARROW_SCHEMA.field("headers").type

#: Messages per Arrow batch handed to Spark, at most; and bytes of values, about: a batch
#: is cut once it holds this many.
BATCH_MESSAGES = 10_000
#: Bytes: a buffer past glibc's largest mmap threshold (32 MiB) is mapped afresh and faulted
#: in page by page for every batch; one under it is reused. Batches of change events with
#: schema blocks (3.5 KB) hold ~4,500 of them, the columns' cost per batch spread over more
#: (a pipeline measured 51,400 msg/s at 8 MiB, 54,500 at 16); at 24 and 30 MiB the workers'
#: peak memory grew with the number of messages read (0.92 and 0.95 of flat).
BATCH_BYTES = 16 * 2**20
#: Messages asked of librdkafka at once (it hands over what its fetch queue holds).
CONSUME_MESSAGES = 10_000
NODE_ID = CONNECTOR
#: Seconds a read waits at a time for the next message to arrive.
WAIT_S = 0.5
#: librdkafka's timestamp types -> Kafka's (and Spark's) ids: none -1, create 0, append 1.
_TIMESTAMP_TYPES = {0: -1, 1: 0, 2: 1}


def decode(fmt: Format, messages: list[Message], fail_fast: bool) -> pa.RecordBatch:
    """The one place messages become OpenCDC Arrow (a columnar decoder plugs in here)."""
    return decode_messages(fmt, messages, node_id=NODE_ID, fail_fast=fail_fast).batch


def raw_batch(messages: list[KafkaMessage], topic: str, partition: int) -> pa.RecordBatch:
    """Messages of one topic-partition in Spark's Kafka layout, bytes unchanged."""
    count = len(messages)
    stamps = [m.timestamp() for m in messages]
    found = [m.headers() for m in messages]
    if any(found):
        headers: pa.Array = pa.array(
            [[{"key": k, "value": v} for k, v in kafka_headers(m)] for m in messages],
            _HEADERS,
        )
    else:
        headers = _no_headers(count)
    columns = [
        binary_array([m.key() for m in messages]),
        binary_array([m.value() for m in messages]),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        pa.array([m.offset() for m in messages], pa.int64()),
        pa.array(
            [ms * 1000 if kind else None for kind, ms in stamps],
            RAW_ARROW_SCHEMA.field("timestamp").type,
        ),
        pa.array([_TIMESTAMP_TYPES.get(kind, -1) for kind, _ in stamps], pa.int32()),
        headers,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=RAW_ARROW_SCHEMA)


def _no_headers(count: int) -> pa.Array:
    """``count`` empty header lists. Not nulls: Spark's Arrow writer, handing rows to a
    Python writer, fills the offsets of a list column from its last non-null row each time
    it measures the batch, which makes a column of null lists cost time quadratic in the
    batch (a third of the JVM's time in a copy of 10,000-message batches)."""
    offsets = pa.array(np.zeros(count + 1, np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array([], _HEADERS.value_type), type=_HEADERS)


def _in_range(
    consumer: Consumer, part: KafkaRange, idle_timeout: float
) -> Iterator[list[KafkaMessage]]:
    """The messages of ``[part.start, part.end)``, each once, in offset order, in the lists
    librdkafka hands over."""
    where = part.where
    position = part.start
    last_seen = time.monotonic()
    while position < part.end:
        fetched = _fetch(consumer, min(CONSUME_MESSAGES, part.end - position))
        kept: list[KafkaMessage] = []
        for message in fetched:
            error = message.error()
            if error is None:
                offset = int(message.offset() or 0)
                if offset >= part.end:  # past a gap (compaction, transaction markers)
                    position = part.end
                    break
                position = offset + 1
                kept.append(message)
            elif error.code() == KafkaError._PARTITION_EOF:
                ends = int(message.offset() or 0)
                if ends < part.end:
                    raise ConnectorError(
                        f"{CONNECTOR}: {where} ends at offset {ends}, before {part.end}, the "
                        "end this read was planned with: messages were deleted or are not "
                        "committed yet"
                    )
                position = part.end
                break
            elif error.code() not in TRANSIENT:  # librdkafka retries transient ones itself
                raise ConnectorError(f"{CONNECTOR}: {where} at offset {position}: {error.str()}")
        if kept:
            last_seen = time.monotonic()
            yield kept
        elif time.monotonic() - last_seen > idle_timeout:
            raise ConnectorError(
                f"{CONNECTOR}: {where}: nothing fetched for {idle_timeout:.0f}s at offset "
                f"{position} (range ends at {part.end}); is the broker reachable? "
                "(setting pollTimeoutMs)"
            )


def _fetch(consumer: Consumer, most: int) -> list[KafkaMessage]:
    """Up to ``most`` messages: those librdkafka holds now, or, when it holds none, the
    first to arrive within :data:`WAIT_S`. (A ``consume`` for more messages than its fetch
    queue can hold would wait out its whole timeout every time.)"""
    fetched = consumer.consume(most, timeout=0)
    if fetched:
        return fetched
    first = consumer.poll(WAIT_S)
    return [] if first is None else [first]


def read_range(
    settings: SourceSettings, part: KafkaRange, typed: TypedDebeziumDecoder | None = None
) -> Iterator[pa.RecordBatch]:
    """The Arrow batches of one range: OpenCDC rows (dead letters included), typed rows with
    ``typed``, or, with ``format: raw``, Spark's Kafka layout."""
    fmt = None
    if not settings.raw:
        fmt = open_format(
            settings.format_settings, default="raw", registry=settings.registry, connector=CONNECTOR
        )
    pending: list[KafkaMessage] = []
    with closing(read_messages(settings, part)) as fetches:  # (its consumer closed now)
        for fetched in fetches:
            pending.extend(fetched)
            while cut := _full_batch(pending):
                yield from _batch(fmt, pending[:cut], part, settings.fail_fast, typed)
                pending = pending[cut:]
    if pending:
        yield from _batch(fmt, pending, part, settings.fail_fast, typed)


def read_messages(
    settings: SourceSettings, part: KafkaRange
) -> Generator[list[KafkaMessage], None, None]:
    """The messages of one range as librdkafka hands them over, in offset order, each
    once: what a copy of the bytes produces again without making columns of them."""
    consumer = Consumer(consumer_config(settings))
    try:
        consumer.assign([TopicPartition(part.topic, part.partition, part.start)])
        yield from _in_range(consumer, part, settings.poll_timeout_ms / 1000)
    finally:
        consumer.close()


def _full_batch(pending: list[KafkaMessage]) -> int:
    """How many of ``pending`` make the next batch (:data:`BATCH_MESSAGES` messages or
    :data:`BATCH_BYTES` of values, whichever comes first); 0 while neither is reached."""
    sizes = np.cumsum(np.fromiter(map(len, pending), np.int64, len(pending)))
    if not len(sizes) or (sizes[-1] < BATCH_BYTES and len(pending) < BATCH_MESSAGES):
        return 0
    fits = int(np.searchsorted(sizes, BATCH_BYTES, side="right"))
    return max(1, min(fits, BATCH_MESSAGES))


def _batch(
    fmt: Format | None,
    messages: list[KafkaMessage],
    part: KafkaRange,
    fail_fast: bool,
    typed: TypedDebeziumDecoder | None = None,
) -> Iterator[pa.RecordBatch]:
    if fmt is None:
        yield raw_batch(messages, part.topic, part.partition)
        return
    found = [
        Message(
            m.value(), m.key(), kafka_headers(m), where=f"{m.topic()}/{m.partition()}/{m.offset()}"
        )
        for m in messages
    ]
    if typed is not None:
        batch = decode_typed(typed, found, node_id=NODE_ID, fail_fast=fail_fast).batch
    else:
        batch = decode(fmt, found, fail_fast)
    if batch.num_rows:
        yield batch


def kafka_headers(message: KafkaMessage) -> list[tuple[str, bytes | None]]:
    """A message's headers as (name, bytes) pairs."""
    found = message.headers() or []
    pairs = list(found.items()) if isinstance(found, dict) else found
    return [(str(k), v.encode() if isinstance(v, str) else v) for k, v in pairs]
