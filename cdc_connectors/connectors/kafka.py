"""Kafka as a Spark data source (``cdc-kafka``): read and write change streams, batch or
streaming, over confluent-kafka (librdkafka).

```python
spark.dataSource.register(KafkaDataSource)
df = (spark.read.format("cdc-kafka")
      .option("servers", "127.0.0.1:9092").option("topics", "orders-cdc")
      .option("format", "debezium-json").load())
(df.write.format("cdc-kafka").option("servers", "127.0.0.1:9092")
   .option("topic", "cdc.{collection}").mode("append").save())
```

Source settings (names are case-insensitive):

| setting | default | meaning |
|---|---|---|
| ``servers`` | required | bootstrap servers, ``host:port[,host:port]`` |
| ``topics`` | | topics to read, comma-separated (this or ``topicPattern``) |
| ``topicPattern`` | | regex matching whole topic names (``__*`` topics left out) |
| ``format`` | ``raw`` | a ``cdc_connectors.formats`` name, or ``raw`` (1) |
| ``format.<option>`` | | option ``<option>`` of the format |
| ``registry`` | | schema registry URL, for formats that use one |
| ``failFast`` | ``false`` | a bad message fails the query instead of becoming a dead letter |
| ``typed`` | ``false`` | Debezium JSON with schema blocks as typed columns (7) |
| ``collection`` | | typed: the collection read (``opencdc.collection``); others are left out |
| ``startingOffsets`` | (2) | ``earliest``, ``latest`` or JSON ``{"t": {"0": 5, "1": -2}}`` (3) |
| ``endingOffsets`` | ``latest`` | batch only: ``latest`` or JSON as above (3) |
| ``maxRecordsPerPartition`` | none | split a partition's range into tasks of this many (8) |
| ``minPartitions`` | none | at least about this many read tasks: large ranges split (8) |
| ``maxOffsetsPerTrigger`` | none | streaming: at most this many offsets per micro-batch (4) |
| ``pollTimeoutMs`` | ``120000`` | a read task fails when nothing arrives for this long |
| ``requestTimeoutMs`` | ``30000`` | how long planning waits for the cluster (topics, offsets) |
| ``kafka.<property>`` | | librdkafka property ``<property>`` as is (SASL, TLS, ...) |

1. With a format, rows are OpenCDC records (the layout of
   :data:`~cdc_connectors.spark.schema.OPENCDC_SCHEMA`), a message the format cannot read
   being a dead-letter row (its bytes, the reason, position ``topic/partition/offset``).
   ``raw`` gives Spark's own Kafka layout, bytes unchanged: ``key binary, value binary,
   topic string, partition int, offset bigint, timestamp timestamp, timestampType int,
   headers array<struct<key: string, value: binary>>`` (an empty array for a message
   without headers).
2. ``earliest`` in a batch read; ``latest`` for a new streaming query (a restart continues
   from its checkpoint).
3. ``-2`` is earliest, ``-1`` latest, as in Spark's Kafka source. A partition the JSON
   leaves out starts at earliest and ends at latest. ``endingOffsets`` cannot be earliest.
4. Shared among partitions in proportion to what each has waiting; honoured by
   ``Trigger.AvailableNow`` too.
7. A typed read is of one collection: ``collection`` names it, or the first messages of
   each partition name only one (several are refused, listed). The schema block of its
   first usable message gives the columns
   (:mod:`cdc_connectors.spark.debezium_typed`): ``position, operation, metadata, key``,
   ``before`` and ``after`` as structs of Spark types (a Debezium decimal is ``decimal(p,
   s)``, a MicroTimestamp a ``timestamp``), and ``dead_letter``, the original value of a
   dead-letter row (null for the others). Messages of other schema versions are read into
   the same columns (Avro schema resolution) or are dead letters.
8. Without them, one task reads a topic-partition's whole range, so that a destination gets
   each key's changes in their order. Split, the parts are read (and written) at once: more
   cores for one partition, but a key's changes in two parts may be written out of order.
   ``minPartitions`` splits as Spark's Kafka source does: when there are fewer ranges than
   it (after ``maxRecordsPerPartition``), a range whose share of it rounds to one stays
   whole and the others are split in proportion to their size.

Destination settings:

| setting | default | meaning |
|---|---|---|
| ``servers`` | required | bootstrap servers |
| ``topic`` | | a topic or a template (5) |
| ``format`` | ``opencdc-proto`` | how OpenCDC rows become key, value and headers (6) |
| ``format.<option>`` | | option ``<option>`` of the format |
| ``registry`` | | schema registry URL, for formats that use one |
| ``deliveryTimeoutMs`` | ``30000`` | ``message.timeout.ms``: unacknowledged then: task fails (8) |
| ``kafka.<property>`` | | librdkafka property as is (9) |

5. A template fills in each record's metadata: ``cdc.{collection}`` takes
   ``opencdc.collection``, and Conduit's ``{{ index .Metadata "KEY" }}`` any key; a record
   without that value fails the task. Message rows take a ``topic`` column instead, unless
   the setting names one topic (which then wins, as in Spark's Kafka sink).
6. A row the format cannot encode fails the task, naming the row's position. Dead-letter
   rows (operation ``dead-letter``) are refused: filter them out, or write
   :func:`cdc_connectors.spark.deadletters.dead_letters` to a dead-letter output.
8. The first failed delivery stops the task: nothing more is queued, and the task fails
   ``deliveryTimeoutMs`` after a broker is lost (plus librdkafka's once-a-second timeout
   scan), naming the topic and the partition.
9. The producer is idempotent unless ``kafka.enable.idempotence`` is ``false`` (for a
   broker without idempotent producers, or one where they are slow: Tansu writes a third
   as fast with them); then it sends one request at a time, so that a retry cannot reorder
   the messages of a partition.

Input rows are OpenCDC (``position, operation, metadata, key, payload``), or messages: a
``value`` column (binary or string) with optional ``key``, ``headers``
(``array<struct<key: string, value: binary>>``), ``topic`` and ``partition``, written as
they are, as Spark's Kafka sink does.

Errors. What a task raises on purpose is a
:class:`~cdc_connectors.connectors.errors.ConnectorError` whose message is one line naming
the connector, what failed and where, raised again from ``read``/``write`` with no frames of
its own: PySpark shows one frame and that line. What the driver can check (settings, the
format, the rows' columns against ``topic``) fails when the query is planned, before any
task runs.

Guarantees. Reads use assigned partitions and explicit offsets (no consumer group); a
streaming checkpoint holds ``{"topic": {"partition": offset}}`` and a restart continues
there; partitions added to a topic are read from their earliest offset. Writes use the
idempotent producer (9) and every task waits for all its delivery reports, so a task that
returns wrote everything. After a kill and restart, Spark replays the last micro-batch:
its records may then be written twice (as with Spark's own Kafka sink), never lost.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from cdc_connectors.connectors import kafka_offsets, task_heap
from cdc_connectors.connectors.errors import ConnectorError, bare, guarded
from cdc_connectors.connectors.kafka_offsets import Broker, KafkaRange, Offsets
from cdc_connectors.connectors.kafka_read import RAW_SCHEMA, read_range
from cdc_connectors.connectors.kafka_settings import (
    CONNECTOR,
    DestinationSettings,
    SourceSettings,
    destination_settings,
    source_settings,
)
from cdc_connectors.connectors.kafka_write import (
    OPENCDC,
    TopicTemplate,
    layout,
    write_batches,
)
from cdc_connectors.connectors.messages import (
    SettingError,
    open_format,
    typed_schema,
)
from cdc_connectors.connectors.refused import stream_reader
from cdc_connectors.connectors.typed_read import (
    SAMPLES_PER_SOURCE,
    bounded_samples,
    typed_read_decoder,
)
from cdc_connectors.formats.base import Message
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder
from cdc_connectors.spark.schema import OPENCDC_SCHEMA

__all__ = ["KafkaDataSource"]

#: What the driver raises on purpose: raised again with no frames of their own (as tasks do).
_REFUSALS = (SettingError, ConnectorError)


class KafkaDataSource(DataSource):
    """Kafka topics as OpenCDC rows (or raw messages), batch and streaming; a Kafka sink."""

    @classmethod
    def name(cls) -> str:
        return CONNECTOR

    def _source(self) -> SourceSettings:
        settings = source_settings(self.options)
        if not settings.raw:  # an unknown format or option fails here, on the driver
            open_format(
                settings.format_settings,
                default=settings.format,
                registry=settings.registry,
                connector=CONNECTOR,
            )
        return settings

    def schema(self) -> StructType:
        try:
            settings = self._source()
            if settings.typed:
                return typed_schema(self._typed(settings))
        except _REFUSALS as refused:  # one frame and one line for the user
            raise bare(refused) from None
        return RAW_SCHEMA if settings.raw else OPENCDC_SCHEMA

    def _typed(self, settings: SourceSettings) -> TypedDebeziumDecoder:
        """The typed decoder, from the schema block of the first message kept (driver)."""
        found: TypedDebeziumDecoder | None = getattr(self, "_decoder", None)
        if found is not None:
            return found
        fmt = open_format(
            settings.format_settings,
            default=settings.format,
            registry=settings.registry,
            connector=CONNECTOR,
        )
        broker = Broker(settings)
        try:
            samples = (
                (
                    Message(m.value(), m.key(), where=f"{m.topic()}/{m.partition()}/{m.offset()}")
                    for m in broker.first_messages(tp, SAMPLES_PER_SOURCE)
                )
                for tp in broker.partitions(require_topics=True)
            )
            found = typed_read_decoder(
                fmt,
                bounded_samples(samples),
                connector=CONNECTOR,
                collection=settings.collection,
            )
        finally:
            broker.close()
        self._decoder = found
        return found

    def reader(self, schema: StructType) -> DataSourceReader:
        try:
            settings = self._source()
            return KafkaBatchReader(settings, self._typed(settings) if settings.typed else None)
        except _REFUSALS as refused:
            raise bare(refused) from None

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return stream_reader(self._stream_reader)

    def _stream_reader(self) -> DataSourceStreamReader:
        settings = self._source()
        if settings.ending is not None:
            raise SettingError(
                f"{CONNECTOR} setting 'endingOffsets' is for batch reads, not streaming"
            )
        return KafkaStreamReader(settings, self._typed(settings) if settings.typed else None)

    def _destination(self, schema: StructType) -> tuple[DestinationSettings, str]:
        settings = destination_settings(self.options)
        kind = layout(schema.fieldNames())
        if settings.topic is not None:
            template = TopicTemplate(settings.topic)
            if kind != OPENCDC and not template.fixed:
                raise SettingError(
                    f"{CONNECTOR} setting 'topic': a template needs OpenCDC rows (their "
                    "metadata); message rows take a 'topic' column"
                )
        elif kind == OPENCDC:
            raise SettingError(f"{CONNECTOR} setting 'topic' is required for OpenCDC rows")
        elif "topic" not in schema.fieldNames():  # else every task would fail on its first row
            raise SettingError(
                f"{CONNECTOR} setting 'topic' is required: the rows have no 'topic' column"
            )
        if kind == OPENCDC:
            open_format(
                settings.format_settings,
                default=settings.format_settings["format"],
                registry=settings.registry,
                connector=CONNECTOR,
            )
        return settings, kind

    def writer(self, schema: StructType, overwrite: bool) -> KafkaWriter:
        try:
            if overwrite:  # (as Spark's own Kafka sink: a topic is appended to)
                raise SettingError(
                    f"{CONNECTOR} writes append to a topic: save mode overwrite is not "
                    "supported, use mode('append')"
                )
            return KafkaWriter(*self._destination(schema))
        except _REFUSALS as refused:
            raise bare(refused) from None

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        try:
            return KafkaStreamWriter(*self._destination(schema))
        except _REFUSALS as refused:
            raise bare(refused) from None


class KafkaBatchReader(DataSourceReader):
    """``startingOffsets`` to ``endingOffsets``, resolved once when the query is planned."""

    def __init__(self, settings: SourceSettings, typed: TypedDebeziumDecoder | None = None):
        if settings.starting == "latest":
            raise SettingError(
                f"{CONNECTOR} setting 'startingOffsets' cannot be latest in a batch read"
            )
        self.settings = settings
        self.typed = typed

    def partitions(self) -> Sequence[InputPartition]:
        settings = self.settings
        broker = Broker(settings)
        try:
            tps = broker.partitions(require_topics=True)
            start = broker.resolve(settings.starting or "earliest", tps, "startingOffsets")
            end = broker.resolve(settings.ending or "latest", tps, "endingOffsets")
            named = broker.latest(tps) if isinstance(settings.ending, dict) else None
            kafka_offsets.check_range(
                start, end, broker.earliest(tps), named, self.settings.fail_on_data_loss
            )
        except _REFUSALS as refused:
            raise bare(refused) from None
        finally:
            broker.close()
        return kafka_offsets.plan(
            start, end, settings.max_records_per_partition, settings.min_partitions
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.settings, partition, self.typed)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over per-partition offsets kept in Spark's checkpoint."""

    def __init__(self, settings: SourceSettings, typed: TypedDebeziumDecoder | None = None):
        self.settings = settings
        self.typed = typed
        self._broker: Broker | None = None
        # Trigger.AvailableNow: what was there when the query started, and no more.
        self._target: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_broker"] = None  # a consumer does not travel to executors
        return state

    @property
    def broker(self) -> Broker:
        if self._broker is None:
            self._broker = Broker(self.settings)
        return self._broker

    def initialOffset(self) -> dict[str, dict[str, int]]:
        tps = self.broker.partitions(require_topics=False)
        start = self.broker.resolve(self.settings.starting or "latest", tps, "startingOffsets")
        if isinstance(self.settings.starting, dict):
            # Explicit offsets past the end (or before the earliest) would silently skip
            # messages: refused as a batch read refuses them.
            kafka_offsets.check_range(start, self.broker.latest(tps), self.broker.earliest(tps))
        return kafka_offsets.to_json(start)

    def _latest(self, start: Offsets) -> tuple[Offsets, Offsets]:
        """The latest offsets to read to, and the start of every partition in them."""
        if self._target is not None:
            latest = dict(self._target)
        else:
            tps = self.broker.partitions(require_topics=False)
            latest = self.broker.latest(tps)
        kafka_offsets.check_not_behind(start, latest, self.settings.fail_on_data_loss)
        # A partition new since the last batch starts at its earliest offset.
        new = [tp for tp in latest if tp not in start]
        base = dict(start)
        base.update(self.broker.earliest(new))
        # (a deleted topic is not listed: it keeps its last offsets; a partition behind its
        # checkpoint, which only failOnDataLoss false lets by, goes on from its end)
        behind = {tp for tp, o in latest.items() if tp in start and o < start[tp]}
        return {
            tp: o if tp in behind else max(base.get(tp, o), o) for tp, o in latest.items()
        }, base

    def latestOffset(
        self, start: dict[str, dict[str, int]], limit: ReadLimit
    ) -> dict[str, dict[str, int]]:
        begin = kafka_offsets.from_json(start)
        latest, base = self._latest(begin)
        if isinstance(limit, ReadMaxRows):
            end = kafka_offsets.limit(base, latest, limit.max_rows)
        else:
            end = latest
        merged = dict(begin)
        merged.update(end)
        return kafka_offsets.to_json(merged)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.settings.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.settings.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self.broker.partitions(require_topics=False)
        self._target = self.broker.latest(tps)

    def partitions(
        self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]
    ) -> Sequence[InputPartition]:
        begin = kafka_offsets.from_json(start)
        finish = kafka_offsets.from_json(end)
        new = [tp for tp in finish if tp not in begin]
        if new:
            begin.update(self.broker.earliest(new))
        if not self.settings.fail_on_data_loss:  # messages deleted since: skipped, said
            for tp, low in self.broker.earliest(list(finish)).items():
                if begin.get(tp, low) < low < finish[tp]:
                    kafka_offsets.data_lost(
                        f"{tp[0]}/{tp[1]}",
                        f"starts at {begin[tp]}, but its earliest offset is {low}",
                    )
                    begin[tp] = low
        settings = self.settings
        return kafka_offsets.plan(
            begin, finish, settings.max_records_per_partition, settings.min_partitions
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.settings, partition, self.typed)

    def commit(self, end: dict[str, dict[str, int]]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, not in a consumer group."""

    def stop(self) -> None:
        if self._broker is not None:
            self._broker.close()
            self._broker = None


def _read(
    settings: SourceSettings, partition: InputPartition, typed: TypedDebeziumDecoder | None
) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, KafkaRange):
        # Nothing to read (an empty topic, a pattern matching none): Spark plans one
        # placeholder partition, which is 0 rows.
        return iter(())
    task_heap.settle()
    return guarded(read_range(settings, partition, typed))


class KafkaCommit(WriterCommitMessage):
    """How many messages one task delivered."""

    def __init__(self, delivered: int):
        self.delivered = delivered


class KafkaWriter(DataSourceArrowWriter):
    """A batch write: each task produces its rows and waits for every delivery report."""

    def __init__(self, settings: DestinationSettings, kind: str):
        self.settings = settings
        self.kind = kind

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommit:
        task_heap.settle()
        try:
            return KafkaCommit(write_batches(self.settings, self.kind, iterator))
        except ConnectorError as failure:  # one frame and one line for the user
            raise bare(failure) from None


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """A streaming write: as the batch one; a micro-batch replayed after a restart is
    written again (at least once)."""

    def __init__(self, settings: DestinationSettings, kind: str):
        self.settings = settings
        self.kind = kind

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommit:
        task_heap.settle()
        try:
            return KafkaCommit(write_batches(self.settings, self.kind, iterator))
        except ConnectorError as failure:  # one frame and one line for the user
            raise bare(failure) from None

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to do: every message was acknowledged before its task returned."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: Kafka has no way to take delivered messages back."""
