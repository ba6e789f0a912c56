"""Kafka Connect schema blocks as AvroConverter's Avro schemas, and their values for fastavro."""

from __future__ import annotations

import base64
import datetime as dt
import io
import uuid
from decimal import Decimal
from typing import Any

import fastavro
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc_connectors.schema import avro as avro_schema
from cdc_connectors.schema.connect import (
    SEMANTIC_TYPES,
    connect_to_avro,
    connect_value,
    parse_connect_schema,
    semantic_type,
)
from cdc_connectors.schema.errors import SchemaError

UTC = dt.UTC


def b64(unscaled: int) -> str:
    """Connect's Decimal bytes: big-endian two's complement, base64 in JSON."""
    raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)
    return base64.b64encode(raw).decode()


def struct(name: str | None, /, *fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "struct", "fields": list(fields), "optional": False}
    if name is not None:
        schema["name"] = name
    return {**schema, **extra}


def fld(field: str, type_: str, /, *, optional: bool = False, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": optional, "field": field, **extra}


def to_avro(schema: dict[str, Any]) -> dict[str, Any]:
    """The Avro schema of a required struct: a record, which Avro 1.12's rules accept."""
    avro = connect_to_avro(schema)
    assert isinstance(avro, dict)
    avro_schema.parse(orjson.dumps(avro).decode())  # names, defaults, logical types
    return avro


def round_trip(schema: dict[str, Any], payload: Any) -> tuple[Any, Any]:
    """(connect_value's result, what fastavro reads back after writing it)."""
    parsed = fastavro.parse_schema(to_avro(schema))
    value = connect_value(schema, payload)
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed, value)
    buffer.seek(0)
    return value, fastavro.schemaless_reader(buffer, parsed)


def field_type(avro: Any, name: str) -> Any:
    return next(f for f in avro["fields"] if f["name"] == name)


# --- plain Connect types ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("connect", "avro"),
    [
        ("int8", {"type": "int", "connect.type": "int8"}),
        ("int16", {"type": "int", "connect.type": "int16"}),
        ("int32", "int"),
        ("int64", "long"),
        ("float", "float"),
        ("float32", "float"),
        ("double", "double"),
        ("float64", "double"),
        ("boolean", "boolean"),
        ("string", "string"),
        ("bytes", "bytes"),
    ],
)
def test_primitive_types_map_as_avrodata_writes_them(connect: str, avro: Any) -> None:
    schema = struct("t.V", fld("x", connect))
    assert to_avro(schema)["fields"] == [{"name": "x", "type": avro}]


def test_primitive_values_round_trip_through_fastavro() -> None:
    schema = struct(
        "t.V",
        fld("i8", "int8"),
        fld("i16", "int16"),
        fld("i32", "int32"),
        fld("i64", "int64"),
        fld("f", "float"),
        fld("d", "double"),
        fld("b", "boolean"),
        fld("s", "string"),
        fld("raw", "bytes"),
    )
    payload = {
        "i8": -128,
        "i16": 32767,
        "i32": -(2**31),
        "i64": 2**63 - 1,
        "f": 1.5,
        "d": 2,
        "b": True,
        "s": "x",
        "raw": base64.b64encode(b"\x00\xff").decode(),
    }
    value, back = round_trip(schema, payload)
    assert value["raw"] == b"\x00\xff"
    assert value["d"] == 2.0 and isinstance(value["d"], float)
    assert back == value


def test_top_level_primitive_schema_is_a_dict() -> None:
    assert connect_to_avro({"type": "string", "optional": False}) == {"type": "string"}
    assert connect_to_avro({"type": "int64", "optional": True}) == ["null", "long"]


def test_optional_field_is_null_first_union_defaulting_to_null() -> None:
    avro = to_avro(struct("t.V", fld("email", "string", optional=True)))
    assert avro["fields"] == [{"name": "email", "type": ["null", "string"], "default": None}]


def test_optional_field_with_default_puts_its_type_first() -> None:
    schema = struct("t.V", fld("n", "int32", optional=True, default=7))
    assert field_type(to_avro(schema), "n") == {
        "name": "n",
        "type": [{"type": "int", "connect.default": 7}, "null"],
        "default": 7,
    }


def test_required_field_default_is_carried_to_the_field_and_connect_default() -> None:
    schema = struct("t.V", fld("flag", "boolean", default=True), fld("note", "string"))
    fields = to_avro(schema)["fields"]
    assert fields[0] == {
        "name": "flag",
        "type": {"type": "boolean", "connect.default": True},
        "default": True,
    }
    assert fields[1] == {"name": "note", "type": "string"}


