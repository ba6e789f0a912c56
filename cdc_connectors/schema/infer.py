"""Avro schemas inferred from OpenCDC structured data, by Conduit's rules.

When a Conduit source registers a schema for a structured key or payload, it
extracts one from the data (``conduit-commons``, ``schema/avro/extractor.go``,
then sorts it, ``traverse.go``) and registers the text hamba/avro's
``Schema.String()`` gives. :func:`infer_schema` gives the same schema for the
same data, and :func:`infer_schema_text` the same text, so that both sides
register one version of a subject. A Python value stands for the Go value a
connector holds for it:

=====================  ===============================================  ==================
Python                 Avro                                             Go (Conduit)
=====================  ===============================================  ==================
the data itself        record ``record``, one field per key, sorted     ``StructuredData``
``None``               ``["null","string"]``                            untyped ``nil``
``bool``               ``boolean``                                      ``bool``
``int`` (signed 64)    ``long``                                         ``int``, ``int64``
``float``              ``double``                                       ``float64``
``Decimal``            ``bytes``, ``decimal`` precision 31, scale 10    ``big.Rat``
``str``                ``string``                                       ``string``
``bytes``              ``bytes``                                        ``[]byte``
``datetime``           ``long``, ``timestamp-micros``                   ``time.Time``
``list``               ``array`` of a union: null + the items' types    ``[]any``
nested ``dict``        ``map`` of a union: null + the values' types     ``map[string]any``
=====================  ===============================================  ==================

- A nested ``dict`` is a ``map``, not a record: in Conduit only a
  ``StructuredData`` nested by Go code becomes a record, and nested objects
  arriving as JSON or protobuf are ``map[string]any``.
- An empty list or dict holds ``["null","string"]``. Unions are sorted by their
  members' JSON text, as Conduit sorts them (so ``null`` is not always first).
- Two arrays (or two maps) in one union merge into one; two other members of
  one Avro type (``long`` and a ``timestamp-micros`` long, ``bytes`` and a
  decimal) cannot share a union, and Conduit refuses them as we do.
- Python ints carry no width, so every ``int`` is a ``long``; Conduit gives
  ``int`` only for Go's narrower integer types. Integers beyond signed 64 bits
  are refused. NaN and infinities are doubles like any other (Avro holds them).
- Field names of the record must be Avro names; keys of nested dicts need not.

:func:`prepare` adapts data to be written with such a schema by fastavro.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.jsontext import MAX_DEPTH

__all__ = ["DECIMAL_PRECISION", "DECIMAL_SCALE", "infer_schema", "infer_schema_text", "prepare"]

#: Conduit's decimal: Db2's largest precision; 10 places suit most money data.
DECIMAL_PRECISION = 31
DECIMAL_SCALE = 10

_MIN_LONG, _MAX_LONG = -(2**63), 2**63 - 1
_MIN_INT, _MAX_INT = -(2**31), 2**31 - 1
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NULL_STRING: list[Any] = ["null", "string"]
_DECIMAL: dict[str, Any] = {
    "type": "bytes",
    "logicalType": "decimal",
    "precision": DECIMAL_PRECISION,
    "scale": DECIMAL_SCALE,
}
_TIMESTAMP: dict[str, Any] = {"type": "long", "logicalType": "timestamp-micros"}
_SUPPORTED = "None, bool, int, float, Decimal, str, bytes, datetime, list and dict"


def infer_schema(
    data: Mapping[str, Any], name: str = "record", *, what: str = "data"
) -> dict[str, Any]:
    """The Avro schema Conduit infers for ``data``, as JSON-ready objects.

    ``name`` is the record's full name; ``what`` starts the path named in errors
    (``payload.after`` gives ``payload.after.items[2]``). Equal data gives equal
    objects, whatever the order of the keys. Raises :class:`SchemaError` for a
    value that has no Avro type here.
    """
    if not isinstance(data, Mapping):
        raise SchemaError(f"{what}: structured data is a dict, not {type(data).__name__}")
    if not all(_NAME.fullmatch(part) for part in name.split(".")):
        raise SchemaError(
            f"record name {name!r} is not an Avro name: dot-separated parts of letters, "
            "digits and _, not starting with a digit"
        )
    fields = []
    for key in sorted(_keys(data, what)):
        where = f"{what}.{key}"
        if not _NAME.fullmatch(key):
            raise SchemaError(
                f"{where}: field name {key!r} is not an Avro name (letters, digits and _, "
                "not starting with a digit); Conduit refuses it too, rename the key"
            )
        # record (1), its fields list (2), the field (3): the field's type is level 4
        fields.append({"name": key, "type": _infer(data[key], where, 4)})
    return {"name": name, "type": "record", "fields": fields}


def infer_schema_text(data: Mapping[str, Any], name: str = "record", *, what: str = "data") -> str:
    """:func:`infer_schema` as the compact JSON Conduit registers for it."""
    return orjson.dumps(infer_schema(data, name, what=what)).decode()


def prepare(
    data: Mapping[str, Any], schema: Mapping[str, Any], *, what: str = "data"
) -> dict[str, Any]:
    """``data`` ready for fastavro to write with ``schema`` (a record schema).

    fastavro needs help in three places: a value in a union is tagged with its
    branch, ``("long", 3)``, since fastavro would write an int as the first
    branch that takes it (``double`` sorts before ``long``); a naive
    ``datetime`` is taken as UTC (fastavro would take it as local time); a
    ``Decimal`` is written at the schema's scale (one with more places is
    refused: Conduit floors it, which would change the number). Raises
    :class:`SchemaError` naming the path of a value the schema cannot hold.
    """
    if not isinstance(schema, Mapping) or schema.get("type") not in ("record", "error"):
        raise SchemaError(f"{what}: prepare takes a record schema, not {schema!r:.80}")
    return _prepare_record(data, schema, what)


# -- inference ----------------------------------------------------------------


def _infer(value: Any, where: str, level: int) -> Any:
    """The schema of one value; ``level`` is how deep in the schema's JSON it sits."""
    if value is None:
        # Conduit cannot know the type behind an untyped nil: a nullable string.
        return list(_NULL_STRING)
    if isinstance(value, bool):  # before int: bool is an int in Python
        return "boolean"
    if isinstance(value, int):
        _check_long(value, where)
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes"
    if isinstance(value, Decimal):
        _unscaled(value, DECIMAL_PRECISION, DECIMAL_SCALE, where)
        return dict(_DECIMAL)
    if isinstance(value, datetime):
        return dict(_TIMESTAMP)
    if isinstance(value, list | tuple):
        _check_level(level, where)
        items = [_infer(item, f"{where}[{i}]", level + 2) for i, item in enumerate(value)]
        return {
            "type": "array",
            "items": _any_union(items, where, [f"[{i}]" for i in range(len(value))]),
        }
    if isinstance(value, Mapping):
        _check_level(level, where)
        keys = _keys(value, where)
        values = [_infer(value[key], f"{where}.{key}", level + 2) for key in keys]
        return {"type": "map", "values": _any_union(values, where, [f".{key}" for key in keys])}
    raise SchemaError(
        f"{where}: a {type(value).__name__} has no Avro type; structured data holds {_SUPPORTED}"
    )


