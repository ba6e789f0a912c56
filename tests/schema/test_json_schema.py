"""JSON schemas are checked against the metaschema of their draft, as Confluent's registry does."""

from __future__ import annotations

import orjson
import pytest

from cdc_connectors.schema import json_schema, languages
from cdc_connectors.schema.errors import SchemaError

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": 5}, "/type"),
        ({"type": "strnig"}, "/type"),
        ({"properties": {"a": {"type": ["string", 3]}}}, "/properties/a/type"),
        ({"required": "id"}, "/required"),
        ({"minimum": "0"}, "/minimum"),
        ({"pattern": "("}, "/pattern"),
        ({"$schema": 5}, "/$schema"),
        ({"$schema": DRAFT2020, "$defs": {"a": {"type": "nope"}}}, "/$defs/a/type"),
        ({"$schema": DRAFT4, "exclusiveMinimum": 3}, "/exclusiveMinimum"),  # a boolean in 4
    ],
)
def test_schemas_their_metaschema_refuses_are_schema_errors(schema: object, where: str):
    text = orjson.dumps(schema).decode()
    for call in (json_schema.parse, json_schema.normalize):
        with pytest.raises(SchemaError) as e:
            call(text)
        assert where in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(SchemaError):
        languages.parse("JSON", text)


@pytest.mark.parametrize(
    "schema",
    [
        True,
        {},
        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        {"$schema": DRAFT4, "exclusiveMinimum": True, "minimum": 3},
        {"$schema": "http://json-schema.org/draft-07/schema#", "if": {}, "then": {}},
        {"$schema": DRAFT2020, "prefixItems": [{"type": "string"}]},
        # a $schema no draft has is read as draft-07, as Confluent reads it
        {"$schema": "https://example.com/my-dialect", "type": "string"},
        {"x-vendor": {"anything": [1, "two"]}, "type": ["string", "null"]},
    ],
)
def test_valid_schemas_of_every_draft_are_taken(schema: object):
    text = orjson.dumps(schema).decode()
    assert json_schema.parse(text) == schema
    assert json_schema.normalize(text) == text
