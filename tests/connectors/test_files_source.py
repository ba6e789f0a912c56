"""The files connector reads directories of change messages as OpenCDC rows (real Spark)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_connectors.connectors.files import FilesDataSource
from cdc_connectors.opencdc import Record
from cdc_connectors.spark import record_from_row
from cdc_connectors.spark.schema import OPENCDC_SCHEMA
from tests.connectors.streams import drain

pytestmark = pytest.mark.spark

DLQ_ERROR = "conduit.dlq.nack.error"


def opencdc_line(ident: int, *, position: str = "") -> bytes:
    """One OpenCDC JSON record; an empty position is filled with its file and line."""
    return orjson.dumps(
        {
            "position": position,
            "operation": "create",
            "metadata": {"opencdc.collection": "shop.orders"},
            "key": {"id": ident},
            "payload": {"before": None, "after": {"id": ident, "amount": f"{ident}.50"}},
        }
    )


def debezium_line(ident: int, op: str = "c") -> bytes:
    after = {"id": ident, "email": f"user{ident}@example.org"}
    return orjson.dumps(
        {
            "before": None if op == "c" else after,
            "after": None if op == "d" else after,
            "source": {
                "version": "2.5.0.Final",
                "connector": "mysql",
                "name": "db",
                "ts_ms": 1,
                "db": "inventory",
                "table": "customers",
            },
            "op": op,
            "ts_ms": 2,
        }
    )


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(line + b"\n" for line in lines)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def register(spark: Any) -> None:
    spark.dataSource.register(FilesDataSource)


def read(spark: Any, path: Path | str, **options: str) -> list[Record]:
    register(spark)
    df = spark.read.format("cdc-files").options(**options).load(str(path))
    return [record_from_row(row) for row in df.collect()]


def ids(records: list[Record]) -> list[int]:
    return sorted(r.payload.after["id"] for r in records if isinstance(r.payload.after, dict))


def is_letter(record: Record) -> bool:
    return DLQ_ERROR in record.metadata


def test_opencdc_json_directory_reads_as_rows_positioned_by_file_and_line(spark, tmp_path):  # type: ignore[no-untyped-def]
    a = write_lines(tmp_path / "in" / "a.jsonl", [opencdc_line(i) for i in range(5)])
    b = write_lines(tmp_path / "in" / "sub" / "b.jsonl", [opencdc_line(i) for i in range(5, 8)])
    # being written (hidden), and Spark-style metadata: not read
    write_lines(tmp_path / "in" / ".c.jsonl.tmp", [b"not read"])
    write_lines(tmp_path / "in" / "_meta" / "d.jsonl", [b"not read"])
    register(spark)
    df = spark.read.format("cdc-files").option("maxRecordsPerBatch", "2").load(str(tmp_path / "in"))
    assert df.schema == OPENCDC_SCHEMA
    assert df.rdd.getNumPartitions() == 2  # one per file
    records = [record_from_row(row) for row in df.collect()]
    assert ids(records) == list(range(8))
    positions = sorted(r.position.decode() for r in records)
    assert positions == sorted(
        [f"{a}:{n}" for n in range(1, 6)] + [f"{b}:{n}" for n in range(1, 4)]
    )
    first = next(r for r in records if r.position == f"{a}:1".encode())
    assert first.key == {"id": 0}
    assert first.metadata["opencdc.collection"] == "shop.orders"
    assert not any(is_letter(r) for r in records)


def test_a_position_in_the_record_is_kept(spark, tmp_path):  # type: ignore[no-untyped-def]
    write_lines(tmp_path / "in" / "a.jsonl", [opencdc_line(1, position="b3JkZXJzLzAvMQ==")])
    (record,) = read(spark, tmp_path / "in")
    assert record.position == b"orders/0/1"


def test_debezium_json_files_become_opencdc_rows(spark, tmp_path):  # type: ignore[no-untyped-def]
    path = write_lines(
        tmp_path / "in" / "customers.jsonl",
        [debezium_line(1), debezium_line(2, "u"), debezium_line(3, "d")],
    )
    records = read(spark, tmp_path / "in", format="debezium-json")
    by_line = {r.position.decode(): r for r in records}
    assert sorted(by_line) == [f"{path}:1", f"{path}:2", f"{path}:3"]
    assert [str(by_line[f"{path}:{n}"].operation) for n in (1, 2, 3)] == [
        "create",
        "update",
        "delete",
    ]
    created = by_line[f"{path}:1"]
    assert created.payload.after == {"id": 1, "email": "user1@example.org"}
    assert created.metadata["opencdc.collection"] == "inventory.customers"


def test_kv_lines_carry_the_key_to_the_format(spark, tmp_path):  # type: ignore[no-untyped-def]
    lines = [
        b'{"key": {"id": 7}, "value": ' + debezium_line(7) + b"}",
        b'{"key": {"id": 7}, "value": null}',  # a tombstone: skipped by policy
    ]
    write_lines(tmp_path / "in" / "customers.kv.jsonl", lines)
    records = read(spark, tmp_path / "in", format="debezium-json", kv="true")
    assert len(records) == 1
    assert records[0].key == {"id": 7}


def test_gzip_files_are_read_like_plain_ones(spark, tmp_path):  # type: ignore[no-untyped-def]
    zipped = write_lines(tmp_path / "in" / "a.jsonl.gz", [opencdc_line(i) for i in range(3)])
    write_lines(tmp_path / "in" / "b.jsonl", [opencdc_line(3)])
    records = read(spark, tmp_path / "in")
    assert ids(records) == [0, 1, 2, 3]
    assert f"{zipped}:3".encode() in {r.position for r in records}


def test_a_single_file_and_a_glob_can_be_read(spark, tmp_path):  # type: ignore[no-untyped-def]
    write_lines(tmp_path / "in" / "a.jsonl", [opencdc_line(1)])
    write_lines(tmp_path / "in" / "b.jsonl.gz", [opencdc_line(2)])
    assert ids(read(spark, tmp_path / "in" / "a.jsonl")) == [1]
    assert ids(read(spark, str(tmp_path / "in" / "*.gz"))) == [2]


def test_junk_lines_become_dead_letter_rows_with_their_bytes_and_reason(spark, tmp_path):  # type: ignore[no-untyped-def]
    path = write_lines(
        tmp_path / "in" / "a.jsonl",
        [opencdc_line(1), b"this is not json", opencdc_line(2), b'{"operation": "explode"}'],
    )
    records = read(spark, tmp_path / "in")
    good = [r for r in records if not is_letter(r)]
    letters = {r.position.decode(): r for r in records if is_letter(r)}
    assert len(good) + len(letters) == 4
    assert ids(good) == [1, 2]
    assert sorted(letters) == [f"{path}:2", f"{path}:4"]
    junk = letters[f"{path}:2"]
    assert junk.payload.after == b"this is not json"
    assert "JSON" in junk.metadata[DLQ_ERROR]
    assert letters[f"{path}:4"].payload.after == b'{"operation": "explode"}'
    assert letters[f"{path}:4"].metadata[DLQ_ERROR]


def test_a_broken_length_delimited_file_keeps_its_tail_as_a_dead_letter(spark, tmp_path):  # type: ignore[no-untyped-def]
    from cdc_connectors.convert.streams import delimit
    from cdc_connectors.opencdc import record_to_proto_bytes

    good = delimit(record_to_proto_bytes(Record.new("create", after={"id": 1})))
    path = tmp_path / "in" / "a.pb"
    path.parent.mkdir()
    path.write_bytes(good + b"\x05abc")  # says 5 bytes, holds 3
    records = read(spark, tmp_path / "in", format="opencdc-proto")
    assert len(records) == 2
    (letter,) = [r for r in records if is_letter(r)]
    assert letter.position.decode() == f"{path}: message 2, byte {len(good)}"
    assert letter.payload.after == b"\x05abc"
    assert "truncated" in letter.metadata[DLQ_ERROR]


def test_fail_fast_stops_at_the_first_bad_line_naming_it(spark, tmp_path):  # type: ignore[no-untyped-def]
    path = write_lines(tmp_path / "in" / "a.jsonl", [opencdc_line(1), b"junk", b"more junk"])
    with pytest.raises(Exception, match="FailFastError") as caught:
        read(spark, tmp_path / "in", failFast="true")
    assert f"{path}:2: invalid JSON" in str(caught.value)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"colour": "blue"}, "'colour'"),
        ({"kv": "maybe"}, "'kv'"),
        ({"maxRecordsPerBatch": "0"}, "'maxRecordsPerBatch'"),
        ({"format": "no-such-format"}, "'format'"),
        ({"format.nonsense": "1"}, "'format.*'"),
        ({"compression": "gzip"}, "'compression' does not apply to reading"),
        ({"registry": "http://user:@127.0.0.1:9/"}, "setting 'registry': registry URL"),
    ],
)
def test_a_bad_setting_is_an_error_naming_it(spark, tmp_path, options, named):  # type: ignore[no-untyped-def]
    write_lines(tmp_path / "in" / "a.jsonl", [opencdc_line(1)])
    with pytest.raises(Exception, match="SettingError") as caught:
        read(spark, tmp_path / "in", **options)
    assert named in str(caught.value)


def test_a_missing_path_is_an_error_naming_it(spark, tmp_path):  # type: ignore[no-untyped-def]
    missing = tmp_path / "nowhere"
    with pytest.raises(Exception, match="does not exist") as caught:
        read(spark, missing)
    assert f"'path': '{missing}' does not exist" in str(caught.value)


def test_a_glob_matching_nothing_is_an_error_naming_it(spark, tmp_path):  # type: ignore[no-untyped-def]
    """As Spark's file sources refuse it; a glob that matches an empty directory reads none."""
    write_lines(tmp_path / "in" / "a.jsonl", [opencdc_line(1)])
    for pattern in (tmp_path / "in" / "*.none", tmp_path / "nowhere" / "*.jsonl"):
        with pytest.raises(Exception, match="matches no file") as caught:
            read(spark, pattern)
        assert f"'path': '{pattern}' matches no file" in str(caught.value)
    (tmp_path / "empty").mkdir()
    assert read(spark, tmp_path / "empt*") == []
    assert ids(read(spark, tmp_path / "i*")) == [1]