def _any_union(schemas: list[Any], where: str, steps: list[str]) -> list[Any]:
    """The union Conduit gives the values of a ``[]any`` or ``map[string]any``.

    Null is always a member, since any value of such a Go type may be nil; an
    empty container adds ``string`` so that the union is not null alone.
    """
    members: list[Any] = ["null"]
    for schema, step in zip(schemas, steps, strict=True):
        _add(members, schema, f"{where}{step}")
    if not schemas:
        members.append("string")
    return _sorted(members)


def _add(members: list[Any], schema: Any, where: str) -> None:
    """Add ``schema`` to the union ``members`` as Conduit's ``deduplicate`` does."""
    if isinstance(schema, list):  # a union's members join the union
        for member in schema:
            _add(members, member, where)
        return
    if schema in members:
        return
    kind = _kind(schema)
    for index, member in enumerate(members):
        if _kind(member) != kind:
            continue
        if kind == "array":
            items = _merged(member["items"], schema["items"], where)
            members[index] = {"type": "array", "items": items}
        elif kind == "map":
            values = _merged(member["values"], schema["values"], where)
            members[index] = {"type": "map", "values": values}
        else:
            raise SchemaError(
                f"{where}: a {_described(schema)} cannot share a union with a "
                f"{_described(member)} (one Avro type, {kind}); Conduit refuses such data too. "
                "Give these values a field of their own, or convert one kind (e.g. to a string)"
            )
        return
    members.append(schema)