def test_null_or_missing_values_take_the_default_as_jsonconverter_does() -> None:
    schema = struct(
        "t.V", fld("n", "int32", default=7), fld("o", "string", optional=True), fld("x", "int64")
    )
    assert connect_value(schema, {"n": None, "x": 1}) == {"n": 7, "o": None, "x": 1}


def test_bytes_default_is_written_as_iso_8859_1_text() -> None:
    schema = struct("t.V", fld("raw", "bytes", default=base64.b64encode(b"\x00\xe9").decode()))
    assert field_type(to_avro(schema), "raw")["default"] == "\x00\xe9"


def test_decimal_default_is_its_unscaled_bytes() -> None:
    decimal: dict[str, Any] = {
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "2"},
        "default": b64(1999),
    }
    schema = struct("t.V", fld("price", "bytes", **decimal))
    avro = to_avro(schema)
    assert field_type(avro, "price")["default"] == "\x07\xcf"
    fastavro.parse_schema(avro)
    assert connect_value(schema, {})["price"] == Decimal("19.99")


def test_connect_metadata_becomes_connect_props() -> None:
    schema = struct(
        "shop.Order",
        fld("n", "int32", name="shop.Count", version=3, doc="how many", parameters={"a": "b"}),
        version=2,
        doc="an order",
    )
    avro = to_avro(schema)
    assert avro["connect.version"] == 2
    assert avro["connect.doc"] == "an order"
    assert avro["connect.name"] == "shop.Order"
    assert field_type(avro, "n")["type"] == {
        "type": "int",
        "connect.doc": "how many",
        "connect.version": 3,
        "connect.parameters": {"a": "b"},
        "connect.name": "shop.Count",
    }


def test_avrodata_doc_parameters_become_record_and_field_docs() -> None:
    params = {
        "io.confluent.connect.avro.record.doc": "rows",
        "io.confluent.connect.avro.field.doc.id": "the key",
    }
    avro = to_avro(struct("t.V", fld("id", "int32"), parameters=params))
    assert avro["doc"] == "rows"
    assert field_type(avro, "id")["doc"] == "the key"


# --- records and names ------------------------------------------------------------------


def test_struct_name_splits_into_namespace_and_name_at_the_last_dot() -> None:
    avro = to_avro(struct("dbserver1.inventory.customers.Value", fld("id", "int32")))
    assert avro["name"] == "Value"
    assert avro["namespace"] == "dbserver1.inventory.customers"
    assert avro["connect.name"] == "dbserver1.inventory.customers.Value"


def test_unnamed_structs_are_numbered_connect_defaults_outside_in() -> None:
    inner = struct(None, fld("x", "int32"))
    other = struct(None, fld("y", "string"))
    avro = to_avro(struct(None, {**inner, "field": "a"}, {**other, "field": "b"}))
    assert (avro["name"], avro["namespace"]) == ("ConnectDefault", "io.confluent.connect.avro")
    assert field_type(avro, "a")["type"]["name"] == "ConnectDefault2"
    assert field_type(avro, "b")["type"]["name"] == "ConnectDefault3"
    # Nested in the same namespace, they do not repeat it.
    assert "namespace" not in field_type(avro, "a")["type"]
    fastavro.parse_schema(avro)


def test_an_equal_struct_is_defined_once_then_referenced_by_name() -> None:
    row = struct("db.t.Value", fld("id", "int32"), optional=True)
    schema = struct("other.Envelope", {**row, "field": "before"}, {**row, "field": "after"})
    avro = to_avro(schema)
    assert field_type(avro, "before")["type"][1]["name"] == "Value"
    # Outside its namespace the reference is the full name (inside, the short one).
    assert field_type(avro, "after")["type"] == ["null", "db.t.Value"]
    fastavro.parse_schema(avro)


def test_an_unnamed_struct_reused_keeps_its_one_connect_default_name() -> None:
    point = struct(None, fld("x", "int32"))
    schema = struct("t.V", fld("a", "array", items=point), fld("b", "array", items=point))
    avro = to_avro(schema)
    assert field_type(avro, "b")["type"]["items"] == "io.confluent.connect.avro.ConnectDefault"
    fastavro.parse_schema(avro)


def test_dotless_name_nested_in_a_namespace_says_so_with_an_empty_namespace() -> None:
    avro = to_avro(struct("public.t", {**struct("unique", fld("id", "int32")), "field": "u"}))
    assert field_type(avro, "u")["type"]["namespace"] == ""


