"""JSON Schema -> Spark type, and JSON values -> the Python values Arrow takes for it.

| JSON Schema | Spark |
|---|---|
| ``boolean`` | boolean |
| ``integer`` (``connect.type`` int8, int16, int32) | bigint (tinyint, smallint, int) |
| ``number`` (``connect.type`` ``float32``) | double (float) |
| ``string`` | string |
| ``string`` with ``format`` ``date-time`` / ``date`` | timestamp / date |
| ``string`` with ``contentEncoding`` ``base64`` | binary |
| ``object`` with ``properties`` | struct of them, in order |
| ``object`` whose ``additionalProperties`` is a schema, no ``properties`` | map<string, T> |
| ``array`` whose ``items`` is a schema | array<T> |
| ``enum`` / ``const`` of strings | string |
| a type list or ``oneOf`` / ``anyOf`` of one type and ``null`` | that type |
| ``$ref`` to ``#/definitions/...`` / ``#/$defs/...`` | what it refers to |
| anything else (several types, no type, tuples, free objects, recursion) | string: JSON text |

Every column is nullable (a JSON document may leave any property out). A value that the
schema validated but the column cannot hold exactly (a number past a double's digits, an
ISO time that does not parse) makes its row an error row, naming the place.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import orjson
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from cdc_connectors.schema import float32

__all__ = ["Shape", "shape_of"]

_INTEGERS: dict[str, DataType] = {"int8": ByteType(), "int16": ShortType(), "int32": IntegerType()}
_BOUNDS = {"int8": 2**7, "int16": 2**15, "int32": 2**31, None: 2**63}
Convert = Callable[[Any, str], Any]


class Shape:
    """A Spark type and how a JSON value becomes its Arrow-ready Python value."""

    def __init__(self, spark: DataType, convert: Convert):
        self.spark, self.convert = spark, convert


def shape_of(schema: Any) -> Shape:
    """The shape of a JSON Schema's values (the module's table)."""
    return _Walk(schema).shape(schema, ())


class _Walk:
    def __init__(self, root: Any):
        self.root = root

    def shape(self, schema: Any, seen: tuple[str, ...]) -> Shape:
        if not isinstance(schema, dict):
            return _TEXT
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref in seen:
                return _TEXT  # recursive: the nested value as JSON text
            target = self._resolve(ref)
            return _TEXT if target is None else self.shape(target, (*seen, ref))
        for combined in ("oneOf", "anyOf"):
            members = schema.get(combined)
            if isinstance(members, list):
                real = [m for m in members if not _is_null(m)]
                return self.shape(real[0], seen) if len(real) == 1 else _TEXT
        kind = schema.get("type")
        if isinstance(kind, list):
            real = [k for k in kind if k != "null"]
            if len(real) != 1:
                return _TEXT
            kind = real[0]
        if kind is None:
            kind = _kind_of_values(schema)
        if kind == "object":
            return self._object(schema, seen)
        if kind == "array":
            items = schema.get("items")
            if not isinstance(items, dict) or "prefixItems" in schema:
                return _TEXT
            inner = self.shape(items, seen)
            return Shape(ArrayType(inner.spark, True), _list_of(inner.convert))
        scalar = _SCALARS.get(kind)
        return _TEXT if scalar is None else scalar(schema)

    def _object(self, schema: dict[str, Any], seen: tuple[str, ...]) -> Shape:
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        if not isinstance(properties, dict) or not properties:
            if isinstance(extra, dict) and extra:
                inner = self.shape(extra, seen)
                return Shape(MapType(StringType(), inner.spark, True), _map_of(inner.convert))
            return _TEXT
        fields = {name: self.shape(sub, seen) for name, sub in properties.items()}
        spark = StructType([StructField(name, s.spark, True) for name, s in fields.items()])
        return Shape(spark, _struct_of({n: s.convert for n, s in fields.items()}))

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return None
        node = self.root
        for step in ref[1:].split("/")[1:] if ref != "#" else []:
            step = step.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or step not in node:
                return None
            node = node[step]
        return node


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _kind_of_values(schema: dict[str, Any]) -> str | None:
    """``string`` for an ``enum`` / ``const`` of strings; else no single kind."""
    values = schema.get("enum") if "enum" in schema else [schema.get("const")]
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return "string"
    if "properties" in schema:
        return "object"
    return None


def _text(value: Any, place: str) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=_number_text).decode()


def _number_text(value: Any) -> Any:
    if isinstance(value, Decimal):
        return orjson.Fragment(str(value))
    raise TypeError


_TEXT = Shape(StringType(), _text)


def _string(schema: dict[str, Any]) -> Shape:
    fmt = schema.get("format")
    if fmt == "date-time":
        return Shape(TimestampType(), _timestamp)
    if fmt == "date":
        return Shape(DateType(), _date)
    if schema.get("contentEncoding") == "base64":
        return Shape(BinaryType(), _base64)
    return Shape(StringType(), _text)


def _integer(schema: dict[str, Any]) -> Shape:
    found = schema.get("connect.type")
    connect = found if isinstance(found, str) else None
    bound = _BOUNDS.get(connect, 2**63)
    spark = _INTEGERS.get(connect, LongType()) if connect is not None else LongType()

    def convert(value: Any, place: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not -bound <= value < bound:
            raise ValueError(f"at {place}: {value!r} is not an integer of {spark.simpleString()}")
        return value

    return Shape(spark, convert)


def _number(schema: dict[str, Any]) -> Shape:
    single = schema.get("connect.type") == "float32"

    def convert(value: Any, place: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            raise ValueError(f"at {place}: {value!r} is not a number")
        number = float(value)
        if isinstance(value, Decimal) or (isinstance(value, int) and int(number) != value):
            raise ValueError(f"at {place}: {value} has more digits than a double holds")
        if single and not float32.holds(number):
            raise ValueError(f"at {place}: {value} is not a float (32 bits) exactly")
        return number

    return Shape(FloatType() if single else DoubleType(), convert)


def _boolean(schema: dict[str, Any]) -> Shape:
    def convert(value: Any, place: str) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"at {place}: {value!r} is not a boolean")
        return value

    return Shape(BooleanType(), convert)


_SCALARS: dict[Any, Callable[[dict[str, Any]], Shape]] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
}


_FRACTION = re.compile(r"\.(\d+)")


def _timestamp(value: Any, place: str) -> dt.datetime:
    try:
        found = dt.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(f"at {place}: {value!r} is not an ISO 8601 date-time") from None
    digits = _FRACTION.search(value)
    if digits is not None and len(digits.group(1).rstrip("0")) > 6:
        raise ValueError(f"at {place}: {value!r} is finer than the microseconds a timestamp holds")
    found = found if found.tzinfo is not None else found.replace(tzinfo=dt.UTC)
    try:
        found.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError(f"at {place}: {value!r} is outside years 1-9999 in UTC") from None
    if not 1 <= found.astimezone(dt.UTC).year <= 9999:
        raise ValueError(f"at {place}: {value!r} is outside years 1-9999 in UTC")
    return found


def _date(value: Any, place: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(f"at {place}: {value!r} is not an ISO 8601 date") from None


def _base64(value: Any, place: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (TypeError, ValueError):
        raise ValueError(f"at {place}: {str(value)[:40]!r} is not base64") from None


def _list_of(convert: Convert) -> Convert:
    def each(value: Any, place: str) -> list[Any]:
        if not isinstance(value, list):
            raise ValueError(f"at {place}: not an array")
        return [None if v is None else convert(v, f"{place}/{i}") for i, v in enumerate(value)]

    return each


def _map_of(convert: Convert) -> Convert:
    def each(value: Any, place: str) -> list[tuple[str, Any]]:
        if not isinstance(value, dict):
            raise ValueError(f"at {place}: not an object")
        return [(k, None if v is None else convert(v, f"{place}/{k}")) for k, v in value.items()]

    return each


def _struct_of(fields: Mapping[str, Convert]) -> Convert:
    def each(value: Any, place: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ValueError(f"at {place or '/'}: not an object")
        out = {}
        for name, convert in fields.items():
            item = value.get(name)
            out[name] = None if item is None else convert(item, f"{place}/{name}")
        return out

    return each
