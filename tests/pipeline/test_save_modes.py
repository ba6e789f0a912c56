"""A batch pipeline run twice, and a batch that fails: its file outputs follow the save mode,
and its records and dead letters are published together or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cdc_connectors.pipeline import parse
from cdc_connectors.pipeline.runner import run
from tests.pipeline.support import files_pipeline, places, write_debezium

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def config(tmp_path: Path, out: Path, mode: str | None = None):  # type: ignore[no-untyped-def]
    pipeline = files_pipeline("p", tmp_path / "in", out, tmp_path / "dead", mode="batch")
    if mode is not None:
        pipeline["connectors"][1]["settings"]["mode"] = mode
    text = yaml.safe_dump({"version": "2.2", "pipelines": [pipeline]}, sort_keys=False)
    return parse(text, "p.yaml")


def go(spark: object, tmp_path: Path, out: Path, mode: str | None = None) -> tuple[int, list[str]]:
    lines: list[str] = []
    status = run(config(tmp_path, out, mode), spark, say=lines.append)  # type: ignore[arg-type]
    return status, lines


def run_alone(spark: object, tmp_path: Path, pipeline: dict) -> tuple[int, list[str]]:  # type: ignore[type-arg]
    """``pipeline`` as the one pipeline of a file, run over what is there: its exit status
    and its lines."""
    document = {"version": "2.2", "pipelines": [pipeline]}
    document["spark"] = {"checkpoint": str(tmp_path / "checkpoints")}
    lines: list[str] = []
    config = parse(yaml.safe_dump(document, sort_keys=False), "p.yaml")
    return run(config, spark, available_now=True, say=lines.append), lines  # type: ignore[arg-type]


@pytest.fixture
def source(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "in").mkdir()
    return write_debezium(tmp_path / "in" / "changes.jsonl", 7, changes=12)


def test_a_second_run_is_refused_by_default_and_writes_nothing(spark, tmp_path, source):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    assert go(spark, tmp_path, out)[0] == 1  # dead letters: exit 1
    assert sorted(places(out)) == sorted(source.written)
    status, lines = go(spark, tmp_path, out)
    assert status == 2
    assert lines == [
        f"Error: p.yaml:14: pipelines[0].connectors[1].settings.mode: the destination path "
        f"{out} is not empty; set mode: overwrite to replace it, or mode: append to add to it"
    ]
    assert sorted(places(out)) == sorted(source.written)
    assert sorted(places(tmp_path / "dead")) == sorted(source.dead)


def test_overwrite_replaces_records_and_dead_letters(spark, tmp_path, source):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    for _ in range(2):
        status, lines = go(spark, tmp_path, out, "overwrite")
        assert status == 1, lines
    assert sorted(places(out)) == sorted(source.written)
    assert sorted(places(tmp_path / "dead")) == sorted(source.dead)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_append_adds_a_second_copy_and_ignore_skips(spark, tmp_path, source):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    go(spark, tmp_path, out, "append")
    go(spark, tmp_path, out, "append")
    assert sorted(places(out)) == sorted(list(source.written) * 2)
    status, lines = go(spark, tmp_path, out, "ignore")
    assert status == 0
    assert lines == [f"p: skipped: the destination path {out} is not empty (mode: ignore)"]


def test_a_failed_destination_publishes_no_dead_letters(spark, tmp_path, source):  # type: ignore[no-untyped-def]
    """Before, the dead letters were committed, the summary said 0 and a rerun wrote them
    again."""
    pipeline = files_pipeline("p", tmp_path / "in", tmp_path / "out", tmp_path / "dead")
    pipeline["mode"] = "batch"
    pipeline["connectors"][1] = {  # a broker that is not there: the destination's write fails
        "id": "out",
        "type": "destination",
        "plugin": "kafka",
        "settings": {"servers": "127.0.0.1:1", "topic": "t", "deliveryTimeoutMs": "2000"},
    }
    text = yaml.safe_dump({"version": "2.2", "pipelines": [pipeline]}, sort_keys=False)
    lines = []
    status = run(parse(text, "p.yaml"), spark, say=lines.append)
    assert status == 1
    assert "0 to the dead-letter output" in lines[-2] and lines[-1].startswith("Error: pipeline p")
    assert places(tmp_path / "dead") == []
    status, lines = go(spark, tmp_path, tmp_path / "out")
    assert status == 1
    assert sorted(places(tmp_path / "dead")) == sorted(source.dead)
    assert sorted(places(tmp_path / "out")) == sorted(source.written)


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("sometimes", "must be one of error, errorifexists, append, overwrite, ignore"),
        ("overwrite", "a streaming pipeline appends each micro-batch once"),
    ],
)
def test_a_mode_that_cannot_apply_is_a_config_error(tmp_path, mode, problem):  # type: ignore[no-untyped-def]
    from cdc_connectors.pipeline import ConfigError

    pipeline = files_pipeline("p", tmp_path / "in", tmp_path / "out", tmp_path / "dead")
    pipeline["connectors"][1]["settings"]["mode"] = mode
    text = yaml.safe_dump({"version": "2.2", "pipelines": [pipeline]}, sort_keys=False)
    with pytest.raises(ConfigError, match=problem):
        parse(text, "p.yaml")


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_a_failed_dead_letter_output_publishes_none_of_what_the_tasks_wrote(
    spark, tmp_path, source, mode
):  # type: ignore[no-untyped-def]
    """Files to files runs in one pass: the tasks write the destination's files before the
    dead letters go out. When that fails, what they staged is dropped (a streaming run
    stages them in the destination directory itself), not published."""
    out = tmp_path / "out"
    pipeline = files_pipeline("p", tmp_path / "in", out, tmp_path / "dead", mode=mode)
    pipeline["dead-letter-queue"] = {  # a broker that is not there: the dead letters fail
        "plugin": "kafka",
        "settings": {"servers": "127.0.0.1:1", "topic": "dead", "deliveryTimeoutMs": "2000"},
    }
    status, lines = run_alone(spark, tmp_path, pipeline)
    assert status == 1
    assert "read and written in one pass per task" in lines[0], lines
    assert lines[-1].startswith("Error: pipeline p failed: ")
    assert "topic 'dead' partition 0 on 127.0.0.1:1: " in lines[-1], lines[-1]
    assert any(line.endswith("; the failed batch is not counted") for line in lines), lines
    assert places(out) == []
    assert not out.exists() or [p for p in out.rglob("*") if p.is_file()] == []
    if mode == "batch":
        # nothing was published, so the same run with a dead-letter output that works goes
        # through (no "the destination path is not empty")
        status, lines = go(spark, tmp_path, out)
        assert status == 1, lines
        assert sorted(places(out)) == sorted(source.written)
        assert sorted(places(tmp_path / "dead")) == sorted(source.dead)


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_a_source_that_is_not_there_fails_before_a_batch_and_says_nothing_was_written(
    spark, tmp_path, mode
):  # type: ignore[no-untyped-def]
    """A Kafka source on a port nothing listens on fails while the batch is planned (on
    the driver, or in a Python worker of Spark's for a stream), once ``requestTimeoutMs``
    has passed: the summary says nothing was written, not that tasks may have delivered
    part of a batch."""
    out = tmp_path / "out"
    pipeline = files_pipeline("p", tmp_path / "in", out, tmp_path / "dead", mode=mode)
    pipeline["connectors"][0] = {
        "id": "in",
        "type": "source",
        "plugin": "kafka",
        "settings": {
            "servers": "127.0.0.1:1",
            "topics": "t",
            "format": "debezium-json",
            "requestTimeoutMs": "1000",
        },
    }
    pipeline["connectors"][1]["plugin"] = "kafka"
    pipeline["connectors"][1]["settings"] = {"servers": "127.0.0.1:1", "topic": "o"}
    status, lines = run_alone(spark, tmp_path, pipeline)
    assert status == 1
    failed = "Error: pipeline p failed: cdc-kafka: cannot list topics on "
    assert lines[-1].startswith(failed), lines
    waited = "(no broker answered within 1 s: requestTimeoutMs)"
    assert waited in lines[-1] and "KafkaError{" not in lines[-1]
    summary = lines[-2]
    assert summary.startswith("p: 0 batches, 0 records in, 0 out"), lines
    assert summary.endswith("; it failed before its first batch: nothing was written"), lines
    assert not any("may have delivered" in line for line in lines), lines
