"""Structured data <-> Avro bodies: numbers exact or refused, hostile bodies refused."""

from __future__ import annotations

import datetime as dt
import io
import re
from decimal import Decimal

import fastavro
import pytest

from cdc_connectors.opencdc import CodecError
from cdc_connectors.schema import avro_values

LOSSY = fastavro.parse_schema(
    {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "qty", "type": "long"},
            {"name": "price", "type": "float"},
            {"name": "id", "type": ["null", "double", "long"]},
            {"name": "ok", "type": "int"},
            {
                "name": "d",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
            },
        ],
    }
)
GOOD = {"qty": 2, "price": 0.1, "id": 9007199254740993, "ok": 1, "d": Decimal("1.50")}


def _round_trip(row: dict) -> dict:
    return avro_values.decode(avro_values.encode(LOSSY, row), LOSSY)


def test_values_that_fit_keep_their_value():
    back = _round_trip(GOOD)
    assert back["id"] == 9007199254740993 and isinstance(back["id"], int)  # the long branch
    assert back["qty"] == 2 and back["ok"] == 1 and back["d"] == Decimal("1.50")
    assert _round_trip(dict(GOOD, qty=2.0))["qty"] == 2  # an integral float is that integer
    assert _round_trip(dict(GOOD, d=1.5))["d"] == Decimal("1.50")  # JSON numbers for decimals
    assert _round_trip(dict(GOOD, d=12))["d"] == Decimal("12.00")
    assert _round_trip(dict(GOOD, id=0.5))["id"] == 0.5


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"qty": 2.5}, r"qty: expected an integer for Avro long, got float 2\.5"),
        ({"price": 16777217}, r"price: 16777217 would change as an Avro float"),
        ({"price": 1e300}, r"price: 1e\+300 would change as an Avro float"),
        ({"id": 2**64}, r"does not fit an Avro long"),
        ({"ok": True}, r"ok: expected an integer for Avro int, got bool"),
        ({"ok": 2**31}, r"ok: integer 2147483648 does not fit an Avro int"),
        ({"d": "1.234"}, r"Scale|scale|decimal"),
        ({"extra": 1}, r"extra: not a field of the Avro record 'R'"),
    ],
)
def test_values_that_would_change_are_refused(change: dict, reason: str):
    with pytest.raises(CodecError, match=reason):
        avro_values.encode(LOSSY, dict(GOOD, **change))


def test_a_decimal_wider_than_its_precision_is_an_error_not_rounded():
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "D",
            "fields": [
                {
                    "name": "dec",
                    "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2},
                }
            ],
        }
    )
    unscaled = (8388607).to_bytes(3, "big", signed=True)
    body = bytes([len(unscaled) * 2]) + unscaled
    with pytest.raises(CodecError, match=r"8388607 has more digits than decimal\(4,2\)"):
        avro_values.decode(body, schema)
    exact = (-1234).to_bytes(2, "big", signed=True)
    assert avro_values.decode(bytes([4]) + exact, schema) == {"dec": Decimal("-12.34")}


RECURSIVE = fastavro.parse_schema(
    {
        "type": "record",
        "name": "N",
        "fields": [{"name": "v", "type": "int"}, {"name": "next", "type": ["null", "N"]}],
    }
)


@pytest.mark.parametrize("depth", [1000, 5000, 20000])
def test_deep_recursive_bodies_are_errors_not_crashes(depth: int):
    body = b"\x02\x02" * depth + b"\x02\x00"
    value = avro_values.decode(body, RECURSIVE)  # read on a thread with room for it
    with pytest.raises(CodecError, match="nests deeper than structured data can hold"):
        avro_values.to_structured(value)


def test_a_recursive_body_too_large_to_follow_is_refused():
    with pytest.raises(CodecError, match="could nest deeper than can be followed"):
        avro_values.decode(b"\x02\x02" * 40000 + b"\x02\x00", RECURSIVE)


def test_arrays_of_items_that_take_no_bytes_are_not_read():
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "B",
            "fields": [{"name": "xs", "type": {"type": "array", "items": "null"}}],
        }
    )
    bomb = b"\x80\xda\xc4\x09\x00"  # a block of 10**7 nulls in five bytes
    with pytest.raises(CodecError, match="items that take no bytes"):
        avro_values.decode(bomb, schema)


