"""``cdc-connectors run`` end to end with the files connector, on a local Spark.

The runs are few and shared by the tests of this module; the first two run in the suite's
Spark session (the driver's code, as ``run`` runs it after Spark has started), the third as a
user runs it:

1. one file, ``--available-now``: three batch pipelines over the same Debezium files (one
   without a dead-letter policy, one with ``fail-fast``, one with ``max-error-ratio``) and
   one streaming pipeline;
2. new files, then the streaming pipeline alone again from its checkpoint, ``--available-now``;
3. new files, then the same streaming pipeline without ``--available-now``, stopped by
   SIGINT once its first batch is reported, in a user's environment (no ``SPARK_LOCAL_IP``,
   no ``PYSPARK_PYTHON``) and with the package's Java options alone: it prints its own
   lines and no Spark noise.

Every input line must end in exactly one of the output, the dead letters or the skipped.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pipeline.support import (
    CLI,
    QUIET_CONF,
    Lines,
    files_pipeline,
    noise_in,
    places,
    records,
    run_here,
    user_environment,
    write_config,
    write_debezium,
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]


@dataclass
class Run:
    returncode: int
    stderr: str


@dataclass
class Work:
    root: Path
    batch_input: Lines
    stream_input: Lines
    first: Run


def _stream_pipeline(root: Path) -> dict[str, object]:
    return files_pipeline("stream", root / "stream-in", root / "stream-out", root / "stream-dead")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, spark: object) -> Work:
    root = tmp_path_factory.mktemp("run")
    (root / "in").mkdir()
    batch_input = Lines()
    for seed in (1, 2, 3):
        batch_input.add(write_debezium(root / "in" / f"changes-{seed}.jsonl", seed))
    (root / "stream-in").mkdir()
    stream_input = write_debezium(root / "stream-in" / "a.jsonl", 10)
    write_config(
        root / "pipeline.yaml",
        files_pipeline("all", root / "in", root / "out", root / "dead", mode="batch"),
        files_pipeline(
            "strict",
            root / "in",
            root / "strict-out",
            root / "strict-dead",
            mode="batch",
            **{"fail-fast": True},
        ),
        files_pipeline(
            "ratio",
            root / "in",
            root / "ratio-out",
            root / "ratio-dead",
            mode="batch",
            **{"max-error-ratio": 0.05},
        ),
        _stream_pipeline(root),
    )
    result = run_here(spark, root / "pipeline.yaml", available_now=True)
    return Work(root, batch_input, stream_input, Run(result.returncode, result.stderr))


def _assert_partition(expected: Lines, out: Path, dead: Path) -> None:
    """Every line in exactly one of output / dead letters / skipped."""
    written, letters = places(out), places(dead)
    assert not [p for p, n in Counter(written).items() if n > 1], "a line written twice"
    assert not [p for p, n in Counter(letters).items() if n > 1], "a dead letter written twice"
    assert set(written) == expected.written
    assert set(letters) == expected.dead
    assert not (set(written) | set(letters)) & expected.skipped
    assert len(written) + len(letters) + len(expected.skipped) == expected.total


def test_batch_pipeline_puts_every_line_in_exactly_one_place(work: Work) -> None:
    _assert_partition(work.batch_input, work.root / "out", work.root / "dead")
    summary = (
        f"all: 1 batch, {len(work.batch_input.written) + len(work.batch_input.dead)} records "
        f"in, {len(work.batch_input.written)} out, {len(work.batch_input.dead)} to the "
        "dead-letter output"
    )
    assert summary in work.first.stderr


def test_output_is_opencdc_with_every_operation_and_table(work: Work) -> None:
    found = records(work.root / "out")
    assert {r["operation"] for r in found} == {"create", "update", "delete", "snapshot"}
    assert {r["metadata"]["opencdc.collection"] for r in found} == {
        "shop.public.customers",
        "shop.public.orders",
        "shop.public.products",
    }
    dead = records(work.root / "dead")
    assert all(r["metadata"].get("conduit.dlq.nack.error") for r in dead)


def test_dead_letters_give_exit_status_1(work: Work) -> None:
    assert work.first.returncode == 1, work.first.stderr


def test_fail_fast_stops_its_pipeline_before_writing(work: Work) -> None:
    assert "Error: pipeline strict stopped by fail-fast: the record at" in work.first.stderr
    assert "nothing of batch 0 was written" in work.first.stderr
    assert records(work.root / "strict-out") == []
    assert records(work.root / "strict-dead") == []


def test_max_error_ratio_stops_its_pipeline_with_the_ratio(work: Work) -> None:
    letters = len(work.batch_input.dead)
    total = letters + len(work.batch_input.written)
    assert (
        f"Error: pipeline ratio stopped: {letters} of {total} records "
        f"({letters / total:.1%}) would go to the dead-letter output, more than "
        "max-error-ratio 0.05"
    ) in work.first.stderr
    assert records(work.root / "ratio-out") == []


def test_one_line_per_batch_and_a_summary_per_pipeline(work: Work) -> None:
    for pipeline in ("all", "stream"):
        assert f"\n{pipeline}: batch 0: " in "\n" + work.first.stderr
    for pipeline in ("all", "strict", "ratio", "stream"):
        assert f"\n{pipeline}: starting (" in "\n" + work.first.stderr
        assert f"\n{pipeline}: 0 batches, " in "\n" + work.first.stderr or (
            f"\n{pipeline}: 1 batch, " in "\n" + work.first.stderr
        )
    assert "stream: starting (streaming, available now): in (files) -> out (files)" in (
        work.first.stderr
    )
    assert "Traceback" not in work.first.stderr


def test_the_summary_counts_the_messages_without_a_change(work: Work) -> None:
    """Heartbeats and tombstones are skipped, not lost from the numbers: each line read is
    in, or skipped."""
    summary = next(
        line for line in work.first.stderr.splitlines() if line.startswith("all: 1 batch, ")
    )
    expected = work.batch_input
    read = len(expected.written) + len(expected.dead)
    assert f" {read} records in, {len(expected.written)} out, " in summary, summary
    assert f", {len(expected.skipped)} skipped (no change), " in summary, summary
    batch = next(line for line in work.first.stderr.splitlines() if line.startswith("all: batch 0"))
    assert f", {len(expected.skipped)} skipped (no change), " in batch, batch


@pytest.fixture(scope="module")
def second(work: Work, spark: object) -> Run:
    """The streaming pipeline again from its checkpoint, with one more file."""
    work.stream_input.add(write_debezium(work.root / "stream-in" / "b.jsonl", 11))
    # (no Java options of its own: the package's alone, for the quiet run below)
    write_config(work.root / "stream.yaml", _stream_pipeline(work.root), conf=QUIET_CONF)
    result = run_here(spark, work.root / "stream.yaml", available_now=True)
    return Run(result.returncode, result.stderr)


def test_available_now_twice_from_one_checkpoint_reads_each_file_once(
    work: Work, second: Run
) -> None:
    assert second.returncode == 1, second.stderr
    assert "stream: batch" in second.stderr
    _assert_partition(work.stream_input, work.root / "stream-out", work.root / "stream-dead")
    assert (work.root / "checkpoints" / "stream" / "cdc-source").read_text() == "files\n"


@pytest.fixture(scope="module")
def interrupted(work: Work, second: Run) -> Run:
    """The streaming pipeline without --available-now, SIGINT after its first batch."""
    work.stream_input.add(write_debezium(work.root / "stream-in" / "c.jsonl", 12))
    stdout = (work.root / "interrupted.stdout").open("w")
    process = subprocess.Popen(
        [*CLI, "run", "stream.yaml"],
        cwd=work.root,
        env=user_environment(),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []

    def watch() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if line.startswith("stream: batch"):
                process.send_signal(signal.SIGINT)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        returncode = process.wait(timeout=420)
    finally:
        if process.poll() is None:
            process.kill()
        watcher.join()
        stdout.close()
    return Run(returncode, "".join(lines))


def test_sigint_stops_a_streaming_run_after_its_batch_with_a_summary(
    work: Work, interrupted: Run
) -> None:
    assert interrupted.returncode == 1, interrupted.stderr  # dead letters were written
    assert "SIGINT: stopping once the current batch is written" in interrupted.stderr
    assert "stream: 1 batch, " in interrupted.stderr
    assert "stopped by SIGINT" in interrupted.stderr
    assert "Traceback" not in interrupted.stderr, interrupted.stderr
    _assert_partition(work.stream_input, work.root / "stream-out", work.root / "stream-dead")


def test_a_run_prints_its_own_lines_and_no_spark_noise(work: Work, interrupted: Run) -> None:
    output = (work.root / "interrupted.stdout").read_text() + interrupted.stderr
    assert not noise_in(output), output
    assert (work.root / "interrupted.stdout").read_text() == ""
    for line in interrupted.stderr.splitlines():  # the run's own lines, nothing else
        assert line.startswith(("stream: ", "SIGINT: ")) or line == "stopped by SIGINT", output


def _java_in_group(group: int) -> bool:
    """Whether a process of process group ``group`` runs Java (Spark's JVM)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[2]) == group and b"java" in (proc / "cmdline").read_bytes():
                return True
        except (OSError, IndexError, ValueError):
            continue
    return False


def test_two_ctrl_c_while_spark_starts_stop_at_once_in_one_line_and_leave_no_jvm(
    tmp_path: Path,
) -> None:
    """The second SIGINT lands while the driver's Spark JVM is starting: the run says so in
    one line, exits 130, and the JVM ends with it (it used to run on, orphaned; and a
    SparkContext's own SIGINT handler stopped at the first Ctrl-C with py4j's tracebacks)."""
    (tmp_path / "in").mkdir()
    pipeline = files_pipeline(
        "p", tmp_path / "in", tmp_path / "out", tmp_path / "dead", mode="streaming"
    )
    config = write_config(tmp_path / "p.yaml", pipeline)
    process = subprocess.Popen(
        [*CLI, "run", str(config)],
        cwd=tmp_path,
        env=user_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    driver = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        found = children.read_text().split() if children.exists() else []
        driver = int(found[0]) if found else None
        if driver is not None and _java_in_group(driver):
            break  # the driver's JVM has started starting
        time.sleep(0.05)
    if driver is None or process.poll() is not None:
        process.kill()
        pytest.fail(f"no driver JVM seen starting: {process.communicate()}")
    process.send_signal(signal.SIGINT)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1] == "stopped at once by SIGINT", stderr
    assert "Traceback" not in stderr and "ERROR" not in stderr, stderr
    assert stdout == ""
    assert not _java_in_group(driver)  # ended before the command returned
