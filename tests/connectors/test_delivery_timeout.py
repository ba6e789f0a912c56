"""`cdc-kafka` writes to a broker killed mid-write: the task fails ``deliveryTimeoutMs``
after the kill (plus a margin), with one line naming the topic and the partition.

Each test starts a Tansu process of its own and kills it (SIGKILL) while rows keep coming,
as they do when a source feeds the write: a writer that kept queuing after the broker went
would wait for the timeouts of everything queued since, up to twice the setting.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from cdc_connectors.connectors.errors import ConnectorError
from cdc_connectors.connectors.kafka import KafkaDataSource
from cdc_connectors.connectors.kafka_settings import destination_settings
from cdc_connectors.connectors.kafka_write import MESSAGES, write_batches
from tests.kafka_broker import KafkaBroker

TIMEOUT_MS = 3000
#: A batch of rows every PAUSE_S, for longer than twice the timeout.
ROWS_PER_BATCH, PAUSE_S, BATCHES = 100, 0.05, 200


def test_a_task_fails_within_the_delivery_timeout_of_the_broker_kill() -> None:
    """The task's own code (what a Spark task runs), timed without Spark's overheads."""
    with KafkaBroker() as broker:
        topic = broker.create_topic(f"doomed-{uuid.uuid4().hex[:10]}", 1)
        settings = destination_settings(
            {"servers": broker.bootstrap, "topic": topic, "deliveryTimeoutMs": str(TIMEOUT_MS)}
        )
        killed: list[float] = []

        def rows() -> Iterator[pa.RecordBatch]:
            for index in range(BATCHES):
                if index == 10:
                    broker.stop()
                    killed.append(time.monotonic())
                values = [b"%d-%d" % (index, n) for n in range(ROWS_PER_BATCH)]
                yield pa.record_batch([pa.array(values, pa.binary())], names=["value"])
                time.sleep(PAUSE_S)

        with pytest.raises(ConnectorError) as failed:
            write_batches(settings, MESSAGES, rows())
        took = time.monotonic() - killed[0]

    # librdkafka times a message out on a scan once a second; before, the task waited for
    # the timeouts of what it queued after the first failure: about twice the setting.
    assert took < TIMEOUT_MS / 1000 + 1.5, f"failed {took:.1f}s after the kill"
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith(f"cdc-kafka: message(s) not delivered to topic {topic!r} partition 0")
    assert f"deliveryTimeoutMs ({TIMEOUT_MS} ms)" in message


def _kill_once_written(broker: KafkaBroker, topic: str, killed: list[float]) -> None:
    """Kill ``broker`` as soon as a message of ``topic`` is there: mid-write."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "watch"})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                _, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, 0), timeout=5, cached=False
                )
            except KafkaException:
                high = 0
            if high > 0:
                broker.stop()
                killed.append(time.monotonic())
                return
            time.sleep(0.05)
    finally:
        consumer.close()


def paced(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        time.sleep(PAUSE_S)
        yield batch


@pytest.mark.spark
def test_a_spark_write_fails_in_one_line_naming_topic_and_partition(spark: Any) -> None:
    with KafkaBroker() as broker:
        topic = broker.create_topic(f"doomed-{uuid.uuid4().hex[:10]}", 1)
        df = (
            spark.range(0, BATCHES * ROWS_PER_BATCH, numPartitions=1)
            .selectExpr("cast(id as string) as value")
            .mapInArrow(paced, "value string")
        )
        spark.dataSource.register(KafkaDataSource)
        killed: list[float] = []
        watcher = threading.Thread(target=_kill_once_written, args=(broker, topic, killed))
        previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(ROWS_PER_BATCH))
        watcher.start()
        try:
            with pytest.raises(Exception) as failed:
                (
                    df.write.format("cdc-kafka")
                    .option("servers", broker.bootstrap)
                    .option("topic", topic)
                    .option("deliveryTimeoutMs", str(TIMEOUT_MS))
                    .mode("append")
                    .save()
                )
            took = time.monotonic() - killed[0]
        finally:
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)
            watcher.join()

    # Through Spark the bound is loose: Spark reports a Python writer's failure only once
    # the task's input is read to its end (here about 8 s after the kill, the paced rows
    # left; the README says so), and its own share (the failure reaching the driver, the
    # job's abort) is seconds more on a loaded machine. The test above times the task.
    assert took < TIMEOUT_MS / 1000 + 30, f"failed {took:.1f}s after the kill"
    text = str(failed.value)
    # The worker's traceback is one frame of ours, then the reason on one line.
    lines = text.splitlines()
    reason = lines[-1]
    assert reason.startswith(
        "cdc_connectors.connectors.errors.ConnectorError: cdc-kafka: message(s) not delivered "
        f"to topic {topic!r} partition 0 on {broker.bootstrap}: "
    ), text
    assert f"deliveryTimeoutMs ({TIMEOUT_MS} ms)" in reason
    assert sum(line.startswith("  File ") for line in lines) == 1, text
