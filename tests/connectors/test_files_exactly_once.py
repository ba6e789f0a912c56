"""A streaming query into the files connector, killed mid-batch and restarted, leaves every
record in the output directory exactly once, for a reader that knows nothing of Spark."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from pyspark.sql.types import BinaryType, StructField, StructType

from cdc_connectors.connectors.files import FilesDataSource, FilesWriteError
from cdc_connectors.connectors.files_write import FilesStreamWriter
from tests.connectors.test_files_destination import files_under
from tests.connectors.test_files_source import opencdc_line, write_lines
from tests.pipeline.support import QUICK_SUBMIT_ARGS

ROOT = Path(__file__).resolve().parents[2]

# A query reading two files per micro-batch; with STALL=1 the task reading a file named
# "*slow*" hands half its rows to the writer, leaves a marker and hangs, to be killed.
QUERY = r"""
import os, sys, time
from pyspark.sql import SparkSession
from cdc_connectors.connectors.files import FilesDataSource

source, out, checkpoint, marker = sys.argv[1:5]
spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
spark.dataSource.register(FilesDataSource)
df = spark.readStream.format("cdc-files").option("maxFilesPerTrigger", "2").load(source)


def stall(batches):
    for batch in batches:
        slow = any(b"slow" in p for p in batch.column("position").to_pylist())
        if slow and os.environ.get("STALL") == "1":
            yield batch.slice(0, batch.num_rows // 2)
            open(marker, "w").close()
            time.sleep(600)
        yield batch


query = (
    df.mapInArrow(stall, df.schema)
    .writeStream.format("cdc-files")
    .option("checkpointLocation", checkpoint)
    .trigger(availableNow=True)
    .start(out)
)
query.awaitTermination()
"""

FILES = ["f00.jsonl", "f01.jsonl", "f02-slow.jsonl", "f03.jsonl", "f04.jsonl"]
PER_FILE = 40


def start(tmp_path: Path, stall: bool) -> subprocess.Popen[bytes]:
    env = dict(os.environ, STALL="1" if stall else "0", PYTHONPATH=str(ROOT))
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["PYSPARK_SUBMIT_ARGS"] = QUICK_SUBMIT_ARGS
    args = [str(tmp_path / d) for d in ("in", "out", "checkpoint")] + [str(tmp_path / "marker")]
    return subprocess.Popen(
        [sys.executable, "-c", QUERY, *args],
        env=env,
        cwd=ROOT,
        start_new_session=True,  # its JVM is in its process group: killed with it
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / f"stderr-{int(stall)}.txt", "wb"),
    )


def restart_here(spark: Any, tmp_path: Path) -> None:
    """The query again from its checkpoint, to its end, in the suite's Spark session: a JVM
    other than the killed one, one Spark start fewer. Without the stalling map, which passes
    every row on unless told to stall (a stateless step: the checkpoint does not hold it)."""
    df = (
        spark.readStream.format("cdc-files")
        .option("maxFilesPerTrigger", "2")
        .load(str(tmp_path / "in"))
    )
    query = (
        df.writeStream.format("cdc-files")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start(str(tmp_path / "out"))
    )
    query.awaitTermination()
    assert query.exception() is None


def visible_ids(out: Path) -> list[int]:
    """The record ids in the output as a plain reader sees it: every visible JSON line."""
    found = []
    for name in files_under(out):
        if any(part.startswith(("_", ".")) for part in Path(name).parts):
            continue
        for line in (out / name).read_bytes().splitlines():
            found.append(orjson.loads(line)["payload"]["after"]["id"])
    return sorted(found)


def written_in_batch_1(out: Path) -> bool:
    """Whether a task of the micro-batch after the first has closed a file (of its rows)."""
    return any(
        "part-" in name
        and not name.startswith("batch-000000000000/")
        and (out / name).stat().st_size
        for name in files_under(out)
    )


@pytest.mark.spark
@pytest.mark.slow
def test_a_query_killed_mid_batch_and_restarted_writes_every_record_once(  # type: ignore[no-untyped-def]
    tmp_path, spark
):
    for index, name in enumerate(FILES):
        first = index * PER_FILE
        write_lines(tmp_path / "in" / name, [opencdc_line(first + i) for i in range(PER_FILE)])
    out = tmp_path / "out"

    killed = start(tmp_path, stall=True)
    try:
        for _ in range(6000):  # until micro-batch 1 is half written: one task done, one hung
            if killed.poll() is not None or (
                (tmp_path / "marker").exists() and written_in_batch_1(out)
            ):
                break
            time.sleep(0.05)
        assert killed.poll() is None, (tmp_path / "stderr-1.txt").read_text()[-3000:]
        assert written_in_batch_1(out)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    # micro-batch 0 (f00, f01) is committed, micro-batch 1 is not visible at all
    assert visible_ids(out) == list(range(2 * PER_FILE))
    assert [n for n in files_under(out) if not n.startswith("_")] == [
        "batch-000000000000/part-00000.jsonl",
        "batch-000000000000/part-00001.jsonl",
    ]

    restart_here(spark, tmp_path)

    assert visible_ids(out) == list(range(len(FILES) * PER_FILE))
    batches = sorted({n.split("/")[0] for n in files_under(out) if not n.startswith("_")})
    assert batches == [f"batch-{n:012d}" for n in range(3)]  # the last holds f04 alone
    assert [n for n in files_under(out) if n.startswith("_staging")] == []


MESSAGES = StructType([StructField("value", BinaryType())])


def staged(writer: FilesStreamWriter, values: list[bytes]) -> object:
    batch = pa.RecordBatch.from_pydict({"value": values})
    return writer.write(iter([batch]))


def test_a_replayed_commit_keeps_one_copy_and_clears_the_staging_area(tmp_path):  # type: ignore[no-untyped-def]
    """What a restart does after a kill between the rename of a batch and Spark's commit log."""
    out = tmp_path / "out"
    source = FilesDataSource({"path": str(out)})
    first = source.streamWriter(MESSAGES, False)
    message = staged(first, [b"1", b"2"])
    first.commit([message], 7)
    # the replay runs in new processes: a fresh writer, new staged files
    replay = source.streamWriter(MESSAGES, False)
    left_by_a_killed_attempt = staged(replay, [b"1"])
    again = staged(replay, [b"1", b"2"])
    assert len(files_under(out / "_staging")) == 2
    replay.commit([again], 7)
    assert files_under(out) == ["batch-000000000007/part-00000.jsonl"]
    assert (out / "batch-000000000007" / "part-00000.jsonl").read_bytes() == b"1\n2\n"
    assert left_by_a_killed_attempt is not None


def test_an_aborted_micro_batch_leaves_nothing_and_an_empty_one_no_directory(tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    writer = FilesDataSource({"path": str(out)}).streamWriter(MESSAGES, False)
    writer.abort([staged(writer, [b"1"]), None], 3)
    writer.commit([staged(writer, []), None], 4)
    assert files_under(out) == []


def test_a_second_query_into_the_same_directory_is_refused(tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    source = FilesDataSource({"path": str(out)})
    first = source.streamWriter(MESSAGES, False)
    for batch_id in (0, 1):
        first.commit([staged(first, [b"%d" % batch_id])], batch_id)
    other = source.streamWriter(MESSAGES, False)
    with pytest.raises(FilesWriteError, match="already holds batch-000000000001"):
        other.commit([staged(other, [b"new"])], 0)
    assert files_under(out) == [
        "batch-000000000000/part-00000.jsonl",
        "batch-000000000001/part-00000.jsonl",
    ]
