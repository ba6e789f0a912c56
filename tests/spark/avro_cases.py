"""Avro schemas, rows and helpers shared by the Avro batch decoder and encoder tests."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Any

import fastavro

from cdc_connectors.spark.avro_decode import AvroBatchDecoder

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


def time_millis(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000


def time_micros(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def expected_row(row: dict[str, Any]) -> dict[str, Any]:
    """What the decoder's Arrow row holds for a record fastavro wrote (Spark's view)."""
    out = dict(row)
    out["tmil"] = time_millis(row["tmil"])
    out["tmic"] = time_micros(row["tmic"])
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


#: Two versions of a record: fields added, removed and promoted.
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


def dec(precision: int, scale: int) -> dict[str, Any]:
    """A record of one decimal field ``v`` on bytes."""
    return record("D", ("v", logical("bytes", "decimal", precision=precision, scale=scale)))
