"""Test data and runs for the pipeline tests: Debezium lines whose fate is known, and the
``cdc-connectors`` command started as a user starts it."""

from __future__ import annotations

import base64
import json
import os
import random
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.jvm_archive import ARCHIVE_OPTIONS

TABLES = ("customers", "orders", "products")
CLI = (sys.executable, "-m", "cdc_connectors.cli")


@dataclass
class Lines:
    """Lines written to files, each with its expected fate: written, dead letter, skipped."""

    written: set[tuple[str, int]] = field(default_factory=set)
    dead: set[tuple[str, int]] = field(default_factory=set)
    skipped: set[tuple[str, int]] = field(default_factory=set)

    def add(self, other: Lines) -> None:
        self.written |= other.written
        self.dead |= other.dead
        self.skipped |= other.skipped

    @property
    def total(self) -> int:
        return len(self.written) + len(self.dead) + len(self.skipped)


def _event(rng: random.Random, table: str, op: str, row_id: int) -> dict[str, Any]:
    amount = rng.randint(0, 10_000)
    row: dict[str, Any] = {"id": row_id, "name": f"{table}-{row_id}", "amount": amount}
    changed = {**row, "amount": amount + 1}
    before, after = {
        "c": (None, row),
        "r": (None, row),
        "u": (row, changed),
        "d": (row, None),
        "t": (None, None),
    }[op]
    return {
        "before": before,
        "after": after,
        "source": {
            "version": "2.5.0.Final",
            "connector": "postgresql",
            "name": "db1",
            "ts_ms": 1700000000000 + row_id,
            "db": "shop",
            "schema": "public",
            "table": table,
            "lsn": row_id,
        },
        "op": op,
        "ts_ms": 1700000000500 + row_id,
    }


def write_debezium(path: Path, seed: int, changes: int = 30) -> Lines:
    """A file of Debezium JSON lines: every op on several tables, heartbeats, tombstones,
    truncates and junk."""
    rng = random.Random(seed)
    lines: list[tuple[str, str]] = []
    for index in range(changes):
        table = TABLES[index % len(TABLES)]
        op = "cdur"[index % 4]
        lines.append(("written", json.dumps(_event(rng, table, op, seed * 1000 + index))))
    lines += [
        ("skipped", json.dumps({"ts_ms": 1700000000000})),  # a heartbeat
        ("skipped", "null"),  # a tombstone
        ("dead", json.dumps(_event(rng, "orders", "t", seed))),  # a truncate
        ("dead", "this is not JSON"),
        ("dead", json.dumps({"op": "x", "before": None, "after": {"id": 1}})),
        ("dead", "[1, 2, 3]"),
    ]
    rng.shuffle(lines)
    found = Lines()
    for number, (fate, _) in enumerate(lines, start=1):
        getattr(found, fate).add((path.name, number))
    path.write_text("".join(text + "\n" for _, text in lines))
    return found


def place(position_b64: str) -> tuple[str, int]:
    """(file name, line) of a record's position ``file:line``."""
    position = base64.b64decode(position_b64).decode()
    file, _, line = position.rpartition(":")
    return os.path.basename(file), int(line)


def records(directory: Path) -> list[dict[str, Any]]:
    """Every OpenCDC JSON record in the visible files under ``directory``."""
    found: list[dict[str, Any]] = []
    if not directory.exists():
        return found
    for path in sorted(directory.rglob("*.jsonl")):
        if any(part.startswith(("_", ".")) for part in path.relative_to(directory).parts):
            continue
        found += [json.loads(line) for line in path.read_text().splitlines() if line]
    return found


def places(directory: Path) -> list[tuple[str, int]]:
    return [place(r["position"]) for r in records(directory)]


