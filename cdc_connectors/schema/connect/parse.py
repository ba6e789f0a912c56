"""A Connect ``schema`` block, checked and parsed once into ``ConnectSchema`` nodes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from cdc_connectors.schema import jsontext
from cdc_connectors.schema.connect.avro_defaults import avro_json
from cdc_connectors.schema.connect.avrodata import PRIMITIVE_AVRO, SHAPING_PARAMETERS, UNION
from cdc_connectors.schema.connect.convert import convert_value
from cdc_connectors.schema.connect.node import ConnectSchema
from cdc_connectors.schema.connect.readers import InvalidValue, json_kind
from cdc_connectors.schema.connect.types import semantic_type
from cdc_connectors.schema.errors import SchemaError

__all__ = ["parse_connect_schema"]

# JsonConverter spells float32/float64 "float"/"double"; the Connect names are accepted too.
_TYPE_ALIASES = {"float": "float32", "double": "float64"}
_CONNECT_TYPES = frozenset(PRIMITIVE_AVRO) | {"array", "map", "struct"}


def parse_connect_schema(schema: Mapping[str, Any] | ConnectSchema) -> ConnectSchema:
    """Check a Connect ``schema`` block; errors name the place (``schema.fields[2].type``)."""
    if isinstance(schema, ConnectSchema):
        return schema
    if jsontext.nesting_depth(schema) > jsontext.MAX_DEPTH:
        raise SchemaError(f"schema: nests deeper than {jsontext.MAX_DEPTH} JSON levels")
    return _parse(schema, "schema")


def _parse(node: Any, path: str) -> ConnectSchema:
    if not isinstance(node, Mapping):
        raise SchemaError(f"{path}: a Connect schema is a JSON object, got {json_kind(node)}")
    kind = node.get("type")
    kind = _TYPE_ALIASES.get(kind, kind) if isinstance(kind, str) else kind
    if not isinstance(kind, str) or kind not in _CONNECT_TYPES:
        known = ", ".join(sorted(_CONNECT_TYPES))
        raise SchemaError(f"{path}.type: unknown Connect type {kind!r:.60} (known: {known})")
    optional = _attr(node, "optional", bool, path, False)
    name = _attr(node, "name", str, path, None)
    version = _attr(node, "version", int, path, None)
    doc = _attr(node, "doc", str, path, None)
    params = _attr(node, "parameters", Mapping, path, {})
    for key, value in params.items():
        if not isinstance(value, str):
            raise SchemaError(f"{path}.parameters.{key}: parameter values are strings")
    if name == UNION:
        raise SchemaError(f"{path}.name: AvroData's {UNION} structs are not supported")
    semantic = semantic_type(name)
    if semantic is not None and kind != semantic.connect_type:
        raise SchemaError(f"{path}.type: {name} is a {semantic.connect_type}, not {kind}")
    parts: dict[str, Any] = {}
    if kind == "struct":
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise SchemaError(f"{path}.fields: a struct needs a list of fields")
        parsed: list[tuple[str, ConnectSchema]] = []
        seen: set[str] = set()
        for number, child in enumerate(fields):
            where = f"{path}.fields[{number}]"
            field_name = child.get("field") if isinstance(child, Mapping) else None
            if not isinstance(field_name, str):
                raise SchemaError(f"{where}.field: each field needs a string name")
            if field_name in seen:
                raise SchemaError(f"{where}.field: field {field_name!r} appears twice")
            seen.add(field_name)
            parsed.append((field_name, _parse(child, where)))
        parts["fields"] = tuple(parsed)
    elif kind == "array":
        parts["items"] = _parse(node.get("items"), f"{path}.items")
    elif kind == "map":
        parts["keys"] = _parse(node.get("keys"), f"{path}.keys")
        parts["values"] = _parse(node.get("values"), f"{path}.values")
    if semantic is not None:
        try:  # a parameter the semantic type needs (a Decimal's scale) is checked up front
            semantic.avro(params)
        except InvalidValue as exc:
            raise SchemaError(f"{path}.parameters: {exc}") from None
    schema = ConnectSchema(
        kind, optional, name, version, doc, dict(params), semantic, path, **parts
    )
    if node.get("default") is not None:
        try:
            default = convert_value(schema, node["default"], f"{path}.default")
        except SchemaError as exc:
            raise SchemaError(f"invalid default: {exc}") from None
        schema = replace(schema, has_default=True, default=default)
    elif "default" in node and not optional:
        raise SchemaError(f"{path}.default: null is no default for a required schema")
    # From checked parts only: the default as Avro spells it, the children's identities (as
    # the JSON they are: embedded as strings, each level would escape the ones below it
    # again, and the text would double with every level of nesting).
    common = [
        kind,
        name,
        avro_json(schema, schema.default),
        [[n, c.optional, orjson.Fragment(c.identity)] for n, c in schema.fields],
        [
            [c.optional, orjson.Fragment(c.identity)] if c is not None else None
            for c in (schema.items, schema.keys, schema.values)
        ],
    ]
    shaping = sorted((k, v) for k, v in params.items() if k.startswith(SHAPING_PARAMETERS))
    identity = orjson.dumps(
        [*common, version, doc, sorted(params.items())], option=orjson.OPT_SORT_KEYS
    )
    shape = orjson.dumps([*common, shaping], option=orjson.OPT_SORT_KEYS)
    return replace(schema, identity=identity, shape=shape)


def _attr(node: Mapping[str, Any], key: str, kind: type, path: str, missing: Any) -> Any:
    value = node.get(key)
    if value is None:
        return missing
    # bool is an int subclass: a version of true is as wrong as one of "1".
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SchemaError(f"{path}.{key}: expected {kind.__name__}, got {json_kind(value)}")
    return value