def _merged(first: Any, second: Any, where: str) -> Any:
    """One schema for the items (or values) of two arrays (or maps) in one union."""
    members: list[Any] = []
    _add(members, first, where)
    _add(members, second, where)
    return members[0] if len(members) == 1 else _sorted(members)


def _sorted(members: list[Any]) -> list[Any]:
    # Conduit sorts a union by each member's String(): the compact JSON we write
    # too. Members sort apart before any nested union, where ties could start.
    return sorted(members, key=orjson.dumps)


def _kind(schema: Any) -> str:
    """The Avro type under a schema: ``long`` for a timestamp too."""
    return schema if isinstance(schema, str) else str(schema["type"])


def _described(schema: Any) -> str:
    if isinstance(schema, dict) and "logicalType" in schema:
        return f"{schema['type']} ({schema['logicalType']})"
    return _kind(schema)


def _keys(value: Mapping[Any, Any], where: str) -> list[str]:
    keys = list(value)
    for key in keys:
        if not isinstance(key, str):
            raise SchemaError(
                f"{where}: key {key!r} is a {type(key).__name__}; Avro maps and records "
                "take string keys only"
            )
    return keys


def _check_level(level: int, where: str) -> None:
    if level > MAX_DEPTH:
        raise SchemaError(
            f"{where}: the data nests so deep that its schema would pass {MAX_DEPTH} JSON "
            "levels, more than schema readers here accept; flatten it or send it as a string"
        )


def _check_long(value: int, where: str) -> None:
    if not _MIN_LONG <= value <= _MAX_LONG:
        raise SchemaError(
            f"{where}: integer {value} does not fit an Avro long (signed 64 bits); "
            "send it as a Decimal or a string"
        )


def _unscaled(value: Decimal, precision: int, scale: int, where: str) -> int:
    """``value`` in units of ``10**-scale``; a value with more places is refused."""
    if not value.is_finite():
        raise SchemaError(f"{where}: Decimal {value} has no Avro decimal form")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite
    # Checked before scaling, so that 1E+999999 costs nothing.
    if value and value.adjusted() >= precision - scale:
        raise SchemaError(
            f"{where}: Decimal {value} has more than {precision - scale} digits before the "
            f"point, more than decimal({precision},{scale}) holds; send it as a string"
        )
    coefficient = int("".join(map(str, digits)))
    signed = -coefficient if sign else coefficient
    shift = exponent + scale
    unscaled: int
    if signed == 0:
        unscaled = 0
    elif shift >= 0:
        unscaled = signed * 10**shift
    elif any(digits[shift:]):
        # Conduit floors such a value (hamba's big.Int.Div); a number must not change
        # on the way, so it is refused instead.
        raise SchemaError(
            f"{where}: Decimal {value} has more than {scale} decimal places, more than "
            f"decimal({precision},{scale}) holds; send it as a string"
        )
    else:
        unscaled = signed // 10**-shift  # exact: only zeros are dropped
    if abs(unscaled) >= 10**precision:  # flooring a negative can add a digit
        raise SchemaError(
            f"{where}: Decimal {value} does not fit decimal({precision},{scale}); "
            "send it as a string"
        )
    return unscaled


# -- preparing values ---------------------------------------------------------


