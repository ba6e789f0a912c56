"""Avro bodies <-> Arrow struct arrays: round trips against fastavro, evolution, bad input."""

from __future__ import annotations

import datetime as dt
import io
import struct
from decimal import Context, Decimal
from typing import Any
from unittest.mock import patch

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.spark import avro_batch
from cdc_connectors.spark.avro_batch import AvroBatchDecoder, AvroBatchEncoder
from cdc_connectors.spark.avro_types import arrow_type, avro_to_spark
from tests.hypothesis_profiles import examples

UTC = dt.UTC


def body(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    """The Avro body fastavro writes for a record (logical types converted by fastavro)."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def decode(
    writer: dict[str, Any], bodies: list[bytes], reader: dict[str, Any] | None = None
) -> tuple[list[Any], list[str | None]]:
    array, errors = AvroBatchDecoder(writer, reader).decode(bodies, [0] * len(bodies))
    return array.to_pylist(), errors


def record(name: str, *fields: tuple[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "fields": [{"name": n, "type": t, **extra.get(n, {})} for n, t in fields],
    }


def logical(base: str, name: str, **extra: object) -> dict[str, object]:
    return {"type": base, "logicalType": name, **extra}


INNER = record("Inner", ("x", "int"), ("tags", {"type": "array", "items": ["null", "string"]}))
COLOR = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}
F3 = {"type": "fixed", "name": "F3", "size": 3}
ALL = {
    **record(
        "All",
        ("b", "boolean"),
        ("i", "int"),
        ("l", "long"),
        ("f", "float"),
        ("d", "double"),
        ("s", "string"),
        ("by", "bytes"),
        ("fx", F3),
        ("e", COLOR),
        ("dec", logical("bytes", "decimal", precision=10, scale=2)),
        ("dec38", logical("bytes", "decimal", precision=38, scale=6)),
        (
            "decfx",
            {"type": "fixed", "name": "F16", "size": 16, "logicalType": "decimal", "precision": 38},
        ),
        ("date", logical("int", "date")),
        ("tmil", logical("int", "time-millis")),
        ("tmic", logical("long", "time-micros")),
        ("tsms", logical("long", "timestamp-millis")),
        ("tsus", logical("long", "timestamp-micros")),
        ("ltms", logical("long", "local-timestamp-millis")),
        ("ltus", logical("long", "local-timestamp-micros")),
        ("uuid", logical("string", "uuid")),
        ("ns", ["null", "string"]),
        ("nrec", ["null", INNER]),
        ("arr", {"type": "array", "items": "t.Inner"}),
        ("m", {"type": "map", "values": ["null", "long"]}),
        ("u", ["null", "int", "string", "t.Color", "t.F3", "t.Inner"]),
        ("il", ["int", "long"]),
        ("nothing", "null"),
        ("onlynull", ["null"]),
    ),
    "namespace": "t",
}
NINES_38 = int("9" * 38)
ROWS_IN = [
    {
        "b": True,
        "i": -(2**31),
        "l": 2**63 - 1,
        "f": 1.5,
        "d": -2.25,
        "s": "héllo",
        "by": b"\x00\xff",
        "fx": b"abc",
        "e": "GREEN",
        "dec": Decimal("-12.34"),
        "dec38": Decimal("-" + "9" * 32 + ".999999"),
        "decfx": Decimal(NINES_38),
        "date": dt.date(1900, 1, 1),
        "tmil": dt.time(23, 59, 59, 999000),
        "tmic": dt.time(0, 0, 0, 1),
        "tsms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
        "tsus": dt.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        "ltms": dt.datetime(1950, 6, 1, 12, 0, 0, 5000),
        "ltus": dt.datetime(2262, 4, 11, 23, 47, 16, 854775),
        "uuid": "0b0c6a1e-8bd4-4b8e-9c1b-1f9f0a3f7c11",
        "ns": None,
        "nrec": {"x": 1, "tags": ["a", None]},
        "arr": [{"x": 2, "tags": []}, {"x": 3, "tags": [None]}],
        "m": {"k": 1, "n": None},
        "u": ("t.Inner", {"x": 4, "tags": ["z"]}),
        "il": 2**40,
        "nothing": None,
        "onlynull": None,
    },
    {
        "b": False,
        "i": 2**31 - 1,
        "l": -(2**63),
        "f": -0.0,
        "d": 1e300,
        "s": "",
        "by": b"",
        "fx": b"\x00\x00\x00",
        "e": "RED",
        "dec": Decimal("99999999.99"),
        "dec38": Decimal("0.000001"),
        "decfx": Decimal(-NINES_38),
        "date": dt.date(9999, 12, 31),
        "tmil": dt.time(0, 0),
        "tmic": dt.time(23, 59, 59, 999999),
        "tsms": dt.datetime(2024, 2, 29, 1, 2, 3, 4000, tzinfo=UTC),
        "tsus": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "ltms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
        "ltus": dt.datetime(1, 1, 1, 0, 0, 0, 1),
        "uuid": "00000000-0000-0000-0000-000000000000",
        "ns": "x",
        "nrec": None,
        "arr": [],
        "m": {},
        "u": "text",
        "il": -5,
        "nothing": None,
        "onlynull": None,
    },
    {
        **{k: v for k, v in [("b", True)]},
        "i": 0,
        "l": 0,
        "f": 0.0,
        "d": 0.0,
        "s": "s",
        "by": b"b",
        "fx": b"xyz",
        "e": "RED",
        "dec": Decimal("0.00"),
        "dec38": Decimal("0"),
        "decfx": Decimal(0),
        "date": dt.date(1970, 1, 1),
        "tmil": dt.time(0, 0, 0, 1000),
        "tmic": dt.time(0, 0),
        "tsms": dt.datetime(1970, 1, 1, tzinfo=UTC),
        "tsus": dt.datetime(1970, 1, 1, tzinfo=UTC),
        "ltms": dt.datetime(1970, 1, 1),
        "ltus": dt.datetime(1970, 1, 1),
        "uuid": "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "ns": "",
        "nrec": {"x": -1, "tags": []},
        "arr": [{"x": 0, "tags": ["only"]}],
        "m": {"a": -(2**63)},
        "u": ("t.F3", b"f3!"),
        "il": 1,
        "nothing": None,
        "onlynull": None,
    },
]
MEMBERS = ["member0", "member1", "member2", "member3", "member4"]


def _time_millis(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000


def _time_micros(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def expected_row(row: dict[str, Any]) -> dict[str, Any]:
    """What the decoder's Arrow row holds for a record fastavro wrote (Spark's view)."""
    out = dict(row)
    out["tmil"] = _time_millis(row["tmil"])
    out["tmic"] = _time_micros(row["tmic"])
    out["m"] = list(row["m"].items())
    members: dict[str, Any] = dict.fromkeys(MEMBERS)
    value = row["u"]
    if isinstance(value, tuple):
        index = {"t.Color": 2, "t.F3": 3, "t.Inner": 4}[value[0]]
        members[MEMBERS[index]] = value[1]
    elif value is not None:
        members["member0" if isinstance(value, int) else "member1"] = value
    out["u"] = members
    return out


def test_every_avro_type_decodes_to_what_fastavro_wrote():
    array, errors = AvroBatchDecoder(ALL).decode([body(ALL, r) for r in ROWS_IN], [0, 0, 0])
    assert errors == [None, None, None]
    assert array.type == arrow_type(avro_to_spark(ALL))
    assert array.to_pylist() == [expected_row(r) for r in ROWS_IN]


def test_decoded_timestamps_keep_the_instant_and_local_ones_stay_naive():
    array, _ = AvroBatchDecoder(ALL).decode([body(ALL, ROWS_IN[0])], [0])
    row = array.to_pylist()[0]
    assert row["tsms"].timestamp() == -0.001
    assert row["tsus"] == dt.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert row["ltus"].tzinfo is None
    assert array.type.field("tsus").type == pa.timestamp("us", tz="UTC")
    assert array.type.field("ltus").type == pa.timestamp("us")


def test_confluent_framed_messages_decode_from_their_offset():
    schema = record("R", ("a", "long"))
    framed = [b"\x00" + struct.pack(">I", 7) + body(schema, {"a": n}) for n in (1, -2)]
    array, errors = AvroBatchDecoder(schema).decode(framed, [5, 5])
    assert errors == [None, None]
    assert array.to_pylist() == [{"a": 1}, {"a": -2}]


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


# --- bad bytes ------------------------------------------------------------------------

ORDER = record(
    "Order",
    ("id", "long"),
    ("name", "string"),
    ("amount", logical("bytes", "decimal", precision=10, scale=2)),
    ("at", logical("long", "timestamp-micros")),
    ("note", ["null", "string"]),
    ("lines", {"type": "array", "items": record("Line", ("sku", "string"), ("qty", "int"))}),
)


def order(n: int) -> dict[str, Any]:
    return {
        "id": n,
        "name": f"order {n}",
        "amount": Decimal(n).scaleb(-2),
        "at": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=n),
        "note": None if n % 2 else "note",
        "lines": [{"sku": "a", "qty": n}],
    }


def test_garbage_truncated_and_trailing_bytes_are_null_rows_with_reasons():
    good = [body(ORDER, order(n)) for n in range(4)]
    messages = [good[0], b"\xff\xff\xff\xff\xff\xff\xff", good[1][:-3], good[2] + b"\x00", good[3]]
    array, errors = AvroBatchDecoder(ORDER).decode(messages, [0] * 5)
    assert errors[0] is None and errors[4] is None
    assert "does not decode" in errors[1] or "truncated or corrupt" in errors[1]
    assert "truncated or corrupt" in errors[2]
    assert errors[3] == "1 bytes left over after the record"
    rows = array.to_pylist()
    assert rows[1] is None and rows[2] is None and rows[3] is None
    assert rows[0]["amount"] == Decimal("0.00") and rows[4]["lines"] == [{"sku": "a", "qty": 3}]
    assert rows[4]["name"] == "order 3"
    # error rows hold placeholders, so non-nullable columns carry no nulls for Spark
    for field in ("id", "name", "amount", "at", "lines"):
        assert array.field(field).null_count == 0


def test_a_truncated_last_message_and_an_offset_past_the_end_are_row_errors():
    good = body(ORDER, order(1))
    array, errors = AvroBatchDecoder(ORDER).decode([good, good[:5], good], [0, 0, len(good) + 1])
    assert errors[0] is None
    assert "truncated or corrupt" in errors[1]
    assert "outside the" in errors[2]
    assert array.to_pylist()[0]["id"] == 1


def test_an_empty_batch_decodes_to_an_empty_array():
    array, errors = AvroBatchDecoder(ORDER).decode([], [])
    assert len(array) == 0 and errors == []
    assert array.type == arrow_type(avro_to_spark(ORDER))


# --- schema evolution -----------------------------------------------------------------

V1 = record("User", ("id", "int"), ("name", "string"), ("old", "string"), ("score", "int"))
V2 = record(
    "User",
    ("id", "long"),
    ("name", "bytes"),
    ("score", "double"),
    ("email", ["null", "string"]),
    ("level", "int"),
    email={"default": None},
    level={"default": 7},
)


def test_reader_schema_adds_defaults_drops_removed_fields_and_promotes():
    bodies = [body(V1, {"id": 1, "name": "ann", "old": "x", "score": 3})]
    rows, errors = decode(V1, bodies, V2)
    assert errors == [None]
    assert rows == [{"id": 1, "name": b"ann", "score": 3.0, "email": None, "level": 7}]


def test_an_incompatible_writer_makes_every_row_an_error_naming_both_types():
    reader = record("User", ("id", "int"), ("name", "int"))
    bodies = [body(V1, {"id": n, "name": "n", "old": "", "score": 0}) for n in range(3)]
    rows, errors = decode(V1, bodies, reader)
    assert rows == [None, None, None]
    assert all(e is not None for e in errors)
    assert "name: writer type string cannot be read as reader type int" in str(errors[0])


def test_a_reader_field_without_default_missing_from_the_writer_fails_every_row():
    reader = record("User", ("id", "int"), ("missing", "string"))
    rows, errors = decode(V1, [body(V1, {"id": 1, "name": "", "old": "", "score": 0})], reader)
    assert rows == [None]
    assert "missing: reader field has no default" in str(errors[0])


def test_a_writer_null_read_as_a_non_nullable_field_fails_only_that_row():
    writer = record("R", ("s", ["null", "string"]))
    reader = record("R", ("s", "string"))
    rows, errors = decode(writer, [body(writer, {"s": "a"}), body(writer, {"s": None})], reader)
    assert rows[0] == {"s": "a"} and errors[0] is None
    assert rows[1] is None and errors[1] is not None


def test_a_plain_writer_type_read_as_a_union_sets_its_member():
    writer = record("R", ("v", "int"))
    reader = record("R", ("v", ["string", "long"]))
    rows, errors = decode(writer, [body(writer, {"v": 5})], reader)
    assert errors == [None]
    assert rows == [{"v": {"member0": None, "member1": 5}}]


def test_a_renamed_field_is_found_by_its_alias_and_an_unknown_symbol_takes_the_default():
    writer = record("U", ("old_name", "string"), ("c", {**COLOR, "symbols": ["RED", "BLUE"]}))
    reader = record(
        "U",
        ("new_name", "string"),
        ("c", {**COLOR, "default": "GREEN"}),
        new_name={"aliases": ["old_name"]},
    )
    rows, errors = decode(writer, [body(writer, {"old_name": "x", "c": "BLUE"})], reader)
    assert errors == [None] and rows == [{"new_name": "x", "c": "GREEN"}]


def test_a_writer_union_read_as_another_union_puts_each_value_in_its_member():
    writer = record("X", ("u", ["null", "int", "string"]))
    reader = record("X", ("u", ["null", "string", "long"]))
    values = [5, "s", None]
    rows, errors = decode(writer, [body(writer, {"u": v}) for v in values], reader)
    assert errors == [None, None, None]
    assert rows == [
        {"u": {"member0": None, "member1": 5}},
        {"u": {"member0": "s", "member1": None}},
        {"u": None},
    ]


def dec(precision: int, scale: int) -> dict[str, Any]:
    return record("D", ("v", logical("bytes", "decimal", precision=precision, scale=scale)))


def test_a_decimal_read_at_another_scale_is_rescaled_exactly():
    bodies = [body(dec(10, 2), {"v": Decimal(v)}) for v in ("12.34", "-0.01")]
    rows, errors = decode(dec(10, 2), bodies, dec(12, 3))
    assert errors == [None, None]
    assert rows == [{"v": Decimal("12.340")}, {"v": Decimal("-0.010")}]


def test_a_decimal_that_loses_digits_at_the_reader_scale_or_precision_is_a_row_error():
    values = ("12.30", "12.34", "123.40")
    rows, errors = decode(
        dec(10, 2), [body(dec(10, 2), {"v": Decimal(v)}) for v in values], dec(3, 1)
    )
    assert rows == [{"v": Decimal("12.3")}, None, None]
    assert errors[0] is None
    assert "more than 1 decimal places" in str(errors[1])
    assert "more than 3 digits" in str(errors[2])


def test_a_plain_bytes_writer_is_read_with_the_reader_decimal():
    writer = record("D", ("v", "bytes"))
    rows, errors = decode(writer, [body(writer, {"v": (1234).to_bytes(2, "big")})], dec(10, 2))
    assert errors == [None] and rows == [{"v": Decimal("12.34")}]


def ts(kind: str) -> dict[str, Any]:
    return record("T", ("t", logical("long", kind)))


def test_timestamp_millis_read_as_micros_keeps_the_instant():
    moment = dt.datetime(1960, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    rows, errors = decode(
        ts("timestamp-millis"),
        [body(ts("timestamp-millis"), {"t": moment})],
        ts("timestamp-micros"),
    )
    assert errors == [None] and rows == [{"t": moment}]
    rows, errors = decode(
        ts("timestamp-micros"),
        [body(ts("timestamp-micros"), {"t": moment})],
        ts("timestamp-millis"),
    )
    assert errors == [None] and rows == [{"t": moment}]


def test_an_instant_read_as_a_local_timestamp_is_refused_for_every_row():
    moment = dt.datetime(2020, 1, 1, tzinfo=UTC)
    bodies = [body(ts("timestamp-micros"), {"t": moment})] * 2
    rows, errors = decode(ts("timestamp-micros"), bodies, ts("local-timestamp-micros"))
    assert rows == [None, None]
    assert "timestamp-micros" in str(errors[0]) and "local-timestamp-micros" in str(errors[0])
    assert "logical types differ" in str(errors[1])


def test_a_date_read_as_a_timestamp_is_refused_not_reinterpreted():
    writer = record("T", ("t", logical("int", "date")))
    rows, errors = decode(
        writer, [body(writer, {"t": dt.date(2020, 1, 1)})], ts("timestamp-millis")
    )
    assert rows == [None] and "logical types differ" in str(errors[0])


def test_a_plain_long_read_as_a_timestamp_takes_the_reader_unit():
    writer = record("T", ("t", "long"))
    rows, errors = decode(writer, [body(writer, {"t": -1500})], ts("timestamp-millis"))
    assert errors == [None]
    assert rows == [{"t": dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC)}]


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


# --- Spark accepts the batches --------------------------------------------------------


@pytest.mark.spark
def test_a_python_data_source_serves_decoded_batches_with_the_avro_spark_schema(spark):
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    messages = [body(ALL, r) for r in ROWS_IN] + [b"\x00garbage"]

    class Reader(DataSourceReader):
        def partitions(self):
            return [InputPartition(0)]

        def read(self, partition):
            # runs in a Python worker: the decoder is built there, as a connector would
            decoder = AvroBatchDecoder(ALL)
            array, errors = decoder.decode(messages, [0] * len(messages))
            valid = pa.array([e is None for e in errors])
            yield pa.RecordBatch.from_struct_array(array.filter(valid))

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "test-avro-batches"

        def schema(self):
            return avro_to_spark(ALL)

        def reader(self, schema):
            return Reader()

    spark.dataSource.register(Source)
    df = spark.read.format("test-avro-batches").load()
    assert df.schema == avro_to_spark(ALL)
    rows = [r.asDict(recursive=True) for r in df.collect()]
    expected = [expected_row(r) for r in ROWS_IN]
    for row in expected:
        row["m"] = dict(row["m"])
        # Spark hands timestamps back as naive datetimes in the session time zone (UTC)
        for name in ("tsms", "tsus"):
            row[name] = row[name].astimezone(UTC).replace(tzinfo=None)
    assert rows == expected


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
    with patch.object(avro_batch, "_CHUNK_ROWS", chunk):
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
