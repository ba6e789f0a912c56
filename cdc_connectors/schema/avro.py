"""Avro schemas: parse (with named types from references), identity text, compatibility.

Identity, as Confluent's: two texts are one schema when they parse to the same
schema. Namespaces written out or inherited, ``"name": "a.B"`` or
``"name": "B", "namespace": "a"``, ``{"type": "string"}`` or ``"string"``, key
order and whitespace do not matter; docs, defaults, aliases, a non-default
``order`` and other properties do (Confluent's canonical string is the Java
parser's ``Schema.toString``, which keeps them). ``normalize`` writes that
identity as JSON: every name in full, a named type spelled out once and named
afterwards, types of references named, aliases as sorted sets, object keys
sorted. (The ``avro`` package reads ``"namespace": ""`` inside a namespace as
the enclosing namespace, where Java reads no namespace.)

Field defaults are checked as Avro 1.12's Java parser (Confluent 8) checks them,
and as the specification reads them where Java reads them only when used:
``null`` for null, booleans, integers within 32 / 64 bits for int / long, any
number for float / double, a string for string, one of its symbols for an enum,
a string of code points 0-255 for bytes and fixed (of exactly its size for
fixed; a decimal's bytes within its precision), arrays and maps element by
element, a record's fields by name (or their own defaults), and a union's
default matching any of its branches. The ``avro`` package checks none of this.

Compatibility is the ``avro`` package's reader/writer checker, the same rules
as the Java implementation Confluent's registry uses.

A decimal whose scale is below zero (Oracle's ``NUMBER(5,-2)``, as Confluent's
AvroConverter registers it) or above its precision (PostgreSQL's ``numeric(3,5)``) is a
schema like any other: Confluent's registry takes it, and the readers and writers here
honour it (:mod:`cdc_connectors.schema.avro_values`), so the ``avro`` package's warning
that it ignores such a decimal is not shown.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Any

import avro.errors
import avro.name
import avro.schema
import orjson
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from cdc_connectors.schema import jsontext
from cdc_connectors.schema.errors import SchemaError

_INT = (-(2**31), 2**31 - 1)
_LONG = (-(2**63), 2**63 - 1)
_NAMED = ("record", "error", "enum", "fixed")
_UNKNOWN_NAME = re.compile(r"Could not make an Avro Schema object from ([A-Za-z_][\w.]*)")
# The avro package nests the whole offending JSON into each enclosing error.
_NESTED_REASON = "not a valid Avro schema: "
_MAX_REASON = 300
# A decimal's logical type held under this key while the avro package parses it: it warns
# of a scale below zero or above the precision, which it ignores (module docstring).
_HELD = "cdc.held.logicalType"
_LOGICAL = "logicalType"


def parse(schema_str: str, references: Sequence[str] = ()) -> avro.schema.Schema:
    """Parse an Avro schema; ``references`` are the schemas defining the named types it uses."""
    names = avro.name.Names()
    for number, ref in enumerate(references, 1):
        _make(jsontext.load(ref, f"Avro reference {number}"), names, f"reference {number}: ")
    schema = _make(jsontext.load(schema_str, "Avro schema"), names, "")
    check_defaults(schema)
    return schema


def normalize(schema_str: str, references: Sequence[str] = ()) -> str:
    """The schema's identity text: equal for every spelling of one schema (module docstring)."""
    data = jsontext.load(schema_str, "Avro schema")
    names = avro.name.Names()
    for number, ref in enumerate(references, 1):
        _make(jsontext.load(ref, f"Avro reference {number}"), names, f"reference {number}: ")
    known = set(names.names)
    try:
        schema = _make(data, names, "")
    except SchemaError as exc:
        # Without references a named type of another schema cannot resolve: until every
        # caller passes them, such a schema keeps its text (compact JSON) as identity.
        unknown = _UNKNOWN_NAME.search(str(exc))
        if references or unknown is None or unknown[1] not in _strings(data):
            raise
        return orjson.dumps(data).decode()
    check_defaults(schema)
    return jsontext.dumps(_canonical(schema, known, set()))


