"""A files pipeline against a bare Python copy of the same lines.

``files_pipeline_vs_bare_copy``: the messages of :mod:`bench.bench_pipeline` (Debezium JSON
with schema blocks, key and value, ``BENCH_MESSAGES`` of them) as ``{"key": ..., "value":
...}`` lines in 4 files, through a pipeline of a ``files`` source (``debezium-json``, ``kv``)
and a ``files`` destination (``opencdc-json``) on ``local[2]``, timed by its own clock, against
:func:`bench.bare_copy.file_copy` reading and writing the lines. Best of ``BENCH_ROUNDS``,
the two sides in turn.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from itertools import count
from pathlib import Path
from typing import Any

import orjson

from bench.bare_copy import file_copy
from bench.common import entry
from bench.pipeline_runs import (
    MESSAGES,
    ROUNDS,
    dead_letters,
    run_pipeline,
    spark_session,
    stop_spark,
)
from bench.postgres_events import events

FILES = 4
WARM_MESSAGES = 4_000
DISTINCT = 20_000


def write_lines(folder: Path, messages: int) -> list[Path]:
    """``messages`` kv lines of change events in :data:`FILES` files under ``folder``."""
    folder.mkdir(parents=True)
    data = [
        orjson.dumps({"key": orjson.Fragment(k), "value": orjson.Fragment(v)})
        for k, v in events(min(messages, DISTINCT))
    ]
    paths = []
    for part in range(FILES):
        path = folder / f"part-{part}.jsonl"
        with path.open("wb") as out:
            for n in range(part, messages, FILES):
                out.write(data[n % len(data)] + b"\n")
        paths.append(path)
    return paths


def _pipeline(source: Path, target: Path, dlq: str) -> str:
    return f"""
version: "2.2"
spark:
  master: "local[2]"
pipelines:
  - id: bench
    mode: batch
    connectors:
      - id: in
        type: source
        plugin: files
        settings: {{path: "{source}", format: debezium-json, kv: true}}
      - id: out
        type: destination
        plugin: files
        settings: {{path: "{target}", format: opencdc-json}}
{dlq}"""


def run() -> dict[str, dict[str, Any]]:
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sources = write_lines(folder / "in", MESSAGES)
        write_lines(folder / "warm", WARM_MESSAGES)
        numbers = count()

        def pipeline(source: Path, messages: int) -> float:
            n = next(numbers)
            target = folder / f"out-{n}"
            text = _pipeline(source, target, dead_letters(folder, f"dlq-{n}"))
            try:
                return run_pipeline(text, messages)
            finally:
                shutil.rmtree(target, ignore_errors=True)

        def bare() -> float:
            target = folder / f"copy-{next(numbers)}"
            start = time.perf_counter()
            assert file_copy(sources, target) == MESSAGES
            seconds = time.perf_counter() - start
            shutil.rmtree(target)
            return seconds

        def in_full() -> float:
            return pipeline(folder / "in", MESSAGES)

        spark_session("local[2]")
        pipeline(folder / "warm", WARM_MESSAGES)
        for _ in range(ROUNDS):
            for name, side in (("bare copy", bare), ("pipeline", in_full)):
                seconds = side()
                best[name] = min(best.get(name, float("inf")), seconds)
                print(f"  files {name}: {MESSAGES / seconds:,.0f} msg/s", file=sys.stderr)
        stop_spark()
    rate = {name: MESSAGES / seconds for name, seconds in best.items()}
    return {
        "files_pipeline_vs_bare_copy": entry(
            rate["pipeline"],
            "msg/s",
            f"bare Python read and write of the lines, {MESSAGES:,} messages",
            rate["bare copy"],
        )
    }


if __name__ == "__main__":
    for name, row in run().items():
        print(name, row)
