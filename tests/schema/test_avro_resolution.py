"""Writer-to-reader resolution as the Avro specification reads it, on both decoders.

The same pairs go through ``avro_values.decode`` (``convert``, ``RecordDecoder``) and the
columnar ``AvroBatchDecoder`` (Spark's ``expand``, the typed Debezium path): one answer.
Expected values are spelled out from the specification, not computed by the code.
"""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Any
from uuid import UUID

import fastavro
import pytest

from cdc_connectors.opencdc import CodecError
from cdc_connectors.schema import avro_values
from cdc_connectors.schema.avro_resolution import for_reading
from cdc_connectors.spark.avro_decode import AvroBatchDecoder

WRITER = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}]}


def _field(name: str, type_: Any, default: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "default": default}


def _reader(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}, *fields]}


def _body(schema: dict[str, Any], value: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def _both(writer: dict[str, Any], reader: dict[str, Any], value: dict[str, Any]) -> tuple:
    """The value read by the per-message decoder and by the columnar one."""
    body = _body(writer, value)
    one = avro_values.decode(body, fastavro.parse_schema(writer), fastavro.parse_schema(reader))
    array, errors = AvroBatchDecoder(writer, reader).decode([body], [0])
    assert errors == [None]
    return one, array.to_pylist()[0]


DECIMAL_9_2 = {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}
FIXED_3 = {"type": "fixed", "name": "F3", "size": 3}
FIXED_DECIMAL = {
    "type": "fixed",
    "name": "FD",
    "size": 2,
    "logicalType": "decimal",
    "precision": 4,
    "scale": 2,
}


@pytest.mark.parametrize(
    ("type_", "default", "expected"),
    [
        ("bytes", "\u00ff\u0000\u0080", b"\xff\x00\x80"),
        ("bytes", "", b""),
        (FIXED_3, "\u00ff\u0000\u0080", b"\xff\x00\x80"),
        (DECIMAL_9_2, "\u0000", Decimal("0.00")),
        (DECIMAL_9_2, "\u00ff\u0038", Decimal("-2.00")),
        (DECIMAL_9_2, "", Decimal("0.00")),
        (DECIMAL_9_2, "\u0001\u0000", Decimal("2.56")),
        (FIXED_DECIMAL, "\u0001\u0000", Decimal("2.56")),
        ("float", 0.1, 0.10000000149011612),
        ("double", 1, 1.0),
    ],
)
def test_defaults_are_read_in_the_json_encoding_of_their_type(type_, default, expected):
    one, batch = _both(WRITER, _reader(_field("d", type_, default)), {"id": 1})
    assert one["d"] == expected and type(one["d"]) is type(expected)
    assert batch["d"] == expected and type(batch["d"]) is type(expected)


def test_a_record_default_takes_the_defaults_of_the_fields_it_leaves_out():
    inner = {
        "type": "record",
        "name": "Inner",
        "fields": [
            {"name": "x", "type": "int"},
            {"name": "y", "type": "string"},
            _field("z", "bytes", "\u0001"),
        ],
    }
    one, batch = _both(WRITER, _reader(_field("rec", inner, {"x": 1, "y": "z"})), {"id": 1})
    assert one["rec"] == batch["rec"] == {"x": 1, "y": "z", "z": b"\x01"}


def test_a_union_default_is_of_the_first_branch_it_fits():
    reader = _reader(
        _field("u", ["int", "string"], "x"),
        _field("n", ["string", "null"], None),
        _field("b", ["int", "bytes"], "\u00ff"),
    )
    one, batch = _both(WRITER, reader, {"id": 1})
    assert (one["u"], one["n"], one["b"]) == ("x", None, b"\xff")
    assert batch["u"] == {"member0": None, "member1": "x"}
    assert batch["b"] == {"member0": None, "member1": b"\xff"}
    assert batch["n"] is None


def test_defaults_of_logical_types_are_their_underlying_values():
    reader = _reader(
        _field("ts", {"type": "long", "logicalType": "timestamp-millis"}, 1000),
        _field("day", {"type": "int", "logicalType": "date"}, 1),
        _field("id2", {"type": "string", "logicalType": "uuid"}, str(UUID(int=1))),
    )
    one, batch = _both(WRITER, reader, {"id": 1})
    at = dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)
    assert one["ts"] == at and batch["ts"] == at
    assert one["day"] == batch["day"] == dt.date(1970, 1, 2)
    assert avro_values.to_structured(one)["id2"] == batch["id2"] == str(UUID(int=1))


