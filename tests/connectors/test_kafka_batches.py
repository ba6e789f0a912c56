"""The Kafka connector's own loops on a real Tansu broker, without Spark: reads cut into
batches by bytes keep every offset once and in order; writes through a local queue that
fills up still deliver every message, bytes unchanged."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from cdc_connectors.connectors import kafka_read
from cdc_connectors.connectors.kafka_offsets import KafkaRange
from cdc_connectors.connectors.kafka_read import RAW_ARROW_SCHEMA, read_range
from cdc_connectors.connectors.kafka_settings import destination_settings, source_settings
from cdc_connectors.connectors.kafka_write import MESSAGES, write_batches
from tests.kafka_broker import KafkaBroker


def _topic(broker: KafkaBroker) -> str:
    return broker.create_topic(f"batches-{uuid.uuid4().hex[:10]}", 1)


def _values(count: int) -> list[bytes]:
    return [b"%05d" % n + b"v" * (295 + n % 7) for n in range(count)]


def test_reads_are_cut_by_bytes_and_keep_every_offset_once(
    kafka_broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = _topic(kafka_broker)
    values = _values(50)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 20})
    for n, value in enumerate(values):
        producer.produce(topic, value, b"k%d" % n if n % 5 else None, partition=0)
    assert producer.flush(30) == 0
    monkeypatch.setattr(kafka_read, "BATCH_BYTES", 1000)

    settings = source_settings({"servers": kafka_broker.bootstrap, "topics": topic})
    batches = list(read_range(settings, KafkaRange(topic, 0, 0, 50)))

    assert all(b.schema == RAW_ARROW_SCHEMA for b in batches)
    assert all(sum(map(len, b.column("value").to_pylist())) <= 1000 for b in batches)
    rows = pa.Table.from_batches(batches).to_pylist()
    assert [r["offset"] for r in rows] == list(range(50))
    assert [r["value"] for r in rows] == values
    assert [r["key"] for r in rows] == [b"k%d" % n if n % 5 else None for n in range(50)]
    assert {r["topic"] for r in rows} == {topic} and {r["partition"] for r in rows} == {0}
    assert all(r["headers"] == [] for r in rows)


def test_a_write_through_a_full_local_queue_delivers_every_message(
    kafka_broker: KafkaBroker,
) -> None:
    topic = _topic(kafka_broker)
    values = _values(300)
    settings = destination_settings(
        {
            "servers": kafka_broker.bootstrap,
            "topic": topic,
            "kafka.queue.buffering.max.messages": "5",  # full at once: producing waits for room
        }
    )
    batches = [
        pa.record_batch([pa.array(values[start : start + 100], pa.binary())], names=["value"])
        for start in range(0, 300, 100)
    ]
    assert write_batches(settings, MESSAGES, iter(batches)) == 300

    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "check"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    found: list[bytes] = []
    try:
        while len(found) < 300:
            polled = consumer.consume(300, timeout=10)
            assert polled, f"only {len(found)} of 300 messages"
            found += [m.value() for m in polled if m.error() is None]
    finally:
        consumer.close()
    assert found == values