def test_repeated_dotless_name_inherits_the_namespace_so_references_resolve() -> None:
    data = struct("data", fld("id", "int32"), optional=True)
    schema = struct("public.t", {**data, "field": "before"}, {**data, "field": "after"})
    avro = to_avro(schema)
    assert "namespace" not in field_type(avro, "before")["type"][1]
    assert field_type(avro, "after")["type"] == ["null", "data"]
    value, back = round_trip(schema, {"before": None, "after": {"id": 1}})
    assert back == value == {"before": None, "after": {"id": 1}}


def test_two_different_structs_of_one_name_are_refused() -> None:
    a = struct("t.Row", fld("id", "int32"))
    b = struct("t.Row", fld("id", "int64"))
    with pytest.raises(SchemaError, match=r"schema\.fields\[1\]: t\.Row is defined differently"):
        to_avro(struct("t.V", {**a, "field": "a"}, {**b, "field": "b"}))


def test_names_avro_cannot_hold_are_scrubbed_and_kept_as_connect_names() -> None:
    # Debezium's topic prefixes often hold hyphens or start with a digit.
    avro = to_avro(struct("my-server.1db.t.Value", fld("id", "int32")))
    assert (avro["name"], avro["namespace"]) == ("Value", "my_server._1db.t")
    assert avro["connect.name"] == "my-server.1db.t.Value"
    value, back = round_trip(struct("my-server.1db.t.Value", fld("id", "int32")), {"id": 1})
    assert back == value == {"id": 1}


# --- arrays and maps --------------------------------------------------------------------


def test_array_and_string_keyed_map() -> None:
    schema = struct(
        "t.V",
        fld("tags", "array", items={"type": "string", "optional": False}),
        fld(
            "attrs",
            "map",
            keys={"type": "string", "optional": False},
            values={"type": "int64", "optional": True},
        ),
    )
    avro = to_avro(schema)
    assert field_type(avro, "tags")["type"] == {"type": "array", "items": "string"}
    assert field_type(avro, "attrs")["type"] == {"type": "map", "values": ["null", "long"]}
    value, back = round_trip(schema, {"tags": ["a", "b"], "attrs": {"x": 1, "y": None}})
    assert back == value == {"tags": ["a", "b"], "attrs": {"x": 1, "y": None}}


def test_map_with_non_string_keys_is_an_array_of_key_value_records() -> None:
    schema = struct(
        "t.V",
        fld(
            "m",
            "map",
            keys={"type": "int32", "optional": False},
            values={"type": "string", "optional": False},
        ),
    )
    entries = field_type(to_avro(schema), "m")["type"]
    assert entries == {
        "type": "array",
        "items": {
            "type": "record",
            "name": "MapEntry",
            "namespace": "io.confluent.connect.avro",
            "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "string"}],
        },
    }
    value, back = round_trip(schema, {"m": [[1, "one"], [2, "two"]]})
    assert value["m"] == [{"key": 1, "value": "one"}, {"key": 2, "value": "two"}]
    assert back == value


def test_a_map_reused_references_its_entry_record() -> None:
    int_keys = {"type": "int32", "optional": False}
    named: dict[str, Any] = {
        "keys": int_keys,
        "values": {"type": "string", "optional": False},
        "name": "t.Labels",
    }
    schema = struct("t.V", fld("a", "map", **named), fld("b", "map", **named))
    avro = to_avro(schema)
    assert field_type(avro, "a")["type"]["items"]["connect.internal.type"] == "MapEntry"
    assert field_type(avro, "b")["type"] == {
        "type": "array",
        "items": "Labels",
        "connect.name": "t.Labels",
    }
    value, back = round_trip(schema, {"a": [[1, "x"]], "b": []})
    assert back == value == {"a": [{"key": 1, "value": "x"}], "b": []}


def test_two_unnamed_maps_of_different_shapes_cannot_share_map_entry() -> None:
    int_keys = {"type": "int32", "optional": False}
    schema = struct(
        "t.V",
        fld("a", "map", keys=int_keys, values={"type": "string", "optional": False}),
        fld("b", "map", keys=int_keys, values={"type": "int64", "optional": False}),
    )
    with pytest.raises(SchemaError, match=r"io\.confluent\.connect\.avro\.MapEntry is defined"):
        to_avro(schema)


