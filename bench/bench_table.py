"""Change streams applied to tables.

- ``table_upsert_vs_append``: ``BENCH_TABLE_CHANGES`` changes (200,000: 70% updates of
  existing keys, 10% deletes, 20% new keys) applied (:func:`~cdc_connectors.table.apply.
  apply_changes`: plan, then one Delta commit rewriting the files of the touched keys) to a
  table of ``BENCH_TABLE_ROWS`` rows (1,000,000), against ``write_deltalake`` appending the
  same rows to a copy of the table. Best of ``BENCH_ROUNDS``, each on a fresh copy.
- ``table_driver_memory_1x_vs_10x``: the peak resident memory of a process applying the same
  batch of 20,000 changes to a table of 100,000 rows and to one of 1,000,000 (1.0: flat).
- ``table_pipeline_vs_files_pipeline``: the Kafka pipeline of :mod:`bench.bench_pipeline`
  (Debezium JSON with schema blocks, ``BENCH_MESSAGES`` / 4 messages over 4 partitions, a
  registry) into a Delta table, against the same pipeline into ``cdc-files`` (OpenCDC JSON),
  ``local[2]``, each timed by its own clock.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.common import entry
from bench.pipeline_runs import (
    MESSAGES,
    ROUNDS,
    dead_letters,
    run_pipeline,
    spark_session,
    stop_spark,
)
from cdc_connectors.table.layout import TIME

ROWS = int(os.environ.get("BENCH_TABLE_ROWS", "1000000"))
CHANGES = int(os.environ.get("BENCH_TABLE_CHANGES", "200000"))
PARTITIONS = 4


def changes(ids: np.ndarray, ops: list[str], first: int, seed: int = 1) -> pa.Table:
    """Changes of an orders table: ``ids`` with ``ops``, offsets from ``first``."""
    rng = np.random.default_rng(seed)
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "status": pa.array(rng.choice(["new", "paid", "shipped"], n)),
            "amount": pa.array(rng.integers(0, 10**8, n), pa.int64())
            .cast(pa.decimal128(21, 0))
            .cast(pa.decimal128(24, 2)),
            "note": pa.array(np.char.add("note ", ids.astype(str)).tolist()),
            "_cdc_op": pa.array(ops, pa.string()),
            "_cdc_stream": pa.array(["orders/0"] * n, pa.string()),
            "_cdc_offset": pa.array(np.arange(first, first + n), pa.int64()),
            "_cdc_at": pa.array(np.full(n, 1_700_000_000_000_000), pa.int64()).cast(TIME),
            "_cdc_unset": pa.nulls(n, pa.list_(pa.string())),
        }
    )


def batch_of(rows: int, count: int, seed: int = 2) -> pa.Table:
    """``count`` changes of a table of ``rows`` rows: 70% updates, 10% deletes, 20% new."""
    rng = np.random.default_rng(seed)
    updates, deletes = int(count * 0.7), int(count * 0.1)
    touched = rng.choice(rows, updates + deletes, replace=False)
    ids = np.concatenate([touched, np.arange(rows, rows + count - updates - deletes)])
    ops = ["update"] * updates + ["delete"] * deletes + ["create"] * (count - updates - deletes)
    order = rng.permutation(count)
    return changes(ids[order], [ops[i] for i in order], rows)


def make_table(path: Path, rows: int) -> None:
    from cdc_connectors.table.apply import apply_changes
    from cdc_connectors.table.delta import DeltaStore
    from cdc_connectors.table.store import TableSettings

    base = changes(np.arange(rows), ["snapshot"] * rows, 0)
    apply_changes(DeltaStore(str(path)), base, TableSettings(["id"]))


def upsert_vs_append(folder: Path) -> tuple[float, float]:
    from deltalake import write_deltalake

    from cdc_connectors.table.apply import apply_changes
    from cdc_connectors.table.delta import DeltaStore
    from cdc_connectors.table.store import TableSettings

    base = folder / "base"
    make_table(base, ROWS)
    batch = batch_of(ROWS, CHANGES)
    rows = batch.select(["id", "status", "amount", "note", "_cdc_stream", "_cdc_offset"])
    best = {"ours": float("inf"), "append": float("inf")}
    for round_ in range(ROUNDS):
        for side in best:
            copy = folder / f"{side}-{round_}"
            shutil.copytree(base, copy)
            start = time.perf_counter()
            if side == "ours":
                apply_changes(DeltaStore(str(copy)), batch, TableSettings(["id"]))
            else:
                write_deltalake(str(copy), rows, mode="append")
            best[side] = min(best[side], time.perf_counter() - start)
            shutil.rmtree(copy)
    return CHANGES / best["ours"], CHANGES / best["append"]


_APPLY = """
import sys
sys.path.insert(0, {root!r})
from bench.bench_table import batch_of
from cdc_connectors.table.apply import apply_changes
from cdc_connectors.table.delta import DeltaStore
from cdc_connectors.table.store import TableSettings
apply_changes(DeltaStore({path!r}), batch_of({rows}, 20_000), TableSettings(["id"]))
# the high-water mark of this process's own memory: getrusage's ru_maxrss keeps the peak of
# the process it was started from (Linux keeps it across fork and exec), here the bench's
with open("/proc/self/status") as status:
    print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