def _prepare(value: Any, schema: Any, where: str) -> Any:
    if isinstance(schema, list):
        return _prepare_union(value, schema, where)
    if isinstance(schema, str):
        return _prepare_primitive(value, schema, where)
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if kind in ("record", "error"):
        return _prepare_record(value, schema, where)
    if kind == "array":
        if not isinstance(value, list | tuple):
            raise _mismatch(value, "array", where)
        items = schema["items"]
        return [_prepare(item, items, f"{where}[{i}]") for i, item in enumerate(value)]
    if kind == "map":
        if not isinstance(value, Mapping):
            raise _mismatch(value, "map", where)
        values = schema["values"]
        return {key: _prepare(value[key], values, f"{where}.{key}") for key in _keys(value, where)}
    if kind == "long" and logical == "timestamp-micros":
        if not isinstance(value, datetime):
            raise _mismatch(value, "timestamp-micros", where)
        # A naive datetime is taken as UTC, where fastavro would take local time.
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if kind == "bytes" and logical == "decimal":
        if not isinstance(value, Decimal | int) or isinstance(value, bool):
            raise _mismatch(value, "decimal", where)
        scale = int(schema.get("scale", 0))
        unscaled = _unscaled(Decimal(value), int(schema["precision"]), scale, where)
        # Built from text: Decimal arithmetic would round to the context's 28 digits.
        return Decimal(f"{unscaled}E-{scale}")
    if isinstance(kind, str):
        return _prepare_primitive(value, kind, where)
    raise SchemaError(f"{where}: schema {schema!r:.80} is not one prepare knows")


def _prepare_record(value: Any, schema: Mapping[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _mismatch(value, "record", where)
    names = {field["name"] for field in schema["fields"]}
    extra = [key for key in _keys(value, where) if key not in names]
    if extra:
        # fastavro would drop them without a word.
        raise SchemaError(
            f"{where}: key {extra[0]!r} is not a field of record {schema.get('name')!r}; "
            "infer the schema from this data"
        )
    return {
        field["name"]: _prepare(value.get(field["name"]), field["type"], f"{where}.{field['name']}")
        for field in schema["fields"]
    }


def _prepare_union(value: Any, members: list[Any], where: str) -> Any:
    if value is None:
        if "null" in members:
            return None
        raise _mismatch(value, str(members), where)
    member = _branch(value, members)
    if member is None:
        raise _mismatch(value, orjson.dumps(members).decode(), where)
    prepared = _prepare(value, member, where)
    if isinstance(member, dict) and member.get("type") in ("record", "error"):
        name = str(member["name"])
        if "." not in name and member.get("namespace"):
            name = f"{member['namespace']}.{name}"
        return (name, prepared)
    # fastavro's tuple notation names the branch: the Avro type, for a logical type too.
    return (_kind(member), prepared)


def _branch(value: Any, members: list[Any]) -> Any:
    """The union member holding ``value``: the one of its kind, else a wider number."""
    wanted: tuple[str, ...]
    if isinstance(value, bool):
        wanted = ("boolean",)
    elif isinstance(value, int):
        wanted = ("long", "int", "double", "float")
    elif isinstance(value, float):
        wanted = ("double", "float")
    elif isinstance(value, str):
        wanted = ("string",)
    elif isinstance(value, bytes | bytearray | memoryview):
        wanted = ("bytes",)
    elif isinstance(value, Decimal):
        wanted = ("bytes/decimal",)
    elif isinstance(value, datetime):
        wanted = ("long/timestamp-micros",)
    elif isinstance(value, list | tuple):
        wanted = ("array",)
    elif isinstance(value, Mapping):
        wanted = ("map", "record")
    else:
        return None
    for kind in wanted:
        for member in members:
            logical = member.get("logicalType") if isinstance(member, dict) else None
            if (f"{_kind(member)}/{logical}" if logical else _kind(member)) == kind:
                return member
    return None


def _prepare_primitive(value: Any, kind: str, where: str) -> Any:
    if kind == "null" and value is None:
        return None
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind in ("long", "int") and isinstance(value, int) and not isinstance(value, bool):
        low, high = (_MIN_LONG, _MAX_LONG) if kind == "long" else (_MIN_INT, _MAX_INT)
        if not low <= value <= high:
            raise SchemaError(f"{where}: integer {value} does not fit an Avro {kind}")
        return value
    if kind in ("double", "float") and isinstance(value, int | float):
        if isinstance(value, bool):
            raise _mismatch(value, kind, where)
        if isinstance(value, int) and abs(value) > 2**53:
            raise SchemaError(f"{where}: integer {value} would change as an Avro {kind}")
        return float(value)  # Avro promotes an int to a double; Python must be told
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "bytes" and isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise _mismatch(value, kind, where)


def _mismatch(value: Any, expected: str, where: str) -> SchemaError:
    shown = "None" if value is None else f"a {type(value).__name__}"
    return SchemaError(
        f"{where}: {shown} does not fit the schema's {expected}; infer the schema from this data"
    )
