"""Outputs a pipeline must not write to are refused before Spark starts, in one line: a
file where a directory belongs, another streaming query's directory, a non-empty output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from cdc_connectors.connectors.files_owner import OWNER_FILE
from cdc_connectors.pipeline import outputs, parse
from cdc_connectors.pipeline.runner import refusal
from tests.pipeline.support import QUIET_CONF, cdc, files_pipeline, write_config, write_debezium


def config(tmp_path: Path, out: Path, *, batch: bool = True, mode: str | None = None):  # type: ignore[no-untyped-def]
    (tmp_path / "in").mkdir(exist_ok=True)  # (a source that is not there is refused first)
    pipeline = files_pipeline(
        "p", tmp_path / "in", out, tmp_path / "dead", mode="batch" if batch else "streaming"
    )
    if mode is not None:
        pipeline["connectors"][1]["settings"]["mode"] = mode
    document = {
        "version": "2.2",
        "spark": {"checkpoint": str(tmp_path / "checkpoints")},
        "pipelines": [pipeline],
    }
    return parse(yaml.safe_dump(document, sort_keys=False), "p.yaml")


def owned(directory: Path, checkpoint: str, query: str = "other-query") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / OWNER_FILE).write_text(json.dumps({"query": query, "checkpoint": checkpoint}))
    (directory / "batch-000000000000").mkdir()


def test_a_batch_pipeline_into_a_streaming_query_s_directory_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    owned(out, "/elsewhere/checkpoint")
    for mode in ("append", "overwrite", "ignore", None):
        problem = refusal(config(tmp_path, out, mode=mode))
        assert problem is not None
        assert problem.startswith("p.yaml:")
        assert "belongs to the streaming query" in problem and "a batch pipeline" in problem
    assert sorted(os.listdir(out)) == [OWNER_FILE, "batch-000000000000"]


def test_an_output_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file")
    for mode in ("overwrite", "append", None):
        problem = refusal(config(tmp_path, tmp_path / "out", mode=mode))
        assert problem is not None and problem.endswith(
            f"the destination path {tmp_path / 'out'} is a file, not a directory"
        )
    assert (tmp_path / "out").read_text() == "a file"
    problem = refusal(config(tmp_path, tmp_path / "out" / "records"))
    assert problem is not None and problem.endswith(
        f"cannot be a directory: {tmp_path / 'out'} is a file"
    )


def test_a_streaming_pipeline_into_another_query_s_directory_is_refused(tmp_path: Path) -> None:
    """Before, its dead letters were published and the summary said 0."""
    out = tmp_path / "out"
    owned(out, "/elsewhere/checkpoint")
    problem = refusal(config(tmp_path, out, batch=False))
    assert problem is not None and "belongs to the streaming query" in problem
    own = tmp_path / "mine"
    owned(own, str(tmp_path / "checkpoints" / "p"))
    assert refusal(config(tmp_path, own, batch=False)) is None


def test_overwrite_through_a_symbolic_link_replaces_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.mkdir()
    (target / "part-old.jsonl").write_text("old\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    output = outputs.stage(str(link), "overwrite")
    os.makedirs(output.staging, exist_ok=True)  # the writer makes it too
    Path(output.staging, "part-new.jsonl").write_text("new\n")
    outputs.publish(output)
    assert link.is_symlink() and os.listdir(link) == ["part-new.jsonl"]
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]


def test_a_killed_run_s_staged_file_or_link_is_removed_too(tmp_path: Path) -> None:
    stale_file = tmp_path / ".out.cdc-staging-999999999-aaaaaaaaaaaa"
    stale_file.write_text("x")
    stale_link = tmp_path / ".out.cdc-staging-999999998-bbbbbbbbbbbb"
    stale_link.symlink_to(tmp_path)
    outputs.stage(str(tmp_path / "out"), "append")
    assert not os.path.lexists(stale_file) and not os.path.lexists(stale_link)


def test_run_refuses_a_non_empty_output_in_one_line_before_spark_starts(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    write_debezium(tmp_path / "in" / "a.jsonl", 1, changes=4)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "part-0.jsonl").write_text("{}\n")
    write_config(
        tmp_path / "p.yaml",
        files_pipeline("p", tmp_path / "in", tmp_path / "out", tmp_path / "dead", mode="batch"),
        conf=QUIET_CONF,  # no Spark starts: the lines of the file as the error names them
    )
    result = cdc("run", "p.yaml", cwd=tmp_path, timeout=120)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"Error: p.yaml:23: pipelines[0].connectors[1].settings.mode: the destination path "
        f"{tmp_path / 'out'} is not empty; set mode: overwrite to replace it, or mode: append "
        "to add to it"
    ]
    assert sorted(os.listdir(tmp_path / "out")) == ["part-0.jsonl"]


def test_a_conf_value_spark_refuses_is_one_line_in_the_jvm_s_words(tmp_path: Path) -> None:
    """The JVM ends before it starts (spark-submit checks these values): its reason, not
    pyspark's "exited before sending its port number" nor a Java stack trace; the output
    is not made."""
    (tmp_path / "in").mkdir()
    write_debezium(tmp_path / "in" / "a.jsonl", 1, changes=4)
    pipeline = files_pipeline(
        "p", tmp_path / "in", tmp_path / "out", tmp_path / "dead", mode="batch"
    )
    for key, said in (
        ("spark.executor.memory", "SparkException: Executor memory must be a positive number"),
        ("spark.driver.memory", "Invalid maximum heap size: -Xmxlots"),
    ):
        write_config(tmp_path / "p.yaml", pipeline, conf={**QUIET_CONF, key: "lots"})
        result = cdc("run", "p.yaml", cwd=tmp_path, timeout=120)
        assert result.returncode == 1
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert result.stderr.startswith(f"Error: Spark did not start: {said}"), result.stderr
        assert not (tmp_path / "out").exists()
