"""Registry schemas as run-time message classes, and messages <-> exact Python values."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from google.protobuf import descriptor_pool
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.protobuf import (
    compile_schema,
    descriptor_at,
    from_dict,
    message_class,
    message_indexes,
    to_dict,
)
from tests.hypothesis_profiles import examples

UTC = datetime.UTC
INT64_MIN, INT64_MAX, UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1

MONEY = """
syntax = "proto3";
package shop;

message Money {
  string currency = 1;
  int64 units = 2;
}
"""

# Every kind of field to_dict / from_dict handle, and a reference (shop/money.proto).
CUSTOMER = """
syntax = "proto3";
package test.v1;

import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "shop/money.proto";

message Customer {
  message Address {
    string street = 1;
    optional string zip = 2;
  }
  enum Tier {
    TIER_UNSPECIFIED = 0;
    GOLD = 1;
    SILVER = 2;
  }
  int64 id = 1;
  uint64 big = 2;
  sint64 s64 = 3;
  int32 i32 = 4;
  uint32 u32 = 5;
  fixed64 f64 = 6;
  double score = 7;
  float ratio = 8;
  bool active = 9;
  string name = 10;
  bytes blob = 11;
  Tier tier = 12;
  optional string nickname = 13;
  Address address = 14;
  repeated Address previous = 15;
  repeated int64 numbers = 16;
  repeated Tier tiers = 17;
  map<string, int64> counters = 18;
  map<int32, Address> by_id = 19;
  oneof contact {
    string email = 20;
    string phone = 21;
  }
  google.protobuf.Timestamp created_at = 22;
  google.protobuf.Int64Value limit = 23;
  google.protobuf.StringValue note = 24;
  google.protobuf.BytesValue token = 25;
  google.protobuf.UInt64Value cap = 26;
  shop.Money balance = 27;
  google.protobuf.Struct extra = 28;
  repeated google.protobuf.Timestamp visits = 29;
}

