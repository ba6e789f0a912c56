"""Avro schemas inferred from structured data: Conduit's schemas, writable by fastavro."""

from __future__ import annotations

import io
import math
import re
import time
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import fastavro
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc_connectors.schema import avro
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.infer import infer_schema, infer_schema_text, prepare

DECIMAL = {"type": "bytes", "logicalType": "decimal", "precision": 31, "scale": 10}
TIMESTAMP = {"type": "long", "logicalType": "timestamp-micros"}


def field_type(value: object) -> object:
    """The inferred type of ``value`` as the field ``foo``, as Conduit's serde tests ask it."""
    schema = infer_schema({"foo": value})
    assert schema["name"] == "record"
    assert [field["name"] for field in schema["fields"]] == ["foo"]
    return schema["fields"][0]["type"]


def round_trip(data: dict[str, Any]) -> dict[str, Any]:
    inferred = infer_schema(data)
    schema = fastavro.parse_schema(inferred)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, prepare(data, inferred))
    out.seek(0)
    read: Any = fastavro.schemaless_reader(out, schema, None)
    assert isinstance(read, dict)
    return read


# -- one rule each --------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "boolean"),
        (False, "boolean"),
        (0, "long"),
        (7, "long"),  # small ints too: Python ints carry no width
        (2**63 - 1, "long"),
        (-(2**63), "long"),
        (1.5, "double"),
        (math.inf, "double"),
        ("text", "string"),
        (b"\x00\x01", "bytes"),
        (bytearray(b"ab"), "bytes"),
        (Decimal("1.25"), DECIMAL),
        (datetime(2024, 5, 1, 12, 0, tzinfo=UTC), TIMESTAMP),
        (None, ["null", "string"]),
    ],
    ids=repr,
)
def test_scalar_becomes_conduits_avro_type(value: object, expected: object) -> None:
    assert field_type(value) == expected


def test_root_is_a_record_named_record_with_fields_sorted_by_name() -> None:
    schema = infer_schema({"zeta": 1, "alpha": "a", "Mid": True, "_x": None})
    assert schema == {
        "name": "record",
        "type": "record",
        "fields": [
            {"name": "Mid", "type": "boolean"},  # bytewise: upper case first, as Go sorts
            {"name": "_x", "type": ["null", "string"]},
            {"name": "alpha", "type": "string"},
            {"name": "zeta", "type": "long"},
        ],
    }


def test_record_name_can_be_given_with_a_namespace() -> None:
    schema = infer_schema({"a": 1}, name="shop.Order")
    assert schema["name"] == "shop.Order"
    parsed: Any = fastavro.parse_schema(schema)
    assert parsed["name"] == "shop.Order"


def test_empty_data_is_a_record_without_fields() -> None:
    assert infer_schema({}) == {"name": "record", "type": "record", "fields": []}


def test_list_items_are_a_union_with_null_as_for_go_slices_of_any() -> None:
    assert field_type([1, 2, 3]) == {"type": "array", "items": ["long", "null"]}


def test_list_of_mixed_values_is_a_sorted_union() -> None:
    # Conduit's serde test "[]any (with data)": []any{1, "foo"}
    assert field_type([1, "foo"]) == {"type": "array", "items": ["long", "null", "string"]}
    assert field_type([True, "x", 2.5, 1, None, b"b"]) == {
        "type": "array",
        "items": ["boolean", "bytes", "double", "long", "null", "string"],
    }


def test_union_members_sort_by_json_text_so_named_kinds_follow_plain_ones() -> None:
    moment = datetime(2024, 1, 1, tzinfo=UTC)
    assert field_type(["a", [1], {"k": 1}, moment]) == {
        "type": "array",
        "items": [
            "null",
            "string",
            {"type": "array", "items": ["long", "null"]},
            TIMESTAMP,
            {"type": "map", "values": ["long", "null"]},
        ],
    }


def test_empty_list_and_list_of_nulls_hold_nullable_strings() -> None:
    assert field_type([]) == {"type": "array", "items": ["null", "string"]}
    assert field_type([None]) == {"type": "array", "items": ["null", "string"]}


