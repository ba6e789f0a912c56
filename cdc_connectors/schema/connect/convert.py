"""A ``payload`` value through a parsed Connect schema: the walk behind ``connect_value``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_connectors.schema.connect.node import ConnectSchema, fixed_size, string_keys
from cdc_connectors.schema.connect.readers import (
    InvalidValue,
    base64_bytes,
    checked_float,
    checked_int,
    checked_string,
    json_kind,
)
from cdc_connectors.schema.errors import SchemaError

__all__ = ["convert_value"]

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def convert_value(schema: ConnectSchema, value: Any, path: str) -> Any:
    """``value`` read through the parsed ``schema``; errors name ``path`` (else ``value``)."""
    where = path or "value"
    if value is None:
        if schema.has_default:
            return schema.default
        if schema.optional:
            return None
        raise SchemaError(f"{where}: null for a required {_described(schema)}")
    try:
        if schema.semantic is not None:
            return schema.semantic.convert(value, schema.parameters)
        kind = schema.type
        if kind in _INT_BITS:
            return checked_int(value, _INT_BITS[kind])
        if kind in ("float32", "float64"):
            return checked_float(value, kind)
        if kind == "boolean":
            if not isinstance(value, bool):
                raise InvalidValue(f"expected true or false, got {json_kind(value)}")
            return value
        if kind == "string":
            return checked_string(value)
        if kind == "bytes":
            raw = base64_bytes(value)
            size = fixed_size(schema)
            if size is not None and len(raw) != size:
                raise InvalidValue(f"expected {size} bytes, got {len(raw)}")
            return raw
    except InvalidValue as exc:
        raise SchemaError(f"{where}: {exc}") from None
    if schema.type == "struct":
        if not isinstance(value, Mapping):
            raise SchemaError(f"{where}: expected an object, got {json_kind(value)}")
        prefix = f"{path}." if path else ""
        if len(value) > len(schema.fields) or any(k not in schema.field_names for k in value):
            extra = next(k for k in value if k not in schema.field_names)
            raise SchemaError(
                f"{prefix}{extra}: not a field of the schema "
                f"(fields: {', '.join(sorted(schema.field_names)) or 'none'})"
            )
        return {
            name: convert_value(child, value.get(name), prefix + name)
            for name, child in schema.fields
        }
    if schema.type == "array":
        if not isinstance(value, list):
            raise SchemaError(f"{where}: expected an array, got {json_kind(value)}")
        assert schema.items is not None
        items = schema.items
        return [convert_value(items, item, f"{where}[{n}]") for n, item in enumerate(value)]
    assert schema.keys is not None and schema.values is not None
    keys, values = schema.keys, schema.values
    if string_keys(schema):
        if not isinstance(value, Mapping):
            raise SchemaError(
                f"{where}: a map with string keys is an object, got {json_kind(value)}"
            )
        return {key: convert_value(values, item, f"{where}[{key}]") for key, item in value.items()}
    # Connect writes a map with other keys as [[key, value], ...]; Avro gets key/value records.
    if not isinstance(value, list):
        raise SchemaError(f"{where}: a map with non-string keys is an array of [key, value]")
    entries = []
    for n, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise SchemaError(f"{where}[{n}]: expected a [key, value] pair")
        entries.append(
            {
                "key": convert_value(keys, pair[0], f"{where}[{n}].key"),
                "value": convert_value(values, pair[1], f"{where}[{n}].value"),
            }
        )
    return entries


def _described(schema: ConnectSchema) -> str:
    return f"{schema.type} ({schema.name})" if schema.name else schema.type