message Other {
  message Inner {
    string x = 1;
    message Deeper {
      int64 y = 1;
    }
  }
  message Second {
    bool z = 1;
  }
  int32 y = 1;
}
"""

REFERENCES = [("shop/money.proto", MONEY)]

# The realistic row of a change stream: a dozen fields, nullable strings both ways.
ORDER = """
syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Order {
  message Address {
    string street = 1;
    string city = 2;
    optional string zip = 3;
  }
  enum Status {
    STATUS_UNSPECIFIED = 0;
    NEW = 1;
    SHIPPED = 2;
  }
  int64 id = 1;
  optional string customer = 2;
  google.protobuf.StringValue email = 3;
  double amount = 4;
  bool paid = 5;
  google.protobuf.Timestamp created_at = 6;
  Address ship_to = 7;
  repeated string tags = 8;
  Status status = 9;
  optional string note = 10;
  google.protobuf.StringValue coupon = 11;
  uint64 points = 12;
}
"""


def customer_class() -> Any:
    return message_class(CUSTOMER, REFERENCES)


# --- message classes ---------------------------------------------------------------------


def test_message_class_compiles_a_schema_with_an_imported_reference():
    cls = customer_class()
    assert cls.DESCRIPTOR.full_name == "test.v1.Customer"
    balance = cls.DESCRIPTOR.fields_by_name["balance"].message_type
    assert balance.full_name == "shop.Money"
    assert balance.file.name == "shop/money.proto"
    message = cls(id=1, balance={"currency": "EUR", "units": 5})
    assert cls.FromString(message.SerializeToString()) == message


def test_message_class_is_cached_by_text_and_references():
    assert customer_class() is customer_class()
    assert message_class(CUSTOMER, tuple(REFERENCES)) is customer_class()
    assert message_class(CUSTOMER, REFERENCES, [1]) is message_class(CUSTOMER, REFERENCES, (1,))


def test_message_class_without_its_reference_says_what_is_missing():
    with pytest.raises(SchemaError, match=r"shop/money\.proto"):
        message_class(CUSTOMER)


def test_two_schemas_may_define_the_same_full_name_differently():
    first = message_class('syntax = "proto3"; package p; message A { string x = 1; }')
    second = message_class('syntax = "proto3"; package p; message A { int64 x = 1; }')
    assert first(x="text").x == "text"
    assert second(x=7).x == 7


@pytest.mark.parametrize(
    ("indexes", "full_name"),
    [
        ([0], "test.v1.Customer"),
        ([1], "test.v1.Other"),
        ([0, 0], "test.v1.Customer.Address"),
        ([1, 0], "test.v1.Other.Inner"),
        ([1, 0, 0], "test.v1.Other.Inner.Deeper"),
        ([1, 1], "test.v1.Other.Second"),
    ],
)
def test_message_indexes_and_descriptor_at_are_each_others_reverse(indexes, full_name):
    cls = message_class(CUSTOMER, REFERENCES, indexes)
    assert cls.DESCRIPTOR.full_name == full_name
    assert message_indexes(cls.DESCRIPTOR) == indexes
    assert descriptor_at(cls.DESCRIPTOR.file, indexes) is cls.DESCRIPTOR


def test_map_entries_count_as_nested_messages_as_confluent_counts_them():
    # Customer's nested types: Address, CountersEntry, ByIdEntry (in declaration order).
    customer = customer_class().DESCRIPTOR
    entry = customer.fields_by_name["by_id"].message_type
    assert message_indexes(entry) == [0, 2]


def test_indexes_follow_declaration_order_not_names():
    cls = message_class('syntax = "proto3"; message Zed { int32 a = 1; } message Alpha {}', (), [1])
    assert cls.DESCRIPTOR.name == "Alpha"
    assert message_indexes(cls.DESCRIPTOR) == [1]


def test_an_empty_index_path_is_the_first_message():
    assert descriptor_at(customer_class().DESCRIPTOR.file, []).name == "Customer"


@pytest.mark.parametrize(
    ("indexes", "match"),
    [
        ([2], r"\[2\] does not exist: file schema.proto has 2 message\(s\), no index 2"),
        ([1, 5], r"message test.v1.Other has 2 message\(s\), no index 5"),
        ([1, 1, 0], r"message test.v1.Other.Second has 0 message\(s\), no index 0"),
        ([-1], r"no index -1"),
    ],
)
def test_an_index_path_that_does_not_exist_is_named(indexes, match):
    with pytest.raises(SchemaError, match=match):
        message_class(CUSTOMER, REFERENCES, indexes)


def test_descriptor_at_works_on_any_pool():
    pool = descriptor_pool.DescriptorPool()
    for file in compile_schema(CUSTOMER, dict(REFERENCES)).file:
        pool.Add(file)
    file = pool.FindFileByName("schema.proto")
    assert descriptor_at(file, [1, 0, 0]).full_name == "test.v1.Other.Inner.Deeper"


# --- to_dict / from_dict -----------------------------------------------------------------


FULL: dict[str, Any] = {
    "id": INT64_MIN,
    "big": UINT64_MAX,
    "s64": INT64_MAX,
    "i32": -(2**31),
    "u32": 2**32 - 1,
    "f64": UINT64_MAX,
    "score": 0.1,
    "ratio": 0.5,
    "active": True,
    "name": "Zoë",
    "blob": b"\x00\xff\x10",
    "tier": "SILVER",
    "nickname": "",
    "address": {"street": "1 Main St", "zip": None},
    "previous": [{"street": "old", "zip": "12345"}, {"street": "", "zip": None}],
    "numbers": [INT64_MAX, INT64_MIN, 0],
    "tiers": ["GOLD", "TIER_UNSPECIFIED"],
    "counters": {"a": INT64_MAX, "b": -1},
    "by_id": {7: {"street": "s", "zip": "z"}},
    "email": "a@example.com",
    "created_at": datetime.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC),
    "limit": INT64_MIN,
    "note": "",
    "token": b"",
    "cap": UINT64_MAX,
    "balance": {"currency": "EUR", "units": INT64_MAX},
    "extra": {"a": 1.5, "b": [True, None, "x", {"c": 2.0}]},
    "visits": [datetime.datetime(1, 1, 1, tzinfo=UTC), datetime.datetime(9999, 12, 31, tzinfo=UTC)],
}


def test_every_kind_of_value_round_trips_exactly():
    cls = customer_class()
    message = from_dict(FULL, cls)
    again = cls.FromString(message.SerializeToString())
    assert to_dict(again) == FULL
    assert type(to_dict(again)["big"]) is int and type(to_dict(again)["blob"]) is bytes


def test_unset_fields_read_as_none_or_their_proto3_default():
    assert to_dict(customer_class()()) == {
        "id": 0,
        "big": 0,
        "s64": 0,
        "i32": 0,
        "u32": 0,
        "f64": 0,
        "score": 0.0,
        "ratio": 0.0,
        "active": False,
        "name": "",
        "blob": b"",
        "tier": "TIER_UNSPECIFIED",
        "nickname": None,
        "address": None,
        "previous": [],
        "numbers": [],
        "tiers": [],
        "counters": {},
        "by_id": {},
        "created_at": None,
        "limit": None,
        "note": None,
        "token": None,
        "cap": None,
        "balance": None,
        "extra": None,
        "visits": [],
    }


def test_presence_tells_empty_from_unset():
    cls = customer_class()
    values = to_dict(from_dict({"nickname": "", "note": "", "address": {}}, cls))
    assert values["nickname"] == "" and values["note"] == ""
    assert values["address"] == {"street": "", "zip": None}


def test_of_a_oneof_only_the_set_member_appears():
    cls = customer_class()
    assert "phone" not in to_dict(from_dict({"email": "e"}, cls))
    values = to_dict(from_dict({"phone": ""}, cls))
    assert values["phone"] == "" and "email" not in values
    assert {"email", "phone"}.isdisjoint(to_dict(cls()))


def test_setting_two_members_of_a_oneof_is_an_error():
    with pytest.raises(SchemaError, match="email and phone are members of oneof contact"):
        from_dict({"email": "e", "phone": "p"}, customer_class())


def test_enums_accept_numbers_and_keep_numbers_they_do_not_name():
    cls = customer_class()
    assert to_dict(from_dict({"tier": 2, "tiers": [1, "SILVER"]}, cls))["tiers"] == [
        "GOLD",
        "SILVER",
    ]
    assert to_dict(from_dict({"tier": 2}, cls))["tier"] == "SILVER"
    # proto3 enums are open: a number from a newer schema survives the trip
    assert to_dict(from_dict({"tier": 9}, cls))["tier"] == 9


def test_timestamps_are_aware_utc_datetimes_and_naive_ones_are_taken_as_utc():
    cls = customer_class()
    naive = datetime.datetime(2020, 5, 17, 10, 30)
    aware = datetime.datetime(
        2020, 5, 17, 12, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
    )
    expected = datetime.datetime(2020, 5, 17, 10, 30, tzinfo=UTC)
    assert to_dict(from_dict({"created_at": naive}, cls))["created_at"] == expected
    back = to_dict(from_dict({"created_at": aware}, cls))["created_at"]
    assert back == expected and back.tzinfo is UTC


def test_a_timestamp_outside_datetime_range_names_its_field():
    cls = customer_class()
    message = cls()
    message.created_at.seconds = 253402300800  # 10000-01-01
    with pytest.raises(SchemaError, match=r"^created_at: Timestamp 253402300800s 0ns"):
        to_dict(message)


def test_messages_of_the_class_are_accepted_where_dicts_are():
    cls = customer_class()
    money = cls.DESCRIPTOR.fields_by_name["balance"].message_type._concrete_class
    message = from_dict({"balance": money(currency="USD")}, cls)
    assert to_dict(message)["balance"] == {"currency": "USD", "units": 0}


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"nope": 1}, r"^nope: unknown field of test.v1.Customer \(id, big, "),
        ({"address": {"zipp": "1"}}, r"^address.zipp: unknown field of test.v1.Customer.Address"),
        ({"address": {"zip": 12345}}, r"^address.zip: expected str, got int 12345"),
        ({"previous": [{}, {"zip": b"1"}]}, r"^previous\[1\].zip: expected str, got bytes"),
        ({"by_id": {3: {"street": 1}}}, r"^by_id\[3\].street: expected str"),
        ({"by_id": {"3": {}}}, r"^by_id\['3'\]: expected an int, got str"),
        ({"counters": {"a": 2**63}}, r"^counters\['a'\]: 9223372036854775808 is out of range"),
        ({"id": 2**63}, r"^id: 9223372036854775808 is out of range"),
        ({"id": "1"}, r"^id: expected an int, got str '1'"),
        ({"id": True}, r"^id: expected an int, got bool"),
        ({"id": 1.0}, r"^id: expected an int, got float"),
        ({"big": -1}, r"^big: -1 is out of range \[0, 18446744073709551615\]"),
        ({"big": 2**64}, r"^big: 18446744073709551616 is out of range"),
        ({"i32": 2**31}, r"^i32: 2147483648 is out of range"),
        ({"active": 1}, r"^active: expected bool, got int"),
        ({"score": "1.5"}, r"^score: expected float or int, got str"),
        ({"score": 2**53 + 1}, r"^score: 9007199254740993 has no exact double value"),
        ({"name": b"x"}, r"^name: expected str, got bytes"),
        ({"blob": "x"}, r"^blob: expected bytes or bytearray or memoryview, got str"),
        ({"tier": "BRONZE"}, r"^tier: 'BRONZE' is not a value of test.v1.Customer.Tier"),
        ({"tier": 2**40}, r"^tier: 1099511627776 is not a number of test.v1.Customer.Tier"),
        ({"tiers": "GOLD"}, r"^tiers: expected a list, got str"),
        ({"counters": [("a", 1)]}, r"^counters: expected a dict \(map\), got list"),
        ({"address": "1 Main St"}, r"^address: expected a dict for test.v1.Customer.Address"),
        ({"created_at": "soon"}, r"^created_at: .soon. is not an ISO 8601 timestamp"),
        ({"created_at": 5}, r"^created_at: expected a datetime or ISO 8601 text, got int"),
        ({"limit": "5"}, r"^limit: expected an int, got str"),
        ({"cap": -1}, r"^cap: -1 is out of range"),
        ({"extra": {"a": {"b": 2**60 + 1}}}, r"^extra.a.b: 1152921504606846977 has no exact"),
        ({"extra": {"a": [object()]}}, r"^extra.a\[0\]: expected a JSON value, got object"),
        ({"balance": {"units": "5"}}, r"^balance.units: expected an int, got str"),
    ],
)
def test_wrong_values_raise_a_schema_error_naming_the_path(data, match):
    with pytest.raises(SchemaError, match=match):
        from_dict(data, customer_class())


WELL_KNOWN = """
syntax = "proto3";
import "google/protobuf/duration.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

