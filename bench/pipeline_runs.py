"""What the pipeline benchmarks share: the message count, Spark sessions, running a pipeline
file as ``cdc-connectors run`` does (in this process) and timing it by its own clock, the
peak memory of Spark's Python workers, and the CPU time of each kind of process.

``BENCH_MESSAGES`` sets the number of messages (200,000 by default; fewer for a quick run),
``BENCH_ROUNDS`` how many times each side is measured (best taken; 3 by default).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

MESSAGES = int(os.environ.get("BENCH_MESSAGES", "200000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


def spark_session(master: str) -> Any:
    """A fresh session on ``master`` (the active one is stopped first), its driver JVM as
    ``cdc-connectors run`` starts it for pipelines that run in one pass per task, as these
    do (:func:`~cdc_connectors.pipeline.runner.light_driver`)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from cdc_connectors.spark.session import JAVA_OPTIONS, java_options

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    spark = (
        SparkSession.builder.master(master)
        .appName("bench-pipeline")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config(JAVA_OPTIONS, java_options(light=True))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_spark() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


def run_pipeline(text: str, expected: int) -> float:
    """Run the pipeline file ``text`` on the active session as ``cdc-connectors run`` does;
    the seconds from its first batch's start to its last batch's end. It must read
    ``expected`` records and end with status 0 (no dead letters)."""
    from pyspark.sql import SparkSession

    from cdc_connectors.pipeline.config import parse
    from cdc_connectors.pipeline.runner import Timing, run

    spark = SparkSession.getActiveSession()
    assert spark is not None
    timings: list[Timing] = []
    lines: list[str] = []
    status = run(parse(text), spark, say=lines.append, timings=timings)
    assert status == 0, "\n".join(lines)
    (timing,) = timings
    assert timing.records == expected, (timing, lines)
    return timing.seconds


def dead_letters(folder: Path, name: str) -> str:
    """A dead-letter output of files, in a directory of its own."""
    return f"""
    dead-letter-queue:
      plugin: files
      settings: {{path: "{folder / name}", format: opencdc-json}}
"""


class WorkerMemory:
    """The peak resident set (VmHWM) of Spark's Python worker processes, sampled."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        mine = str(os.getpid())
        while not self._stop.wait(0.2):
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit():
                    continue
                try:
                    cmdline = (proc / "cmdline").read_bytes()
                    if b"pyspark.daemon" not in cmdline and b"pyspark/daemon" not in cmdline:
                        continue
                    if not _descends(proc.name, mine):
                        continue  # another Spark's workers on the same machine
                    for line in (proc / "status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                except OSError:
                    continue


def _descends(pid: str, ancestor: str) -> bool:
    while pid not in ("0", "1", ""):
        if pid == ancestor:
            return True
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = stat.rsplit(")", 1)[1].split()[1]
    return False


class ProcessCpu:
    """CPU seconds (user and system) spent during the block by this process's descendants,
    by kind: ``workers`` (Spark's Python workers), ``jvm`` (Spark's JVM) and ``broker``
    (the process ``broker_pid``). A process that ends inside the block is not counted:
    Spark's workers and JVM outlive a pipeline run in its session."""

    def __init__(self, broker_pid: int | None = None) -> None:
        self.broker_pid = str(broker_pid) if broker_pid is not None else None
        self.seconds: dict[str, float] = {}

    def __enter__(self) -> ProcessCpu:
        self._before = self._now()
        return self

    def __exit__(self, *exc: object) -> None:
        for pid, (kind, seconds) in self._now().items():
            start = self._before.get(pid, (kind, 0.0))[1]
            self.seconds[kind] = self.seconds.get(kind, 0.0) + seconds - start

    def _now(self) -> dict[str, tuple[str, float]]:
        mine, tick = str(os.getpid()), os.sysconf("SC_CLK_TCK")
        found: dict[str, tuple[str, float]] = {}
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                if proc.name == self.broker_pid:
                    kind = "broker"
                elif not _descends(proc.name, mine) or proc.name == mine:
                    continue
                else:
                    cmdline = (proc / "cmdline").read_bytes()
                    if b"pyspark.daemon" in cmdline or b"pyspark/daemon" in cmdline:
                        kind = "workers"
                    elif b"java" in cmdline.split(b"\0", 1)[0]:
                        kind = "jvm"
                    else:
                        continue
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            found[proc.name] = (kind, (int(fields[11]) + int(fields[12])) / tick)
        return found
