"""Avro schema -> Spark type, entry by entry as spark-avro's SchemaConverters maps it."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from cdc_connectors.spark.avro_types import arrow_type, avro_to_spark


def one_field(avro_type: object) -> StructField:
    """The Spark field of a record's only field ``f`` of the given Avro type."""
    result = avro_to_spark(
        {"type": "record", "name": "R", "fields": [{"name": "f", "type": avro_type}]}
    )
    assert isinstance(result, StructType)
    return result.fields[0]


def logical(base: str, name: str, **extra: object) -> dict[str, object]:
    return {"type": base, "logicalType": name, **extra}


FIXED4 = {"type": "fixed", "name": "F4", "size": 4}
ENUM = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}
INNER = {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}

TABLE: list[tuple[str, object, DataType]] = [
    ("boolean", "boolean", BooleanType()),
    ("int", "int", IntegerType()),
    ("long", "long", LongType()),
    ("float", "float", FloatType()),
    ("double", "double", DoubleType()),
    ("string", "string", StringType()),
    ("bytes", "bytes", BinaryType()),
    ("fixed", FIXED4, BinaryType()),
    ("enum", ENUM, StringType()),
    ("uuid", logical("string", "uuid"), StringType()),
    ("decimal bytes", logical("bytes", "decimal", precision=10, scale=2), DecimalType(10, 2)),
    ("decimal no scale", logical("bytes", "decimal", precision=5), DecimalType(5, 0)),
    (
        "decimal fixed",
        {**FIXED4, "logicalType": "decimal", "precision": 9, "scale": 3},
        DecimalType(9, 3),
    ),
    ("decimal 38", logical("bytes", "decimal", precision=38, scale=10), DecimalType(38, 10)),
    # A decimal Spark has no type for (as Confluent's AvroConverter reads it): its text.
    ("decimal 39", logical("bytes", "decimal", precision=39), StringType()),
    ("decimal 65,30", logical("bytes", "decimal", precision=65, scale=30), StringType()),
    ("decimal scale > precision", logical("bytes", "decimal", precision=2, scale=3), StringType()),
    ("decimal negative scale", logical("bytes", "decimal", precision=5, scale=-2), StringType()),
    (
        "decimal 65 on fixed",
        {"type": "fixed", "name": "F28", "size": 28, "logicalType": "decimal", "precision": 65},
        StringType(),
    ),
    ("date", logical("int", "date"), DateType()),
    ("time-millis", logical("int", "time-millis"), IntegerType()),
    ("time-micros", logical("long", "time-micros"), LongType()),
    ("timestamp-millis", logical("long", "timestamp-millis"), TimestampType()),
    ("timestamp-micros", logical("long", "timestamp-micros"), TimestampType()),
    ("timestamp-nanos", logical("long", "timestamp-nanos"), LongType()),
    ("local-timestamp-millis", logical("long", "local-timestamp-millis"), TimestampNTZType()),
    ("local-timestamp-micros", logical("long", "local-timestamp-micros"), TimestampNTZType()),
    (
        "duration",
        {"type": "fixed", "name": "D", "size": 12, "logicalType": "duration"},
        BinaryType(),
    ),
    ("record", INNER, StructType([StructField("x", IntegerType(), False)])),
    ("array", {"type": "array", "items": "long"}, ArrayType(LongType(), containsNull=False)),
    (
        "array of nullable",
        {"type": "array", "items": ["null", "string"]},
        ArrayType(StringType(), containsNull=True),
    ),
    (
        "map",
        {"type": "map", "values": "double"},
        MapType(StringType(), DoubleType(), valueContainsNull=False),
    ),
    (
        "map of nullable",
        {"type": "map", "values": ["null", INNER]},
        MapType(
            StringType(),
            StructType([StructField("x", IntegerType(), False)]),
            valueContainsNull=True,
        ),
    ),
    # A logical type Avro's Java parser rejects is ignored: the underlying type maps.
    ("date on long", logical("long", "date"), LongType()),
    ("timestamp on int", logical("int", "timestamp-millis"), IntegerType()),
    ("decimal on string", logical("string", "decimal", precision=4), StringType()),
    ("decimal no precision", logical("bytes", "decimal"), BinaryType()),
    ("decimal precision 0", logical("bytes", "decimal", precision=0), BinaryType()),
    (
        "decimal too big for fixed",
        {**FIXED4, "logicalType": "decimal", "precision": 10},
        BinaryType(),
    ),
    ("unknown logical type", logical("long", "epoch-weeks"), LongType()),
]


