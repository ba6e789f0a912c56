"""`cdc-kafka` as a destination: a real Tansu broker, a real local[2] Spark session."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from pyspark.sql.types import StructField, StructType

from cdc_connectors.connectors.kafka import KafkaDataSource
from cdc_connectors.connectors.messages import SettingError
from cdc_connectors.opencdc import Operation, Record
from cdc_connectors.opencdc.proto_codec import record_from_proto_bytes
from cdc_connectors.spark import records_dataframe
from cdc_connectors.spark.schema import OPENCDC_SCHEMA
from tests.connectors.test_kafka_source import debezium, produce
from tests.kafka_broker import KafkaBroker

pytestmark = pytest.mark.spark

Read = tuple[bytes | None, bytes | None, list[Any]]


def topic_name(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:10]}"


def consume_all(broker: KafkaBroker, topic: str, partitions: int = 1) -> list[Read]:
    """Every message of ``topic``, read from the start to the end of each partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "test-read-back",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    found: list[Read] = []
    ended: set[int] = set()
    try:
        while len(ended) < partitions:
            message = consumer.poll(10)
            assert message is not None, f"nothing more from {topic}"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                ended.add(int(message.partition() or 0))
                continue
            found.append((message.key(), message.value(), list(message.headers() or [])))
    finally:
        consumer.close()
    return found


def cdc_source(spark: Any, broker: KafkaBroker, messages: list[bytes]) -> tuple[str, Any]:
    """A Debezium JSON topic with ``messages`` and its OpenCDC DataFrame."""
    topic = broker.create_topic(topic_name("in"), 1)
    produce(broker, topic, [(0, None, m) for m in messages])
    spark.dataSource.register(KafkaDataSource)
    df = (
        spark.read.format("cdc-kafka")
        .option("servers", broker.bootstrap)
        .option("topics", topic)
        .option("format", "debezium-json")
        .load()
    )
    return topic, df


def write(df: Any, broker: KafkaBroker, **options: str) -> None:
    df.write.format("cdc-kafka").option("servers", broker.bootstrap).options(**options).mode(
        "append"
    ).save()


def records(found: list[Read]) -> list[Record]:
    out = []
    for _, value, _ in found:
        assert value is not None
        out.append(record_from_proto_bytes(value))
    return out


def after_id(record: Record) -> int:
    after = record.payload.after
    assert isinstance(after, dict), record
    return int(after["id"])


