"""JSON Schema: parse and normal form. Compatibility is not checked for JSON Schema.

The identity text is the schema as compact JSON, keys in the order written (as
Confluent's canonical string of a JSON schema). Schemas nested deeper than
``jsontext.MAX_DEPTH`` levels are refused with a reason.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_connectors.schema import jsontext
from cdc_connectors.schema.errors import SchemaError


def parse(schema_str: str) -> Any:
    """The parsed schema: a JSON object or boolean, as JSON Schema requires."""
    parsed = jsontext.load(schema_str, "JSON schema")
    if not isinstance(parsed, dict | bool):
        raise SchemaError(
            f"a JSON schema must be an object or a boolean, not {type(parsed).__name__}"
        )
    return parsed


def normalize(schema_str: str) -> str:
    """The schema as compact JSON."""
    return orjson.dumps(parse(schema_str)).decode()