def test_tuple_is_an_array_too() -> None:
    assert field_type(("a", "b")) == {"type": "array", "items": ["null", "string"]}


def test_arrays_in_one_union_merge_into_one() -> None:
    assert field_type([[1], ["a"], []]) == {
        "type": "array",
        "items": ["null", {"type": "array", "items": ["long", "null", "string"]}],
    }


def test_nested_dict_is_a_map_of_a_union_with_null() -> None:
    # Conduit's serde test "map[string]any (nested)"
    assert field_type({"bar": "baz", "baz": 1}) == {
        "type": "map",
        "values": ["long", "null", "string"],
    }
    assert infer_schema({"foo": {"foo": {"bar": "baz", "baz": 1}}})["fields"][0]["type"] == {
        "type": "map",
        "values": ["null", {"type": "map", "values": ["long", "null", "string"]}],
    }


def test_map_with_two_arrays_merges_their_items() -> None:
    # Conduit's serde test "map[string]any (with union array)"
    value = {"foo": "bar", "foo2": "bar2", "bar": 1, "baz": [1, 2, 3], "baz2": ["foo", True]}
    assert field_type(value) == {
        "type": "map",
        "values": [
            "long",
            "null",
            "string",
            {"type": "array", "items": ["boolean", "long", "null", "string"]},
        ],
    }


def test_maps_in_one_union_merge_into_one() -> None:
    assert field_type([{"a": 1}, {"b": "x"}]) == {
        "type": "array",
        "items": ["null", {"type": "map", "values": ["long", "null", "string"]}],
    }


def test_empty_dict_holds_nullable_strings() -> None:
    assert field_type({}) == {"type": "map", "values": ["null", "string"]}


def test_keys_of_nested_dicts_need_not_be_avro_names() -> None:
    assert field_type({"not a name": 1, "9": 2}) == {"type": "map", "values": ["long", "null"]}


# -- the text registered ----------------------------------------------------------


def test_text_is_the_compact_json_conduit_registers() -> None:
    data = {"id": 1, "price": Decimal("9.99"), "at": datetime(2024, 1, 1, tzinfo=UTC), "n": None}
    assert infer_schema_text(data) == (
        '{"name":"record","type":"record","fields":['
        '{"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}},'
        '{"name":"id","type":"long"},'
        '{"name":"n","type":["null","string"]},'
        '{"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":31,"scale":10}}'
        "]}"
    )


def test_same_data_gives_identical_text_whatever_the_key_order() -> None:
    first = {"b": [1, "x", 2.0], "a": {"y": 1, "x": "s"}, "c": None}
    second = {"c": None, "a": {"x": "s", "y": 1}, "b": [2.0, "x", 1]}
    texts = {infer_schema_text(first), infer_schema_text(first), infer_schema_text(second)}
    assert len(texts) == 1


def test_schema_parses_with_fastavro_and_with_the_registrys_avro_parser() -> None:
    data = {"a": [1, {"k": [b"x", None]}], "b": Decimal("1"), "c": datetime.now(UTC)}
    fastavro.parse_schema(infer_schema(data))
    avro.parse(infer_schema_text(data))