@pytest.mark.parametrize(("value", "expected"), [(16777217, 16777216.0), (2**31 - 1, 2.0**31)])
@pytest.mark.parametrize("writer_type", ["int", "long"])
def test_an_integer_read_as_float_is_the_nearest_32_bit_float(writer_type, value, expected):
    writer = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "a", "type": writer_type},
            {"name": "b", "type": ["null", writer_type]},
            {"name": "c", "type": {"type": "array", "items": writer_type}},
            {"name": "d", "type": {"type": "map", "values": writer_type}},
        ],
    }
    reader = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "a", "type": "float"},
            {"name": "b", "type": ["null", "float"]},
            {"name": "c", "type": {"type": "array", "items": "float"}},
            {"name": "d", "type": {"type": "map", "values": "float"}},
        ],
    }
    one, batch = _both(writer, reader, {"a": value, "b": value, "c": [value], "d": {"k": value}})
    assert (one["a"], one["b"], one["c"], one["d"]) == (
        expected,
        expected,
        [expected],
        {"k": expected},
    )
    assert (batch["a"], batch["b"], batch["c"]) == (expected, expected, [expected])
    assert dict(batch["d"]) == {"k": expected}


def test_an_integer_read_as_double_keeps_every_digit():
    writer = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
    reader = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "double"}]}
    one, batch = _both(writer, reader, {"a": 16777217})
    assert one["a"] == batch["a"] == 16777217.0


def test_a_named_type_used_again_by_name_reads_as_that_type():
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {
                "name": "inner",
                "type": {
                    "type": "record",
                    "name": "Inner",
                    "fields": [{"name": "x", "type": "int"}],
                },
            },
            {"name": "again", "type": ["null", "Inner"], "default": None},
        ],
    }
    # As the registry store spells it out for Spark: Inner written in full twice.
    standalone = fastavro.parse_schema(schema, expand=True)
    standalone = {k: v for k, v in standalone.items() if not k.startswith("__")}
    body = _body(schema, {"inner": {"x": 1}, "again": {"x": 2}})
    array, errors = AvroBatchDecoder(standalone, standalone).decode([body], [0])
    assert errors == [None]
    assert array.to_pylist() == [{"inner": {"x": 1}, "again": {"x": 2}}]


def test_a_default_that_does_not_fit_fails_each_read_that_needs_it_naming_the_field():
    # A registry that took it (an older one, another vendor's) can hand such a schema out.
    reader = _reader(_field("f", FIXED_3, "\u00ff"))
    parsed = fastavro.parse_schema(reader)
    body = _body(WRITER, {"id": 1})
    with pytest.raises(CodecError, match=r"reader field f .*fixed of 3 bytes"):
        avro_values.decode(body, fastavro.parse_schema(WRITER), parsed)
    _, errors = AvroBatchDecoder(WRITER, reader).decode([body, body], [0, 0])
    assert errors[0] is not None and "reader field f" in errors[0] and errors[0] == errors[1]
    # A writer that has the field needs no default: it reads.
    assert avro_values.decode(_body(reader, {"id": 1, "f": b"abc"}), parsed, parsed)["f"] == b"abc"


def test_resolution_is_worked_out_once_per_pair():
    writer, reader = fastavro.parse_schema(WRITER), fastavro.parse_schema(_reader())
    first = for_reading(writer, reader)
    again = for_reading(writer, reader)
    assert first[0] is again[0] and first[1] is again[1]
