"""Hypothesis strategies: batches of rows in Confluent's Protobuf wire format (magic byte,
schema id, message-index path, body), of a message with a field of every scalar type,
enums (and numbers no name is given), nested and repeated messages, Timestamps and
wrappers; a message with a oneof; other messages of the file; and junk."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

from confluent_kafka.schema_registry import Schema
from hypothesis import strategies as st

from cdc_connectors.registry.base import SchemaRegistry
from cdc_connectors.schema.protobuf import from_dict, message_class

ROW = """
syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Row {
  message Address {
    string street = 1;
    optional string zip = 2;
    Tier tier = 3;
  }
  enum Tier {
    TIER_UNSPECIFIED = 0;
    GOLD = 1;
    SILVER = 2;
  }
  int64 id = 1;
  int32 i32 = 2;
  uint32 u32 = 3;
  uint64 u64 = 4;
  sint32 s32 = 5;
  sint64 s64 = 6;
  fixed32 f32 = 7;
  fixed64 f64 = 8;
  sfixed32 sf32 = 9;
  sfixed64 sf64 = 10;
  float real = 11;
  double dbl = 12;
  bool flag = 13;
  string text = 14;
  bytes blob = 15;
  Tier tier = 16;
  optional string nickname = 17;
  optional int64 limit = 18;
  repeated int64 counts = 19;
  repeated string tags = 20;
  repeated Tier tiers = 21;
  Address address = 22;
  repeated Address previous = 23;
  google.protobuf.Timestamp created_at = 24;
  repeated google.protobuf.Timestamp visits = 25;
  google.protobuf.StringValue email = 26;
  google.protobuf.Int64Value balance = 27;
  google.protobuf.DoubleValue ratio = 28;
  google.protobuf.BoolValue active = 29;
  google.protobuf.UInt64Value points = 30;
  google.protobuf.BytesValue token = 31;
  double weird = 32;
}

message Other {
  int64 id = 1;
  string name = 2;
}
"""

KEY = """
syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";

message Key {
  int64 id = 1;
  string region = 2;
  Tier tier = 3;
  google.protobuf.Timestamp at = 4;
}
enum Tier {
  TIER_UNSPECIFIED = 0;
  GOLD = 1;
}
message Other {
  int64 id = 1;
}
"""

CHOICE = """
syntax = "proto3";
package shop.v1;