@pytest.mark.parametrize(("avro", "expected"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_each_avro_type_maps_to_its_spark_type_and_is_not_nullable(avro, expected):
    assert one_field(avro) == StructField("f", expected, nullable=False)


UNIONS: list[tuple[str, object, DataType, bool]] = [
    ("null first", ["null", "string"], StringType(), True),
    ("null last", ["long", "null"], LongType(), True),
    ("single branch", ["double"], DoubleType(), False),
    ("int long", ["int", "long"], LongType(), False),
    ("long int null", ["long", "null", "int"], LongType(), True),
    ("float double", ["double", "float"], DoubleType(), False),
    ("only null", ["null"], StructType([]), True),
    (
        "int string",
        ["int", "string"],
        StructType(
            [
                StructField("member0", IntegerType(), True),
                StructField("member1", StringType(), True),
            ]
        ),
        False,
    ),
    (
        "null is left out of the members",
        ["int", "null", "string", FIXED4],
        StructType(
            [
                StructField("member0", IntegerType(), True),
                StructField("member1", StringType(), True),
                StructField("member2", BinaryType(), True),
            ]
        ),
        True,
    ),
    (
        "records",
        [INNER, {"type": "record", "name": "Other", "fields": [{"name": "y", "type": "string"}]}],
        StructType(
            [
                StructField("member0", StructType([StructField("x", IntegerType(), False)]), True),
                StructField("member1", StructType([StructField("y", StringType(), False)]), True),
            ]
        ),
        False,
    ),
    (
        "int long string",
        ["int", "long", "string"],
        StructType(
            [
                StructField("member0", IntegerType(), True),
                StructField("member1", LongType(), True),
                StructField("member2", StringType(), True),
            ]
        ),
        False,
    ),
    ("null and a logical type", ["null", logical("int", "date")], DateType(), True),
    (
        "null and a null field",
        ["null", INNER],
        StructType([StructField("x", IntegerType(), False)]),
        True,
    ),
]


@pytest.mark.parametrize(
    ("avro", "expected", "nullable"), [u[1:] for u in UNIONS], ids=[u[0] for u in UNIONS]
)
def test_unions_map_as_spark_avro_maps_them(avro, expected, nullable):
    assert one_field(avro) == StructField("f", expected, nullable=nullable)


def test_a_null_field_is_nullable_null_type():
    assert one_field("null") == StructField("f", NullType(), nullable=True)


def test_named_types_resolve_by_namespace_and_json_text_is_accepted():
    schema = {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {"name": "a", "type": {"type": "fixed", "name": "Money", "size": 8}},
            {"name": "b", "type": "Money"},
            {"name": "c", "type": "shop.Money"},
            {
                "name": "d",
                "type": {
                    "type": "record",
                    "name": "Line",
                    "namespace": "other",
                    "fields": [{"name": "m", "type": "shop.Money"}],
                },
            },
            {"name": "e", "type": {"type": "array", "items": "other.Line"}},
        ],
    }
    line = StructType([StructField("m", BinaryType(), False)])
    expected = StructType(
        [
            StructField("a", BinaryType(), False),
            StructField("b", BinaryType(), False),
            StructField("c", BinaryType(), False),
            StructField("d", line, False),
            StructField("e", ArrayType(line, False), False),
        ]
    )
    assert avro_to_spark(schema) == expected
    assert avro_to_spark(json.dumps(schema)) == expected


def test_a_recursive_record_is_refused_naming_the_path():
    schema = {
        "type": "record",
        "name": "Node",
        "fields": [
            {"name": "value", "type": "int"},
            {
                "name": "children",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "Edge",
                        "fields": [{"name": "to", "type": ["null", "Node"]}],
                    },
                },
            },
        ],
    }
    with pytest.raises(ValueError, match=r"record Node is recursive at children\[\]\.to"):
        avro_to_spark(schema)


def test_a_decimal_scale_no_database_has_has_no_spark_type():
    with pytest.raises(ValueError, match=r"f: decimal\(5, 20000\): a scale beyond 16383"):
        one_field(logical("bytes", "decimal", precision=5, scale=20000))


def test_an_invalid_schema_is_refused():
    with pytest.raises(ValueError, match="not a valid Avro schema"):
        avro_to_spark({"type": "record", "name": "R", "fields": [{"name": "f", "type": "nope"}]})


def test_spark_interval_property_is_refused_not_mapped_wrong():
    with pytest.raises(ValueError, match=r"spark\.sql\.catalyst\.type"):
        one_field({"type": "long", "spark.sql.catalyst.type": "interval day to second"})


def test_a_bare_type_maps_too():
    assert avro_to_spark("string") == StringType()
    assert avro_to_spark(["null", "int"]) == IntegerType()


def test_arrow_type_is_the_one_spark_accepts_for_each_spark_type():
    struct = StructType(
        [
            StructField("s", StringType(), True),
            StructField("b", BinaryType(), False),
            StructField("t", TimestampType(), False),
            StructField("n", TimestampNTZType(), True),
            StructField("d", DecimalType(10, 2), False),
            StructField("a", ArrayType(IntegerType(), False), False),
            StructField("m", MapType(StringType(), LongType(), True), False),
            StructField("z", NullType(), True),
        ]
    )
    expected = pa.struct(
        [
            pa.field("s", pa.string(), True),
            pa.field("b", pa.binary(), False),
            pa.field("t", pa.timestamp("us", tz="UTC"), False),
            pa.field("n", pa.timestamp("us"), True),
            pa.field("d", pa.decimal128(10, 2), False),
            pa.field("a", pa.list_(pa.field("element", pa.int32(), False)), False),
            pa.field(
                "m",
                pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.int64(), True)),
                False,
            ),
            pa.field("z", pa.null(), True),
        ]
    )
    result = arrow_type(struct)
    assert result == expected
    # pyarrow's == ignores nested nullability: compare it field by field too
    assert [f.nullable for f in result] == [f.nullable for f in expected]
    assert result.field("a").type.value_field.nullable is False
    assert result.field("m").type.item_field.nullable is True