def test_reasons_carry_no_memory_addresses():
    schema = fastavro.parse_schema(
        {"type": "record", "name": "F", "fields": [{"name": "x", "type": "double"}]}
    )
    with pytest.raises(CodecError) as caught:
        avro_values.decode(b"\x01", schema)
    assert " at 0x" not in str(caught.value)


def test_fastavro_reads_what_we_write():
    body = avro_values.encode(LOSSY, GOOD)
    assert fastavro.schemaless_reader(io.BytesIO(body), LOSSY)["id"] == 9007199254740993


def test_native_temporal_values_are_written():
    import datetime as dt
    from uuid import UUID

    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "T",
            "fields": [
                {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
                {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
                {"name": "clock", "type": {"type": "long", "logicalType": "time-micros"}},
                {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
            ],
        }
    )
    row = {
        "at": dt.datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
        "day": dt.date(2025, 1, 2),
        "clock": dt.time(1, 2, 3, 4),
        "id": UUID(int=7),
    }
    assert avro_values.decode(avro_values.encode(schema, row), schema) == row
    text = {
        "at": row["at"].isoformat(),
        "day": "2025-01-02",
        "clock": "01:02:03.000004",
        "id": str(UUID(int=7)),
    }
    assert avro_values.decode(avro_values.encode(schema, text), schema) == row


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1E+999999999", "more digits than decimal\\(9,2\\) holds"),
        ("1E-999999999", "more than 2 decimal places"),
        ("1.555", "more than 2 decimal places"),
    ],
)
def test_decimal_text_is_refused_by_its_bounds_before_any_scaling(text: str, reason: str):
    # A billion-digit integer would take minutes and gigabytes: the bounds answer first.
    with pytest.raises(CodecError, match=f"d: {re.escape(text)} has {reason}"):
        avro_values.encode(LOSSY, {**GOOD, "d": text})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1E+2", Decimal("100.00")),
        ("0E-999999999", Decimal("0.00")),
        (Decimal("1.5"), Decimal("1.50")),
    ],
)
def test_decimals_are_written_at_the_schemas_scale(value, expected):
    assert _round_trip({**GOOD, "d": value})["d"] == expected


_PROBE = """
import io, json, pkgutil, importlib
import fastavro, fastavro.read, fastavro.write
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

client = SchemaRegistryClient.new_client({"url": "mock://"})
decimal = {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 2}
schema = {"type": "record", "name": "R", "fields": [{"name": "a", "type": decimal}]}
schema_id = client.register_schema("t-value", Schema(json.dumps(schema), "AVRO"))
raw = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "bytes"}]}
body = io.BytesIO()
# six digits where the schema's precision is three: fastavro rounds them, we refuse them
unscaled = (123456).to_bytes(3, "big", signed=True)
fastavro.schemaless_writer(body, fastavro.parse_schema(raw), {"a": unscaled})
message = b"\\0" + schema_id.to_bytes(4, "big") + body.getvalue()
context = SerializationContext("t", MessageField.VALUE)

def state():
    return (
        dict(fastavro.read.LOGICAL_READERS),
        dict(fastavro.write.LOGICAL_WRITERS),
        repr(AvroDeserializer(client)(message, context)),
    )

before = state()
import cdc_connectors
for module in pkgutil.walk_packages(cdc_connectors.__path__, "cdc_connectors."):
    if module.name != "cdc_connectors.cli" and ".proto." not in module.name:
        importlib.import_module(module.name)
after = state()
changed = [
    key
    for table_before, table_after in zip(before[:2], after[:2])
    for key in table_before
    if table_after.get(key) is not table_before[key]
]
added = sorted(set(after[0]) - set(before[0]) | set(after[1]) - set(before[1]))
print(json.dumps({"changed": changed, "added": added, "before": before[2], "after": after[2]}))
"""