def test_optional_struct_with_default_stays_null_first_as_avrodata() -> None:
    point = struct("t.Point", fld("x", "int32"), optional=True, default={"x": 1})
    schema = struct("t.V", {**point, "field": "p"})
    field = field_type(to_avro(schema), "p")
    assert field["type"][0] == "null"
    assert field["default"] == {"x": 1}
    assert field["type"][1]["connect.default"] == {"x": 1}
    value, back = round_trip(schema, {"p": None})
    assert back == value == {"p": {"x": 1}}


# --- the semantic type table ------------------------------------------------------------

MICROS = 1709296215123456  # 2024-03-01T12:30:15.123456Z
WHEN = dt.datetime(2024, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)

# name -> (Connect type, parameters, JSON value, Avro type, converted value)
SEMANTIC_CASES: dict[str, tuple[str, dict[str, str], Any, dict[str, Any], Any]] = {
    "org.apache.kafka.connect.data.Decimal": (
        "bytes",
        {"scale": "2", "connect.decimal.precision": "10"},
        b64(123456),
        {"type": "bytes", "scale": 2, "precision": 10, "logicalType": "decimal"},
        Decimal("1234.56"),
    ),
    "org.apache.kafka.connect.data.Date": (
        "int32",
        {},
        7441,
        {"type": "int", "logicalType": "date"},
        dt.date(1990, 5, 17),
    ),
    "org.apache.kafka.connect.data.Time": (
        "int32",
        {},
        45015123,
        {"type": "int", "logicalType": "time-millis"},
        dt.time(12, 30, 15, 123000),
    ),
    "org.apache.kafka.connect.data.Timestamp": (
        "int64",
        {},
        MICROS // 1000,
        {"type": "long", "logicalType": "timestamp-millis"},
        WHEN.replace(microsecond=123000),
    ),
    "io.debezium.time.Date": (
        "int32",
        {},
        -1,
        {"type": "int", "logicalType": "date"},
        dt.date(1969, 12, 31),
    ),
    "io.debezium.time.Time": (
        "int32",
        {},
        1,
        {"type": "int", "logicalType": "time-millis"},
        dt.time(0, 0, 0, 1000),
    ),
    "io.debezium.time.MicroTime": (
        "int64",
        {},
        86_399_999_999,
        {"type": "long", "logicalType": "time-micros"},
        dt.time(23, 59, 59, 999999),
    ),
    "io.debezium.time.NanoTime": ("int64", {}, 5, {"type": "long"}, 5),
    "io.debezium.time.Timestamp": (
        "int64",
        {},
        -1,
        {"type": "long", "logicalType": "timestamp-millis"},
        dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
    ),
    "io.debezium.time.MicroTimestamp": (
        "int64",
        {},
        MICROS,
        {"type": "long", "logicalType": "timestamp-micros"},
        WHEN,
    ),
    "io.debezium.time.NanoTimestamp": (
        "int64",
        {},
        MICROS * 1000 + 789,
        {"type": "long"},
        MICROS * 1000 + 789,
    ),
    "io.debezium.time.ZonedTimestamp": (
        "string",
        {},
        "2011-12-03T10:15:30.030431+01:00",
        {"type": "string"},
        "2011-12-03T10:15:30.030431+01:00",
    ),
    "io.debezium.time.ZonedTime": ("string", {}, "10:15:30Z", {"type": "string"}, "10:15:30Z"),
    "io.debezium.time.Year": ("int32", {}, 2024, {"type": "int"}, 2024),
    "io.debezium.data.VariableScaleDecimal": (
        "struct",
        {},
        {"scale": 3, "value": b64(-12500)},
        {"type": "string"},
        "-12.500",
    ),
    "io.debezium.data.Json": ("string", {}, '{"a": [1]}', {"type": "string"}, '{"a": [1]}'),
    "io.debezium.data.Enum": (
        "string",
        {"allowed": "red,green"},
        "green",
        {"type": "string"},
        "green",
    ),
    "io.debezium.data.EnumSet": ("string", {"allowed": "a,b"}, "a,b", {"type": "string"}, "a,b"),
    "io.debezium.data.Uuid": (
        "string",
        {},
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        {"type": "string", "logicalType": "uuid"},
        uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ),
    "com.*.cdc.data.Decimal": (
        "string",
        {},
        "12.5",
        {"type": "bytes", "scale": 18, "precision": 38, "logicalType": "decimal"},
        Decimal("12.500000000000000000"),
    ),
    "com.*.cdc.data.timestamp": (
        "string",
        {},
        "2024-03-01 12:30:15.123456",
        {"type": "long", "logicalType": "timestamp-micros"},
        WHEN,
    ),
}
VSD_FIELDS = [fld("scale", "int32"), fld("value", "bytes")]