def test_streaming_picks_up_new_files_and_a_restart_reads_none_twice(spark, tmp_path):  # type: ignore[no-untyped-def]
    register(spark)
    source = tmp_path / "in"
    write_lines(source / "a.jsonl", [opencdc_line(1), opencdc_line(2)])
    write_lines(source / "b.jsonl", [opencdc_line(3)])
    seen: list[tuple[int, list[int]]] = []

    def collect(df: Any, batch_id: int) -> None:
        seen.append((batch_id, ids([record_from_row(r) for r in df.collect()])))

    def run() -> None:
        query = (
            spark.readStream.format("cdc-files")
            .option("maxFilesPerTrigger", "1")
            .load(str(source))
            .writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        assert query.exception() is None

    run()
    assert seen == [(0, [1, 2]), (1, [3])]  # one file per micro-batch
    write_lines(source / "c.jsonl", [opencdc_line(4)])
    write_lines(source / ".d.jsonl", [opencdc_line(5)])  # still being written
    run()
    assert seen[2:] == [(2, [4])]
    run()  # nothing new
    assert len(seen) == 3


def test_typed_reads_debezium_schema_blocks_into_spark_types(spark: Any) -> None:
    from decimal import Decimal

    from pyspark.sql.types import DecimalType, TimestampType

    from cdc_connectors.connectors.files import FilesDataSource

    spark.dataSource.register(FilesDataSource)
    df = (
        spark.read.format("cdc-files")
        .option("path", "examples/debezium/shop/orders.jsonl")
        .option("format", "debezium-json")
        .option("typed", "true")
        .load()
    )
    assert df.schema["after"].dataType["amount"].dataType == DecimalType(10, 2)
    assert df.schema["after"].dataType["created_at"].dataType == TimestampType()
    rows = df.collect()
    good = [r for r in rows if r.dead_letter is None]
    bad = [r for r in rows if r.dead_letter is not None]
    assert (len(good), len(bad)) == (5, 3)
    assert Decimal("19.99") in {r.after.amount for r in good if r.after}
    assert {bytes(r.position).decode() for r in bad} == {
        f"examples/debezium/shop/orders.jsonl:{n}" for n in (5, 6, 8)
    }


def test_an_unreadable_file_is_a_dead_letter_and_the_others_are_read(spark, tmp_path):  # type: ignore[no-untyped-def]
    from cdc_connectors.connectors.files import FilesDataSource

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(opencdc_line(1) + b"\n" + opencdc_line(2) + b"\n")
    whole = gzip.compress(opencdc_line(3) + b"\n" * 2000)
    (folder / "b.jsonl.gz").write_bytes(whole[: len(whole) // 2])  # cut off mid-write
    spark.dataSource.register(FilesDataSource)
    rows = spark.read.format("cdc-files").option("path", str(folder)).load().collect()
    letters = [r for r in rows if DLQ_ERROR in dict(r.metadata)]
    assert len(rows) - len(letters) >= 2
    (letter,) = [r for r in letters if "b.jsonl.gz" in bytes(r.position).decode()]
    assert "cannot read" in dict(letter.metadata)[DLQ_ERROR]
    assert bytes(letter.payload.after.raw_data) == whole[: len(whole) // 2]


def test_a_batch_read_of_an_empty_directory_is_zero_rows(spark, tmp_path):  # type: ignore[no-untyped-def]
    (tmp_path / "in").mkdir()
    assert read(spark, tmp_path / "in") == []


def test_a_setting_error_of_a_streaming_read_reaches_the_user(spark, tmp_path):  # type: ignore[no-untyped-def]
    register(spark)
    write_lines(tmp_path / "in" / "a.jsonl", [opencdc_line(1)])
    with pytest.raises(Exception, match="'compression' does not apply to reading") as caught:
        stream = (
            spark.readStream.format("cdc-files")
            .option("path", str(tmp_path / "in"))
            .option("compression", "gzip")
            .load()
        )
        drain(stream, tmp_path / "cp")
    assert "UnboundLocalError" not in str(caught.value)
