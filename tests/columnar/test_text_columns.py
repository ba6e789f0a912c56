"""Text of Arrow columns as the per-record writers spell it: base64 (``b64encode``), JSON
strings and doubles (orjson)."""

from __future__ import annotations

import base64
import datetime

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc_connectors.columnar import base64text, isotext, json_text, wire
from cdc_connectors.schema.connect import parse_connect_schema
from tests.hypothesis_profiles import examples


@given(
    st.lists(st.none() | st.binary(max_size=40), max_size=30),
    st.integers(0, 3),
    st.booleans(),
)
def test_base64_of_a_column_is_b64encode_of_each_value(
    values: list[bytes | None], skip: int, long: bool
) -> None:
    if long:
        values = [None if v is None else v * 20 for v in values]  # the one-call-each way
    array = pa.array(values, pa.binary()).slice(min(skip, len(values)))
    expected = [None if v is None else base64.b64encode(v) for v in array.to_pylist()]
    assert base64text.encode(array).to_pylist() == expected


@given(
    st.lists(st.none() | st.text(st.characters(exclude_categories=("Cs",))), max_size=30),
    st.integers(0, 3),
)
def test_quoted_strings_are_what_orjson_writes(values: list[str | None], skip: int) -> None:
    array = pa.array(values, pa.string()).slice(min(skip, len(values)))
    expected = [None if v is None else orjson.dumps(v) for v in array.to_pylist()]
    assert json_text.quoted(array).to_pylist() == expected


@given(
    st.lists(st.none() | st.binary(max_size=12), max_size=30),
    st.integers(0, 3),
    st.sampled_from([pa.binary(), pa.large_binary()]),
    st.booleans(),
    # few runs of marked bytes are compared with, many looked up: both ways
    st.sets(st.integers(0, 255), max_size=12) | st.sampled_from([(0, 10, 0x22, 0xFF)]),
    st.sampled_from([(), (0, 0x20), (0x7F, 0x100), (0x30, 0x3A)]),
)
def test_rows_holding_a_byte_are_found_from_the_column_bytes(
    values: list[bytes | None],
    skip: int,
    type_: pa.DataType,
    chunked: bool,
    marked: set[int] | tuple[int, ...],
    run: tuple[int, ...],
) -> None:
    table = np.zeros(256, dtype=bool)
    table[list(marked)] = True
    if run:
        table[run[0] : run[1]] = True
    array = pa.array(values, type_).slice(min(skip, len(values)))
    expected = [v is not None and any(table[b] for b in v) for v in array.to_pylist()]
    column = pa.chunked_array([array.slice(0, 2), array.slice(2)]) if chunked else array
    assert wire.rows_holding(column, table).tolist() == expected


@pytest.mark.parametrize(
    "marked",
    [
        {10, 13},
        set(range(0x20)) | {0x22, 0x5C},
        set(range(0x20)),
        {0, 255},
        set(range(0xF0, 256)),
        set(range(0, 256, 3)),
        set(range(0x30, 0x3A)) | {0x41, 0x61, 0x7E},
    ],
)
def test_every_byte_value_is_told_marked_or_not_as_its_table_says(marked: set[int]) -> None:
    table = np.zeros(256, dtype=bool)
    table[list(marked)] = True
    column = pa.array([bytes([b]) for b in range(256)] + [bytes(range(256))], pa.binary())
    assert wire.rows_holding(column, table).tolist() == [*table.tolist(), True]


def test_a_constant_holds_no_memory_a_row() -> None:
    matrix, sizes = wire.constant(b"\x0a\x12", 1_000_000)
    assert matrix.strides == (0, 1) and sizes.strides == (0,)
    assert sizes[999_999] == 2 and bytes(matrix[5]) == b"\x0a\x12"


def test_bytes_under_a_null_are_not_its_own() -> None:
    # Arrow lets a null slot span bytes; they are no value of the row's.
    data = pa.py_buffer(b'ab"cd')
    offsets = pa.py_buffer(np.array([0, 2, 4, 5], dtype=np.int32))
    validity = pa.py_buffer(np.packbits([True, False, True], bitorder="little"))
    array = pa.Array.from_buffers(pa.string(), 3, [validity, offsets, data])
    assert json_text.quoted(array).to_pylist() == [b'"ab"', None, b'"d"']


@given(
    st.lists(st.none() | st.floats(allow_nan=False, allow_infinity=False), max_size=examples(30))
)
def test_doubles_are_what_orjson_writes(values: list[float | None]) -> None:
    schema = parse_connect_schema(
        {"type": "struct", "fields": [{"type": "double", "optional": True, "field": "x"}]}
    )
    column = pa.array([{"x": v} for v in values], pa.struct([pa.field("x", pa.float64())]))
    texts, refused = json_text.struct_text(schema, column.type)(column)
    expected = [orjson.dumps({"x": v}) for v in values]
    assert texts.to_pylist() == expected and not refused.any()


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@given(st.lists(st.datetimes(timezones=st.just(datetime.UTC)), max_size=30))
def test_timestamps_and_dates_are_what_isoformat_writes(values: list[datetime.datetime]) -> None:
    micros = np.array([(v - _EPOCH) // datetime.timedelta(microseconds=1) for v in values])
    days = np.array([(v.date() - _EPOCH.date()).days for v in values])
    for (matrix, sizes), expected in (
        (isotext.timestamps(micros), [v.isoformat() for v in values]),
        (isotext.dates(days), [v.date().isoformat() for v in values]),
        (isotext.times(micros % 86_400_000_000), [v.time().isoformat() for v in values]),
    ):
        found = [bytes(row[:size]).decode() for row, size in zip(matrix, sizes, strict=True)]
        assert found == expected