def test_batch_write_encodes_opencdc_rows_as_proto_records(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    source, df = cdc_source(spark, kafka_broker, [debezium(i) for i in range(40)])
    out = kafka_broker.create_topic(topic_name("out"), 1)

    write(df, kafka_broker, topic=out)

    found = consume_all(kafka_broker, out)
    written = records(found)
    assert len(written) == 40
    by_id = {r.payload.after["id"]: r for r in written if isinstance(r.payload.after, dict)}
    assert sorted(by_id) == list(range(40))
    assert by_id[7].payload.after == {"id": 7, "name": "n7"}
    assert by_id[7].operation is Operation.CREATE
    assert by_id[7].position == f"{source}/0/7".encode()
    assert by_id[7].metadata["opencdc.collection"] == "shop.orders"
    assert {key for key, _, _ in found} == {None}  # these Debezium events had no key


@pytest.mark.parametrize(
    "template",
    ["{prefix}.{collection}", '{prefix}.{{ index .Metadata "opencdc.collection" }}'],
)
def test_topic_template_routes_each_record_by_its_collection(
    spark: Any, kafka_broker: KafkaBroker, template: str
) -> None:
    prefix = topic_name("cdc")
    for table in ("orders", "users"):
        kafka_broker.create_topic(f"{prefix}.shop.{table}", 1)
    messages = [debezium(i, "orders" if i % 3 else "users") for i in range(30)]
    _, df = cdc_source(spark, kafka_broker, messages)

    write(df, kafka_broker, topic=template.replace("{prefix}", prefix))

    orders = records(consume_all(kafka_broker, f"{prefix}.shop.orders"))
    users = records(consume_all(kafka_broker, f"{prefix}.shop.users"))
    assert sorted(after_id(r) for r in orders) == [i for i in range(30) if i % 3]
    assert sorted(after_id(r) for r in users) == list(range(0, 30, 3))


def test_record_without_collection_fails_a_template_write_naming_it(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    record = Record.new(Operation.CREATE, position=b"in/0/0", after={"id": 1})  # no collection
    spark.dataSource.register(KafkaDataSource)
    df = records_dataframe(spark, [record])

    with pytest.raises(Exception, match=r"'in/0/0'.*opencdc\.collection"):
        write(df, kafka_broker, topic="cdc.{collection}")


def test_row_the_format_cannot_encode_fails_the_task_naming_its_position(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    table = {"opencdc.collection": "shop.orders"}
    good = Record.new(Operation.CREATE, position=b"in/0/0", after={"id": 1}, metadata=table)
    raw = Record.new(  # raw data and no schema: avro cannot write it
        Operation.UPDATE, position=b"in/0/1", after=b"\x00\x01", metadata=table
    )
    spark.dataSource.register(KafkaDataSource)
    df = records_dataframe(spark, [good, raw])
    out = kafka_broker.create_topic(topic_name("out"), 1)

    with pytest.raises(Exception, match=r"cannot encode the record at position 'in/0/1'"):
        write(df, kafka_broker, topic=out, format="avro", registry="memory://")


def test_message_rows_are_copied_byte_for_byte(spark: Any, kafka_broker: KafkaBroker) -> None:
    source = kafka_broker.create_topic(topic_name("raw"), 2)
    sent = [(i % 2, b"k%d" % i, bytes([i % 256]) * (i % 7)) for i in range(300)]
    produce(kafka_broker, source, sent)
    out = kafka_broker.create_topic(topic_name("copy"), 1)
    spark.dataSource.register(KafkaDataSource)
    df = (
        spark.read.format("cdc-kafka")
        .option("servers", kafka_broker.bootstrap)
        .option("topics", source)
        .load()
        .selectExpr("key", "value", "headers", f"'{out}' as topic")
    )

    write(df, kafka_broker)  # the topic column says where

    found = consume_all(kafka_broker, out)
    assert sorted((k, v) for k, v, _ in found) == sorted((k, v) for _, k, v in sent)
    assert {tuple(h) for _, _, h in found} == {(("h", b"1"),)}


def test_streaming_write_delivers_each_micro_batch(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    source = kafka_broker.create_topic(topic_name("in"), 2)
    produce(kafka_broker, source, [(i % 2, None, debezium(i)) for i in range(50)])
    out = kafka_broker.create_topic(topic_name("out"), 1)
    spark.dataSource.register(KafkaDataSource)
    stream = (
        spark.readStream.format("cdc-kafka")
        .option("servers", kafka_broker.bootstrap)
        .option("topics", source)
        .option("format", "debezium-json")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "20")
        .load()
    )
    query = (
        stream.writeStream.format("cdc-kafka")
        .option("servers", kafka_broker.bootstrap)
        .option("topic", out)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None

    written = records(consume_all(kafka_broker, out))
    assert sorted(after_id(r) for r in written) == list(range(50))
    assert len([p for p in query.recentProgress if p["numInputRows"]]) == 3


def test_stopped_broker_fails_the_write_instead_of_hanging(spark: Any) -> None:
    with KafkaBroker() as broker:
        topic = broker.create_topic(topic_name("doomed"), 1)
        pid = broker.process.pid if broker.process is not None else 0

        def stop_broker_after_first_batch(
            batches: Iterator[pa.RecordBatch],
        ) -> Iterator[pa.RecordBatch]:
            for index, batch in enumerate(batches):
                if index == 1:
                    os.kill(pid, signal.SIGKILL)
                yield batch

        df = (
            spark.range(0, 3000, numPartitions=1)
            .selectExpr("cast(id as string) as value")
            .mapInArrow(stop_broker_after_first_batch, "value string")
        )
        previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
        try:
            with pytest.raises(
                Exception, match=rf"not delivered.*{topic}.*(timed out|_MSG_TIMED_OUT)"
            ):
                write(df, broker, topic=topic, deliveryTimeoutMs="3000")
        finally:
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)


MESSAGES = StructType([StructField("value", OPENCDC_SCHEMA["position"].dataType)])


@pytest.mark.parametrize(
    ("options", "schema", "setting"),
    [
        ({"topic": "t"}, OPENCDC_SCHEMA, "servers"),
        ({"servers": "h:1", "topic": "t", "colour": "red"}, OPENCDC_SCHEMA, "colour"),
        ({"servers": "h:1"}, OPENCDC_SCHEMA, "topic"),
        ({"servers": "h:1", "topic": "a.{table}"}, OPENCDC_SCHEMA, "topic"),
        ({"servers": "h:1", "topic": "cdc.{collection}"}, MESSAGES, "topic"),
        (
            {"servers": "h:1", "topic": "t", "deliveryTimeoutMs": "soon"},
            MESSAGES,
            "deliveryTimeoutMs",
        ),
        ({"servers": "h:1", "topic": "t", "format": "no-such"}, OPENCDC_SCHEMA, "format"),
        (
            {"servers": "h:1", "topic": "t", "kafka.message.timeout.ms": "1"},
            MESSAGES,
            "deliveryTimeoutMs",
        ),
    ],
)
def test_bad_destination_settings_name_the_setting(
    options: dict[str, str], schema: StructType, setting: str
) -> None:
    with pytest.raises(SettingError, match=setting) as raised:
        KafkaDataSource(options).writer(schema, False)
    assert "\n" not in str(raised.value)


def test_a_message_larger_than_the_producer_takes_names_its_size_and_the_setting(
    kafka_broker: KafkaBroker,
) -> None:
    from cdc_connectors.connectors.errors import ConnectorError
    from cdc_connectors.connectors.kafka_settings import destination_settings
    from cdc_connectors.connectors.kafka_write import MESSAGES, write_batches

    topic = kafka_broker.create_topic(f"big-{uuid.uuid4().hex[:8]}", 1)
    settings = destination_settings({"servers": kafka_broker.bootstrap, "topic": topic})
    rows = pa.RecordBatch.from_pydict(
        {"key": [b"k"], "value": [b"x" * 1_200_000]},
        schema=pa.schema([("key", pa.binary()), ("value", pa.binary())]),
    )
    with pytest.raises(ConnectorError) as refused:
        write_batches(settings, MESSAGES, iter([rows]))
    assert str(refused.value) == (
        f"cdc-kafka: cannot produce to topic {topic!r}: a message of 1200001 bytes of key "
        "and value (headers and framing count too) is larger than the producer takes, "
        "1000000 bytes: raise setting 'kafka.message.max.bytes' (the broker's "
        "message.max.bytes and the topic's max.message.bytes limit it too)"
    )
