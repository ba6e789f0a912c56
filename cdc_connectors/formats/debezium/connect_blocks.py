"""The Kafka Connect schema blocks a written Debezium envelope carries: the envelope around
its row schemas, rows inferred from their values by Conduit's rules, or read from a
registered Avro schema (:func:`avro_to_connect`)."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from cdc_connectors.formats.debezium.envelope import ENVELOPE_FIELDS, TIME_FIELDS
from cdc_connectors.opencdc import CodecError
from cdc_connectors.schema.connect import AVRO_LOGICAL_CONNECT, SEMANTIC_TYPES

__all__ = ["avro_to_connect", "envelope_block", "infer_struct", "infer_value"]


def envelope_block(
    rows: tuple[dict[str, Any] | None, dict[str, Any] | None],
    payload: Mapping[str, Any],
    collection: str | None,
) -> dict[str, Any]:
    """The Connect schema of a Debezium envelope around the row schemas (Debezium's order)."""
    empty: dict[str, Any] = {"type": "struct", "fields": []}
    fields: list[dict[str, Any]] = [
        {**(row or empty), "optional": True, "field": name}
        for row, name in zip(rows, ("before", "after"), strict=True)
    ]
    source = payload.get("source") or {}
    fields.append({**infer_struct([source], "source", optional=True), "field": "source"})
    fields.append({"type": "string", "optional": False, "field": "op"})
    fields += [{"type": "int64", "optional": True, "field": name} for name in TIME_FIELDS]
    transaction = {
        "type": "struct",
        "optional": True,
        "name": "event.block",
        "version": 1,
        "fields": [
            {"type": "string", "optional": False, "field": "id"},
            {"type": "int64", "optional": False, "field": "total_order"},
            {"type": "int64", "optional": False, "field": "data_collection_order"},
        ],
    }
    if payload.get("transaction") is not None:
        transaction = {**infer_struct([payload["transaction"]], "transaction"), "optional": True}
    fields.append({**transaction, "field": "transaction"})
    for name, value in payload.items():
        if name not in ENVELOPE_FIELDS:
            fields.append({**infer_value([value], name), "field": name})
    block: dict[str, Any] = {"type": "struct", "optional": False, "fields": fields}
    if collection:
        block["name"] = f"{collection}.Envelope"
    return block


# Inference: Conduit's rules (schema/infer.py) in Connect's types. Connect has no unions,
# so a nested object is a struct (not Conduit's map) and a list takes its first item's type.


def infer_struct(
    images: Sequence[Mapping[str, Any]], where: str, *, optional: bool = False
) -> dict[str, Any]:
    """The Connect struct of objects: every field any of them has, in name order."""
    names: list[str] = []
    for image in images:
        names.extend(n for n in image if n not in names)
    fields = []
    for name in sorted(names):
        values = [image.get(name) for image in images]
        field = infer_value(values, f"{where}.{name}")
        fields.append({**field, "field": name})
    return {"type": "struct", "optional": optional, "fields": fields}


def infer_value(values: list[Any], where: str) -> dict[str, Any]:
    """The Connect schema of the values of one field (optional when one is ``None``)."""
    present = [v for v in values if v is not None]
    optional = len(present) < len(values)
    if not present:
        return {"type": "string", "optional": True}
    first = present[0]
    schema: dict[str, Any]
    if isinstance(first, bool):
        schema = {"type": "boolean"}
    elif isinstance(first, int):
        schema = {"type": "int64"}
    elif isinstance(first, float):
        schema = {"type": "double"}
    elif isinstance(first, Decimal):
        scale = max([10, *(-int(v.as_tuple().exponent) for v in present if isinstance(v, Decimal))])
        schema = {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {
                "scale": str(scale),
                "connect.decimal.precision": str(max(31, scale + 21)),
            },
        }
    elif isinstance(first, str):
        schema = {"type": "string"}
    elif isinstance(first, bytes):
        schema = {"type": "bytes"}
    elif isinstance(first, dt.datetime):
        schema = {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "version": 1}
    elif isinstance(first, list):
        items = [item for v in present if isinstance(v, list) for item in v]
        schema = {"type": "array", "items": infer_value(items or [None], f"{where}[]")}
    elif isinstance(first, Mapping):
        schema = infer_struct([v for v in present if isinstance(v, Mapping)], where)
    else:
        raise CodecError(f"{where}: {type(first).__name__} has no Kafka Connect type")
    schema["optional"] = optional
    return schema


# Avro -> Connect: the reverse of connect_to_avro; AvroData's connect.* properties restore
# the Connect names and parameters, logical types without them get Connect's or Debezium's.
_AVRO_PRIMITIVE = {
    "int": "int32",
    "long": "int64",
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}


def avro_to_connect(avro: Any, where: str, optional: bool = False) -> dict[str, Any]:
    """The Kafka Connect schema block of an Avro schema (expanded JSON), as AvroData
    reads it back; a :class:`CodecError` naming ``where`` for what Connect has no type of."""
    if isinstance(avro, list):
        members = [m for m in avro if m != "null"]
        if len(members) != 1:
            raise CodecError(f"{where}: Kafka Connect has no unions like {avro!r:.80}")
        return avro_to_connect(members[0], where, optional or len(members) < len(avro))
    node: Mapping[str, Any] = {"type": avro} if isinstance(avro, str) else avro
    kind = node.get("type")
    if isinstance(kind, dict | list):
        return avro_to_connect(kind, where, optional)
    block: dict[str, Any]
    logical = node.get("logicalType")
    if logical == "decimal":
        block = {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {
                "scale": str(node.get("scale", 0)),
                "connect.decimal.precision": str(node.get("precision")),
            },
        }
    elif (
        isinstance(logical, str) and logical in AVRO_LOGICAL_CONNECT and "connect.name" not in node
    ):
        connect_type, name = AVRO_LOGICAL_CONNECT[logical]
        block = {"type": connect_type, "name": name}
    elif kind in ("record", "error"):
        block = _struct_block(node, where)
    elif kind == "array":
        block = {"type": "array", "items": avro_to_connect(node["items"], f"{where}[]")}
    elif kind == "map":
        values = avro_to_connect(node["values"], f"{where}{{}}")
        block = {"type": "map", "keys": {"type": "string", "optional": False}, "values": values}
    elif kind == "enum":
        symbols = ",".join(node.get("symbols", []))
        block = {
            "type": "string",
            "name": "io.debezium.data.Enum",
            "parameters": {"allowed": symbols},
        }
    elif kind == "fixed":
        block = {"type": "bytes"}
    elif isinstance(kind, str) and kind in _AVRO_PRIMITIVE:
        block = {"type": node.get("connect.type", _AVRO_PRIMITIVE[kind])}
    else:
        raise CodecError(f"{where}: Avro type {kind!r} has no Kafka Connect type")
    for prop, key in (
        ("connect.name", "name"),
        ("connect.version", "version"),
        ("connect.doc", "doc"),
    ):
        if prop in node:
            block[key] = node[prop]
    if isinstance(node.get("connect.parameters"), Mapping):
        block["parameters"] = dict(node["connect.parameters"])
    semantic = SEMANTIC_TYPES.get(block.get("name", ""))
    if semantic is not None and semantic.connect_type == "struct" and block["type"] != "struct":
        # A struct the Avro schema spells as a plain value (VariableScaleDecimal's exact
        # text): Connect's block is the struct Debezium writes, whose value it writes.
        block["type"] = "struct"
        block["fields"] = [dict(field) for field in _STRUCT_FIELDS[block["name"]]]
    block["optional"] = optional
    return block


#: The fields of the semantic types that are Connect structs, as Debezium writes them.
_STRUCT_FIELDS: Mapping[str, tuple[Mapping[str, Any], ...]] = {
    "io.debezium.data.VariableScaleDecimal": (
        {"type": "int32", "optional": False, "field": "scale"},
        {"type": "bytes", "optional": False, "field": "value"},
    ),
}


def _struct_block(node: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The Connect struct of an Avro record: its fields, their own parameters and defaults."""
    name = node.get("name", "")
    space = node.get("namespace")
    fields = []
    for avro_field in node.get("fields", []):
        child = avro_to_connect(avro_field["type"], f"{where}.{avro_field['name']}")
        own = avro_field.get("connect.parameters")
        if isinstance(own, Mapping):
            # A named type shared by several columns (connect_to_avro) carries the first
            # one's parameters; each later field keeps its own.
            child["parameters"] = dict(own)
        default = avro_field.get("default")
        if default is not None:
            # Avro spells bytes defaults as ISO-8859-1 text, Connect's JSON as base64.
            if child["type"] == "bytes" and isinstance(default, str):
                default = base64.b64encode(default.encode("latin-1")).decode("ascii")
            child["default"] = default
        fields.append({**child, "field": avro_field["name"]})
    return {"type": "struct", "name": f"{space}.{name}" if space else name, "fields": fields}
