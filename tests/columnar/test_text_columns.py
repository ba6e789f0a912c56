"""Text of Arrow columns as the per-record writers spell it: base64 (``b64encode``), JSON
strings and doubles (orjson)."""

from __future__ import annotations

import base64

import orjson
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from cdc_connectors.columnar import base64text, json_text
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


@given(st.lists(st.none() | st.text(st.characters(exclude_categories=("Cs",))), max_size=30))
def test_quoted_strings_are_what_orjson_writes(values: list[str | None]) -> None:
    expected = [None if v is None else orjson.dumps(v) for v in values]
    assert json_text.quoted(pa.array(values, pa.string())).to_pylist() == expected


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
