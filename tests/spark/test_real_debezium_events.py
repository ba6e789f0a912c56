"""Real Debezium event shapes through every path: ``convert``, a plain Spark read and a
typed Spark read of one collection.

The inputs (``examples/debezium/real``) are shaped as Debezium's connectors write them
(MySQL, PostgreSQL with TOAST placeholders, truncate, logical decoding messages,
transaction metadata and heartbeats, SQL Server, Oracle, MongoDB's JSON-text documents,
schemaless events as Flink's tests carry them, a MySQL schema change event), with values
of our own. Every event is a record or a dead letter with its reason, in every path alike;
no read is refused as a whole.
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_connectors.connectors.files import FilesDataSource
from tests.conftest import run_cli

pytestmark = pytest.mark.spark

REAL = Path("examples/debezium/real")
DLQ_ERROR = "conduit.dlq.nack.error"
UTC = dt.UTC

#: file -> its collection, and the dead-letter reasons its events give (in order).
FILES: dict[str, tuple[str, list[str]]] = {
    "mysql_items.kv.jsonl": ("inventory.items", ["a schema change event"]),
    "pg_invoices.jsonl": (
        "billing.public.invoices",
        ["op 't' is a truncate", "op 'm' is a logical decoding message"],
    ),
    "pg_parts_schemaless.jsonl": (
        "postgres.inventory.parts",
        ["a delete with neither a before image nor a key", "op 't' is a truncate"],
    ),
    "sqlserver_orders.jsonl": ("sales.dbo.Orders", []),
    "oracle_accounts.jsonl": ("ORCLPDB1.DEBEZIUM.ACCOUNTS", []),
    "mongodb_carts.kv.jsonl": ("shop.carts", []),
}


def is_kv(name: str) -> bool:
    return name.endswith(".kv.jsonl")


def converted(name: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The records and dead-letter reasons of ``convert`` (a subprocess, as a user runs it)."""
    args = ["convert", "--from", "debezium-json", "--to", "opencdc-json"]
    if is_kv(name):
        args.append("--kv")
    done = run_cli(*args, str(REAL / name))
    assert done.returncode in (0, 1), done.stderr.decode()
    lines = [orjson.loads(line) for line in done.stdout.splitlines()]
    records = [line["value"] if is_kv(name) else line for line in lines]
    where = f"error: {REAL / name}:"
    reasons = [
        line.split(": ", 2)[2]
        for line in done.stderr.decode().splitlines()
        if line.startswith(where)
    ]
    return records, reasons


def read(spark: Any, name: str, **options: str) -> Any:
    spark.dataSource.register(FilesDataSource)
    reader = spark.read.format("cdc-files").option("format", "debezium-json")
    return reader.option("kv", str(is_kv(name)).lower()).options(**options).load(str(REAL / name))


def plain(spark: Any, name: str) -> list[Any]:
    return read(spark, name).collect()


def typed(spark: Any, name: str) -> Any:
    return read(spark, name, typed="true", collection=FILES[name][0])


def comparable(metadata: dict[str, str]) -> dict[str, str]:
    """Metadata as every path sets it alike (the node that made a dead letter aside)."""
    return {k: v for k, v in metadata.items() if not k.startswith("conduit.dlq.nack.node")}


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_event_is_a_record_or_a_dead_letter_alike_in_every_path(spark, name):  # type: ignore[no-untyped-def]
    collection, reasons = FILES[name]
    records, errors = converted(name)
    assert len(errors) == len(reasons)
    for error, reason in zip(errors, reasons, strict=True):
        assert reason in error

    rows = plain(spark, name)
    good = [r for r in rows if r.operation != "dead-letter"]
    bad = [r for r in rows if r.operation == "dead-letter"]
    assert [r.operation for r in good] == [r["operation"] for r in records]
    assert [comparable(dict(r.metadata)) for r in good] == [
        comparable(r["metadata"]) for r in records
    ]
    assert [r.metadata[DLQ_ERROR] for r in bad] == errors

    frame = typed(spark, name)
    typed_rows = frame.collect()
    typed_good = [r for r in typed_rows if r.dead_letter is None]
    typed_bad = [r for r in typed_rows if r.dead_letter is not None]
    assert [r.operation for r in typed_good] == [r["operation"] for r in records]
    assert [comparable(dict(r.metadata)) for r in typed_good] == [
        comparable(r["metadata"]) for r in records
    ]
    assert len(typed_bad) == len(errors)
    for row, error in zip(typed_bad, errors, strict=True):
        assert row.metadata[DLQ_ERROR] == error
    for row, record in zip(typed_good, records, strict=True):
        assert row.metadata["opencdc.collection"] == collection
        for side in ("before", "after"):
            assert (getattr(row, side) is None) == (record["payload"][side] is None)


