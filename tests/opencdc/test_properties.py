"""Round-trip properties of the OpenCDC codecs."""

from __future__ import annotations

import io

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.opencdc import (
    Record,
    read_delimited_records,
    read_json_lines,
    record_from_json,
    record_from_proto_bytes,
    record_to_json,
    record_to_proto_bytes,
    write_delimited_records,
    write_json_lines,
)

from ..strategies import records

# Struct holds doubles: integers round-trip exactly up to 2**53.
PROTO_SAFE = 2**53


@given(records())
def test_json_round_trip(record: Record):
    assert record_from_json(record_to_json(record)) == record


@given(records())
def test_json_output_is_valid_json_with_string_metadata(record: Record):
    doc = orjson.loads(record_to_json(record))
    assert all(isinstance(v, str) for v in doc["metadata"].values())


@given(records(PROTO_SAFE))
def test_protobuf_round_trip(record: Record):
    assert record_from_proto_bytes(record_to_proto_bytes(record)) == record


@given(records(PROTO_SAFE))
def test_protobuf_is_deterministic(record: Record):
    assert record_to_proto_bytes(record) == record_to_proto_bytes(record)


@settings(max_examples=30)
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