# -- errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"items": [1, 2, 2**63]}, "payload.after.items[2]"),
        ({"items": [1, 2, -(2**63) - 1]}, "payload.after.items[2]"),
        ({"big": 2**64 - 1}, "payload.after.big"),
        ({"deep": {"inner": [{"x": 2**70}]}}, "payload.after.deep.inner[0].x"),
    ],
)
def test_integer_beyond_64_bits_is_refused_naming_its_path(data: Any, where: str) -> None:
    with pytest.raises(SchemaError, match=rf"^{re.escape(where)}: integer"):
        infer_schema(data, what="payload.after")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1: "a"}, r"^data\.foo: key 1 is a int"),
        ({1, 2}, r"^data\.foo: a set has no Avro type"),
        (date(2024, 1, 1), r"^data\.foo: a date has no Avro type"),
        (timedelta(seconds=1), r"^data\.foo: a timedelta has no Avro type"),
        (Decimal("NaN"), r"^data\.foo: Decimal NaN has no Avro decimal form"),
        (Decimal("Infinity"), r"^data\.foo: Decimal Infinity"),
        (Decimal("1E+21"), r"^data\.foo: Decimal 1E\+21 has more than 21 digits"),
        (Decimal("-999999999999999999999.99999999999"), r"more than 10 decimal places"),
        (Decimal("-9999999999999999999999.9999999999"), r"more than 21 digits before the point"),
        ([1, datetime(2024, 1, 1, tzinfo=UTC)], r"^data\.foo\[1\]: a long \(timestamp-micros\)"),
        ({"raw": b"x", "price": Decimal("1")}, r"^data\.foo\.price: a bytes \(decimal\)"),
        ([[1], [datetime(2024, 1, 1, tzinfo=UTC)]], r"^data\.foo\[1\]: .*one Avro type, long"),
    ],
    ids=repr,
)
def test_value_without_avro_type_is_refused(value: object, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        infer_schema({"foo": value})


def test_decimal_with_21_digits_before_the_point_still_fits() -> None:
    assert field_type(Decimal("-999999999999999999999.9999999999")) == DECIMAL


@pytest.mark.parametrize("key", ["has space", "9lives", "dash-ed", "", "é"])
def test_field_name_that_is_no_avro_name_is_refused(key: str) -> None:
    with pytest.raises(SchemaError, match="is not an Avro name"):
        infer_schema({key: 1})


def test_record_name_that_is_no_avro_name_is_refused() -> None:
    with pytest.raises(SchemaError, match="record name 'my-record'"):
        infer_schema({"a": 1}, name="my-record")


def test_non_string_top_level_key_is_refused() -> None:
    with pytest.raises(SchemaError, match=r"^data: key 3 is a int"):
        infer_schema({3: "x"})  # type: ignore[dict-item]


def test_data_nested_too_deep_for_schema_readers_is_refused() -> None:
    value: Any = 1
    for _ in range(70):
        value = [value]
    with pytest.raises(SchemaError, match="nests so deep"):
        infer_schema({"deep": value})


def test_self_containing_list_is_refused_not_recursed_forever() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SchemaError, match="nests so deep"):
        infer_schema({"loop": loop})


# -- writing with fastavro ----------------------------------------------------------


def test_int_in_a_union_with_double_comes_back_an_int() -> None:
    data = {"mixed": [1, 2.5, None, "x"], "m": {"a": 1, "b": 0.5, "c": True}}
    read = round_trip(data)
    assert read == data
    assert [type(item) for item in read["mixed"]] == [int, float, type(None), str]
    assert type(read["m"]["a"]) is int and type(read["m"]["c"]) is bool


def test_prepare_tags_union_values_with_their_branch() -> None:
    data = {"l": [1, 2.5, None]}
    assert prepare(data, infer_schema(data)) == {"l": [("long", 1), ("double", 2.5), None]}


def test_naive_datetime_is_written_as_utc_whatever_the_local_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # fastavro alone would take a naive datetime as local time.
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        read = round_trip({"at": datetime(2024, 3, 1, 8, 30, 0, 123456)})
    finally:
        monkeypatch.undo()
        time.tzset()
    assert read == {"at": datetime(2024, 3, 1, 8, 30, 0, 123456, tzinfo=UTC)}


def test_datetime_in_another_zone_keeps_its_instant() -> None:
    moment = datetime(2024, 3, 1, 8, 30, tzinfo=timezone(timedelta(hours=5)))
    assert round_trip({"at": moment})["at"] == moment


def test_decimal_beyond_ten_places_is_refused_not_floored() -> None:
    # Conduit floors 2/3 to 0.6666666666 (its serde test "big.Rat (with rounding)"); here a
    # number never changes on the way, so the value is refused, naming the path.
    with pytest.raises(SchemaError, match=r"data.pos: .* more than 10 decimal places"):
        infer_schema({"pos": Decimal(2) / Decimal(3)})
    with pytest.raises(SchemaError, match="more than 10 decimal places"):
        infer_schema({"tiny": Decimal("-1E-30")})


