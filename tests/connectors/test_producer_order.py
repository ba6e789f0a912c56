"""The Kafka destination's producer: idempotent and Snappy-compressed by default; without
idempotence (a setting), one request in flight, so that the messages of a partition keep
their order."""

from __future__ import annotations

import pickle
import uuid

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from cdc_connectors.connectors.errors import ConnectorError
from cdc_connectors.connectors.kafka_settings import destination_settings
from cdc_connectors.connectors.kafka_write import (
    MESSAGES,
    Deliveries,
    MessageTooLarge,
    Outgoing,
    Output,
    producer_config,
    write_batches,
)
from tests.kafka_broker import KafkaBroker

IN_FLIGHT = "max.in.flight.requests.per.connection"


def _config(**kafka: str) -> dict[str, object]:
    settings = destination_settings(
        {"servers": "127.0.0.1:9", "topic": "t", **{f"kafka.{k}": v for k, v in kafka.items()}}
    )
    return producer_config(settings, Deliveries(settings.delivery_timeout_ms))


def test_the_producer_is_idempotent_unless_told_otherwise() -> None:
    assert _config()["enable.idempotence"] is True
    assert _config(**{"enable.idempotence": "TRUE"})["enable.idempotence"] is True
    assert IN_FLIGHT not in _config()


def test_without_idempotence_one_request_is_in_flight_whatever_else_is_set() -> None:
    for off in ("false", "False", "0", "no"):
        config = _config(**{"enable.idempotence": off, IN_FLIGHT: "5", "max.in.flight": "5"})
        assert config["enable.idempotence"] is False
        assert config[IN_FLIGHT] == 1
        # librdkafka applies properties in order: the alias must not come after
        assert "max.in.flight" not in config


def test_batches_are_snappy_compressed_unless_a_setting_names_a_codec() -> None:
    assert _config()["compression.type"] == "snappy"  # as Conduit's destination
    assert _config(**{"compression.type": "none"})["compression.type"] == "none"
    assert _config(**{"compression.type": "zstd"})["compression.type"] == "zstd"
    # the alias alone: no default of the other name that librdkafka would apply too
    aliased = _config(**{"compression.codec": "none"})
    assert aliased["compression.codec"] == "none" and "compression.type" not in aliased
    assert "compression.type" not in _config(**{"Compression.Codec": "lz4"})


def test_a_write_without_idempotence_delivers_every_message_in_order(
    kafka_broker: KafkaBroker,
) -> None:
    topic = kafka_broker.create_topic(f"ordered-{uuid.uuid4().hex[:8]}", 1)
    settings = destination_settings(
        {"servers": kafka_broker.bootstrap, "topic": topic, "kafka.enable.idempotence": "false"}
    )
    values = [f"{n:06d}".encode() * 200 for n in range(3000)]
    batches = [
        pa.record_batch({"value": pa.array(values[i : i + 500], pa.binary())})
        for i in range(0, len(values), 500)
    ]
    assert write_batches(settings, MESSAGES, iter(batches)) == len(values)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap,
            "group.id": "order",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    read: list[bytes] = []
    try:
        for _ in range(200):
            read.extend(m.value() for m in consumer.consume(1000, 0.2) if m.error() is None)
            if len(read) >= len(values):
                break
    finally:
        consumer.close()
    assert read == values


def test_a_message_larger_than_the_producer_takes_is_refused_alone_when_letters_are_taken() -> None:
    settings = destination_settings(
        {"servers": "127.0.0.1:9", "topic": "t", "kafka.message.max.bytes": "1000"}
    )
    rows = Outgoing("t", [b"small", b"x" * 5000, b"small too"], [None, b"k", None])
    taking = Output(settings, letters=True)
    try:
        taking.produce(rows)
        assert taking.sent == 2
        ((row, reason),) = taking.refused
        assert row == 1
        assert reason.startswith("a message of 5001 bytes of key and value")
        assert "larger than the producer takes, 1000 bytes" in reason
    finally:
        taking.abandon()
    failing = Output(settings)
    try:
        with pytest.raises(ConnectorError, match="cannot produce to topic 't': a message of 5001"):
            failing.produce(rows)
    finally:
        failing.abandon()


def test_the_local_queue_holds_the_largest_message_the_producer_takes() -> None:
    assert _config()["queue.buffering.max.kbytes"] == 16 * 1024
    larger = _config(**{"message.max.bytes": "50000000"})
    assert larger["queue.buffering.max.kbytes"] * 1024 >= 50_000_000
    chosen = _config(**{"message.max.bytes": "50000000", "queue.buffering.max.kbytes": "2048"})
    assert chosen["queue.buffering.max.kbytes"] == "2048"  # a setting wins


def test_property_names_in_any_case_reach_librdkafka_in_its_case() -> None:
    config = _config(**{"Compression.Type": "gzip", "Linger.MS": "5"})
    assert config["compression.type"] == "gzip" and config["linger.ms"] == "5"
    Producer({k: v for k, v in config.items() if k not in ("logger", "on_delivery")}).flush(0)


def test_a_message_the_local_queue_cannot_hold_fails_in_one_line_instead_of_waiting() -> None:
    settings = destination_settings(
        {"servers": "127.0.0.1:9", "topic": "t", "kafka.queue.buffering.max.kbytes": "1"}
    )
    output = Output(settings, letters=True)
    try:
        with pytest.raises(ConnectorError, match="larger than the producer's local queue holds"):
            output.produce(Outgoing("t", [b"x" * 5000], [None]))
    finally:
        output.abandon()
    assert pickle.loads(pickle.dumps(MessageTooLarge("m", "r"))).reason == "r"