def semantic_schema(name: str) -> dict[str, Any]:
    connect_type, params, *_ = SEMANTIC_CASES[name]
    # The seeds spell CDL's vendor segment as "xxx"; any vendor segment means the same.
    spelled = name.replace("com.*.", "com.xxx.")
    extra: dict[str, Any] = {"name": spelled, "version": 1}
    if params:
        extra["parameters"] = params
    if connect_type == "struct":
        extra["fields"] = VSD_FIELDS
    return struct("t.V", fld("x", connect_type, **extra))


def test_every_table_entry_has_a_case() -> None:
    assert set(SEMANTIC_CASES) == set(SEMANTIC_TYPES)


@pytest.mark.parametrize("name", sorted(SEMANTIC_CASES))
def test_semantic_type_avro_type(name: str) -> None:
    _, params, _, avro_type, _ = SEMANTIC_CASES[name]
    written = field_type(to_avro(semantic_schema(name)), "x")["type"]
    logical_and_base = {k: v for k, v in written.items() if not k.startswith("connect.")}
    assert logical_and_base == avro_type
    assert written["connect.name"] == name.replace("com.*.", "com.xxx.")
    assert written["connect.version"] == 1
    if params:
        assert written["connect.parameters"] == params


@pytest.mark.parametrize("name", sorted(SEMANTIC_CASES))
def test_semantic_type_value_converts_and_round_trips(name: str) -> None:
    _, _, payload, _, expected = SEMANTIC_CASES[name]
    value, back = round_trip(semantic_schema(name), {"x": payload})
    assert value == {"x": expected}
    assert type(value["x"]) is type(expected)
    assert back == value


def test_datetimes_are_timezone_aware_utc() -> None:
    value = connect_value(semantic_schema("io.debezium.time.MicroTimestamp"), {"x": MICROS})
    assert value["x"].tzinfo is UTC


def test_connect_decimal_precision_defaults_to_64_as_avrodata() -> None:
    schema = struct(
        "t.V",
        fld("x", "bytes", name="org.apache.kafka.connect.data.Decimal", parameters={"scale": "0"}),
    )
    assert field_type(to_avro(schema), "x")["type"]["precision"] == 64


def test_connect_decimal_also_reads_the_numeric_json_format() -> None:
    schema = semantic_schema("org.apache.kafka.connect.data.Decimal")
    assert connect_value(schema, {"x": 12.3})["x"] == Decimal("12.30")
    with pytest.raises(SchemaError, match=r"^x: 12\.345 has more than 2 fraction digits"):
        connect_value(schema, {"x": 12.345})


def test_cdl_vendor_segment_is_matched_by_shape() -> None:
    assert semantic_type("com.huawei.cdc.data.Decimal") is SEMANTIC_TYPES["com.*.cdc.data.Decimal"]
    assert semantic_type("com.other.cdc.data.Decimals") is None


def test_cdl_decimal_takes_scale_and_precision_from_parameters_when_given() -> None:
    params = {"scale": "2", "precision": "5"}
    schema = struct("t.V", fld("x", "string", name="com.xxx.cdc.data.Decimal", parameters=params))
    assert field_type(to_avro(schema), "x")["type"]["scale"] == 2
    assert connect_value(schema, {"x": "-1.5"})["x"] == Decimal("-1.50")
    with pytest.raises(SchemaError, match=r"^x: 1234\.5 has more than 5 digits"):
        connect_value(schema, {"x": "1234.5"})


def test_cdl_timestamp_with_an_offset_is_normalised_to_utc() -> None:
    schema = semantic_schema("com.*.cdc.data.timestamp")
    value = connect_value(schema, {"x": "2024-03-01T14:30:15.123456+02:00"})
    assert value["x"] == WHEN


def test_connect_logical_names_match_ignoring_case_as_avrodata() -> None:
    schema = struct("t.V", fld("x", "int32", name="org.apache.kafka.connect.data.date"))
    assert field_type(to_avro(schema), "x")["type"]["logicalType"] == "date"


def test_unknown_names_keep_their_base_type_and_connect_name() -> None:
    schema = struct("t.V", fld("x", "string", name="io.debezium.data.Xml", version=1))
    assert field_type(to_avro(schema), "x")["type"] == {
        "type": "string",
        "connect.version": 1,
        "connect.name": "io.debezium.data.Xml",
    }


