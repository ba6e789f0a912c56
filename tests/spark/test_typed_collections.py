"""Typed reads over several collections: one read per collection, chosen with ``collection``.

The README's shop example (``examples/debezium/shop``: orders and customers) read with
``typed: true``: each collection typed by its own schema, a read that would mix them
refused with the collections it found, and no single message's schema ending a read.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from pyspark.sql.types import BooleanType, DecimalType, StringType, TimestampType

from cdc_connectors.connectors.files import FilesDataSource
from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder

pytestmark = pytest.mark.spark

SHOP = Path("examples/debezium/shop")
ORDERS = (SHOP / "orders.jsonl").read_bytes().splitlines()
CUSTOMERS = (SHOP / "customers.jsonl").read_bytes().splitlines()
DLQ_ERROR = "conduit.dlq.nack.error"


def typed(spark: Any, path: Path | str, **options: str) -> Any:
    spark.dataSource.register(FilesDataSource)
    reader = spark.read.format("cdc-files").option("format", "debezium-json")
    return reader.option("typed", "true").options(**options).load(str(path))


def split(rows: list[Any]) -> tuple[list[Any], list[Any]]:
    good = [r for r in rows if r.dead_letter is None]
    return good, [r for r in rows if r.dead_letter is not None]


def places(rows: list[Any]) -> set[str]:
    return {bytes(r.position).decode() for r in rows}


def test_a_typed_read_of_several_collections_is_refused_naming_them_and_the_setting(spark):  # type: ignore[no-untyped-def]
    with pytest.raises(Exception) as caught:
        typed(spark, SHOP).schema  # noqa: B018
    text = str(caught.value)
    assert "shop.public.customers" in text and "shop.public.orders" in text
    assert "'collection'" in text


def test_each_collection_of_the_shop_is_typed_by_its_own_schema(spark):  # type: ignore[no-untyped-def]
    orders = typed(spark, SHOP, collection="shop.public.orders")
    assert orders.schema["after"].dataType["amount"].dataType == DecimalType(10, 2)
    assert orders.schema["after"].dataType["created_at"].dataType == TimestampType()
    good, bad = split(orders.collect())
    # The rows and dead letters of a read of orders.jsonl alone, no customer; and the line
    # of customers.jsonl that is no JSON (of no collection one can tell): never lost.
    assert (len(good), len(bad)) == (5, 4)
    assert places(bad) == {f"{SHOP}/orders.jsonl:{n}" for n in (5, 6, 8)} | {
        f"{SHOP}/customers.jsonl:5"
    }
    assert {dict(r.metadata)["opencdc.collection"] for r in good} == {"shop.public.orders"}
    assert Decimal("19.99") in {r.after.amount for r in good if r.after}

    customers = typed(spark, SHOP, collection="shop.public.customers")
    after = customers.schema["after"].dataType
    assert after["vip"].dataType == BooleanType()
    assert after["email"].dataType == StringType()
    assert "amount" not in after.fieldNames()
    good, bad = split(customers.collect())
    # Its own bad line, and the order without a source (no collection): the letters of
    # both reads. The orders' truncate (op t) is an order: not this read's.
    assert (len(good), len(bad)) == (5, 2)
    assert places(bad) == {f"{SHOP}/customers.jsonl:5", f"{SHOP}/orders.jsonl:5"}
    assert {r.after.email for r in good if r.after} >= {"sally.thomas@acme.com", "ed@walker.com"}


def test_one_file_holding_both_collections_is_refused_then_read_one_collection_at_a_time(
    spark: Any, tmp_path: Path
) -> None:
    mixed = tmp_path / "mixed.jsonl"
    lines = [line for pair in zip(ORDERS, CUSTOMERS, strict=False) for line in pair]
    mixed.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(Exception, match="several collections"):
        typed(spark, mixed).schema  # noqa: B018
    good, bad = split(typed(spark, mixed, collection="shop.public.customers").collect())
    assert {dict(r.metadata)["opencdc.collection"] for r in good} == {"shop.public.customers"}
    assert (len(good), len(bad)) == (5, 2)


def test_a_collection_the_files_do_not_hold_is_refused_listing_those_they_do(spark):  # type: ignore[no-untyped-def]
    with pytest.raises(Exception) as caught:
        typed(spark, SHOP, collection="shop.public.invoices").schema  # noqa: B018
    text = str(caught.value)
    assert "shop.public.invoices" in text
    assert "shop.public.customers" in text and "shop.public.orders" in text


def test_collection_without_typed_is_refused(spark):  # type: ignore[no-untyped-def]
    spark.dataSource.register(FilesDataSource)
    with pytest.raises(Exception, match="chooses the collection of a typed read"):
        spark.read.format("cdc-files").option("format", "debezium-json").option(
            "collection", "shop.public.orders"
        ).load(str(SHOP)).collect()


def test_a_first_message_whose_schema_cannot_be_typed_is_a_dead_letter_not_the_end(
    spark: Any, tmp_path: Path
) -> None:
    # The first order's row schema names one struct twice with different fields: no Avro
    # form. The read takes its columns from the next order and keeps the first as a letter.
    document = orjson.loads(ORDERS[0])
    clash = {"type": "struct", "name": "shop.Part", "optional": True, "fields": []}
    for side in document["schema"]["fields"][:2]:
        side["fields"] = [
            *side["fields"],
            {**clash, "field": "p1", "fields": [{"type": "int32", "optional": True, "field": "x"}]},
            {**clash, "field": "p2", "fields": [{"type": "int64", "optional": True, "field": "x"}]},
        ]
    path = tmp_path / "orders.jsonl"
    path.write_bytes(b"\n".join([orjson.dumps(document), *ORDERS[1:]]) + b"\n")
    df = typed(spark, path)
    assert df.schema["after"].dataType["amount"].dataType == DecimalType(10, 2)
    good, bad = split(df.collect())
    assert (len(good), len(bad)) == (4, 4)
    (first,) = [r for r in bad if bytes(r.position).decode().endswith(":1")]
    assert "shop.Part is defined differently" in dict(first.metadata)[DLQ_ERROR]


# --- the decoder itself (no Spark job) -----------------------------------------------------


def test_a_message_of_another_collection_is_a_dead_letter_saying_how_to_read_it() -> None:
    decoder = TypedDebeziumDecoder.from_message(DebeziumJsonFormat(), Message(ORDERS[0]))
    assert decoder.collection == "shop.public.orders"
    batch, errors = decoder.decode_arrays(pa.array([ORDERS[0], CUSTOMERS[0]], pa.binary()))
    assert batch.num_rows == 1
    ((index, error),) = errors
    assert index == 1
    assert "shop.public.customers" in error.reason and "'collection'" in error.reason


def test_a_decoder_that_selects_its_collection_leaves_the_others_out() -> None:
    decoder = TypedDebeziumDecoder.from_message(
        DebeziumJsonFormat(), Message(ORDERS[0]), others="skip"
    )
    values = pa.array([CUSTOMERS[0], ORDERS[0], CUSTOMERS[1], ORDERS[1]], pa.binary())
    batch, errors = decoder.decode_arrays(values)
    assert errors == []
    assert [row["id"] for row in batch.column("after").to_pylist()] == [1, 2]


def test_a_streaming_typed_read_of_one_collection(spark: Any, tmp_path: Path) -> None:
    spark.dataSource.register(FilesDataSource)
    stream = (
        spark.readStream.format("cdc-files")
        .option("format", "debezium-json")
        .option("typed", "true")
        .option("collection", "shop.public.orders")
        .load(str(SHOP))
    )
    assert stream.schema["after"].dataType["amount"].dataType == DecimalType(10, 2)
    query = (
        stream.writeStream.format("memory")
        .queryName("typed_orders")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    rows = spark.sql("SELECT * FROM typed_orders").collect()
    good, bad = split(rows)
    assert {dict(r.metadata)["opencdc.collection"] for r in good} == {"shop.public.orders"}
    assert (len(good), len(bad)) == (5, 4)