enum Color { RED = 0; BLUE = 1; }
message Mixed {
  repeated google.protobuf.Int64Value limits = 1;
  map<string, google.protobuf.Timestamp> seen = 2;
  map<string, Color> colors = 3;
  google.protobuf.Duration wait = 4;
  repeated google.protobuf.Value values = 5;
  map<bool, bytes> flags = 6;
  oneof when {
    google.protobuf.Timestamp at = 7;
    int64 after = 8;
  }
  google.protobuf.Value one = 9;
  google.protobuf.ListValue items = 10;
}
"""

MIXED: dict[str, Any] = {
    "limits": [1, INT64_MIN],
    "seen": {"a": datetime.datetime(2020, 1, 1, tzinfo=UTC)},
    "colors": {"x": "BLUE", "y": "RED"},
    "wait": {"seconds": 5, "nanos": 1},
    "values": [1.0, "a", None, [True, {"k": "v"}]],
    "flags": {True: b"x", False: b""},
    "at": datetime.datetime(2021, 1, 1, tzinfo=UTC),
    "one": {"k": [1.0]},
    "items": [None, "x"],
}


def test_well_known_types_inside_containers_round_trip():
    cls = message_class(WELL_KNOWN)
    message = cls.FromString(from_dict(MIXED, cls).SerializeToString())
    assert to_dict(message) == MIXED
    assert to_dict(from_dict({"after": 3}, cls))["after"] == 3


def test_none_and_missing_keys_leave_fields_unset():
    cls = customer_class()
    assert from_dict({"address": None, "numbers": None, "id": None}, cls) == cls()
    assert from_dict({}, cls) == cls()


# --- property: any valid value survives from_dict -> bytes -> to_dict -------------------


def ints(bits: int, signed: bool = True) -> st.SearchStrategy[int]:
    if signed:
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return st.integers(0, 2**bits - 1)


TEXT = st.text(max_size=8)
ADDRESS = st.fixed_dictionaries({"street": TEXT, "zip": st.none() | TEXT})
TIMES = st.datetimes(
    min_value=datetime.datetime(1, 1, 1),
    max_value=datetime.datetime(9999, 12, 31, 23, 59, 59, 999999),
    timezones=st.just(UTC),
)
JSON = st.recursive(
    st.none() | st.booleans() | TEXT | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
TIERS = st.sampled_from(["TIER_UNSPECIFIED", "GOLD", "SILVER"])
CUSTOMERS = st.fixed_dictionaries(
    {
        "id": ints(64),
        "big": ints(64, signed=False),
        "s64": ints(64),
        "i32": ints(32),
        "u32": ints(32, signed=False),
        "f64": ints(64, signed=False),
        "score": st.floats(allow_nan=False),
        "ratio": st.floats(width=32, allow_nan=False),
        "active": st.booleans(),
        "name": st.text(),
        "blob": st.binary(max_size=16),
        "tier": TIERS,
        "nickname": st.none() | TEXT,
        "address": st.none() | ADDRESS,
        "previous": st.lists(ADDRESS, max_size=3),
        "numbers": st.lists(ints(64), max_size=4),
        "tiers": st.lists(TIERS, max_size=3),
        "counters": st.dictionaries(TEXT, ints(64), max_size=3),
        "by_id": st.dictionaries(ints(32), ADDRESS, max_size=3),
        "created_at": st.none() | TIMES,
        "limit": st.none() | ints(64),
        "note": st.none() | st.text(),
        "token": st.none() | st.binary(max_size=8),
        "cap": st.none() | ints(64, signed=False),
        "balance": st.none() | st.fixed_dictionaries({"currency": TEXT, "units": ints(64)}),
        "extra": st.none() | st.dictionaries(TEXT, JSON, max_size=3),
        "visits": st.lists(TIMES, max_size=2),
    },
    optional={"email": TEXT, "phone": TEXT},
).filter(lambda d: not ("email" in d and "phone" in d))


@settings(max_examples=examples(150), deadline=None)
@given(CUSTOMERS)
def test_round_trip_property(data):
    cls = customer_class()
    message = cls.FromString(from_dict(data, cls).SerializeToString())
    assert to_dict(message) == data
    assert from_dict(to_dict(message), cls) == message


def test_a_set_extension_reads_under_its_bracketed_full_name() -> None:
    cls = message_class(
        'syntax = "proto2";\npackage shop.v1;\n'
        "message M { optional int32 a = 1; extensions 100 to 200; }\n"
        "extend M { optional string note = 100; }\n"
    )
    message = cls.FromString(b"\x08\x01\xa2\x06\x02hi")
    assert to_dict(message) == {"a": 1, "[shop.v1.note]": "hi"}
    assert to_dict(cls.FromString(b"\x08\x01")) == {"a": 1}
