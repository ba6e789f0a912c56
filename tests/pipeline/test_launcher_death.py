"""``cdc-connectors run`` killed as a supervisor or the out-of-memory killer kills it.

One streaming files -> files pipeline, run after run on one checkpoint:

1. ``run``; after its first batch a new file, then SIGKILL of the command: its driver, the
   Spark JVM and the Python workers end within seconds, instead of writing on unseen;
2. ``run`` again (it replays what the killed run left), and while it runs, a second
   ``run`` of the same file: refused in one line, exit 2, the first one going on;
3. SIGKILL of that driver itself: the command says so in one line and exits 137, and what
   the driver started ends too;
4. ``run --available-now`` for what is left (in the suite's Spark session: the driver's
   code after Spark has started, one Spark start fewer).

Then every input line is in exactly one place, read back with ``json`` alone: written
once, or a dead letter once, or skipped; none lost, none twice. The checkpoint locks alone
are tested first, without Spark.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cdc_connectors.pipeline.config import Pipeline, parse
from cdc_connectors.pipeline.lock import LOCK_FILE, CheckpointBusy, lock_checkpoints
from tests.pipeline.support import (
    CLI,
    Lines,
    environment,
    files_pipeline,
    place,
    run_here,
    write_config,
    write_debezium,
)

START = 300  # seconds for a Spark start and a first batch on a busy machine
GONE = 15  # seconds for a killed run's processes to end
REFUSED = 120  # seconds for a refused run to end, Python's start included


def _pipelines(root: Path, *ids: str, checkpoint: str | None = None) -> list[Pipeline]:
    document = {
        "version": "2.2",
        "spark": {"checkpoint": checkpoint or str(root / "checkpoints")},
        "pipelines": [
            files_pipeline(i, root / "in", root / f"{i}-out", root / f"{i}-dead") for i in ids
        ],
    }
    (root / "in").mkdir(exist_ok=True)
    return parse(json.dumps(document), str(root / "p.yaml")).pipelines


def test_a_checkpoint_is_locked_once_and_the_refusal_names_the_holder(tmp_path: Path) -> None:
    (pipeline,) = _pipelines(tmp_path, "p")
    held = lock_checkpoints([pipeline])
    lock = tmp_path / "checkpoints" / "p" / LOCK_FILE
    assert lock.read_text() == f"{os.getpid()}\n"
    with pytest.raises(CheckpointBusy) as refused:
        lock_checkpoints([pipeline])
    assert str(refused.value) == (
        f"pipeline p is already running: process {os.getpid()} holds {lock} "
        "(one run per checkpoint; stop that one first)"
    )
    held.release()
    lock_checkpoints([pipeline]).release()


def test_checkpoint_locks_are_taken_all_or_none(tmp_path: Path) -> None:
    first, second = _pipelines(tmp_path, "a", "b")
    held = lock_checkpoints([second])
    with pytest.raises(CheckpointBusy, match="pipeline b is already running"):
        lock_checkpoints([first, second])
    lock_checkpoints([first]).release()  # a's lock was let go when b's was refused
    held.release()


def test_a_checkpoint_on_a_distributed_file_system_is_not_locked(tmp_path: Path) -> None:
    (pipeline,) = _pipelines(tmp_path, "p", checkpoint="s3a://bucket/checkpoints")
    held = lock_checkpoints([pipeline])
    assert held.fds == []
    lock_checkpoints([pipeline]).release()


@dataclass
class Launched:
    """A ``cdc-connectors`` command running, its stderr lines collected as they come."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)
    reading: bool = True

    def wait_for(self, found: Callable[[list[str]], bool], seconds: float = START) -> None:
        deadline = time.monotonic() + seconds
        with self.changed:
            while not found(self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self.reading):
                    raise AssertionError("never came:\n" + "".join(self.lines)[-4000:])
                self.changed.wait(min(left, 0.5))

    def count(self, prefix: str) -> int:
        with self.changed:
            return sum(line.startswith(prefix) for line in self.lines)

    @property
    def text(self) -> str:
        with self.changed:
            return "".join(self.lines)