def test_times_are_exact_to_the_microsecond_and_finer_ones_stay_counts(spark):  # type: ignore[no-untyped-def]
    after = typed(spark, "sqlserver_orders.jsonl").collect()[0].after
    # datetime2(7): NanoTimestamp, a count of nanoseconds; datetime: Timestamp (ms).
    assert after.PlacedAt == 1_710_000_000_123_456_789
    assert after.Legacy == dt.datetime(2024, 3, 9, 16, 0, 0, 123000)
    assert after.SlotTime == 45_296_789_012_345  # NanoTime: ns past midnight
    assert after.ShippedAt == "2024-03-09T16:00:00.1234567-05:00"  # offset and digits kept
    assert after.ShipDate == dt.date(2024, 3, 9)
    rows = typed(spark, "pg_invoices.jsonl").collect()
    assert rows[0].after.created_at == dt.datetime(2024, 6, 1, 12, 0, 0, 654321)
    assert rows[2].after.created_at == dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    assert rows[2].after.due_on == dt.date(1, 1, 1)
    assert rows[0].after.cutoff == 86_399_999_999  # MicroTime: microseconds past midnight
    # source.ts_ns is the finest change time there is: createdAt in nanoseconds.
    assert rows[0].metadata["opencdc.createdAt"] == "1717243200700250001"


def test_decimals_are_exact_in_the_typed_read(spark):  # type: ignore[no-untyped-def]
    account = typed(spark, "oracle_accounts.jsonl").collect()[0].after.asDict()
    assert account["ID"] == Decimal("12345678901234567890123456789012345678")
    assert account["BALANCE"] == "1000000000000000000000000000000000000000.5"
    assert account["RATE"] == Decimal("0.012345")
    pg = typed(spark, "pg_invoices.jsonl").collect()
    assert pg[0].after.amount == Decimal("99999999.99")
    assert pg[0].after.fee == "-0.75"  # money: a Decimal without precision, its text
    assert pg[0].after.ratio == "3.14159265358979323846264338327950288419716939937510"
    assert pg[1].after.ratio == "-0.000000000000000000000000000000000000000001"


def test_toast_placeholders_are_kept_and_named(spark):  # type: ignore[no-untyped-def]
    update = typed(spark, "pg_invoices.jsonl").collect()[1]
    assert update.after.note == "__debezium_unavailable_value"
    assert update.after.blob == b"__debezium_unavailable_value"
    assert update.metadata["debezium.unavailable.columns"] == "meta,labels,note,blob"


def test_mongodb_documents_are_rows_in_every_path(spark):  # type: ignore[no-untyped-def]
    records, errors = converted("mongodb_carts.kv.jsonl")
    assert errors == []
    assert records[0]["payload"]["after"]["_id"] == {"$oid": "65f1a2b3c4d5e6f708192a3b"}
    assert records[0]["payload"]["after"]["total"] == {"$numberDecimal": "12.50"}
    assert records[0]["metadata"]["opencdc.collection"] == "shop.carts"
    assert "debezium.updateDescription" in records[1]["metadata"]
    frame = typed(spark, "mongodb_carts.kv.jsonl")
    rows = frame.collect()
    assert rows[1].after.items[1].sku == "B2" and rows[1].after.items[1].qty == 1
    assert rows[1].after._id == '{"$oid":"65f1a2b3c4d5e6f708192a3b"}'
    assert rows[2].operation == "delete" and rows[2].key.structured_data is not None


def test_schemaless_events_are_typed_by_columns_inferred_from_them(spark):  # type: ignore[no-untyped-def]
    frame = typed(spark, "pg_parts_schemaless.jsonl")
    after = frame.schema["after"].dataType
    assert [f.name for f in after] == ["id", "name", "description", "weight", "price"]
    assert after["id"].dataType.simpleString() == "bigint"
    assert after["weight"].dataType.simpleString() == "double"
    rows = [r for r in frame.collect() if r.dead_letter is None]
    assert [r.after.weight for r in rows if r.after] == [1.5, 0.02, 1.75, 0.03, 0.01]


def test_mysql_types_come_out_typed(spark):  # type: ignore[no-untyped-def]
    rows = typed(spark, "mysql_items.kv.jsonl").collect()
    after = rows[0].after
    assert after.unit_price == Decimal("19.99")
    assert after.stocked_at == dt.datetime(2024, 1, 2, 0, 0, 0, 123000)
    assert after.audited_at == dt.datetime(2024, 1, 2, 0, 0, 0, 123456)
    assert after.model_year == 2023 and after.barcode == 9007199254740993
    assert after.flags == bytes([0x05, 0x08])
    assert after.footprint.srid == 4326 and after.origin.srid is None
    assert base64.b64encode(after.origin.wkb).startswith(b"AQEAAAA")
    assert rows[1].after.listed_on == dt.date(1969, 12, 31)