def test_fixed_bytes_become_an_avro_fixed() -> None:
    schema = struct("t.V", fld("h", "bytes", name="t.Hash", parameters={"connect.fixed.size": "2"}))
    assert field_type(to_avro(schema), "h")["type"]["type"] == "fixed"
    value, back = round_trip(schema, {"h": base64.b64encode(b"ab").decode()})
    assert back == value == {"h": b"ab"}
    with pytest.raises(SchemaError, match=r"^h: expected 2 bytes, got 3"):
        connect_value(schema, {"h": base64.b64encode(b"abc").decode()})


# --- errors name the place --------------------------------------------------------------


def test_unknown_connect_type_names_the_schema_path() -> None:
    schema = struct("t.V", fld("a", "int32"), fld("b", "string"), fld("c", "int128"))
    with pytest.raises(SchemaError, match=r"^schema\.fields\[2\]\.type: unknown Connect type"):
        to_avro(schema)


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "struct", "fields": {}}, r"schema\.fields: a struct needs a list"),
        ({"type": "struct", "fields": [{"type": "int32"}]}, r"schema\.fields\[0\]\.field"),
        ({"type": "array"}, r"schema\.items: a Connect schema is a JSON object"),
        ({"type": "int32", "optional": "yes"}, r"schema\.optional: expected bool"),
        ({"type": "int32", "version": "1"}, r"schema\.version: expected int"),
        ({"type": "int32", "parameters": {"a": 1}}, r"schema\.parameters\.a"),
        ({"type": "int32", "default": "x"}, r"schema\.default: expected an integer"),
        ({"type": "int64", "default": 2**64}, r"schema\.default: 18446744073709551616 is outside"),
        (
            {"type": "string", "name": "io.debezium.time.MicroTimestamp"},
            r"schema\.type: io\.debezium\.time\.MicroTimestamp is a int64, not string",
        ),
        (
            {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal"},
            r"schema\.parameters: the schema has no 'scale' parameter",
        ),
        (
            {"type": "struct", "name": "io.confluent.connect.avro.Union", "fields": []},
            r"schema\.name: .* not supported",
        ),
    ],
)
def test_malformed_schema_blocks_name_the_place(schema: dict[str, Any], where: str) -> None:
    with pytest.raises(SchemaError, match=where):
        to_avro(schema)


AMOUNT: dict[str, Any] = {
    "name": "org.apache.kafka.connect.data.Decimal",
    "parameters": {"scale": "2"},
}
ROW = struct(
    "db.t.Value",
    fld("id", "int32"),
    fld("amount", "bytes", optional=True, **AMOUNT),
    fld("big", "int64", optional=True),
    fld("ratio", "double", optional=True),
    fld("tags", "array", optional=True, items={"type": "int16", "optional": False}),
    optional=True,
)
ENVELOPE = struct("db.t.Envelope", {**ROW, "field": "after"})


