"""Properties of the OpenCDC codecs: round trips, byte-stable output, nothing unreadable written."""

from __future__ import annotations

import io
import random
from decimal import Decimal
from typing import Any

import orjson
import pytest
from google.protobuf.message import DecodeError
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cdc_connectors.convert import read_delimited_records, write_delimited_records
from cdc_connectors.opencdc import (
    CodecError,
    Record,
    read_json_lines,
    record_from_json,
    record_from_proto_bytes,
    record_to_json,
    record_to_proto_bytes,
    write_json_lines,
)
from cdc_connectors.opencdc.data import Change
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2
from tests.hypothesis_profiles import examples

from ..strategies import INT64_MIN, UINT64_MAX, nesting_paths, records

# Struct holds doubles: integers round-trip exactly up to 2**53.
PROTO_SAFE = 2**53


@given(records(UINT64_MAX, INT64_MIN))
def test_json_round_trip(record: Record):
    assert record_from_json(record_to_json(record)) == record


@given(records(PROTO_SAFE))
def test_protobuf_round_trip(record: Record):
    assert record_from_proto_bytes(record_to_proto_bytes(record)) == record


def _reordered(value: Any, rnd: random.Random) -> Any:
    """The same value with every dict built in another insertion order."""
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: _reordered(v, rnd) for k, v in items}
    if isinstance(value, list):
        return [_reordered(v, rnd) for v in value]
    return value


@given(records(PROTO_SAFE), st.randoms(use_true_random=False))
def test_output_bytes_do_not_depend_on_insertion_order(record: Record, rnd: random.Random):
    items = list(record.metadata.items())
    rnd.shuffle(items)
    shuffled = Record(
        record.position,
        record.operation,
        Metadata(items),
        _reordered(record.key, rnd),
        Change(_reordered(record.payload.before, rnd), _reordered(record.payload.after, rnd)),
    )
    assert record_to_json(shuffled) == record_to_json(record)
    assert record_to_proto_bytes(shuffled) == record_to_proto_bytes(record)


def _keys_sorted(value: Any) -> bool:
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(_keys_sorted(v) for v in value.values())
    if isinstance(value, list):
        return all(_keys_sorted(v) for v in value)
    return True


@given(records())
def test_json_writes_metadata_and_structured_keys_sorted_as_conduit_does(record: Record):
    doc = orjson.loads(record_to_json(record))
    assert list(doc) == ["position", "operation", "metadata", "key", "payload"]
    assert _keys_sorted(doc["metadata"])
    assert all(_keys_sorted(d) for d in (doc["key"], doc["payload"]["before"]))
    assert _keys_sorted(doc["payload"]["after"])


def _nested(path: list[str]) -> dict[str, Any]:
    value: Any = 1
    for kind in reversed(path):
        value = {"k": value} if kind == "dict" else [value]
    return {"top": value}


def _parses_without_our_check(field: str, value: dict[str, Any]) -> bool:
    """Whether the protobuf runtime parses the message back, built without our codec."""
    msg = opencdc_pb2.Record()
    target = msg.key if field == "key" else msg.payload.after
    target.structured_data.update(value)
    try:
        opencdc_pb2.Record.FromString(msg.SerializeToString())
    except DecodeError:  # what our reader would meet
        return False
    return True


@settings(max_examples=examples(150))
@given(nesting_paths(min_depth=25, max_depth=60), st.sampled_from(["key", "after"]))
def test_protobuf_writes_exactly_the_nesting_the_runtime_parses_back(path, field):
    value = _nested(path)
    record = Record.new("create", **{field: value})
    readable = _parses_without_our_check(field, value)
    if readable:
        back = record_from_proto_bytes(record_to_proto_bytes(record))
        assert (back.key if field == "key" else back.payload.after) == value
    else:
        with pytest.raises(CodecError, match="nested too deeply"):
            record_to_proto_bytes(record)
    event("readable" if readable else "refused")


@settings(max_examples=examples(30))
@given(st.lists(records(PROTO_SAFE), max_size=5))
def test_streams_round_trip(st_records: list[Record]):
    lines = io.BytesIO()
    write_json_lines(lines, st_records)
    lines.seek(0)
    assert list(read_json_lines(lines)) == st_records
    delimited = io.BytesIO()
    write_delimited_records(delimited, st_records)
    delimited.seek(0)
    assert list(read_delimited_records(delimited)) == st_records


@settings(max_examples=examples(200))
@given(
    st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False).map(repr)
)
def test_json_numbers_are_read_as_the_number_written(number):
    text = str(number)
    line = f'{{"operation":"create","payload":{{"after":{{"x":{text}}}}}}}'
    try:
        value = record_from_json(line).payload.after["x"]
    except CodecError as exc:  # only integers beyond 64 bits and numbers beyond a double
        assert "64 bits" in str(exc) or "range of a double" in str(exc)
        return
    assert Decimal(str(value)) == Decimal(text)
