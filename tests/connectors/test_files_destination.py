"""The files connector writes OpenCDC rows, or messages as they are, to files (real Spark)."""

from __future__ import annotations

import gzip
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from cdc_connectors.convert.streams import read_delimited_records
from cdc_connectors.opencdc import record_from_json
from tests.connectors.test_files_source import ids, opencdc_line, read, register, write_lines

pytestmark = pytest.mark.spark


def files_under(path: Path) -> list[str]:
    """Every file under ``path``, hidden ones too, relative to it."""
    return sorted(
        os.path.relpath(os.path.join(root, name), path)
        for root, _, names in os.walk(path)
        for name in names
    )


def source(spark: Any, tmp_path: Path, count: int = 6, **options: str) -> Any:
    write_lines(tmp_path / "in" / "a.jsonl", [opencdc_line(i) for i in range(count // 2)])
    write_lines(tmp_path / "in" / "b.jsonl", [opencdc_line(i) for i in range(count // 2, count)])
    register(spark)
    return spark.read.format("cdc-files").options(**options).load(str(tmp_path / "in"))


def test_batch_write_makes_one_visible_file_per_task_that_reads_back(spark, tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    source(spark, tmp_path).write.format("cdc-files").mode("append").save(str(out))
    names = files_under(out)
    assert len(names) == 2
    assert all(n.startswith("part-0000") and n.endswith(".jsonl") for n in names)
    # plain Python sees every record once, positions as read
    records = [
        record_from_json(line) for n in names for line in (out / n).read_bytes().splitlines()
    ]
    assert ids(records) == list(range(6))
    assert {r.position.decode().rsplit("/", 1)[-1] for r in records} >= {"a.jsonl:1", "b.jsonl:3"}
    # and the connector reads them back
    assert ids(read(spark, out)) == list(range(6))


def test_an_empty_write_leaves_a_directory_that_reads_as_empty(spark, tmp_path):  # type: ignore[no-untyped-def]
    """As Spark's file sources: a later read finds no records, not a missing path."""
    out = tmp_path / "out"
    empty = spark.createDataFrame([], "value string")
    empty.write.format("cdc-files").mode("append").save(str(out))
    assert out.is_dir() and files_under(out) == []
    assert spark.read.format("cdc-files").load(str(out)).count() == 0


def test_overwrite_replaces_what_an_earlier_job_wrote(spark, tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    df = source(spark, tmp_path)
    df.write.format("cdc-files").mode("append").save(str(out))
    df.write.format("cdc-files").mode("overwrite").save(str(out))
    assert ids(read(spark, out)) == list(range(6))


def test_length_delimited_protobuf_round_trips(spark, tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    df = source(spark, tmp_path)
    df.write.format("cdc-files").option("format", "opencdc-proto").mode("append").save(str(out))
    names = files_under(out)
    assert names and all(n.endswith(".pb") for n in names)
    written = []
    for name in names:
        with open(out / name, "rb") as stream:
            written.extend(read_delimited_records(stream, source=name))
    assert ids(written) == list(range(6))
    back = read(spark, out, format="opencdc-proto")
    original = read(spark, tmp_path / "in")
    assert sorted(back, key=lambda r: r.position) == sorted(original, key=lambda r: r.position)


def test_gzip_compression_writes_gz_files(spark, tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    writer = source(spark, tmp_path).write.format("cdc-files").option("compression", "gzip")
    writer.mode("append").save(str(out))
    names = files_under(out)
    assert names and all(n.endswith(".jsonl.gz") for n in names)
    lines = [line for n in names for line in gzip.decompress((out / n).read_bytes()).splitlines()]
    assert ids([record_from_json(line) for line in lines]) == list(range(6))
    assert ids(read(spark, out)) == list(range(6))


def test_debezium_json_output_reads_back_as_the_same_changes(spark, tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    source(spark, tmp_path).write.format("cdc-files").option("format", "debezium-json").mode(
        "append"
    ).save(str(out))
    events = [
        orjson.loads(line) for n in files_under(out) for line in (out / n).read_bytes().splitlines()
    ]
    assert sorted(e["after"]["id"] for e in events) == list(range(6))
    assert ids(read(spark, out, format="debezium-json")) == list(range(6))


def test_a_value_column_is_written_as_is(spark, tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    register(spark)
    df = spark.createDataFrame([(b"k1", "one"), (None, "two")], "key binary, value string")
    df.coalesce(1).write.format("cdc-files").mode("append").save(str(out))
    (name,) = files_under(out)
    assert (out / name).read_bytes() == b"one\ntwo\n"
    kv = tmp_path / "kv"
    df.coalesce(1).write.format("cdc-files").option("kv", "true").mode("append").save(str(kv))
    (name,) = files_under(kv)
    assert name.endswith(".kv.jsonl")
    assert (kv / name).read_bytes().splitlines() == [
        b'{"key":"k1","value":"one"}',
        b'{"key":null,"value":"two"}',
    ]


def test_keys_a_file_of_values_would_drop_are_refused(spark, tmp_path):  # type: ignore[no-untyped-def]
    """An OpenCDC record holds its key (above, the key column is the record's key again);
    a Debezium value does not: its key is refused rather than lost, naming the row."""
    out = tmp_path / "out"
    register(spark)
    df = spark.createDataFrame(
        [(None, b'{"payload":{"op":"c"}}'), (b'{"id":1}', b'{"payload":{"op":"c"}}')],
        "key binary, value binary",
    ).coalesce(1)
    with pytest.raises(Exception, match="FilesWriteError") as caught:
        df.write.format("cdc-files").option("format", "debezium-json").mode("append").save(str(out))
    assert (
        "cdc-files: row 1 of the task has a key, which a file of one debezium-json message per "
        "line would drop (use kv: true to keep it, or write the value column alone)"
    ) in str(caught.value)
    assert files_under(out) == []
    df.write.format("cdc-files").option("format", "debezium-json").option("kv", "true").mode(
        "append"
    ).save(str(out))
    (name,) = files_under(out)
    assert (out / name).read_bytes().splitlines()[1] == (
        b'{"key":{"id":1},"value":{"payload":{"op":"c"}}}'
    )


def test_a_row_the_format_cannot_write_fails_naming_its_position(spark, tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    df = source(spark, tmp_path, count=2).coalesce(1)
    with pytest.raises(Exception, match="FilesWriteError") as caught:
        df.write.format("cdc-files").option("format", "ydb-json").mode("append").save(str(out))
    assert "a.jsonl:1' cannot be written as ydb-json" in str(caught.value)
    assert files_under(out) == []  # the task removed its own file


def test_a_failed_job_leaves_no_file(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Partition 0 finishes its file; partition 1 then fails: the job's abort removes it."""
    out = tmp_path / "out"
    staging = out / "_staging"
    register(spark)
    # range partitioning puts the bad row, last in order, alone in partition 1
    df = spark.createDataFrame([("a good",), ("a good too",), ("z bad\nline",)], "value string")

    def hold_the_bad_row(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if any("\n" in v for v in batch.column("value").to_pylist()):
                # wait until partition 0 has closed its file (content appears on close)
                for _ in range(2400):
                    if any(p.stat().st_size for p in staging.glob("*part-00000*")):
                        break
                    time.sleep(0.05)
            yield batch

    parted = df.repartitionByRange(2, "value").mapInArrow(hold_the_bad_row, df.schema)
    with pytest.raises(Exception, match="line break"):
        parted.write.format("cdc-files").mode("append").save(str(out))
    assert files_under(out) == []


def test_writer_settings_and_columns_are_checked(spark, tmp_path):  # type: ignore[no-untyped-def]
    register(spark)
    df = spark.createDataFrame([("a", 1)], "value string, n int")
    with pytest.raises(Exception, match="found column 'n'"):
        df.write.format("cdc-files").mode("append").save(str(tmp_path / "out"))
    with pytest.raises(Exception, match="'failFast' does not apply to writing"):
        df.select("value").write.format("cdc-files").option("failFast", "true").mode("append").save(
            str(tmp_path / "out")
        )
    with pytest.raises(Exception, match="'compression' must be none or gzip"):
        df.select("value").write.format("cdc-files").option("compression", "zip").mode(
            "append"
        ).save(str(tmp_path / "out"))
    afile = tmp_path / "afile"
    afile.write_text("kept")
    for path, said in (
        (afile, f"'path': '{afile}' is a file, not a directory"),
        (afile / "out", f"'path': '{afile / 'out'}' cannot be a directory: '{afile}' is a file"),
    ):
        with pytest.raises(Exception, match="SettingError") as caught:
            df.select("value").write.format("cdc-files").mode("append").save(str(path))
        assert said in str(caught.value)
    assert afile.read_text() == "kept"


def test_a_batch_write_of_a_micro_batch_commits_once(spark, tmp_path):  # type: ignore[no-untyped-def]
    # What a streaming pipeline does for each micro-batch: a replay adds nothing.
    out = tmp_path / "out"
    frame = source(spark, tmp_path, count=6)
    for _ in range(2):
        frame.write.format("cdc-files").option("path", str(out)).option("batchId", "7").mode(
            "append"
        ).save()
    assert [p.name for p in out.iterdir() if not p.name.startswith("_")] == ["batch-000000000007"]
    assert len(read(spark, out)) == 6
