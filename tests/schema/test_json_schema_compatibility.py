"""JSON Schema compatibility as Confluent 8 defines it: each rule, compatible and incompatible.

Each case is (writer's schema, reader's schema) and the changes expected, named as
Confluent names them, with their JSON paths. Changes outside ``COMPATIBLE_CHANGES`` make
the pair incompatible.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cdc_connectors.registry import compatibility
from cdc_connectors.schema import json_schema_compat, languages
from cdc_connectors.schema.json_schema_compat import Resolved

D2020 = "https://json-schema.org/draft/2020-12/schema"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D07 = "http://json-schema.org/draft-07/schema#"


def obj(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
CLOSED = {"additionalProperties": False}


def changes(old: Any, new: Any) -> list[str]:
    return sorted(f"{d.type} {d.path}" for d in json_schema_compat.differences(old, new))


def incompatible(old: Any, new: Any) -> list[str]:
    return json_schema_compat.incompatibilities(new, old)


CASES = [
    # content models: properties added
    (
        obj({}),
        obj({"email": STR}),
        ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/email"],
    ),
    (
        obj({}),
        obj({"email": {}}),
        ["PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL #/properties/email"],
    ),
    (
        obj({}),
        obj({"email": STR}, required=["email"]),
        ["REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/email"],
    ),
    (
        obj({}, **CLOSED),
        obj({"email": STR}, **CLOSED),
        ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/email"],
    ),
    (
        obj({}, **CLOSED),
        obj({"email": STR}, required=["email"], **CLOSED),
        ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/email"],
    ),
    (
        obj({}, **CLOSED),
        obj({"email": {**STR, "default": ""}}, required=["email"], **CLOSED),
        ["REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/email"],
    ),
    # partially open: extra properties must be strings
    (
        obj({}, additionalProperties=STR),
        obj({"email": STR}, additionalProperties=STR),
        [
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/email",
            "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/email",
        ],
    ),
    (
        obj({}, additionalProperties=STR),
        obj({"age": INT}, additionalProperties=STR),
        [
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/age",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/age",
            "TYPE_CHANGED #/properties/age",
        ],
    ),
    (
        obj({}, patternProperties={"^n_": INT}, **CLOSED),
        obj({"n_total": NUM}, patternProperties={"^n_": INT}, **CLOSED),
        [
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/n_total",
            "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/n_total",
            "TYPE_EXTENDED #/properties/n_total",
        ],
    ),
    (
        obj({}, patternProperties={"^n_": NUM}, **CLOSED),
        obj({"n_total": INT}, patternProperties={"^n_": NUM}, **CLOSED),
        [
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/n_total",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/n_total",
            "TYPE_NARROWED #/properties/n_total",
        ],
    ),
    # content models: properties removed
    (obj({"email": STR}), obj({}), ["PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/email"]),
    (
        obj({"email": STR}, **CLOSED),
        obj({}, **CLOSED),
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/email"],
    ),
    (
        obj({"email": False}, **CLOSED),
        obj({}, **CLOSED),
        ["PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/email"],
    ),
    (
        obj({"email": STR}, **CLOSED),
        obj({}, additionalProperties=STR),
        [
            "ADDITIONAL_PROPERTIES_ADDED #/additionalProperties",
            "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/email",
        ],
    ),
    (
        obj({"age": INT}, **CLOSED),
        obj({}, additionalProperties=STR),
        [
            "ADDITIONAL_PROPERTIES_ADDED #/additionalProperties",
            "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/age",
            "TYPE_CHANGED #/properties/age",
        ],
    ),
    # additionalProperties itself
    (obj({}), obj({}, **CLOSED), ["ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"]),
    (obj({}, **CLOSED), obj({}), ["ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"]),
    (
        obj({}),
        obj({}, additionalProperties=STR),
        ["ADDITIONAL_PROPERTIES_NARROWED #/additionalProperties"],
    ),
    (
        obj({}, additionalProperties=STR),
        obj({}),
        ["ADDITIONAL_PROPERTIES_EXTENDED #/additionalProperties"],
    ),
    # required
    (
        obj({"a": STR}),
        obj({"a": STR}, required=["a"]),
        ["REQUIRED_ATTRIBUTE_ADDED #/required/a"],
    ),
    (
        obj({"a": STR}),
        obj({"a": {**STR, "default": "x"}}, required=["a"]),
        ["DEFAULT_CHANGED #/properties/a", "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED #/required/a"],
    ),
    (obj({"a": STR}, required=["a"]), obj({"a": STR}), ["REQUIRED_ATTRIBUTE_REMOVED #/required/a"]),
    # dependencies
    (
        obj({}, dependencies={"card": ["billing"]}),
        obj({}, dependencies={"card": ["billing", "zip"]}),
        ["DEPENDENCY_ARRAY_EXTENDED #/dependencies/card"],
    ),
    (
        obj({}, dependencies={"card": ["billing", "zip"]}),
        obj({}, dependencies={"card": ["billing"]}),
        ["DEPENDENCY_ARRAY_NARROWED #/dependencies/card"],
    ),
    (
        obj({}),
        obj({}, dependencies={"card": ["zip"]}),
        ["DEPENDENCY_ARRAY_ADDED #/dependencies/card"],
    ),
    (
        obj({}, dependencies={"card": obj({})}),
        obj({}),
        ["DEPENDENCY_SCHEMA_REMOVED #/dependencies/card"],
    ),
    (
        obj({}, dependentRequired={"card": ["zip"]}, **{"$schema": D2020}),
        obj({}, **{"$schema": D2020}),
        ["DEPENDENCY_ARRAY_REMOVED #/dependencies/card"],
    ),
    # types
    (STR, INT, ["TYPE_CHANGED #/"]),
    (INT, NUM, ["TYPE_EXTENDED #/"]),
    (NUM, INT, ["TYPE_NARROWED #/"]),
    (STR, {"type": ["string", "null"]}, ["SUM_TYPE_EXTENDED #/"]),
    ({"type": ["string", "null"]}, STR, ["TYPE_CHANGED #/"]),
    (
        {"type": ["string", "null"]},
        {"type": ["string", "null", "integer"]},
        ["SUM_TYPE_EXTENDED #/"],
    ),
    ({"type": ["string", "integer"]}, {"type": "integer"}, ["TYPE_CHANGED #/"]),
    (STR, {}, []),
    ({}, STR, ["TYPE_CHANGED #/"]),
    (False, STR, []),
    ({"type": "string", "connect.type": "bytes"}, {"type": "array", "connect.type": "bytes"}, []),
    # enum and const
    ({"enum": ["a", "b"]}, {"enum": ["b", "a", "c"]}, ["ENUM_ARRAY_EXTENDED #/enum"]),
    ({"enum": ["a", "b"]}, {"enum": ["a"]}, ["ENUM_ARRAY_NARROWED #/enum"]),
    ({"enum": ["a", "b"]}, {"enum": ["a", "c"]}, ["ENUM_ARRAY_CHANGED #/enum"]),
    ({"const": 1}, {"const": 2}, ["ENUM_ARRAY_CHANGED #/const"]),
    ({**STR, "enum": ["a"]}, STR, ["PRODUCT_TYPE_NARROWED #/"]),
    (STR, {**STR, "enum": ["a"]}, ["TYPE_CHANGED #/"]),
    # numbers
    ({**NUM, "maximum": 5}, {**NUM, "maximum": 9}, ["MAXIMUM_INCREASED #/maximum"]),
    ({**NUM, "maximum": 9}, {**NUM, "maximum": 5}, ["MAXIMUM_DECREASED #/maximum"]),
    ({**NUM, "minimum": 5}, {**NUM, "minimum": 1}, ["MINIMUM_DECREASED #/minimum"]),
    (NUM, {**NUM, "minimum": 1}, ["MINIMUM_ADDED #/minimum"]),
    ({**NUM, "exclusiveMaximum": 5}, NUM, ["EXCLUSIVE_MAXIMUM_REMOVED #/exclusiveMaximum"]),
    (
        {**NUM, "exclusiveMinimum": 1},
        {**NUM, "exclusiveMinimum": 2},
        ["EXCLUSIVE_MINIMUM_INCREASED #/exclusiveMinimum"],
    ),
    ({**NUM, "multipleOf": 4}, {**NUM, "multipleOf": 2}, ["MULTIPLE_OF_REDUCED #/multipleOf"]),
    ({**NUM, "multipleOf": 2}, {**NUM, "multipleOf": 4}, ["MULTIPLE_OF_EXPANDED #/multipleOf"]),
    ({**NUM, "multipleOf": 2}, {**NUM, "multipleOf": 3}, ["MULTIPLE_OF_CHANGED #/multipleOf"]),
    ({**NUM, "multipleOf": 0.5}, {**NUM, "multipleOf": 0.50}, []),
    # strings
    ({**STR, "maxLength": 5}, {**STR, "maxLength": 10}, ["MAX_LENGTH_INCREASED #/maxLength"]),
    ({**STR, "maxLength": 10}, {**STR, "maxLength": 5}, ["MAX_LENGTH_DECREASED #/maxLength"]),
    ({**STR, "minLength": 2}, STR, ["MIN_LENGTH_REMOVED #/minLength"]),
    (STR, {**STR, "minLength": 2}, ["MIN_LENGTH_ADDED #/minLength"]),
    (STR, {**STR, "pattern": "^a"}, ["PATTERN_ADDED #/pattern"]),
    ({**STR, "pattern": "^a"}, STR, ["PATTERN_REMOVED #/pattern"]),
    ({**STR, "pattern": "^a"}, {**STR, "pattern": "^b"}, ["PATTERN_CHANGED #/pattern"]),
    # arrays
    ({"type": "array", "items": INT}, {"type": "array", "items": NUM}, ["TYPE_EXTENDED #/items"]),
    ({"type": "array", "items": NUM}, {"type": "array", "items": STR}, ["TYPE_CHANGED #/items"]),
    (
        {"type": "array", "maxItems": 3},
        {"type": "array", "maxItems": 2},
        ["MAX_ITEMS_DECREASED #/maxItems"],
    ),
    ({"type": "array", "minItems": 3}, {"type": "array"}, ["MIN_ITEMS_REMOVED #/minItems"]),
    (
        {"type": "array"},
        {"type": "array", "uniqueItems": True},
        ["UNIQUE_ITEMS_ADDED #/uniqueItems"],
    ),
    (
        {"type": "array", "uniqueItems": True},
        {"type": "array"},
        ["UNIQUE_ITEMS_REMOVED #/uniqueItems"],
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), CASES)
def test_changes_are_named_as_confluent_names_them(old: Any, new: Any, expected: list[str]) -> None:
    assert changes(old, new) == sorted(expected)


TUPLE_07 = {"type": "array", "items": [STR, INT]}
TUPLE_2020 = {"$schema": D2020, "type": "array", "prefixItems": [STR, INT]}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            {"type": "array", "items": [STR], "additionalItems": False},
            {"type": "array", "items": [STR, INT], "additionalItems": False},
            ["ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/1"],
        ),
        (
            {"type": "array", "items": [STR]},
            TUPLE_07,
            ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"],
        ),
        (
            TUPLE_07,
            {"type": "array", "items": [STR]},
            ["ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL #/items/1"],
        ),
        (
            {**TUPLE_07, "additionalItems": False},
            {"type": "array", "items": [STR], "additionalItems": False},
            ["ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"],
        ),
        (
            {"type": "array", "items": [STR], "additionalItems": INT},
            {"type": "array", "items": [STR, NUM], "additionalItems": INT},
            [
                "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1",
                "TYPE_EXTENDED #/items/1",
            ],
        ),
        (
            {**TUPLE_2020, "items": False},
            {"$schema": D2020, "type": "array", "prefixItems": [STR], "items": False},
            ["ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"],
        ),
        (
            {"$schema": D2020, "type": "array", "prefixItems": [STR], "items": INT},
            {**TUPLE_2020, "items": INT},
            ["ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"],
        ),
        (
            {"$schema": D2020, "type": "array", "prefixItems": [STR], "items": INT},
            {"$schema": D2020, "type": "array", "prefixItems": [STR, STR], "items": INT},
            [
                "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1",
                "TYPE_CHANGED #/items/1",
            ],
        ),
        (
            {"$schema": D2019, "type": "array", "contains": INT, "maxContains": 3},
            {"$schema": D2019, "type": "array", "contains": INT, "maxContains": 2},
            ["MAX_CONTAINS_DECREASED #/maxContains"],
        ),
    ],
)
def test_tuples_follow_their_content_model(old: Any, new: Any, expected: list[str]) -> None:
    assert changes(old, new) == sorted(expected)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"oneOf": [STR, INT]}, {"oneOf": [STR, INT, NUM]}, ["SUM_TYPE_EXTENDED #/"]),
        (
            {"oneOf": [STR, INT]},
            {"oneOf": [STR]},
            ["SUM_TYPE_NARROWED #/"],
        ),
        ({"anyOf": [STR, INT]}, {"anyOf": [INT, STR]}, []),
        ({"oneOf": [STR, INT]}, {"anyOf": [STR, INT]}, ["COMBINED_TYPE_EXTENDED #/"]),
        ({"anyOf": [STR, INT]}, {"oneOf": [STR, INT]}, ["COMBINED_TYPE_CHANGED #/"]),
        (
            {"allOf": [obj({}), {"required": ["a"]}]},
            {"allOf": [obj({})]},
            ["PRODUCT_TYPE_NARROWED #/"],
        ),
        (
            {"allOf": [obj({})]},
            {"allOf": [obj({}), {"required": ["a"]}]},
            ["PRODUCT_TYPE_EXTENDED #/"],
        ),
        (
            {"oneOf": [STR, INT]},
            {"oneOf": [STR, {"type": "boolean"}]},
            ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"],
        ),
        (
            {"oneOf": [{**STR, "maxLength": 3}, INT]},
            {"oneOf": [{**STR, "maxLength": 5}, INT]},
            ["MAX_LENGTH_INCREASED #/oneOf/0/maxLength"],
        ),
        (STR, {"oneOf": [INT, STR]}, ["SUM_TYPE_EXTENDED #/"]),
        ({"allOf": [STR, {"maxLength": 3}]}, STR, ["PRODUCT_TYPE_NARROWED #/"]),
        ({"oneOf": [STR]}, STR, []),
        ({"not": STR}, {"not": {**STR, "maxLength": 3}}, ["NOT_TYPE_NARROWED #/not"]),
        ({"not": {**STR, "maxLength": 3}}, {"not": STR}, ["NOT_TYPE_EXTENDED #/not"]),
    ],
)
def test_combined_schemas(old: Any, new: Any, expected: list[str]) -> None:
    assert changes(old, new) == sorted(expected)


def test_compatible_and_incompatible_follow_the_named_changes() -> None:
    assert incompatible(obj({"a": STR}, **CLOSED), obj({"a": STR, "b": INT}, **CLOSED)) == []
    assert incompatible(obj({"a": STR}), obj({"a": STR, "b": INT})) != []
    assert incompatible({"oneOf": [STR, INT]}, {"oneOf": [STR, INT, NUM]}) == []
    assert incompatible({"oneOf": [STR, INT]}, {"oneOf": [STR]}) != []


def test_messages_are_confluents_text() -> None:
    [message] = incompatible(obj({"a": STR}), obj({"a": INT}))
    assert message == (
        '{errorType:"TYPE_CHANGED", description:"A type at path \'#/properties/a\' is '
        "different between the new schema and the old schema'}"
    )
    removed, message = json_schema_compat.incompatibilities(obj({}, **CLOSED), obj({"b": STR}))
    assert "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" in removed
    assert message.startswith(
        '{errorType:"ADDITIONAL_PROPERTIES_REMOVED", description:"The keyword'
    )


LIST_07 = {
    "$schema": D07,
    "definitions": {"node": obj({"value": STR, "next": {"$ref": "#/definitions/node"}})},
    "$ref": "#/definitions/node",
}
LIST_2020 = {
    "$schema": D2020,
    "$defs": {"node": obj({"value": STR, "next": {"$ref": "#/$defs/node"}})},
    "$ref": "#/$defs/node",
}


@pytest.mark.parametrize("schema", [LIST_07, LIST_2020], ids=["draft-07", "2020-12"])
def test_recursive_schemas_end(schema: dict[str, Any]) -> None:
    assert changes(schema, schema) == []
    text = json.dumps(schema).replace('"value": {"type": "string"}', '"value": {"type": "integer"}')
    narrowed = json.loads(text)
    assert "TYPE_CHANGED #/properties/value" in changes(schema, narrowed)
    assert "TYPE_CHANGED #/properties/next/properties/value" in changes(schema, narrowed)


def test_references_are_followed_within_the_document() -> None:
    old = {"definitions": {"id": INT}, **obj({"id": {"$ref": "#/definitions/id"}})}
    new = {"definitions": {"id": STR}, **obj({"id": {"$ref": "#/definitions/id"}})}
    assert changes(old, new) == ["TYPE_CHANGED #/properties/id"]
    inline = obj({"id": INT})
    assert changes(old, inline) == []


def test_2020_reads_ref_next_to_other_keywords() -> None:
    old = {"$schema": D2020, "$defs": {"s": STR}, "$ref": "#/$defs/s"}
    new = {**old, "maxLength": 3}
    assert changes(old, new) == ["TYPE_CHANGED #/"]


def test_references_to_other_subjects() -> None:
    address_v1 = obj({"street": STR}, **CLOSED)
    address_v2 = obj({"street": STR, "zip": STR}, required=["zip"], **CLOSED)
    person = obj({"home": {"$ref": "address.json"}})
    old = Resolved(person, {"address.json": address_v1})
    new = Resolved(person, {"address.json": address_v2})
    assert changes(old, new) == [
        "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/home/properties/zip"
    ]


def _parsed(schema: Any, refs: tuple[tuple[str, str], ...] = ()) -> languages.ParsedSchema:
    return languages.parse("JSON", json.dumps(schema), refs)


def test_levels_check_json_schema() -> None:
    old, new = _parsed(obj({"a": STR})), _parsed(obj({"a": STR, "b": INT}))
    assert compatibility.check("BACKWARD", new, [old]) != []
    assert compatibility.check("FORWARD", new, [old]) == []
    assert compatibility.check("NONE", new, [old]) == []
    [message] = compatibility.check("FORWARD", old, [new])
    assert "The old schema has an open content model" in message


def test_transitive_levels_check_every_version() -> None:
    v1 = _parsed(obj({"a": STR}, **CLOSED))
    v2 = _parsed(obj({"a": STR, "b": INT}, **CLOSED))
    v3 = _parsed(obj({"a": STR, "b": STR}, **CLOSED))
    assert compatibility.check("BACKWARD", v3, [v1, v2]) != []
    assert compatibility.check("FULL_TRANSITIVE", v2, [v1]) != []


def test_references_by_name_through_the_registry_parse() -> None:
    address = json.dumps(obj({"street": STR}, **CLOSED))
    person = obj({"home": {"$ref": "address.json"}}, **CLOSED)
    wider = obj({"home": {"$ref": "address.json"}, "note": STR}, **CLOSED)
    old = _parsed(person, (("address.json", address),))
    new = _parsed(wider, (("address.json", address),))
    assert compatibility.check("BACKWARD", new, [old]) == []
