"""A Kafka ``format: raw`` copy in a pipeline: every message once, bytes unchanged, written
before it is counted; ``run`` reports the pipeline's own time."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from cdc_connectors.pipeline.config import parse
from cdc_connectors.pipeline.runner import Timing, run
from tests.kafka_broker import KafkaBroker

pytestmark = pytest.mark.spark


def test_a_raw_copy_writes_every_message_and_reports_its_time(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    source = kafka_broker.create_topic(f"copy-in-{uuid.uuid4().hex[:8]}", 2)
    target = kafka_broker.create_topic(f"copy-out-{uuid.uuid4().hex[:8]}", 1)
    sent = {(b"k%d" % n, b"v%d" % n) for n in range(120)}
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 20})
    for n, (key, value) in enumerate(sorted(sent)):
        producer.produce(source, value, key, partition=n % 2)
    assert producer.flush(30) == 0
    servers = kafka_broker.bootstrap
    config = parse(f"""
version: "2.2"
pipelines:
  - id: copy
    connectors:
      - id: in
        type: source
        plugin: kafka
        settings: {{servers: "{servers}", topics: {source}, format: raw,
                   startingOffsets: earliest, endingOffsets: latest}}
      - id: out
        type: destination
        plugin: kafka
        settings: {{servers: "{servers}", topic: {target}}}
    dead-letter-queue:
      plugin: files
      settings: {{path: "{tmp_path / "dlq"}"}}
""")
    timings: list[Timing] = []
    lines: list[str] = []
    assert run(config, spark, say=lines.append, timings=timings) == 0, lines

    (timing,) = timings
    assert (timing.pipeline, timing.batches, timing.records) == ("copy", 1, 120)
    assert timing.seconds > 0
    assert "copy: batch 0: 120 in, 120 out, 0 to the dead-letter output" in "\n".join(lines)
    consumer = Consumer({"bootstrap.servers": servers, "group.id": "check"})
    consumer.assign([TopicPartition(target, 0, 0)])
    found: list[tuple[bytes, bytes]] = []
    try:
        while len(found) < 120:
            polled = consumer.consume(120, timeout=10)
            assert polled, f"only {len(found)} of 120 messages"
            found += [(m.key(), m.value()) for m in polled if m.error() is None]
    finally:
        consumer.close()
    assert sorted(found) == sorted(sent)


@pytest.mark.timeout(300)
def test_a_raw_copy_of_an_empty_topic_counts_nothing_and_ends(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    """The copy is counted as it is written: a batch with no rows still ends, counted 0."""
    source = kafka_broker.create_topic(f"copy-empty-{uuid.uuid4().hex[:8]}", 2)
    target = kafka_broker.create_topic(f"copy-none-{uuid.uuid4().hex[:8]}", 1)
    servers = kafka_broker.bootstrap
    config = parse(f"""
version: "2.2"
pipelines:
  - id: nothing
    connectors:
      - id: in
        type: source
        plugin: kafka
        settings: {{servers: "{servers}", topics: {source}, format: raw,
                   startingOffsets: earliest, endingOffsets: latest}}
      - id: out
        type: destination
        plugin: kafka
        settings: {{servers: "{servers}", topic: {target}}}
    dead-letter-queue:
      plugin: files
      settings: {{path: "{tmp_path / "dlq"}"}}
""")
    lines: list[str] = []
    assert run(config, spark, say=lines.append) == 0, lines
    assert "0 records in, 0 out, 0 to the dead-letter output" in "\n".join(lines)