#: A short-lived JVM starts sooner with only the first compiler tier (a fifth less time to a
#: pipeline's first batch here), and with Spark's classes from the suite's class-data-sharing
#: archive (:mod:`tests.jvm_archive`) when there is one; the tests' runs are short. The runs
#: that test Spark's defaults (tests/pipeline/test_quiet.py) give a conf without it.
QUICK_JVM = f"-XX:TieredStopAtLevel=1 {ARCHIVE_OPTIONS}".strip()
#: ``PYSPARK_SUBMIT_ARGS`` for a PySpark process started by a test: a driver with QUICK_JVM.
QUICK_SUBMIT_ARGS = f"--driver-java-options {shlex.quote(QUICK_JVM)} pyspark-shell"
QUIET_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
}
SPARK = {
    "master": "local[2]",
    "conf": {**QUIET_CONF, "spark.driver.extraJavaOptions": QUICK_JVM},
}


def files_pipeline(
    pipeline_id: str,
    source: Path,
    output: Path,
    dead: Path,
    *,
    mode: str | None = None,
    **dlq: Any,
) -> dict[str, Any]:
    """One pipeline from Debezium JSON files to OpenCDC JSON files."""
    pipeline: dict[str, Any] = {
        "id": pipeline_id,
        "connectors": [
            {
                "id": "in",
                "type": "source",
                "plugin": "files",
                "settings": {"path": str(source), "format": "debezium-json"},
            },
            {
                "id": "out",
                "type": "destination",
                "plugin": "files",
                "settings": {"path": str(output), "format": "opencdc-json"},
            },
        ],
        "dead-letter-queue": {
            "plugin": "files",
            "settings": {"path": str(dead), "format": "opencdc-json"},
            **dlq,
        },
    }
    if mode:
        pipeline["mode"] = mode
    return pipeline


def write_config(path: Path, *pipelines: dict[str, Any], **spark: Any) -> Path:
    document = {
        "version": "2.2",
        "schema-registry": {"url": f"sqlite:///{path.parent / 'registry.db'}"},
        "spark": {**SPARK, "checkpoint": str(path.parent / "checkpoints"), **spark},
        "pipelines": list(pipelines),
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


def cdc(*args: str, cwd: Path, timeout: float = 420) -> subprocess.CompletedProcess[str]:
    """``cdc-connectors ARGS`` in ``cwd``; text output."""
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_here(
    spark: Any, pipeline_file: Path, *, available_now: bool = False
) -> subprocess.CompletedProcess[str]:
    """``cdc-connectors run [--available-now] PIPELINE`` in this process's Spark session: the
    driver's code after Spark has started (the same runner, exit status and lines), one Spark
    start fewer. Its lines are the stderr; what needs the process itself (its start, locks,
    signals, Spark's own output) is tested with :func:`cdc`."""
    from cdc_connectors.pipeline.config import load
    from cdc_connectors.pipeline.runner import run

    lines: list[str] = []
    previous = os.getcwd()
    os.chdir(pipeline_file.parent)
    try:
        status = run(load(str(pipeline_file)), spark, available_now=available_now, say=lines.append)
    finally:
        os.chdir(previous)
    stderr = "".join(line + "\n" for line in lines)
    return subprocess.CompletedProcess(["run", str(pipeline_file)], status, "", stderr)


#: What Spark or its JVM print on their own when not quiet.
NOISE = (
    "WARN",  # log4j warnings, and the JVM's "WARNING: Using incubator modules"
    "log4j",  # "Using Spark's default log4j profile: ..."
    "Using Spark's default",
    "Setting default log level",
    "sc.setLogLevel",
    "NativeCodeLoader",
    "loopback address",
    "SPARK_LOCAL_IP",
    "[Stage",
    "Picked up",  # JAVA_TOOL_OPTIONS and the like
)


def noise_in(text: str) -> list[str]:
    """The lines of ``text`` Spark or its JVM printed."""
    return [line for line in text.splitlines() if any(word in line for word in NOISE)]


def user_environment() -> dict[str, str]:
    """This environment as a user's shell has it: no ``SPARK_LOCAL_IP``, no ``PYSPARK_PYTHON``."""
    env = dict(os.environ)
    for name in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.pop(name, None)
    return env
