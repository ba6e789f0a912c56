"""What kind of value a typed column holds, for the columnar writers: one reading of a column's
Connect node and Arrow type, which each writer (protobuf, JSON) maps to its own encoding."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from cdc_connectors.schema.connect import ConnectSchema
from cdc_connectors.schema.connect.node import string_keys

__all__ = ["ColumnKind", "column_kind"]


@dataclass(frozen=True)
class ColumnKind:
    """``name`` is one of ``struct``, ``list`` (a Connect array), ``map`` (a Connect map of
    string keys), ``time_of_day`` (``unit``:
    microseconds per count), ``date``, ``timestamp``, ``decimal`` (``unit``: the scale),
    ``decimal_text`` (a decimal Spark has no type for, held as its exact text at the
    column's scale, ``unit``: :mod:`~cdc_connectors.spark.decimal_text`), ``refused`` (a
    column the writers leave to the per-message way: ``float32``), ``string``, ``binary``,
    ``integer``, ``double``, ``boolean``."""

    name: str
    unit: int = 0


def column_kind(node: ConnectSchema, type_: pa.DataType) -> ColumnKind | None:
    """The kind of the column of ``node`` typed ``type_``; None when no writer takes it."""
    if node.type == "struct" and pa.types.is_struct(type_):
        return ColumnKind("struct")
    if node.type == "array" and pa.types.is_list(type_):
        return ColumnKind("list")
    if node.type == "map" and isinstance(type_, pa.MapType) and string_keys(node):
        return ColumnKind("map")
    way = node.semantic.columnar if node.semantic is not None else None
    if way is not None and way.kind == "time_of_day" and pa.types.is_integer(type_):
        return ColumnKind("time_of_day", way.micros_per_unit)
    if pa.types.is_date32(type_):
        return ColumnKind("date")
    if pa.types.is_timestamp(type_) and type_.unit == "us":
        return ColumnKind("timestamp")
    if pa.types.is_decimal128(type_):
        if node.type == "int64" and type_.scale == 0:
            return ColumnKind("integer")  # an unsigned 64-bit integer (protobuf's uint64)
        return ColumnKind("decimal", type_.scale)
    if way is not None and way.kind == "decimal" and type_ == pa.string():
        return ColumnKind("decimal_text", int(node.parameters.get("scale", 0)))
    if (way is not None and way.kind == "decimal") or (
        pa.types.is_floating(type_) and type_ != pa.float64()
    ):
        return ColumnKind("refused")
    for name, plain in (
        ("string", pa.string()),
        ("binary", pa.binary()),
        ("double", pa.float64()),
        ("boolean", pa.bool_()),
    ):
        if type_ == plain:
            return ColumnKind(name)
    if pa.types.is_integer(type_):
        return ColumnKind("integer")
    return None
