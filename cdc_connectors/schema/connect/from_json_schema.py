"""A JSON Schema as Kafka Connect reads it: the ``schema`` block Confluent's
``JsonSchemaConverter`` gives its data.

What Debezium writes with ``JsonSchemaConverter`` is a JSON Schema carrying the Connect
schema in annotations (``connect.type``, ``connect.index``, ``connect.version``,
``connect.parameters``, ``title`` as the name). This turns it back into the block
Kafka's ``JsonConverter`` would have written beside the same data, following
``JsonSchemaData.toConnectSchema``:

| JSON Schema | Connect |
|---|---|
| ``boolean`` | ``boolean`` |
| ``integer`` / ``number`` | ``connect.type`` (int8 ... float64, bytes), else int64 / float64 |
| ``string`` | ``string``; ``connect.type: bytes``: ``bytes`` (base64 text) |
| ``enum`` / ``const`` | ``string`` |
| ``object`` | ``struct``, fields by ``connect.index``; ``connect.type: map``: a map of strings |
| ``array`` | ``array<items>``; ``connect.type: map`` over ``{key, value}`` items: ``map`` |
| ``oneOf`` / ``anyOf`` / a type list of ``null`` and one schema | that schema, optional |
| ``$ref`` (``#/...``) | what it refers to |

Fields are optional only through such a ``null`` member, as Connect reads them by default.
A schema Connect has no plain form for here (a free value, ``allOf``, a union of several
types, a recursive ``$ref``) is a :class:`SchemaError` naming its place.
"""

from __future__ import annotations

from typing import Any

from cdc_connectors.schema.errors import SchemaError

__all__ = ["connect_block"]

_NUMBERS = {"int8", "int16", "int32", "int64", "float32", "float64", "bytes"}


def connect_block(schema: Any) -> dict[str, Any]:
    """The Connect ``schema`` block of a JSON Schema (module docstring)."""
    return _Convert(schema).block(schema, "#", False, ())


class _Convert:
    def __init__(self, root: Any):
        self.root = root

    def block(
        self, schema: Any, place: str, optional: bool, seen: tuple[str, ...]
    ) -> dict[str, Any]:
        if not isinstance(schema, dict) or not schema:
            raise SchemaError(f"{place}: a free value has no Connect schema here")
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref in seen:
                raise SchemaError(f"{place}: a recursive $ref has no Connect schema")
            return self.block(self._resolve(ref, place), place, optional, (*seen, ref))
        if "allOf" in schema:
            raise SchemaError(f"{place}: allOf has no Connect schema here")
        for combined in ("oneOf", "anyOf"):
            members = schema.get(combined)
            if isinstance(members, list):
                return self._nullable(members, f"{place}/{combined}", seen)
        kind = schema.get("type")
        if isinstance(kind, list):
            others = [k for k in kind if k != "null"]
            if len(others) != 1:
                raise SchemaError(f"{place}: a union of {kind} has no Connect schema here")
            return self.block(
                {**schema, "type": others[0]}, place, optional or "null" in kind, seen
            )
        if kind is None and ("enum" in schema or "const" in schema):
            kind = "string"
        block = self._typed(schema, kind, place, seen)
        block["optional"] = optional
        for key, source in (("name", "title"), ("version", "connect.version")):
            if source in schema:
                block[key] = schema[source]
        if isinstance(schema.get("connect.parameters"), dict):
            block["parameters"] = dict(schema["connect.parameters"])
        if isinstance(schema.get("description"), str):
            block["doc"] = schema["description"]
        return block

    def _typed(
        self, schema: dict[str, Any], kind: Any, place: str, seen: tuple[str, ...]
    ) -> dict[str, Any]:
        connect = schema.get("connect.type")
        if kind == "boolean":
            return {"type": "boolean"}
        if kind in ("integer", "number"):
            if connect in _NUMBERS:
                return {"type": connect}
            return {"type": "int64" if kind == "integer" else "float64"}
        if kind == "string":
            return {"type": "bytes" if connect == "bytes" else "string"}
        if kind == "array":
            return self._array(schema, place, seen)
        if kind == "object":
            return self._object(schema, place, seen)
        raise SchemaError(f"{place}: type {kind!r} has no Connect schema here")

    def _array(self, schema: dict[str, Any], place: str, seen: tuple[str, ...]) -> dict[str, Any]:
        items = schema.get("items")
        if not isinstance(items, dict):
            raise SchemaError(f"{place}: an array without one items schema has no Connect schema")
        pairs = items.get("properties")
        if schema.get("connect.type") == "map" and isinstance(pairs, dict):
            return {
                "type": "map",
                "keys": self.block(pairs.get("key"), f"{place}/items/key", False, seen),
                "values": self.block(pairs.get("value"), f"{place}/items/value", False, seen),
            }
        return {"type": "array", "items": self.block(items, f"{place}/items", False, seen)}

    def _object(self, schema: dict[str, Any], place: str, seen: tuple[str, ...]) -> dict[str, Any]:
        if schema.get("connect.type") == "map":
            values = schema.get("additionalProperties")
            return {
                "type": "map",
                "keys": {"type": "string", "optional": False},
                "values": self.block(values, f"{place}/additionalProperties", False, seen),
            }
        properties = schema.get("properties") or {}
        ordered = sorted(
            enumerate(properties.items()),
            key=lambda item: (_index(item[1][1], item[0]), item[0]),
        )
        fields = []
        for _, (name, sub) in ordered:
            field = self.block(sub, f"{place}/properties/{name}", False, seen)
            fields.append({**field, "field": name})
        return {"type": "struct", "fields": fields}

    def _nullable(self, members: list[Any], place: str, seen: tuple[str, ...]) -> dict[str, Any]:
        others = [m for m in members if not (isinstance(m, dict) and m.get("type") == "null")]
        if len(others) != 1:
            raise SchemaError(f"{place}: a union of {len(others)} schemas has no Connect schema")
        return self.block(others[0], place, len(others) < len(members), seen)

    def _resolve(self, ref: str, place: str) -> Any:
        node = self.root
        if not ref.startswith("#"):
            raise SchemaError(f"{place}: $ref {ref!r} is outside the schema")
        for step in [s for s in ref[1:].split("/") if s]:
            step = step.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or step not in node:
                raise SchemaError(f"{place}: $ref {ref!r} refers to nothing")
            node = node[step]
        return node


def _index(schema: Any, default: int) -> int:
    found = schema.get("connect.index") if isinstance(schema, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) else default
