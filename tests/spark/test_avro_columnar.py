"""The columnar Avro writer: byte for byte what fastavro writes, row errors as the row path."""

from __future__ import annotations

import datetime as dt
from decimal import Context, Decimal
from typing import Any
from unittest.mock import patch

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.spark import avro_columnar
from cdc_connectors.spark.avro_encode import AvroBatchEncoder
from tests.hypothesis_profiles import examples
from tests.spark.avro_cases import (
    COLOR,
    F3,
    UTC,
    body,
    dec,
    logical,
    record,
)

# --- columnar encoding: byte for byte fastavro's --------------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
MILLIS = st.integers(-((2**63) // 1000), (2**63 - 1) // 1000)  # x 1000 fits int64


def minimal(n: int) -> bytes:
    """Two's complement big-endian in the fewest bytes, as Java's BigInteger writes it."""
    return n.to_bytes((n if n >= 0 else ~n).bit_length() // 8 + 1, "big", signed=True)


def unscaled(precision: int) -> st.SearchStrategy[int]:
    limit = 10**precision - 1
    edges = [0, 1, -1, limit, -limit, 127, 128, -128, -129, 255, 256, -256, -(2**15), 2**63]
    return st.sampled_from([e for e in edges if -limit <= e <= limit]) | st.integers(-limit, limit)


#: Per Avro type: the field's schema, raw values (what fastavro is handed: minimal decimal
#: bytes, millis for -millis timestamps), and the raw value -> the value Arrow is built from.
COLUMNAR_TYPES: dict[str, tuple[Any, st.SearchStrategy[Any], Any]] = {
    "boolean": ("boolean", st.booleans(), None),
    "int": ("int", INT32, None),
    "long": ("long", INT64, None),
    "float": ("float", st.floats(width=32), None),
    "double": ("double", st.floats(), None),
    "string": ("string", st.text(max_size=3) | st.text(min_size=60, max_size=90), None),
    "bytes": ("bytes", st.binary(max_size=3) | st.binary(min_size=60, max_size=90), None),
    "dec": (
        logical("bytes", "decimal", precision=10, scale=2),
        unscaled(10),
        lambda n: Decimal(n).scaleb(-2, Context(prec=60)),
    ),
    "dec38": (
        logical("bytes", "decimal", precision=38, scale=38),
        unscaled(38),
        lambda n: Decimal(n).scaleb(-38, Context(prec=60)),
    ),
    "date": (logical("int", "date"), INT32, None),
    "tmil": (logical("int", "time-millis"), INT32, None),
    "tmic": (logical("long", "time-micros"), INT64, None),
    "tsms": (logical("long", "timestamp-millis"), MILLIS, lambda n: n * 1000),
    "tsus": (logical("long", "timestamp-micros"), INT64, None),
    "ltms": (logical("long", "local-timestamp-millis"), MILLIS, lambda n: n * 1000),
    "ltus": (logical("long", "local-timestamp-micros"), INT64, None),
    "enum": (COLOR, st.sampled_from(["RED", "GREEN"]), None),
}


def named(name: str) -> Any:
    return "Color" if name == "enum" else COLUMNAR_TYPES[name][0]


COLUMNAR = record(
    "C",
    *((name, kind) for name, (kind, _, _) in COLUMNAR_TYPES.items()),
    # each type again as [null, T], then as [T, null] (the enum by name: defined above)
    *((f"n_{name}", ["null", named(name)]) for name in COLUMNAR_TYPES),
    *((f"r_{name}", [named(name), "null"]) for name in COLUMNAR_TYPES),
)


def columnar_row() -> st.SearchStrategy[dict[str, Any]]:
    fields = {}
    for name, (_, values, _) in COLUMNAR_TYPES.items():
        fields[name] = values
        fields[f"n_{name}"] = st.none() | values
        fields[f"r_{name}"] = st.none() | values
    return st.fixed_dictionaries(fields)


def arrow_columns(encoder: AvroBatchEncoder, rows: list[dict[str, Any]]) -> pa.StructArray:
    """The struct array of raw rows, column by column (timestamps from raw integers)."""
    columns = []
    for field in encoder.arrow_type:
        to_arrow = COLUMNAR_TYPES[field.name.partition("_")[2] or field.name][2] or (lambda v: v)
        values = [None if r[field.name] is None else to_arrow(r[field.name]) for r in rows]
        columns.append(pa.array(values, field.type))
    return pa.StructArray.from_arrays(columns, fields=list(encoder.arrow_type))


def fastavro_body(schema: dict[str, Any], row: dict[str, Any]) -> bytes:
    raw = {}
    for name, value in row.items():
        kind = name.partition("_")[2] or name
        raw[name] = minimal(value) if kind.startswith("dec") and value is not None else value
    return body(schema, raw)


@settings(max_examples=examples(80), deadline=None)
@given(
    rows=st.lists(columnar_row(), min_size=1, max_size=12),
    skip=st.integers(0, 2),
    chunk=st.sampled_from([2, 5, 1 << 15]),
    prefix=st.sampled_from([b"", b"\x00\x00\x00\x00\x07"]),
)
def test_the_columnar_path_writes_fastavros_bytes(rows, skip, chunk, prefix):
    encoder = AvroBatchEncoder(COLUMNAR, prefix=prefix)
    array = arrow_columns(encoder, rows).slice(skip)  # an offset into every buffer
    rows = rows[skip:]
    with patch.object(avro_columnar, "_CHUNK_ROWS", chunk):
        bodies, errors = encoder.encode(array)
    assert errors == [None] * len(rows)
    assert encoder.columnar_rows == len(rows)
    assert bodies == [prefix + fastavro_body(COLUMNAR, r) for r in rows]
    # and the row path, which hands fastavro the same values, agrees
    assert encoder._encode_rows(array) == (bodies, errors)


def test_the_columnar_path_takes_record_batches_and_only_the_types_it_covers():
    schema = record("R", ("a", "long"), ("s", ["string", "null"]))
    encoder = AvroBatchEncoder(schema, prefix=b"\x01")
    batch = pa.RecordBatch.from_pylist(
        [{"a": -1, "s": None}, {"a": 2**30, "s": "é"}],
        schema=pa.schema([pa.field("s", pa.large_string()), pa.field("a", pa.int32())]),
    )
    bodies, errors = encoder.encode(batch)
    assert errors == [None, None] and encoder.columnar_rows == 2
    assert bodies == [
        b"\x01" + body(schema, {"a": -1, "s": None}),
        b"\x01" + body(schema, {"a": 2**30, "s": "é"}),
    ]
    for kind in (F3, ["null", "int", "string"], {"type": "array", "items": "int"}, ["long"]):
        other = AvroBatchEncoder(record("R", ("a", "long"), ("x", kind)))
        assert other._columns is None


def test_rows_that_do_not_fit_get_the_row_paths_reasons_and_the_rest_encode():
    schema = record(
        "R",
        ("id", "long"),
        ("amount", logical("bytes", "decimal", precision=4, scale=2)),
        ("e", ["null", COLOR]),
        ("ms", logical("long", "timestamp-millis")),
        ("note", ["null", "string"]),
    )
    encoder = AvroBatchEncoder(schema)
    moment = dt.datetime(2020, 1, 1, tzinfo=UTC)
    good = {"id": 1, "amount": Decimal("12.34"), "e": "RED", "ms": moment, "note": "n"}
    rows = [
        good,
        {**good, "id": None},
        {**good, "amount": Decimal("123.45")},
        {**good, "amount": Decimal("-100.00")},
        {**good, "e": "BLUE"},
        {**good, "e": None, "note": None},
        {**good, "ms": moment + dt.timedelta(microseconds=1)},
        {**good, "ms": None, "amount": None},
        None,
        {**good, "id": 2},
    ]
    # wider than the schema's decimal(4,2) and enum: values beyond them reach the encoder
    wide = pa.struct(
        [
            pa.field("amount", pa.decimal128(10, 2), False) if f.name == "amount" else f
            for f in encoder.arrow_type
        ]
    )
    array = pa.array(rows, wide)
    bodies, errors = encoder.encode(array)
    assert (bodies, errors) == encoder._encode_rows(array)
    assert encoder.columnar_rows == 3  # rows 0, 5 and 9
    assert [i for i, e in enumerate(errors) if e is None] == [0, 5, 9]
    assert bodies[5] == body(schema, {**good, "e": None, "note": None})
    assert bodies[9] == body(schema, {**good, "id": 2})
    assert errors[1] == "id is null but its Avro type is not nullable"
    assert "amount: 12345e-2 has more than 4 digits" in str(errors[2])
    assert "amount: -10000e-2 has more than 4 digits" in str(errors[3])
    assert "does not fit the Avro schema" in str(errors[4])
    assert "not whole milliseconds" in str(errors[6])
    assert "is null but its Avro type is not nullable" in str(errors[7])
    assert errors[8] == "the row is null"


def test_the_columnar_path_raises_the_row_paths_usage_errors():
    schema = record("R", ("i", "int"), ("s", "string"))
    encoder = AvroBatchEncoder(schema)
    too_wide = pa.array(
        [{"i": 2**40, "s": "x"}], pa.struct([("i", pa.int64()), ("s", pa.string())])
    )
    with pytest.raises(ValueError, match="i: column of type int64 is not int32"):
        encoder.encode(too_wide)
    with pytest.raises(ValueError, match="s: no such column"):
        encoder.encode(pa.array([{"i": 1}], pa.struct([("i", pa.int32())])))
    # a decimal column of another scale: the whole batch takes the row path
    array = pa.array([{"v": Decimal("1.5")}], pa.struct([("v", pa.decimal128(10, 3))]))
    decimals = AvroBatchEncoder(dec(6, 2))
    assert decimals.encode(array) == ([body(dec(6, 2), {"v": Decimal("1.50")})], [None])
    assert decimals.columnar_rows == 0