@pytest.mark.parametrize(
    ("after", "message"),
    [
        ({"id": 1, "amount": "not base64!"}, r"^after\.amount: not base64"),
        ({"id": 1, "amount": 5.555}, r"^after\.amount: 5\.555 has more than 2 fraction digits"),
        ({"id": 1, "big": 2**64}, r"^after\.big: 18446744073709551616 is outside the 64-bit"),
        ({"id": "1"}, r"^after\.id: expected an integer, got a string"),
        ({"id": True}, r"^after\.id: expected an integer, got a boolean"),
        ({"id": 1.0}, r"^after\.id: expected an integer, got the number 1\.0"),
        ({"id": 2**31}, r"^after\.id: 2147483648 is outside the 32-bit"),
        ({"id": None}, r"^after\.id: null for a required int32"),
        ({"id": 1, "tags": [1, 40000]}, r"^after\.tags\[1\]: 40000 is outside the 16-bit"),
        ({"id": 1, "tags": {}}, r"^after\.tags: expected an array, got an object"),
        ({"id": 1, "ratio": 10**400}, r"^after\.ratio: 1000.* is outside the float64 range"),
    ],
)
def test_bad_values_name_the_field_path(after: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        connect_value(ENVELOPE, {"after": after})


@pytest.mark.parametrize(
    ("name", "payload", "message"),
    [
        ("io.debezium.time.MicroTime", 86_400_000_000, "not a time of day"),
        ("io.debezium.time.MicroTimestamp", 2**62, "outside years 1-9999"),
        ("io.debezium.time.Date", 3_000_000, "outside years 1-9999"),
        ("io.debezium.data.Enum", "blue", "not one of the allowed values"),
        ("io.debezium.data.Uuid", "nope", "not a UUID"),
        ("com.*.cdc.data.Decimal", "1,5", "not a decimal number"),
        ("com.*.cdc.data.timestamp", "03/01/2024", "not an ISO-8601 date-time"),
        ("io.debezium.data.VariableScaleDecimal", {"scale": 1}, "expected a string"),
        ("io.debezium.time.ZonedTimestamp", 1700000000, "expected a string"),
    ],
)
def test_bad_semantic_values_say_why(name: str, payload: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=f"^x: .*{message}"):
        connect_value(semantic_schema(name), {"x": payload})


def test_value_path_prefix_is_the_callers() -> None:
    with pytest.raises(SchemaError, match=r"^payload\.after\.id: "):
        connect_value(ENVELOPE, {"after": {"id": "x"}}, path="payload")


# --- a Debezium change event, end to end ------------------------------------------------

CUSTOMER: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"type": "int32", "optional": False, "default": 0, "field": "id"},
        {"type": "string", "optional": False, "field": "first_name"},
        {"type": "string", "optional": True, "field": "email"},
        {
            "type": "bytes",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
            "field": "balance",
        },
        {
            "type": "int64",
            "optional": True,
            "name": "io.debezium.time.MicroTimestamp",
            "version": 1,
            "field": "created_at",
        },
        {
            "type": "int32",
            "optional": True,
            "name": "io.debezium.time.Date",
            "version": 1,
            "field": "birthday",
        },
    ],
    "optional": True,
    "name": "dbserver1.inventory.customers.Value",
}
DEBEZIUM_EVENT: dict[str, Any] = {
    "schema": {
        "type": "struct",
        "fields": [
            {**CUSTOMER, "field": "before"},
            {**CUSTOMER, "field": "after"},
            {
                "type": "struct",
                "fields": [
                    {"type": "string", "optional": False, "field": "version"},
                    {"type": "string", "optional": False, "field": "connector"},
                    {"type": "string", "optional": False, "field": "name"},
                    {"type": "int64", "optional": False, "field": "ts_ms"},
                    {
                        "type": "string",
                        "optional": True,
                        "name": "io.debezium.data.Enum",
                        "version": 1,
                        "parameters": {"allowed": "true,last,false,incremental"},
                        "default": "false",
                        "field": "snapshot",
                    },
                    {"type": "string", "optional": False, "field": "db"},
                    {"type": "string", "optional": False, "field": "schema"},
                    {"type": "string", "optional": False, "field": "table"},
                    {"type": "int64", "optional": True, "field": "txId"},
                    {"type": "int64", "optional": True, "field": "lsn"},
                ],
                "optional": False,
                "name": "io.debezium.connector.postgresql.Source",
                "field": "source",
            },
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
        "optional": False,
        "name": "dbserver1.inventory.customers.Envelope",
        "version": 1,
    },
    "payload": {
        "before": None,
        "after": {
            "id": 1004,
            "first_name": "Anne",
            "email": None,
            "balance": "AeJA",
            "created_at": MICROS,
            "birthday": 7441,
        },
        "source": {
            "version": "2.5.0.Final",
            "connector": "postgresql",
            "name": "dbserver1",
            "ts_ms": 1709296215123,
            "snapshot": None,
            "db": "postgres",
            "schema": "inventory",
            "table": "customers",
            "txId": 767,
            "lsn": 24023128,
        },
        "op": "c",
        "ts_ms": 1709296215456,
    },
}


def test_debezium_postgres_customer_event_schema() -> None:
    avro = to_avro(DEBEZIUM_EVENT["schema"])
    assert (avro["name"], avro["namespace"]) == ("Envelope", "dbserver1.inventory.customers")
    before = field_type(avro, "before")
    assert before["default"] is None
    value_record = before["type"][1]
    assert value_record["name"] == "Value"
    assert "namespace" not in value_record  # the envelope's own namespace
    assert field_type(avro, "after")["type"] == ["null", "Value"]
    balance = field_type(value_record, "balance")
    assert balance == {
        "name": "balance",
        "type": [
            "null",
            {
                "type": "bytes",
                "scale": 2,
                "precision": 10,
                "connect.version": 1,
                "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
                "connect.name": "org.apache.kafka.connect.data.Decimal",
                "logicalType": "decimal",
            },
        ],
        "default": None,
    }
    assert field_type(value_record, "id") == {
        "name": "id",
        "type": {"type": "int", "connect.default": 0},
        "default": 0,
    }
    source = field_type(avro, "source")["type"]
    assert source["namespace"] == "io.debezium.connector.postgresql"
    assert field_type(source, "snapshot")["default"] == "false"


def test_debezium_postgres_customer_event_values_round_trip() -> None:
    value, back = round_trip(DEBEZIUM_EVENT["schema"], DEBEZIUM_EVENT["payload"])
    assert value["after"] == {
        "id": 1004,
        "first_name": "Anne",
        "email": None,
        "balance": Decimal("1234.56"),
        "created_at": WHEN,
        "birthday": dt.date(1990, 5, 17),
    }
    assert value["source"]["snapshot"] == "false"  # null takes the schema's default
    assert back == value


def test_parsed_schema_is_reusable_for_many_values() -> None:
    parsed = parse_connect_schema(DEBEZIUM_EVENT["schema"])
    assert connect_to_avro(parsed) == connect_to_avro(DEBEZIUM_EVENT["schema"])
    assert connect_value(parsed, DEBEZIUM_EVENT["payload"])["op"] == "c"


# --- properties -------------------------------------------------------------------------


@given(unscaled=st.integers(-(10**38) + 1, 10**38 - 1), scale=st.integers(-5, 38))
def test_decimal_bytes_decode_exactly(unscaled: int, scale: int) -> None:
    schema = struct(
        "t.V",
        fld(
            "x",
            "bytes",
            name="org.apache.kafka.connect.data.Decimal",
            parameters={"scale": str(scale), "connect.decimal.precision": "38"},
        ),
    )
    decoded = connect_value(schema, {"x": b64(unscaled)})["x"]
    sign, digits, exponent = decoded.as_tuple()
    assert exponent == -scale
    # From the digits themselves: Decimal arithmetic would round past 28 digits.
    assert int("".join(map(str, digits))) * (-1 if sign else 1) == unscaled
    if scale >= 0:  # Avro's decimal needs 0 <= scale <= precision, as AvroData notes
        value, back = round_trip(schema, {"x": b64(unscaled)})
        assert back == value


@given(st.integers(-62135596800 * 10**6, 253402300799 * 10**6 + 999999))
def test_micro_timestamps_round_trip_exactly(micros: int) -> None:
    schema = semantic_schema("io.debezium.time.MicroTimestamp")
    value, back = round_trip(schema, {"x": micros})
    assert (value["x"] - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(
        microseconds=1
    ) == micros
    assert back == value


@pytest.mark.parametrize("kind", [["int32"], {"type": "int32"}, 5, None])
def test_a_type_that_is_not_a_name_is_a_schema_error(kind: object) -> None:
    with pytest.raises(SchemaError, match="unknown Connect type"):
        connect_to_avro({"type": "struct", "fields": [{"field": "a", "type": kind}]})


def test_a_cdl_timestamp_finer_than_microseconds_is_refused_not_truncated() -> None:
    schema = {"type": "string", "optional": False, "name": "com.vendor.cdc.data.timestamp"}
    kept = connect_value(schema, "2024-02-04 11:59:56.0131230000+05:00")
    assert kept.microsecond == 13123
    with pytest.raises(SchemaError, match="finer than the microseconds"):
        connect_value(schema, "2024-02-04 11:59:56.0131234567+05:00")


def _nested_struct(depth: int) -> dict[str, object]:
    node: dict[str, object] = {"type": "int64", "optional": True}
    for level in range(depth):
        node = {
            "type": "struct",
            "optional": True,
            "name": f"n{level}",
            "fields": [{**node, "field": "n"}, {"type": "string", "optional": True, "field": "s"}],
        }
    return node


def test_a_deeply_nested_schema_has_an_identity_that_grows_with_its_size():
    # Each level once embedded its children's identity as an escaped string: the text
    # doubled per level (30 levels took 10 GB and crashed the process).
    sizes = [len(parse_connect_schema(_nested_struct(depth)).identity) for depth in (10, 20, 40)]
    assert sizes[2] < 3 * sizes[1] < 6 * sizes[0]
    assert sizes[2] < 20_000
    deep = parse_connect_schema(_nested_struct(40))
    assert deep.identity != parse_connect_schema(_nested_struct(39)).identity
    assert deep.identity == parse_connect_schema(_nested_struct(40)).identity