def test_importing_the_package_leaves_fastavro_and_confluent_decimals_alone():
    """Our exact decimal reading is a logical type of our own: fastavro's table keeps its
    readers and writers, and confluent-kafka's AvroDeserializer reads as it did."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["changed"] == []
    assert all(key.split("-", 1)[1].startswith("cdc-") for key in found["added"])
    assert found["after"] == found["before"] == "{'a': Decimal('1.23E+3')}"


def test_a_schema_parsed_by_fastavro_itself_reads_decimals_exactly():
    """``decode`` reads a schema fastavro parsed (not :func:`avro_values.parse_schema`)
    with our exact decimals too, without changing the caller's schema."""
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "R",
            "fields": [
                {
                    "name": "a",
                    "type": {"type": "bytes", "logicalType": "decimal", "precision": 3},
                }
            ],
        }
    )
    raw = fastavro.parse_schema(
        {"type": "record", "name": "R", "fields": [{"name": "a", "type": "bytes"}]}
    )
    body = io.BytesIO()
    unscaled = (123456).to_bytes(3, "big", signed=True)
    fastavro.schemaless_writer(body, fastavro.parse_schema(raw), {"a": unscaled})
    with pytest.raises(CodecError, match="more digits than decimal"):
        avro_values.decode(body.getvalue(), schema)
    assert schema["fields"][0]["type"]["logicalType"] == "decimal"


def test_decimals_are_written_in_the_fewest_bytes_as_java_and_the_columns_write_them() -> None:
    """-128 (unscaled) is one byte, 0x80, as Java's BigInteger and the columnar encoder
    write it; fastavro alone would write two (ff 80). Every value reads back as it was."""
    import pyarrow as pa

    from cdc_connectors.spark.avro_encode import AvroBatchEncoder

    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {
                "name": "d",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 2},
            }
        ],
    }
    parsed = fastavro.parse_schema(schema)
    values = [Decimal(n).scaleb(-2) for n in (-128, -129, 127, 128, -32768, -(2**71), 0, -1)]
    ours = [avro_values.encode(parsed, {"d": v}, schema) for v in values]
    columns = pa.StructArray.from_arrays([pa.array(values, pa.decimal128(30, 2))], names=["d"])
    assert ours == AvroBatchEncoder(schema).encode(columns)[0]
    assert ours[0] == b"\x02\x80" and ours[4] == b"\x04\x80\x00"
    assert [fastavro.schemaless_reader(io.BytesIO(b), parsed)["d"] for b in ours] == values


def test_times_keep_every_digit_their_unit_holds_and_refuse_finer_ones():
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "T",
            "fields": [
                {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
                {"name": "ns", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
                {"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
            ],
        }
    )
    row = {
        "ms": "2024-01-01T00:00:00.123Z",
        "us": "2024-01-01T00:00:00.123456+00:00",
        "ns": "2024-01-01T00:00:00.123456789Z",
        "tod": "01:02:03.5",
    }
    body = avro_values.encode(schema, row)
    raw = fastavro.schemaless_reader(io.BytesIO(body), schema, None)
    assert raw["ns"] == 1_704_067_200_123_456_789  # a count: fastavro has no nanos type
    assert raw["us"].microsecond == 123456 and raw["ms"].microsecond == 123000
    finer = {
        "ms": "2024-01-01T00:00:00.1234Z",
        "us": "2024-01-01T00:00:00.1234567Z",
        "ns": "2024-01-01T00:00:00.1234567891Z",
        "tod": "01:02:03.5001",
    }
    for field, value in finer.items():
        with pytest.raises(CodecError, match=f"{field}: .* has a fraction of a second finer"):
            avro_values.encode(schema, dict(row, **{field: value}))
    # beyond the unit's long: refused naming the field (was "Python int too large ...")
    for late in ("2262-04-12T00:00:00Z", "0001-01-01T00:00:00Z"):
        with pytest.raises(CodecError, match=r"ns: .* is beyond what a timestamp-nanos holds"):
            avro_values.encode(schema, dict(row, ns=late))
    # a time of day's count of a day or more is no time of day (none reads back)
    for count in (-1, 86_400_000, 2**31 - 1):
        with pytest.raises(CodecError, match=f"tod: {count} is not a time-millis"):
            avro_values.encode(schema, dict(row, tod=count))
    last = avro_values.encode(schema, dict(row, tod=86_399_999))
    assert avro_values.decode(last, schema)["tod"] == dt.time(23, 59, 59, 999000)


def test_a_body_naming_a_branch_its_union_lacks_is_refused_in_words():
    schema = fastavro.parse_schema(
        {"type": "record", "name": "U", "fields": [{"name": "u", "type": ["null", "string"]}]}
    )
    with pytest.raises(CodecError, match="name a union branch or enum symbol it lacks") as bad:
        avro_values.decode(b"\x08", schema)  # branch 4 of two
    assert "index out of range" not in str(bad.value)
