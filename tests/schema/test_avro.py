"""Avro: one identity for every spelling of a schema, invalid defaults refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from cdc_connectors.schema import languages
from cdc_connectors.schema.errors import SchemaError


def avro(value: object) -> str:
    return orjson.dumps(value).decode()


def identity(schema: object, references: list[tuple[str, object]] | None = None) -> str:
    refs = [(name, avro(text)) for name, text in references or []]
    return languages.normalize("AVRO", avro(schema), refs)


ADDRESS = {
    "type": "record",
    "name": "Address",
    "fields": [{"name": "street", "type": "string"}],
}
INHERITED = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "ship_to", "type": ADDRESS},
        {"name": "bill_to", "type": "Address"},
    ],
}
EXPLICIT = {
    "namespace": "shop",
    "name": "Order",
    "type": "record",
    "fields": [
        {"name": "id", "type": {"type": "long"}},
        {"name": "ship_to", "type": {**ADDRESS, "namespace": "shop"}},
        {"name": "bill_to", "type": "shop.Address"},
    ],
}
FULL_NAMES = {
    "type": "record",
    "name": "shop.Order",
    "fields": [
        {"name": "id", "type": "long", "order": "ascending"},
        {"name": "ship_to", "type": {**ADDRESS, "name": "shop.Address", "aliases": []}},
        {"name": "bill_to", "type": "shop.Address"},
    ],
}


def test_inherited_and_explicit_namespaces_are_one_schema() -> None:
    assert identity(INHERITED) == identity(EXPLICIT) == identity(FULL_NAMES)


def test_whitespace_and_key_order_do_not_matter() -> None:
    spaced = orjson.dumps(INHERITED, option=orjson.OPT_INDENT_2).decode()
    assert languages.normalize("AVRO", spaced) == identity(INHERITED)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda s: s["fields"].append({"name": "note", "type": "string"}), id="field"),
        pytest.param(lambda s: s.update(namespace="store"), id="namespace"),
        pytest.param(lambda s: s.update(doc="an order"), id="doc"),
        pytest.param(lambda s: s.update(aliases=["Purchase"]), id="alias"),
        pytest.param(lambda s: s["fields"][0].update(default=0), id="default"),
        pytest.param(lambda s: s["fields"][0].update(order="descending"), id="order"),
        pytest.param(lambda s: s["fields"][0].update(type="int"), id="type"),
        pytest.param(lambda s: s.update({"connect.name": "x"}), id="property"),
    ],
)
def test_a_real_change_is_another_schema(change: Callable[[dict[str, Any]], object]) -> None:
    changed = orjson.loads(orjson.dumps(INHERITED))
    change(changed)
    assert identity(changed) != identity(INHERITED)


def test_named_types_of_references_resolve_and_are_named() -> None:
    address = {**ADDRESS, "namespace": "shop"}
    short = {**INHERITED, "fields": [{"name": "bill_to", "type": "Address"}]}
    full = {**INHERITED, "fields": [{"name": "bill_to", "type": "shop.Address"}]}
    refs: list[tuple[str, object]] = [("shop.Address", address)]
    assert identity(short, refs) == identity(full, refs)
    assert "street" not in identity(short, refs)  # named, not copied in


def test_parse_resolves_references_and_refuses_unknown_names() -> None:
    address = avro({**ADDRESS, "namespace": "shop"})
    order = avro({**INHERITED, "fields": [{"name": "bill_to", "type": "Address"}]})
    languages.parse("AVRO", order, [("shop.Address", address)])
    with pytest.raises(SchemaError, match="Address"):
        languages.parse("AVRO", order)


def record_with(field_type: object, default: object) -> str:
    field = {"name": "f", "type": field_type, "default": default}
    return avro({"type": "record", "name": "R", "fields": [field]})


ENUM = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
FIXED = {"type": "fixed", "name": "F", "size": 2}
POINT = {
    "type": "record",
    "name": "Point",
    "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": "int", "default": 0}],
}

INVALID_DEFAULTS = [
    ("null", 0),
    ("boolean", "true"),
    ("int", "1"),
    ("int", 1.5),
    ("int", 2**31),
    ("int", True),
    ("long", 2**63),
    ("float", "1.0"),
    ("double", None),
    ("string", 5),
    ("bytes", 5),
    (ENUM, 0),
    (FIXED, 5),
    ({"type": "array", "items": "int"}, [1, "2"]),
    ({"type": "array", "items": "int"}, {}),
    ({"type": "map", "values": "int"}, {"a": "b"}),
    ({"type": "map", "values": "int"}, []),
    (POINT, {"y": 1}),
    (POINT, {"x": "1"}),
    (POINT, 5),
    (["null", "int"], "x"),
    (["string", "int"], None),
    ({"type": "long", "logicalType": "timestamp-millis"}, "2024-01-01T00:00:00Z"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}, 1.5),
    ({"type": "int", "logicalType": "date"}, "2024-01-01"),
]
VALID_DEFAULTS = [
    ("null", None),
    ("boolean", False),
    ("int", -(2**31)),
    ("long", 2**63 - 1),
    ("float", 1),
    ("double", 2.5),
    ("string", ""),
    ("bytes", "\u00ff"),
    (ENUM, "A"),
    (FIXED, "ab"),
    ({"type": "array", "items": "int"}, [1, 2]),
    ({"type": "map", "values": ["null", "int"]}, {"a": None, "b": 1}),
    (POINT, {"x": 1}),
    (["null", "int"], None),
    (["null", "int"], 1),  # any branch, as Avro 1.12 (Confluent 8) accepts
    ({"type": "long", "logicalType": "timestamp-millis"}, 0),
    ({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}, "\u0001"),
]


@pytest.mark.parametrize(("field_type", "default"), INVALID_DEFAULTS)
def test_a_default_that_does_not_match_its_type_is_invalid(
    field_type: object, default: object
) -> None:
    text = record_with(field_type, default)
    with pytest.raises(SchemaError, match="default of field 'f' of R"):
        languages.parse("AVRO", text)
    with pytest.raises(SchemaError, match="default of field 'f' of R"):
        languages.normalize("AVRO", text)


@pytest.mark.parametrize(("field_type", "default"), VALID_DEFAULTS)
def test_a_default_that_matches_its_type_is_valid(field_type: object, default: object) -> None:
    languages.parse("AVRO", record_with(field_type, default))


def test_defaults_of_nested_records_are_checked() -> None:
    inner = {
        "type": "record",
        "name": "Inner",
        "fields": [{"name": "n", "type": "int", "default": "x"}],
    }
    outer = avro({"type": "record", "name": "Outer", "fields": [{"name": "i", "type": inner}]})
    with pytest.raises(SchemaError, match="field 'n' of Inner"):
        languages.parse("AVRO", outer)


def test_a_record_default_that_refers_to_itself_ends() -> None:
    node = {
        "type": "record",
        "name": "Node",
        "fields": [
            {"name": "v", "type": "int"},
            {"name": "next", "type": ["null", "Node"], "default": None},
        ],
    }
    holder = {
        "type": "record",
        "name": "Holder",
        "fields": [{"name": "n", "type": node}, {"name": "m", "type": "Node", "default": {"v": 1}}],
    }
    languages.parse("AVRO", avro(holder))
