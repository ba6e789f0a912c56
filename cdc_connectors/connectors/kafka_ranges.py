"""The plan of a Kafka read as rows (``cdc-kafka-ranges``), not its messages.

Each row is one planned range of the ``cdc-kafka`` source with the same settings:
``topic, partition, start, end`` (offsets ``[start, end)``), batch or streaming. Planning,
offsets, limits and checkpoints are that source's own; a task given a row reads the range
itself (:func:`~cdc_connectors.connectors.kafka_read.read_range`). A pipeline that reads,
converts and writes in one task reads this source
(:mod:`cdc_connectors.pipeline.in_task`): the messages then never pass through Spark's JVM.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from cdc_connectors.connectors.kafka import KafkaBatchReader, KafkaDataSource, KafkaStreamReader
from cdc_connectors.connectors.kafka_offsets import KafkaRange
from cdc_connectors.connectors.kafka_settings import CONNECTOR, SourceSettings
from cdc_connectors.connectors.messages import SettingError

__all__ = ["RANGES_SCHEMA", "KafkaRangesDataSource"]

RANGES_SCHEMA = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("start", LongType(), False),
        StructField("end", LongType(), False),
    ]
)
_ARROW = pa.schema(
    [
        pa.field("topic", pa.string(), False),
        pa.field("partition", pa.int32(), False),
        pa.field("start", pa.int64(), False),
        pa.field("end", pa.int64(), False),
    ]
)


class KafkaRangesDataSource(KafkaDataSource):
    """The ranges a ``cdc-kafka`` read with these settings would read; read only."""

    @classmethod
    def name(cls) -> str:
        return f"{CONNECTOR}-ranges"

    def _source(self) -> SourceSettings:
        settings = super()._source()
        if settings.typed:
            raise SettingError(f"{self.name()}: typed reads are not planned as ranges")
        return settings

    def schema(self) -> StructType:
        super().schema()  # the settings are checked as the Kafka source checks them
        return RANGES_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        planned = super().reader(schema)
        assert isinstance(planned, KafkaBatchReader)
        return RangesBatchReader(planned.settings)

    def _stream_reader(self) -> DataSourceStreamReader:
        planned = super()._stream_reader()
        assert isinstance(planned, KafkaStreamReader)
        return RangesStreamReader(planned.settings)


class RangesBatchReader(KafkaBatchReader):
    """A batch read's ranges, one row per task."""

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _row(partition)


class RangesStreamReader(KafkaStreamReader):
    """A micro-batch's ranges, one row per task."""

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _row(partition)


def _row(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    if isinstance(partition, KafkaRange):  # else Spark's placeholder of an empty plan
        yield pa.RecordBatch.from_pylist(
            [
                {
                    "topic": partition.topic,
                    "partition": partition.partition,
                    "start": partition.start,
                    "end": partition.end,
                }
            ],
            schema=_ARROW,
        )