def launch(root: Path, *args: str) -> Launched:
    process = subprocess.Popen(
        [*CLI, "run", *args],
        cwd=root,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    launched = Launched(process)

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            with launched.changed:
                launched.lines.append(line)
                launched.changed.notify_all()
        with launched.changed:
            launched.reading = False
            launched.changed.notify_all()

    threading.Thread(target=read, daemon=True).start()
    return launched


def _parents() -> dict[int, int]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stream:
                    found[int(entry)] = int(stream.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return found


def descendants(pid: int) -> set[int]:
    parents = _parents()
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as stream:
            return stream.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def running(pid: int) -> bool:
    """Alive and not a zombie (an ended process its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: set[int], seconds: float = GONE) -> dict[int, str]:
    """The processes of ``pids`` still running after ``seconds``, with their command lines."""
    deadline = time.monotonic() + seconds
    while True:
        left = {pid for pid in pids if running(pid)}
        if not left or time.monotonic() > deadline:
            return {pid: command_line(pid) for pid in left}
        time.sleep(0.2)


def kill_all(pids: set[int]) -> None:
    """SIGKILL to what is left of ``pids`` (a failing run must leave nothing behind)."""
    for pid in pids:
        if running(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def stop(launched: Launched) -> None:
    tree = descendants(launched.process.pid)
    if launched.process.poll() is None:
        launched.process.kill()
        launched.process.wait()
    kill_all(tree)


@dataclass
class Refused:
    returncode: int | None  # None: still running after REFUSED seconds, so killed
    stderr: str


def run_refused(root: Path) -> Refused:
    """``cdc-connectors run pipeline.yaml``, which should be refused at once."""
    launched = launch(root, "pipeline.yaml")
    try:
        launched.process.wait(timeout=REFUSED)
    except subprocess.TimeoutExpired:
        stop(launched)
        return Refused(None, launched.text)
    launched.wait_for(lambda lines: not launched.reading, 10)
    return Refused(launched.process.returncode, launched.text)


@dataclass
class Story:
    root: Path
    expected: Lines
    killed: Launched
    killed_tree: set[int]
    killed_jvm: set[int]
    left_after_kill: dict[int, str]
    first: Launched
    second: Refused
    first_alive_after_second: bool
    first_batches_after_second: int
    first_tree: set[int]
    first_driver: int
    left_after_driver_kill: dict[int, str]
    last: subprocess.CompletedProcess[str]


def _jvm(pids: set[int]) -> set[int]:
    return {pid for pid in pids if "org.apache.spark.deploy.SparkSubmit" in command_line(pid)}


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory, spark: object) -> Iterator[Story]:
    root = tmp_path_factory.mktemp("launcher-death")
    (root / "in").mkdir()
    expected = write_debezium(root / "in" / "a.jsonl", 31)
    write_config(
        root / "pipeline.yaml", files_pipeline("s", root / "in", root / "out", root / "dead")
    )
    started: list[Launched] = []
    try:
        # 1. the command killed after its first batch, a new file there to be read
        killed = launch(root, "pipeline.yaml")
        started.append(killed)
        killed.wait_for(lambda lines: any(line.startswith("s: batch 0:") for line in lines))
        expected.add(write_debezium(root / "in" / "b.jsonl", 32))
        tree = descendants(killed.process.pid)
        jvm = _jvm(tree)
        killed.process.send_signal(signal.SIGKILL)
        killed.process.wait()
        left_after_kill = wait_gone(tree)
        kill_all(set(left_after_kill))
        # 2. again from the checkpoint, with one more file (so that it has a batch to run
        # whether the killed run got to b.jsonl or not); a second run while it runs
        expected.add(write_debezium(root / "in" / "b2.jsonl", 35))
        first = launch(root, "pipeline.yaml")
        started.append(first)
        first.wait_for(lambda lines: any(line.startswith("s: batch ") for line in lines))
        first_tree = descendants(first.process.pid)
        (driver,) = [
            pid
            for pid in first_tree
            if "cdc_connectors.pipeline.driver" in command_line(pid)
            and "pyspark" not in command_line(pid)
        ]
        second = run_refused(root)
        alive = first.process.poll() is None
        batches = first.count("s: batch ")
        expected.add(write_debezium(root / "in" / "c.jsonl", 33))
        first.wait_for(lambda lines: sum(line.startswith("s: batch ") for line in lines) > batches)
        # 3. its driver killed: the command says so, what the driver started ends
        first_tree = descendants(first.process.pid)
        expected.add(write_debezium(root / "in" / "d.jsonl", 34))
        os.kill(driver, signal.SIGKILL)
        first.process.wait(timeout=60)
        left_after_driver_kill = wait_gone(first_tree)
        kill_all(set(left_after_driver_kill))
        # 4. what is left, in the suite's Spark session (the driver's code after Spark has
        # started): what needs a process of its own was tested in 1 to 3
        last = run_here(spark, root / "pipeline.yaml", available_now=True)
        yield Story(
            root,
            expected,
            killed,
            tree,
            jvm,
            left_after_kill,
            first,
            second,
            alive,
            batches,
            first_tree,
            driver,
            left_after_driver_kill,
            last,
        )
    finally:
        for launched in started:
            stop(launched)


@pytest.mark.slow
@pytest.mark.spark
def test_killing_the_command_ends_its_driver_and_spark(story: Story) -> None:
    left = story.left_after_kill
    assert not left, f"still running {GONE} s after the command was killed: {left}"
    assert story.killed_jvm, "the Spark JVM was not among what the command started"
    assert story.killed_jvm <= story.killed_tree


@pytest.mark.slow
@pytest.mark.spark
def test_a_second_run_on_one_checkpoint_is_refused_in_one_line(story: Story) -> None:
    second = story.second
    assert second.returncode == 2, second.stderr
    lines = second.stderr.splitlines()
    assert len(lines) == 1, second.stderr
    assert lines[0].startswith(
        f"Error: pipeline s is already running: process {story.first_driver} holds "
        f"{story.root / 'checkpoints' / 's'}"
    ), lines[0]


@pytest.mark.slow
@pytest.mark.spark
def test_the_first_run_goes_on_while_the_second_is_refused(story: Story) -> None:
    assert story.first_alive_after_second
    text = story.first.text
    assert text.count("s: batch ") > story.first_batches_after_second, text


@pytest.mark.slow
@pytest.mark.spark
def test_a_killed_driver_is_reported_in_one_line_with_its_signal(story: Story) -> None:
    assert story.first.process.returncode == 128 + signal.SIGKILL
    reports = [line for line in story.first.lines if "was killed by SIGKILL" in line]
    assert len(reports) == 1, story.first.text
    assert reports[0].startswith("Error: the driver (process "), reports[0]
    left = story.left_after_driver_kill
    assert not left, f"still running after the driver was killed: {left}"


@pytest.mark.slow
@pytest.mark.spark
def test_the_last_run_reads_what_is_left(story: Story) -> None:
    assert story.last.returncode == 1, story.last.stderr  # the junk lines are dead letters
    assert "Traceback" not in story.last.stderr


def _places(directory: Path) -> list[tuple[str, int]]:
    """(file, line) of every record in the visible ``*.jsonl`` files, read with json."""
    found = []
    for path in sorted(directory.rglob("*.jsonl")):
        if any(part.startswith(("_", ".")) for part in path.relative_to(directory).parts):
            continue
        with path.open() as stream:
            found += [place(json.loads(line)["position"]) for line in stream if line.strip()]
    return found


@pytest.mark.slow
@pytest.mark.spark
def test_every_line_once_after_kills_and_restarts(story: Story) -> None:
    written, dead = _places(story.root / "out"), _places(story.root / "dead")
    twice = [p for p, n in Counter(written).items() if n > 1]
    assert not twice, f"written twice: {twice}"
    assert not [p for p, n in Counter(dead).items() if n > 1], "a dead letter twice"
    assert set(written) == story.expected.written, (
        f"lost: {sorted(story.expected.written - set(written))}"
    )
    assert set(dead) == story.expected.dead
    assert len(written) == len(story.expected.written)
