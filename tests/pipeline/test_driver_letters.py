"""A batch's dead letters, and the messages of a batch staged before it is written, written by
the driver itself when they are few and small (:mod:`cdc_connectors.pipeline.driver_write`),
and by Spark when they are many or large: the same rows, to files and to Kafka, batch and
streaming."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from cdc_connectors.pipeline import runner
from tests.kafka_broker import KafkaBroker
from tests.pipeline.support import files_pipeline, run_here, write_config, write_debezium

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: The driver's bounds (rows, bytes) each way: Spark's for too many rows, or too many bytes.
WAYS = {
    "driver": (runner.DRIVER_ROWS, runner.DRIVER_BYTES),
    "spark": (0, runner.DRIVER_BYTES),
    "spark by bytes": (runner.DRIVER_ROWS, 1_000),
}


def _bounds(monkeypatch: pytest.MonkeyPatch, way: str) -> None:
    rows, size = WAYS[way]
    monkeypatch.setattr(runner, "DRIVER_ROWS", rows)
    monkeypatch.setattr(runner, "DRIVER_BYTES", size)


def _letters(folder: Path) -> tuple[list[dict[str, Any]], int]:
    """Every record of ``folder`` (the time each was read left out), sorted, and how many
    files hold them."""
    files = sorted(p for p in folder.rglob("*.jsonl") if not p.name.startswith((".", "_")))
    found = []
    for path in files:
        for line in path.read_bytes().splitlines():
            letter = json.loads(line)
            letter["metadata"].pop("opencdc.readAt")
            found.append(letter)
    return sorted(found, key=lambda letter: json.dumps(letter, sort_keys=True)), len(files)


@pytest.fixture
def changes(tmp_path: Path) -> Path:
    source = tmp_path / "in"
    source.mkdir()
    write_debezium(source / "a.jsonl", 1)
    write_debezium(source / "b.jsonl", 2)  # letters in two tasks
    return source


@pytest.mark.parametrize(
    ("mode", "spark_way"), [("batch", "spark by bytes"), ("streaming", "spark")]
)
def test_few_rows_are_written_by_the_driver_as_spark_writes_them(
    spark: Any,
    tmp_path: Path,
    changes: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    spark_way: str,
) -> None:
    """A pipeline that may stop on dead letters stages its batch, counts it, then writes
    its dead letters and its messages: both through the driver when they are few and
    small (8 letters and 60 records of more than 1,000 bytes each way), else by Spark."""
    found = {}
    for way in ("driver", spark_way):
        _bounds(monkeypatch, way)
        out, dead = tmp_path / f"{way}-out", tmp_path / f"{way}-dead"
        pipeline = files_pipeline("p", changes, out, dead, mode=mode, **{"max-error-ratio": 0.5})
        (tmp_path / way).mkdir()
        result = run_here(
            spark,
            write_config(tmp_path / way / "p.yaml", pipeline),
            available_now=mode == "streaming",
        )
        assert result.returncode == 1, result.stderr  # dead letters: exit 1
        assert "60 out, 8 to the dead-letter output" in result.stderr, result.stderr
        assert runner.ONE_PASS not in result.stderr
        found[way] = (_letters(out), _letters(dead))
    (records, files), (letters, letter_files) = found["driver"]
    assert (records, letters) == (found[spark_way][0][0], found[spark_way][1][0])
    assert (len(records), len(letters)) == (60, 8)
    # the driver's one file each; a file per Spark task (two hold letters, two records)
    assert (files, letter_files) == (1, 1)
    assert (found[spark_way][0][1], found[spark_way][1][1]) == (2, 2)


def _topic_letters(broker: KafkaBroker, topic: str) -> list[dict[str, Any]]:
    """The dead letters of ``topic`` (OpenCDC JSON, the time each was read left out)."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": uuid.uuid4().hex,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    found = []
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "no end of the dead-letter topic within 10 s"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                break
            letter = json.loads(message.value())
            letter["metadata"].pop("opencdc.readAt")
            found.append(letter)
    finally:
        consumer.close()
    return sorted(found, key=lambda letter: json.dumps(letter, sort_keys=True))


def test_few_letters_reach_a_kafka_dead_letter_topic_from_the_driver_as_from_spark(
    spark: Any,
    tmp_path: Path,
    changes: Path,
    kafka_broker: KafkaBroker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = {}
    for way in ("driver", "spark"):
        _bounds(monkeypatch, way)
        topic = kafka_broker.create_topic(f"dead-{uuid.uuid4().hex[:8]}", 1)
        out = tmp_path / f"{way}-out"
        pipeline = files_pipeline("p", changes, out, tmp_path / "unused", mode="batch")
        pipeline["dead-letter-queue"] = {
            "plugin": "kafka",
            "settings": {"servers": kafka_broker.bootstrap, "topic": topic},
        }
        (tmp_path / way).mkdir()
        result = run_here(spark, write_config(tmp_path / way / "p.yaml", pipeline))
        assert result.returncode == 1, result.stderr
        # the start line and the summary name the topic, as they name a path
        assert f"dead letters -> kafka topic {topic};" in result.stderr, result.stderr
        assert f"8 to the dead-letter output (kafka topic {topic})" in result.stderr
        found[way] = _topic_letters(kafka_broker, topic)
    assert found["driver"] == found["spark"] and len(found["driver"]) == 8
    reasons = [letter["metadata"]["conduit.dlq.nack.error"] for letter in found["driver"]]
    assert all(reasons), reasons