def test_decimal_trailing_zeros_beyond_ten_places_are_exact() -> None:
    read = round_trip({"a": Decimal("1.500000000000000"), "c": Decimal("-0")})
    assert read == {"a": Decimal("1.5"), "c": Decimal(0)}


def test_nan_and_infinities_are_written_as_doubles() -> None:
    read = round_trip({"nan": math.nan, "inf": math.inf, "ninf": -math.inf})
    assert math.isnan(read["nan"]) and read["inf"] == math.inf and read["ninf"] == -math.inf


def test_bytes_like_values_come_back_as_bytes() -> None:
    read = round_trip({"a": bytearray(b"ab"), "b": memoryview(b"cd"), "c": [bytearray(b"e")]})
    assert read == {"a": b"ab", "b": b"cd", "c": [b"e"]}


def test_prepare_widens_an_int_where_the_schema_says_double() -> None:
    schema = infer_schema({"price": 1.5, "tags": [1.5]})
    prepared = prepare({"price": 2, "tags": [3]}, schema)
    assert prepared == {"price": 2.0, "tags": [("double", 3.0)]}
    assert type(prepared["price"]) is float


def test_prepare_refuses_a_key_the_schema_lacks_rather_than_dropping_it() -> None:
    with pytest.raises(SchemaError, match=r"^data: key 'extra' is not a field of record"):
        prepare({"a": 1, "extra": 2}, infer_schema({"a": 1}))


def test_prepare_refuses_a_value_of_another_type_naming_its_path() -> None:
    schema = infer_schema({"a": [1]})
    with pytest.raises(SchemaError, match=r"^payload\.after\.a\[1\]: a str does not fit"):
        prepare({"a": [1, "x"]}, schema, what="payload.after")


def test_prepare_refuses_a_missing_field_that_is_not_nullable() -> None:
    with pytest.raises(SchemaError, match=r"^data\.a: None does not fit the schema's long"):
        prepare({}, infer_schema({"a": 1}))


def test_prepare_takes_a_missing_nullable_field_as_null() -> None:
    assert prepare({}, infer_schema({"a": None})) == {"a": None}


# -- property: what is inferred writes and reads back -----------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True)
INT64 = st.integers(-(2**63), 2**63 - 1)
# Values of distinct Avro types: any mix of them fits one union.
PLAIN = (
    st.none()
    | st.booleans()
    | INT64
    | st.floats(allow_nan=False)
    | st.text(max_size=10)
    | st.binary(max_size=10)
)
DECIMALS = st.integers(0, 10).flatmap(
    lambda places: st.decimals(
        min_value=-(10**20), max_value=10**20, places=places, allow_nan=False
    )
)
DATETIMES = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)
NESTED = st.recursive(
    PLAIN,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
# A decimal and bytes, or a timestamp and a long, cannot share a union (Conduit
# refuses them too): such values stand in fields of their own or in lists of one type.
FIELD_VALUES = (
    NESTED
    | DECIMALS
    | DATETIMES
    | st.lists(DECIMALS, max_size=4)
    | st.lists(DATETIMES, max_size=4)
    | st.lists(INT64, max_size=4)
)
STRUCTURED = st.dictionaries(NAMES, FIELD_VALUES, max_size=6)


@given(STRUCTURED)
def test_inferred_schema_writes_data_that_reads_back_equal(data: dict[str, Any]) -> None:
    assert round_trip(data) == data


@given(STRUCTURED)
def test_inferred_text_is_json_of_the_schema_and_independent_of_key_order(
    data: dict[str, Any],
) -> None:
    text = infer_schema_text(data)
    assert orjson.loads(text) == infer_schema(data)
    assert infer_schema_text(dict(reversed(data.items()))) == text
    avro.parse(text)
