"""What a PySpark user reads when a `cdc-kafka` query fails in a task: Spark's header line,
one frame of ours and the reason on one line that names the connector, what and where; and
what the driver can check fails before any task runs.

Spark's own share stays: the exception's first line (``An exception was thrown from the
Python worker:``), and the executor's and the scheduler's log lines of the failed task.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pyspark.sql.types import BinaryType, StructField, StructType

from cdc_connectors.connectors.kafka import KafkaDataSource
from cdc_connectors.connectors.messages import SettingError
from cdc_connectors.opencdc import Operation, Record
from cdc_connectors.spark import records_dataframe
from tests.connectors.test_kafka_source import debezium, produce
from tests.kafka_broker import KafkaBroker

pytestmark = pytest.mark.spark

HEADER = "An exception was thrown from the Python worker:"
OURS = "cdc_connectors.connectors.errors.ConnectorError: "
HIDE_TRACEBACK = "spark.sql.execution.pyspark.udf.hideTraceback.enabled"


def shape(error: BaseException) -> tuple[str, int, str]:
    """The exception's first line, how many frames its traceback shows, its last line."""
    lines = str(error).splitlines()
    return lines[0], sum(line.startswith("  File ") for line in lines), lines[-1]


def test_a_failed_write_shows_one_frame_and_one_line(spark: Any, kafka_broker: KafkaBroker) -> None:
    spark.dataSource.register(KafkaDataSource)
    record = Record.new(Operation.CREATE, position=b"in/0/7", after={"id": 1})  # no collection
    df = records_dataframe(spark, [record])

    with pytest.raises(Exception) as failed:
        df.write.format("cdc-kafka").option("servers", kafka_broker.bootstrap).option(
            "topic", "cdc.{collection}"
        ).mode("append").save()

    first, frames, last = shape(failed.value)
    assert first == HEADER
    assert frames == 1, str(failed.value)
    assert last == (
        f"{OURS}cdc-kafka: the record at position 'in/0/7' has no metadata "
        "'opencdc.collection', which the topic template 'cdc.{collection}' needs"
    )


def test_a_failed_read_shows_one_frame_and_one_line(spark: Any, kafka_broker: KafkaBroker) -> None:
    topic = kafka_broker.create_topic(f"in-{uuid.uuid4().hex[:10]}", 1)
    produce(kafka_broker, topic, [(0, None, debezium(1)), (0, None, b"{broken")])
    spark.dataSource.register(KafkaDataSource)
    df = (
        spark.read.format("cdc-kafka")
        .option("servers", kafka_broker.bootstrap)
        .option("topics", topic)
        .option("format", "debezium-json")
        .option("failFast", "true")
        .load()
    )

    with pytest.raises(Exception) as failed:
        df.collect()

    first, frames, last = shape(failed.value)
    assert first == HEADER
    assert frames == 1, str(failed.value)
    assert last.startswith(f"cdc_connectors.connectors.messages.FailFastError: {topic}/0/1: ")


def test_with_spark_hiding_tracebacks_the_reason_is_the_second_and_last_line(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    spark.dataSource.register(KafkaDataSource)
    record = Record.new(Operation.CREATE, position=b"in/0/7", after={"id": 1})
    df = records_dataframe(spark, [record])
    spark.conf.set(HIDE_TRACEBACK, "true")
    try:
        with pytest.raises(Exception) as failed:
            df.write.format("cdc-kafka").option("servers", kafka_broker.bootstrap).option(
                "topic", "cdc.{collection}"
            ).mode("append").save()
    finally:
        spark.conf.unset(HIDE_TRACEBACK)

    lines = str(failed.value).splitlines()
    assert lines[0] == HEADER
    assert len(lines) == 2 and lines[1].startswith(f"{OURS}cdc-kafka: the record at"), lines


def test_message_rows_without_a_topic_fail_on_the_driver() -> None:
    schema = StructType([StructField("value", BinaryType())])
    with pytest.raises(SettingError, match="'topic' is required: the rows have no 'topic' column"):
        KafkaDataSource({"servers": "h:1"}).writer(schema, False)
    with_topic = StructType([*schema.fields, StructField("topic", BinaryType())])
    KafkaDataSource({"servers": "h:1"}).writer(with_topic, False)


def test_message_rows_without_a_topic_fail_before_any_task_runs(spark: Any) -> None:
    spark.dataSource.register(KafkaDataSource)
    df = spark.createDataFrame([(b"v",)], "value binary")

    with pytest.raises(Exception) as failed:
        df.write.format("cdc-kafka").option("servers", "127.0.0.1:9").mode("append").save()

    text = str(failed.value)
    assert text.startswith("[PYTHON_DATA_SOURCE_ERROR]"), text
    assert "SettingError: cdc-kafka setting 'topic' is required" in text
    assert sum(line.startswith("  File ") for line in text.splitlines()) == 1, text


def test_a_setting_refused_when_a_read_is_planned_shows_one_frame(spark: Any) -> None:
    spark.dataSource.register(KafkaDataSource)
    reader = spark.read.format("cdc-kafka").option("servers", "127.0.0.1:9")
    with pytest.raises(Exception) as failed:
        reader.option("topics", "t").option("startingOffsets", "{bad").load()

    text = str(failed.value)
    assert "SettingError: cdc-kafka setting 'startingOffsets' must be" in text
    assert sum(line.startswith("  File ") for line in text.splitlines()) == 1, text