def driver_memory(folder: Path, rows: int) -> float:
    """Peak resident KiB of a process applying 20,000 changes to a table of ``rows``."""
    path = folder / f"memory-{rows}"
    make_table(path, rows)
    code = _APPLY.format(root=str(Path(__file__).parent.parent), path=str(path), rows=rows)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    shutil.rmtree(path)
    return float(done.stdout.split()[-1])


def _pipeline(servers: str, topic: str, destination: str, registry: str, dlq: str) -> str:
    return f"""
version: "2.2"
schema-registry: {{url: "{registry}"}}
spark: {{master: "local[2]"}}
pipelines:
  - id: bench
    connectors:
      - id: in
        type: source
        plugin: kafka
        settings: {{servers: "{servers}", topics: {topic}, format: debezium-json,
                   startingOffsets: earliest, endingOffsets: latest}}
      - id: out
        type: destination
{destination}
{dlq}"""


def table_vs_files(folder: Path) -> tuple[float, float]:
    from bench.bench_pipeline import fill
    from tests.kafka_broker import KafkaBroker

    messages = max(MESSAGES // 4, 1_000)
    numbers = iter(range(1_000))
    with KafkaBroker() as broker:
        broker.create_topic("table-in", PARTITIONS)
        fill(broker.bootstrap, "table-in", messages)
        registry = f"sqlite:///{folder / 'registry.db'}"

        def run(table: bool) -> float:
            n = next(numbers)
            if table:
                out = f'        plugin: table\n        settings: {{path: "{folder / f"t{n}"}"}}'
            else:
                out = f'        plugin: files\n        settings: {{path: "{folder / f"f{n}"}"}}'
            dlq = dead_letters(folder, f"dlq-{n}")
            text = _pipeline(broker.bootstrap, "table-in", out, registry, dlq)
            return run_pipeline(text, messages)

        spark_session("local[2]")
        run(True), run(False)  # warm: workers started, schemas registered
        best = {True: float("inf"), False: float("inf")}
        for _ in range(ROUNDS):
            for table in (True, False):
                seconds = run(table)
                best[table] = min(best[table], seconds)
                print(
                    f"  {'table' if table else 'files'}: {messages / seconds:,.0f} msg/s",
                    file=sys.stderr,
                )
        stop_spark()
    return messages / best[True], messages / best[False]


def run() -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ours, append = upsert_vs_append(folder)
        small, large = driver_memory(folder, 100_000), driver_memory(folder, 1_000_000)
        table, files = table_vs_files(folder)
    return {
        "table_upsert_vs_append": entry(
            ours, "changes/s", f"write_deltalake appending the same {CHANGES:,} rows", append
        ),
        "table_driver_memory_1x_vs_10x": entry(
            small / 1024,
            "MiB",
            "peak memory applying the same batch to a table of 10x the rows",
            large / 1024,
        ),
        "table_pipeline_vs_files_pipeline": entry(
            table, "msg/s", "the same Kafka pipeline into cdc-files", files
        ),
    }


if __name__ == "__main__":
    for name, row in run().items():
        print(name, row)
