"""JSON Schema subjects expanded to typed columns: the type mapping, the column decoder, and
`expand` on a real Spark."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampType,
)

from cdc_connectors.opencdc import Record
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.spark import records_dataframe
from cdc_connectors.spark.expand import expand
from cdc_connectors.spark.json_schema_decode import JsonSchemaColumnDecoder
from cdc_connectors.spark.json_schema_types import shape_of

VALUE = SerializationContext("orders", MessageField.VALUE)
ORDER: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {"money": {"type": "number", "minimum": 0}},
    "properties": {
        "id": {"type": "integer"},
        "qty": {"type": "integer", "connect.type": "int32"},
        "status": {"enum": ["new", "paid"]},
        "amount": {"$ref": "#/definitions/money"},
        "vip": {"type": ["boolean", "null"]},
        "at": {"type": "string", "format": "date-time"},
        "ship": {"oneOf": [{"type": "null"}, {"type": "string", "format": "date"}]},
        "blob": {"type": "string", "contentEncoding": "base64"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "free": {},
    },
    "required": ["id", "status"],
}


def test_json_schema_types_map_to_spark_types() -> None:
    spark = shape_of(ORDER).spark
    assert isinstance(spark, StructType)
    types = {f.name: f.dataType for f in spark.fields}
    assert types == {
        "id": LongType(),
        "qty": IntegerType(),
        "status": StringType(),
        "amount": DoubleType(),
        "vip": BooleanType(),
        "at": TimestampType(),
        "ship": DateType(),
        "blob": BinaryType(),
        "tags": ArrayType(StringType(), True),
        "attrs": MapType(StringType(), LongType(), True),
        "free": StringType(),
    }
    assert all(f.nullable for f in spark.fields)
    node = {"type": "object", "properties": {"next": {"$ref": "#"}, "n": {"type": "integer"}}}
    recursive = shape_of(node).spark
    assert isinstance(recursive, StructType) and recursive["next"].dataType["next"].dataType == (
        StringType()
    )  # a recursive $ref: JSON text past the first level
    assert shape_of({"type": ["string", "integer"]}).spark == StringType()


@pytest.fixture
def orders(tmp_path: Path) -> tuple[str, Any]:
    url = f"sqlite:///{tmp_path}/registry.db"
    return url, open_registry(url)


def _rows(client: Any) -> list[bytes]:
    serializer = JSONSerializer(json.dumps(ORDER), client)
    good = {
        "id": 1,
        "qty": 2,
        "status": "paid",
        "amount": 12.5,
        "vip": None,
        "at": "2025-01-02T03:04:05.000006Z",
        "ship": "2025-01-03",
        "blob": "AAE=",
        "tags": ["a"],
        "attrs": {"x": 1},
        "free": {"any": [1, "two"]},
        "unnamed": True,
    }
    return [
        serializer(good, VALUE),
        serializer({"id": 2, "status": "new"}, VALUE),
        serializer({"id": 3, "status": "new", "qty": 2**40}, VALUE),  # no int32
    ]


def test_the_column_decoder_validates_and_types_each_value(orders: tuple[str, Any]) -> None:
    _, client = orders
    messages = _rows(client)
    invalid = messages[1][:5] + b'{"id": 4, "status": "lost"}'
    store = SchemaStore(client)
    decoder = JsonSchemaColumnDecoder(store, store.latest("orders-value"))
    array, errors, mine = decoder.decode([*messages, invalid, None])
    rows = array.to_pylist()
    assert rows[0]["at"] == dt.datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    assert rows[0]["ship"] == dt.date(2025, 1, 3) and rows[0]["blob"] == b"\x00\x01"
    assert rows[0]["attrs"] == [("x", 1)] and json.loads(rows[0]["free"]) == {"any": [1, "two"]}
    assert rows[1]["amount"] is None and rows[1]["status"] == "new"
    assert errors[:2] == [None, None]
    assert rows[2] is None and "at /qty" in (errors[2] or "")
    assert rows[3] is None and "does not match" in (errors[3] or "") and "/status" in errors[3]
    assert rows[4] is None and errors[4] is None and all(mine)
    assert isinstance(array, pa.StructArray)


@pytest.mark.spark
def test_expand_gives_typed_columns_of_a_json_schema_subject(spark: Any, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/registry.db"
    client = open_registry(url)
    messages = _rows(client)
    other = client.register_schema("other-value", Schema('{"type": "object"}', "JSON"))
    foreign = messages[0][:1] + other.to_bytes(4, "big") + b'{"id": 9}'
    records = [
        Record.new("create", position=b"%d" % i, key={"n": i}, after=value)
        for i, value in enumerate([*messages, foreign])
    ]
    df = expand(records_dataframe(spark, records), url, "orders-value")
    after = df.schema["after"].dataType
    assert after["at"].dataType == TimestampType() and after["qty"].dataType == IntegerType()
    rows = {r.position: r for r in df.collect()}
    assert rows[b"0"].after.at.microsecond == 6 and rows[b"0"].after.tags == ["a"]
    assert rows[b"1"].after.id == 2 and rows[b"1"].error is None
    assert rows[b"2"].after is None and "at /qty" in rows[b"2"].error
    assert b"3" not in rows  # another subject's row is left out


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"f": 3.4e39}, r"not a float \(32 bits\) exactly"),
        ({"f": 16777217}, r"not a float \(32 bits\) exactly"),
        ({"f": 1e-50}, r"not a float \(32 bits\) exactly"),
        ({"t": "2024-01-01T00:00:00.123456789+05:30"}, "finer than the microseconds"),
        ({"t": "9999-12-31T23:59:59-01:00"}, "outside years 1-9999"),
        ({"t": "0001-01-01T00:00:00+01:00"}, "outside years 1-9999"),
    ],
)
def test_a_value_its_column_cannot_hold_exactly_is_an_error(value: Any, said: str) -> None:
    shape = shape_of(
        {
            "type": "object",
            "properties": {
                "f": {"type": "number", "connect.type": "float32"},
                "t": {"type": "string", "format": "date-time"},
            },
        }
    )
    with pytest.raises(ValueError, match=said):
        shape.convert(value, "")
    # what a Java float prints as, and the float itself, are held
    assert shape.convert({"f": 0.1}, "") == {"f": 0.1, "t": None}
    assert shape.convert({"f": 3.4028234663852886e38}, "")["f"] == 3.4028234663852886e38