def _strings(data: Any) -> set[str]:
    found: set[str] = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.add(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _make(data: Any, names: avro.name.Names, where: str) -> avro.schema.Schema:
    if isinstance(data, dict) and data.get("type") in ("error_union", "request"):
        raise SchemaError(f"invalid Avro schema: {where}undefined type {data['type']!r}")
    try:
        with warnings.catch_warnings():
            # A logical type the avro package does not know (timestamp-nanos) is its base
            # type there, as the Avro specification says: not a word for the user.
            warnings.simplefilter("ignore", avro.errors.IgnoredLogicalType)
            return avro.schema.make_avsc_object(_held(data), names)
    except RecursionError:
        raise SchemaError(f"invalid Avro schema: {where}nests too deeply") from None
    except (
        avro.errors.AvroException,
        TypeError,
        KeyError,
        ValueError,
        AttributeError,
        IndexError,
    ) as exc:
        raise SchemaError(f"invalid Avro schema: {where}{_reason(exc)}") from None


def _held(data: Any) -> Any:
    """``data`` with the logical type of each decimal of a scale below zero or above its
    precision under :data:`_HELD`: a copy where there is one, else ``data`` itself."""
    if not _any_outside(data):
        return data
    return _holding(data)


def _any_outside(data: Any) -> bool:
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if _scale_outside(item):
                return True
            stack.extend(item[key] for key in ("type", "items", "values") if key in item)
            fields = item.get("fields")
            if isinstance(fields, list):
                stack.extend(f.get("type") for f in fields if isinstance(f, dict))
    return False


def _holding(data: Any) -> Any:
    if isinstance(data, list):
        return [_holding(item) for item in data]
    if not isinstance(data, dict):
        return data
    out = {
        key: _holding(value) if key in ("type", "items", "values") else value
        for key, value in data.items()
    }
    if isinstance(data.get("fields"), list):
        out["fields"] = [
            {**f, "type": _holding(f["type"])} if isinstance(f, dict) and "type" in f else f
            for f in data["fields"]
        ]
    if _scale_outside(data):
        out[_HELD] = out.pop("logicalType")
    return out


def _scale_outside(data: dict[str, Any]) -> bool:
    """Whether ``data`` is a decimal whose scale is below zero or above its precision."""
    if data.get("logicalType") != "decimal" or data.get("type") not in ("bytes", "fixed"):
        return False
    precision, scale = data.get("precision"), data.get("scale", 0)
    if type(precision) is not int or type(scale) is not int or precision <= 0:
        return False
    return scale < 0 or scale > precision


def _reason(exc: Exception) -> str:
    reason = str(exc).rsplit(_NESTED_REASON, 1)[-1] or type(exc).__name__
    return reason if len(reason) <= _MAX_REASON else reason[:_MAX_REASON] + "..."


def named_once(schema: Any) -> Any:
    """Schema JSON with each named type defined where first used and referred to by its
    full name after: what parsers take from a schema with named types spelled out at every
    use (``fastavro.parse_schema(..., expand=True)``), which they refuse as redefined."""
    return _named_once(schema, "", set())


def _named_once(schema: Any, space: str, seen: set[str]) -> Any:
    if isinstance(schema, list):
        return [_named_once(member, space, seen) for member in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind in _NAMED and isinstance(schema.get("name"), str):
        name = schema["name"]
        if "." in name:
            space = name.rsplit(".", 1)[0]
            full = name
        else:
            space = schema.get("namespace", space) or ""
            full = f"{space}.{name}" if space else name
        if full in seen:
            return full
        seen.add(full)
    out = dict(schema)
    if isinstance(kind, dict | list):
        out["type"] = _named_once(kind, space, seen)
    if isinstance(schema.get("fields"), list):
        out["fields"] = [
            {**f, "type": _named_once(f.get("type"), space, seen)} if isinstance(f, dict) else f
            for f in schema["fields"]
        ]
    for child in ("items", "values"):
        if child in schema:
            out[child] = _named_once(schema[child], space, seen)
    return out


# --- defaults ------------------------------------------------------------------------------


def check_defaults(schema: avro.schema.Schema) -> None:
    """SchemaError naming the first field whose default does not match its type."""
    seen: set[int] = set()
    stack = [schema]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, avro.schema.RecordSchema):
            for field in item.fields:
                if field.has_default and not _valid_default(field.type, field.default, 0):
                    raise SchemaError(
                        f"invalid Avro schema: the default of field {field.name!r} of "
                        f"{item.fullname} is {_show(field.default)}, not a valid "
                        f"{_label(field.type)}"
                    )
                stack.append(field.type)
        elif isinstance(item, avro.schema.ArraySchema):
            stack.append(item.items)
        elif isinstance(item, avro.schema.MapSchema):
            stack.append(item.values)
        elif isinstance(item, avro.schema.UnionSchema):
            stack.extend(item.schemas)


def _valid_default(schema: avro.schema.Schema, value: Any, depth: int) -> bool:
    if depth > jsontext.MAX_DEPTH:
        return False  # a record whose field defaults refer back to the record itself
    kind = schema.type
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("int", "long"):
        low, high = _INT if kind == "int" else _LONG
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    if kind in ("float", "double"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if isinstance(schema, avro.schema.EnumSchema):
        return isinstance(value, str) and value in schema.symbols
    if kind in ("bytes", "fixed"):
        # One byte per character, code points 0-255; a fixed holds exactly its size.
        if not isinstance(value, str) or any(ord(c) > 255 for c in value):
            return False
        if isinstance(schema, avro.schema.FixedSchema) and len(value) != schema.size:
            return False
        precision = getattr(schema, "precision", None)
        if isinstance(precision, int) and schema.get_prop("logicalType") == "decimal":
            unscaled = int.from_bytes(value.encode("latin-1"), "big", signed=True)
            return bool(abs(unscaled) < 10**precision)
        return True
    if isinstance(schema, avro.schema.ArraySchema):
        return isinstance(value, list) and all(
            _valid_default(schema.items, v, depth + 1) for v in value
        )
    if isinstance(schema, avro.schema.MapSchema):
        return isinstance(value, dict) and all(
            _valid_default(schema.values, v, depth + 1) for v in value.values()
        )
    if isinstance(schema, avro.schema.UnionSchema):
        return any(_valid_default(branch, value, depth + 1) for branch in schema.schemas)
    if isinstance(schema, avro.schema.RecordSchema):
        if not isinstance(value, dict):
            return False
        for field in schema.fields:
            if field.name in value:
                given = value[field.name]
            elif field.has_default:
                given = field.default
            else:
                return False
            if not _valid_default(field.type, given, depth + 1):
                return False
        return True
    return False


def _label(schema: avro.schema.Schema) -> str:
    if schema.get_prop("logicalType") == "decimal" or schema.get_prop(_HELD) == "decimal":
        digits = f"decimal({schema.get_prop('precision')},{schema.get_prop('scale') or 0})"
        if isinstance(schema, avro.schema.FixedSchema):
            return f"fixed {schema.fullname} of size {schema.size} holding a {digits}"
        return f"bytes holding a {digits}"
    if isinstance(schema, avro.schema.FixedSchema):
        return f"fixed {schema.fullname} of size {schema.size} (one character per byte)"
    if schema.type == "bytes":
        return "bytes (one character per byte, U+0000 to U+00FF)"
    if isinstance(schema, avro.schema.EnumSchema):
        return f"symbol of enum {schema.fullname}"
    if isinstance(schema, avro.schema.NamedSchema):
        return f"{schema.type} {schema.fullname}"
    if isinstance(schema, avro.schema.UnionSchema):
        return "value of any branch of " + _show([_label(s) for s in schema.schemas])
    return str(schema.type)


def _show(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 80 else text[:80] + "..."


# --- identity --------------------------------------------------------------------------------


def _canonical(schema: avro.schema.Schema, known: set[str], written: set[str]) -> Any:
    """The JSON of the identity text; ``known`` names are written as names, ``written`` grows."""
    kind = schema.type
    extra = _extra(schema.other_props)
    if isinstance(schema, avro.schema.NamedSchema) and kind in _NAMED:
        full = schema.fullname
        if full in known or full in written:
            return full
        written.add(full)
        own = schema.namespace or None
        out: dict[str, Any] = {"type": kind, "name": full, **extra}
        if extra.get("aliases") is not None:
            out["aliases"] = _qualified(extra["aliases"], own)
        doc = schema.get_prop("doc")
        if doc is not None:
            out["doc"] = doc
        if isinstance(schema, avro.schema.EnumSchema):
            out["symbols"] = list(schema.symbols)
        elif isinstance(schema, avro.schema.FixedSchema):
            out["size"] = schema.size
        elif isinstance(schema, avro.schema.RecordSchema):
            out["fields"] = [_field(f, known, written) for f in schema.fields]
        return out
    if isinstance(schema, avro.schema.ArraySchema):
        return {"type": "array", "items": _canonical(schema.items, known, written), **extra}
    if isinstance(schema, avro.schema.MapSchema):
        return {"type": "map", "values": _canonical(schema.values, known, written), **extra}
    if isinstance(schema, avro.schema.UnionSchema):
        return [_canonical(branch, known, written) for branch in schema.schemas]
    return {"type": kind, **extra} if extra else kind


def _field(field: avro.schema.Field, known: set[str], written: set[str]) -> Any:
    out: dict[str, Any] = {
        "name": field.name,
        "type": _canonical(field.type, known, written),
        **_extra(field.other_props),
    }
    if field.doc is not None:
        out["doc"] = field.doc
    if field.has_default:
        out["default"] = field.default
    if field.order not in (None, "ascending"):
        out["order"] = field.order
    return out


def _extra(props: Any) -> dict[str, Any]:
    """Other properties; aliases as a sorted set, left out when empty (Java writes none)."""
    extra = {_LOGICAL if k == _HELD else k: v for k, v in props.items() if k != "aliases"}
    aliases = props.get("aliases")
    if isinstance(aliases, list) and aliases:
        extra["aliases"] = sorted({str(a) for a in aliases})
    elif aliases:
        extra["aliases"] = aliases
    return extra


def _qualified(aliases: Any, space: str | None) -> Any:
    if not isinstance(aliases, list):
        return aliases
    return sorted({a if "." in a or not space else f"{space}.{a}" for a in aliases})


# --- compatibility ---------------------------------------------------------------------------


def incompatibilities(reader: avro.schema.Schema, writer: avro.schema.Schema) -> list[str]:
    """Why ``reader`` cannot read data written with ``writer``; empty when it can."""
    checker = ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
    result = checker.get_compatibility(reader, writer)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    where = ", ".join(sorted(result.locations))
    return [f"{message} (at {where})" for message in sorted(result.messages)] or [
        f"incompatible (at {where})"
    ]
