"""AvroBatchEncoder: Arrow rows -> Avro bodies; row errors; decode(encode(x)) == x."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Context, Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.avro_encode import AvroBatchEncoder
from tests.hypothesis_profiles import examples
from tests.spark.avro_cases import (
    ALL,
    COLOR,
    F3,
    ROWS_IN,
    UTC,
    V1,
    body,
    dec,
    logical,
    record,
)


def test_decoder_and_encoder_round_trip_the_same_bytes():
    bodies = [body(ALL, r) for r in ROWS_IN]
    array, _ = AvroBatchDecoder(ALL).decode(bodies, [0, 0, 0])
    encoded, errors = AvroBatchEncoder(ALL).encode(array)
    assert errors == [None, None, None]
    again, errors = AvroBatchDecoder(ALL).decode(encoded, [0, 0, 0])  # type: ignore[arg-type]
    assert errors == [None, None, None]
    assert again.to_pylist() == array.to_pylist()
    # [int, long] may take the other branch; everything else is byte for byte fastavro's
    simple = record("S", ("d", logical("bytes", "decimal", precision=10, scale=2)), ("s", "string"))
    rows = [{"d": Decimal(v), "s": v} for v in ("-0.01", "1.28", "-1.29", "0.00", "-1.28")]
    bodies = [body(simple, r) for r in rows]
    array, _ = AvroBatchDecoder(simple).decode(bodies, [0] * 5)
    encoded = AvroBatchEncoder(simple).encode(array)[0]
    assert encoded[:4] == bodies[:4]
    # -128 unscaled: the fewest bytes, as Java's BigInteger writes it (fastavro adds a byte)
    assert encoded[4] == b"\x02\x80\n-1.28"


def test_encoder_takes_a_record_batch_and_writes_a_prefix():
    schema = record("R", ("a", "long"), ("s", ["null", "string"]))
    batch = pa.RecordBatch.from_pylist(
        [{"a": 1, "s": None}, {"a": 2, "s": "x"}],
        schema=pa.schema([pa.field("a", pa.int64(), False), pa.field("s", pa.string())]),
    )
    header = b"\x00" + struct.pack(">I", 42)
    bodies, errors = AvroBatchEncoder(schema, prefix=header).encode(batch)
    assert errors == [None, None]
    assert bodies == [
        header + body(schema, {"a": 1, "s": None}),
        header + body(schema, {"a": 2, "s": "x"}),
    ]


# --- encoder errors -------------------------------------------------------------------


def test_rows_that_do_not_fit_the_schema_are_none_with_reasons():
    schema = record(
        "R",
        ("id", "long"),
        ("amount", logical("bytes", "decimal", precision=4, scale=2)),
        ("e", COLOR),
        ("fx", F3),
        ("u", ["int", "string"]),
        ("ms", logical("long", "timestamp-millis")),
    )
    encoder = AvroBatchEncoder(schema)
    moment = dt.datetime(2020, 1, 1, tzinfo=UTC)
    good = {
        "id": 1,
        "amount": Decimal("12.34"),
        "e": "RED",
        "fx": b"abc",
        "u": {"member0": 1, "member1": None},
        "ms": moment,
    }
    bad = [
        {**good, "id": None},
        {**good, "amount": Decimal("123.45")},
        {**good, "e": "BLUE"},
        {**good, "fx": b"ab"},
        {**good, "u": {"member0": 1, "member1": "x"}},
        {**good, "u": {"member0": None, "member1": None}},
        {**good, "ms": moment + dt.timedelta(microseconds=1)},
    ]
    # a column wider than the schema's decimal(4,2): values beyond it reach the encoder
    wide = pa.struct(
        [
            pa.field("amount", pa.decimal128(10, 2)) if f.name == "amount" else f
            for f in encoder.arrow_type
        ]
    )
    array = pa.array([good, *bad, None, good], wide)
    bodies, errors = encoder.encode(array)
    # a row after one fastavro rejected half way is still cut right
    assert bodies[9] == bodies[0] and errors[9] is None
    bodies, errors = bodies[:9], errors[:9]
    assert bodies[0] == body(schema, {**good, "u": 1}) and errors[0] is None
    assert bodies[1:] == [None] * 8
    assert errors[1] == "id is null but its Avro type is not nullable"
    assert "amount: 12345e-2 has more than 4 digits" in str(errors[2])
    assert "does not fit the Avro schema" in str(errors[3])
    assert "does not fit the Avro schema" in str(errors[4])
    assert "more than one union member is set" in str(errors[5])
    assert "no union member is set" in str(errors[6])
    assert "not whole milliseconds" in str(errors[7])
    assert errors[8] == "the row is null"


def test_a_decimal_column_of_another_scale_is_rescaled_or_refused_per_row():
    schema = dec(6, 2)
    array = pa.array(
        [{"v": Decimal("1.5")}, {"v": Decimal("1.234")}, {"v": None}],
        pa.struct([pa.field("v", pa.decimal128(10, 3))]),
    )
    bodies, errors = AvroBatchEncoder(schema).encode(array)
    assert bodies[0] == body(schema, {"v": Decimal("1.50")})
    assert "more than 2 decimal places" in str(errors[1])
    assert "v is null" in str(errors[2])


def test_a_missing_column_is_a_usage_error():
    with pytest.raises(ValueError, match="name: no such column"):
        AvroBatchEncoder(V1).encode(pa.array([{"id": 1}], pa.struct([pa.field("id", pa.int32())])))


def test_an_ambiguous_union_is_refused_at_construction():
    with pytest.raises(ValueError, match="cannot be told apart"):
        AvroBatchDecoder(record("R", ("u", ["int", "long", "string"])))


# --- property: decode(encode(x)) == x ------------------------------------------------

PROPERTY = record(
    "P",
    ("l", "long"),
    ("i", "int"),
    ("d", "double"),
    ("b", "boolean"),
    ("s", ["null", "string"]),
    ("by", "bytes"),
    ("dec", logical("bytes", "decimal", precision=10, scale=2)),
    (
        "big",
        {
            "type": "fixed",
            "name": "B",
            "size": 16,
            "logicalType": "decimal",
            "precision": 38,
            "scale": 9,
        },
    ),
    ("us", logical("long", "timestamp-micros")),
    ("ms", ["null", logical("long", "timestamp-millis")]),
    ("day", logical("int", "date")),
    ("local", logical("long", "local-timestamp-micros")),
    ("ints", {"type": "array", "items": ["null", "int"]}),
    ("m", {"type": "map", "values": "string"}),
    ("sub", ["null", record("Sub", ("x", "long"), ("e", COLOR))]),
    ("u", ["null", "long", "string"]),
)
MOMENTS = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30))


def decimals(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    limit = 10**precision - 1
    exact = Context(prec=60)  # the default 28 digits would round 38-digit values
    return st.integers(-limit, limit).map(lambda n: Decimal(n).scaleb(-scale, exact))


def union_members() -> st.SearchStrategy[dict[str, Any] | None]:
    return st.one_of(
        st.none(),
        st.integers(-(2**63), 2**63 - 1).map(lambda n: {"member0": n, "member1": None}),
        st.text(max_size=5).map(lambda s: {"member0": None, "member1": s}),
    )


ROWS = st.fixed_dictionaries(
    {
        "l": st.integers(-(2**63), 2**63 - 1),
        "i": st.integers(-(2**31), 2**31 - 1),
        "d": st.floats(allow_nan=False),
        "b": st.booleans(),
        "s": st.none() | st.text(max_size=10),
        "by": st.binary(max_size=10),
        "dec": decimals(10, 2),
        "big": decimals(38, 9),
        "us": MOMENTS.map(lambda m: m.replace(tzinfo=UTC)),
        "ms": st.none()
        | MOMENTS.map(lambda m: m.replace(microsecond=m.microsecond // 1000 * 1000, tzinfo=UTC)),
        "day": st.dates(),
        "local": MOMENTS,
        "ints": st.lists(st.none() | st.integers(-(2**31), 2**31 - 1), max_size=4),
        "m": st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3).map(
            lambda d: list(d.items())
        ),
        "sub": st.none()
        | st.fixed_dictionaries(
            {"x": st.integers(-(2**63), 2**63 - 1), "e": st.sampled_from(["RED", "GREEN"])}
        ),
        "u": union_members(),
    }
)


@settings(max_examples=examples(60))
@given(rows=st.lists(ROWS, max_size=8))
def test_decode_of_encode_gives_the_rows_back(rows):
    encoder = AvroBatchEncoder(PROPERTY)
    array = pa.array(rows, encoder.arrow_type)
    bodies, errors = encoder.encode(array)
    assert errors == [None] * len(rows)
    decoded, errors = AvroBatchDecoder(PROPERTY).decode(bodies, [0] * len(rows))  # type: ignore[arg-type]
    assert errors == [None] * len(rows)
    assert decoded.to_pylist() == rows
