from __future__ import annotations

import math
from decimal import Decimal

import pytest

from cdc_connectors.opencdc import (
    CodecError,
    Record,
    record_from_json,
    record_from_proto_bytes,
    record_to_proto,
    record_to_proto_bytes,
)
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2

from .canonical import CANONICAL


@pytest.mark.parametrize("doc", CANONICAL)
def test_canonical_records_round_trip_through_protobuf(doc):
    record = record_from_json(doc)
    assert record_from_proto_bytes(record_to_proto_bytes(record)) == record


def test_message_fields_are_set_as_conduit_expects():
    record = Record.new("delete", position=b"p", key=b"k", before={"id": 1}, collection="t")
    msg = record_to_proto(record)
    assert msg.operation == opencdc_pb2.OPERATION_DELETE
    assert msg.key.WhichOneof("data") == "raw_data"
    assert msg.payload.before.WhichOneof("data") == "structured_data"
    assert not msg.payload.HasField("after")
    assert msg.metadata["opencdc.collection"] == "t"


def test_absent_and_empty_raw_data_are_distinct():
    record = Record.new("create", key=b"", after=None)
    back = record_from_proto_bytes(record_to_proto_bytes(record))
    assert back.key == b""
    assert back.payload.after is None


def test_struct_numbers_are_doubles_integral_ones_come_back_as_int():
    record = Record.new("create", after={"i": 7, "f": 1.5, "nested": {"l": [1, 2.25, None, True]}})
    back = record_from_proto_bytes(record_to_proto_bytes(record)).payload.after
    assert back == {"i": 7, "f": 1.5, "nested": {"l": [1, 2.25, None, True]}}
    assert type(back["i"]) is int


def test_negative_zero_comes_back_as_itself():
    record = Record.new("create", after={"z": -0.0, "l": [-0.0, 0.0]})
    back = record_from_proto_bytes(record_to_proto_bytes(record)).payload.after
    assert [math.copysign(1.0, v) for v in (back["z"], *back["l"])] == [-1.0, -1.0, 1.0]
    assert type(back["z"]) is float and type(back["l"][1]) is int


def test_garbage_protobuf_is_a_codec_error():
    with pytest.raises(CodecError, match=r"invalid opencdc\.v1\.Record protobuf"):
        record_from_proto_bytes(b"\x0a\xff\xff\xff")


def test_unknown_operation_number_on_the_wire_is_a_codec_error():
    msg = opencdc_pb2.Record(operation=9)
    with pytest.raises(CodecError, match="unknown operation number 9"):
        record_from_proto_bytes(msg.SerializeToString())


def test_empty_structured_data_stays_structured():
    back = record_from_proto_bytes(record_to_proto_bytes(Record.new("create", after={})))
    assert back.payload.after == {}


def _dicts(levels: int) -> dict:
    value: object = 1
    for _ in range(levels - 1):
        value = {"a": value}
    return {"a": value}


@pytest.mark.parametrize(
    ("field", "readable"),
    [("after", 32), ("key", 33)],  # the payload sits one message deeper than the key
)
def test_nesting_the_protobuf_runtime_cannot_parse_back_is_refused_on_write(field, readable):
    ok = Record.new("create", **{field: _dicts(readable)})
    assert record_from_proto_bytes(record_to_proto_bytes(ok)) == ok
    too_deep = Record.new("create", **{field: _dicts(readable + 1)})
    with pytest.raises(CodecError, match=rf"{field.replace('after', 'payload.after')}.*nested too"):
        record_to_proto_bytes(too_deep)


def test_nesting_beyond_pythons_recursion_limit_is_a_codec_error_not_a_recursion_error():
    deep = record_from_json(b'{"payload":{"after":{"a":' + b"[" * 1000 + b"]" * 1000 + b"}}}")
    with pytest.raises(
        CodecError,
        match=r"payload\.after\.a(\[0\]){5} \(and \d+ levels more\): structured data nested",
    ):
        record_to_proto_bytes(deep)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (2**64, "integer 18446744073709551616 is beyond"),
        (2**53 + 1, r"integer 9007199254740993 is beyond \+-2\^53 and would change"),
        (-(2**53) - 1, "is beyond"),
        (Decimal("12345678901234567890.5"), "decimal 12345678901234567890.5 would change"),
        (float("nan"), "nan has no JSON form"),
        (float("-inf"), "-inf has no JSON form"),
        ({1: "x"}, "object key 1 is a int"),
        ({"s": {1, 2}}, "type set cannot be structured data"),
    ],
)
def test_values_protobuf_would_change_or_lose_are_refused_with_their_path(value, message):
    record = Record.new("create", after={"items": [{"v": value}]})
    with pytest.raises(CodecError, match=r"payload\.after\.items\[0\]\.v"):
        record_to_proto_bytes(record)
    with pytest.raises(CodecError, match=message):
        record_to_proto_bytes(record)


@pytest.mark.parametrize("value", [2**53, -(2**53), Decimal("0.1"), Decimal("19.99"), 1e300])
def test_numbers_a_double_keeps_are_written_and_read_back_equal(value):
    record = Record.new("create", after={"v": value})
    back = record_from_proto_bytes(record_to_proto_bytes(record)).payload.after["v"]
    assert back == (float(value) if isinstance(value, Decimal) else value)
    assert str(back) == str(value)  # the same digits, as JSON writes them


def test_raw_data_of_another_type_is_refused_not_turned_into_zero_bytes():
    with pytest.raises(CodecError, match="key must be bytes, a dict or None, not int"):
        record_to_proto_bytes(Record.new("create", key=5))  # bytes(5) would be 5 zero bytes


def test_map_entries_read_from_protobuf_come_back_sorted():
    msg = opencdc_pb2.Record()
    names = ["zeta", "alpha", "mid", "b", "q", "c", "x1", "x2"]  # upb's order varies by process
    for name in names:
        msg.metadata[name] = "v"
        msg.payload.after.structured_data[name] = 1
    record = record_from_proto_bytes(msg.SerializeToString())
    assert list(record.metadata) == sorted(names)
    assert list(record.payload.after) == sorted(names)
