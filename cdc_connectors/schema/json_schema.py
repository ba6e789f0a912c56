"""JSON Schema: parse and normal form. Compatibility is not checked for JSON Schema."""

from __future__ import annotations

from typing import Any

import orjson

from cdc_connectors.schema.errors import SchemaError


def parse(schema_str: str) -> Any:
    """The parsed schema: a JSON object or boolean, as JSON Schema requires."""
    try:
        parsed = orjson.loads(schema_str)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"JSON schema is not valid JSON: {exc}") from None
    if not isinstance(parsed, dict | bool):
        raise SchemaError(
            f"a JSON schema must be an object or a boolean, not {type(parsed).__name__}"
        )
    return parsed


def normalize(schema_str: str) -> str:
    """The schema as compact JSON."""
    return orjson.dumps(parse(schema_str)).decode()