message Choice {
  int64 id = 1;
  oneof contact {
    string email = 2;
    string phone = 3;
  }
}
"""

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=8) | st.sampled_from(
    ['a"b', "line\nbreak", "\x00", "é✓😀", "12", "GOLD"]
)
# names, their numbers, and now and then a number the schema does not name
_TIERS = st.sampled_from(["TIER_UNSPECIFIED", "GOLD", "SILVER", 1, "GOLD", "SILVER", 2, 7, -1])
_UTC = dt.UTC
_TIMES = st.datetimes(
    min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)
).map(lambda t: t.replace(tzinfo=_UTC))


def _ints(bits: int, signed: bool = True) -> st.SearchStrategy[int]:
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return st.integers(-1000, 1000).filter(lambda n: low <= n <= high) | st.integers(low, high)


_ADDRESS = st.fixed_dictionaries(
    {"street": _TEXT},
    optional={"zip": st.none() | _TEXT, "tier": _TIERS},
)
_DOUBLES = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5).map(float)
ROW_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "id": _ints(64),
    "i32": _ints(32),
    "u32": _ints(32, signed=False),
    "u64": _ints(64, signed=False),
    "s32": _ints(32),
    "s64": _ints(64),
    "f32": _ints(32, signed=False),
    "f64": _ints(64, signed=False),
    "sf32": _ints(32),
    "sf64": _ints(64),
    "real": st.floats(width=32, allow_nan=False, allow_infinity=False),
    "dbl": _DOUBLES,
    "flag": st.booleans(),
    "text": _TEXT,
    "blob": st.binary(max_size=6),
    "tier": _TIERS,
    "nickname": st.none() | _TEXT,
    "limit": st.none() | _ints(64),
    "counts": st.lists(_ints(64), max_size=3),
    "tags": st.lists(_TEXT, max_size=3),
    "tiers": st.lists(_TIERS, max_size=3),
    "address": st.none() | _ADDRESS,
    "previous": st.lists(_ADDRESS, max_size=2),
    "created_at": st.none() | _TIMES,
    "visits": st.lists(_TIMES, max_size=2),
    "email": st.none() | _TEXT,
    "balance": st.none() | _ints(64),
    "ratio": st.none() | _DOUBLES,
    "active": st.none() | st.booleans(),
    "points": st.none() | _ints(64, signed=False),
    "token": st.none() | st.binary(max_size=4),
    "weird": st.sampled_from([0.5, -0.0, 1e300, 0.5, 0.5, float("nan"), float("-inf")]),
}
_BATCHES = itertools.count()


def _framed(schema_id: int, index: bytes, body: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + index + body


@st.composite
def _row(draw: st.DrawFn) -> dict[str, Any]:
    # Most fields most of the time, so that unset ones read as their defaults too.
    return {name: draw(values) for name, values in ROW_FIELDS.items() if draw(st.integers(0, 5))}


@st.composite
def batches(
    draw: st.DrawFn, registry: SchemaRegistry
) -> list[tuple[bytes | None, bytes | None, bool]]:
    """(key, value, whether the value's schema id travels in a header) of each message."""
    batch = next(_BATCHES)
    row_id = registry.register_schema(f"proto-rows{batch}-value", Schema(ROW, "PROTOBUF"))
    choice_id = registry.register_schema(f"proto-choice{batch}-value", Schema(CHOICE, "PROTOBUF"))
    key_id = registry.register_schema("proto-key", Schema(KEY, "PROTOBUF"))
    row_cls = message_class(ROW, (), (0,))
    key_cls = message_class(KEY, (), (0,))
    other_cls = message_class(ROW, (), (1,))
    choice_cls = message_class(CHOICE, (), (0,))
    messages: list[tuple[bytes | None, bytes | None, bool]] = []
    for _ in range(draw(st.integers(1, 15))):
        kind = draw(st.integers(0, 12))
        in_header = False
        value: bytes | None
        if kind == 0:
            value = draw(
                st.none()
                | st.sampled_from([b"", b"\x00", b"\x00\x00\x00\x00\x01\x00\xff", b"junk"])
            )
        elif kind == 1:
            body = from_dict({"id": draw(_ints(64)), "name": draw(_TEXT)}, other_cls)
            value = _framed(row_id, b"\x02\x02", body.SerializeToString())
        elif kind == 2:
            data: dict[str, Any] = {"id": 1}
            if draw(st.booleans()):
                data["email"] = "x@y"
            value = _framed(choice_id, b"\x00", from_dict(data, choice_cls).SerializeToString())
        else:
            body = from_dict(draw(_row()), row_cls).SerializeToString()
            shape = draw(st.integers(0, 19))
            if shape == 0 and body:
                body = body[: draw(st.integers(0, 2**16)) % len(body)]
            in_header = shape == 1
            value = b"\x00" + body if in_header else _framed(row_id, b"\x00", body)
        key = draw(
            st.none()
            | st.binary(max_size=5)
            | st.just(b"\x00\x00\x00\x00\x01\x00")
            | st.fixed_dictionaries(
                {"id": _ints(64), "region": _TEXT},
                optional={
                    "tier": st.sampled_from(["GOLD", "TIER_UNSPECIFIED", 1, 5]),
                    "at": _TIMES,
                },
            ).map(lambda k: _framed(key_id, b"\x00", from_dict(k, key_cls).SerializeToString()))
            | st.just(_framed(key_id, b"\x02\x02", b"\x08\x01"))  # the file's second message
        )
        messages.append((key, value, in_header))
    return messages
