"""Avro schema -> Spark type, as spark-avro's ``SchemaConverters.toSqlType`` maps it.

| Avro | Spark |
|---|---|
| null | void (``NullType``, nullable) |
| boolean, int, long, float, double | boolean, int, bigint, float, double |
| string (also ``uuid``), enum | string |
| bytes, fixed | binary |
| ``decimal(p, s)`` on bytes or fixed, ``p <= 38``, ``0 <= s <= p`` | decimal(p,s) |
| any other ``decimal(p, s)`` (``p > 38``, ``s < 0``, ``s > p``) | string (exact text, below) |
| ``date`` (int) | date |
| ``time-millis`` (int) / ``time-micros`` (long) | int / bigint (the raw count) |
| ``timestamp-millis``, ``timestamp-micros`` (long) | timestamp |
| ``local-timestamp-millis``, ``local-timestamp-micros`` (long) | timestamp_ntz |
| ``timestamp-nanos``, ``local-timestamp-nanos`` (long) | bigint |
| record | struct (fields in order) |
| array<T> | array<T>, ``containsNull`` when T is nullable |
| map<T> | map<string, T>, ``valueContainsNull`` when T is nullable |
| [null, T] (any order) | T, nullable |
| [T] | T |
| [int, long] / [float, double] (with or without null) | bigint / double |
| [null] | empty struct, nullable |
| any other union | struct<member0, member1, ...>, every member nullable, the null branch left out |

Only unions with a null branch are nullable: fields of any other type are not.
A logical type Avro's Java parser would reject (``date`` on a long, a decimal
without a positive precision, or whose precision does not fit its fixed size) is
ignored, as there, and the underlying type maps.

A decimal Spark has no type for is a ``string`` column of each number's exact
text, in plain notation with the column's scale (``"19.990000000000000000000000000000"``
for ``decimal(65, 30)``, ``"12300"`` for scale -2), as on the typed Debezium path
(:mod:`cdc_connectors.spark.decimal_text`): more than 38 digits (MySQL's
``DECIMAL(65,30)``, Confluent's 64 digits for a Connect ``Decimal`` without
precision), a negative scale (Oracle's ``NUMBER(5,-2)``) or a scale above the
precision (PostgreSQL's ``numeric(3,5)``). The last two are invalid for the Avro
specification, which would ignore the logical type (spark-avro gives ``binary``
there); Confluent's AvroConverter, which registers them, reads them as decimals,
and so do we. A scale beyond 16383 either way (no database's) raises
:class:`ValueError`, as do recursive records (naming the path) and Spark's
``spark.sql.catalyst.type`` property (interval types), which is not supported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import fastavro
import orjson
import pyarrow as pa
from fastavro.schema import SchemaParseException
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from cdc_connectors.schema.avro import named_once
from cdc_connectors.spark.decimal_text import check_text_scale, spark_holds

#: Microseconds (Spark's timestamp unit) per unit of an Avro ``*-millis`` / ``*-micros`` type.
MICROS_PER_UNIT = {"millis": 1000, "micros": 1}
PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})

#: Logical types Avro's Java parser accepts, and the types they may annotate.
LOGICAL_BASES: dict[str, frozenset[str]] = {
    "decimal": frozenset({"bytes", "fixed"}),
    "big-decimal": frozenset({"bytes"}),
    "uuid": frozenset({"string", "fixed"}),
    "date": frozenset({"int"}),
    "time-millis": frozenset({"int"}),
    "time-micros": frozenset({"long"}),
    "timestamp-millis": frozenset({"long"}),
    "timestamp-micros": frozenset({"long"}),
    "timestamp-nanos": frozenset({"long"}),
    "local-timestamp-millis": frozenset({"long"}),
    "local-timestamp-micros": frozenset({"long"}),
    "local-timestamp-nanos": frozenset({"long"}),
    "duration": frozenset({"fixed"}),
}

_SIMPLE: dict[str, DataType] = {
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "fixed": BinaryType(),
    "string": StringType(),
    "enum": StringType(),
}
_LOGICAL: dict[str, DataType] = {
    "date": DateType(),
    "timestamp-millis": TimestampType(),
    "timestamp-micros": TimestampType(),
    "local-timestamp-millis": TimestampNTZType(),
    "local-timestamp-micros": TimestampNTZType(),
}


@dataclass(frozen=True, eq=False)
class AvroField:
    """One record field: its name, aliases, type and whether it has a default."""

    name: str
    node: AvroNode
    aliases: tuple[str, ...] = ()
    has_default: bool = False


@dataclass(frozen=True, eq=False)
class AvroNode:
    """One Avro type with named references expanded (a tree: recursion is rejected).

    ``logical`` is set only for a logical type the Java parser would accept.
    """

    type: str
    logical: str | None = None
    name: str | None = None  # full name of a record, enum or fixed
    aliases: tuple[str, ...] = ()
    precision: int = 0
    scale: int = 0
    size: int = 0
    symbols: tuple[str, ...] = ()
    fields: tuple[AvroField, ...] = ()
    items: AvroNode | None = None  # array items, map values
    branches: tuple[AvroNode, ...] = ()
    catalyst_type: str | None = None  # Spark's own ``spark.sql.catalyst.type`` property


def load(schema: dict[str, Any] | list[Any] | str) -> Any:
    """The schema as JSON data: a JSON text is parsed, a bare type name kept, each named
    type defined once."""
    if isinstance(schema, str) and schema.strip()[:1] in ("{", "[", '"'):
        schema = orjson.loads(schema)
    # A named type spelled out again where it is used again is that type, referred to.
    return named_once(schema)


def _max_precision(size: int) -> int:
    """Digits a signed ``size``-byte two's complement number always holds."""
    return len(str(2 ** (8 * size - 1) - 1)) - 1 if size > 0 else 0


def _logical(data: dict[str, Any], base: str, size: int) -> tuple[str | None, int, int]:
    """The logical type (with precision, scale) the Java parser keeps, else None."""
    logical = data.get("logicalType")
    if not isinstance(logical, str) or base not in LOGICAL_BASES.get(logical, ()):
        return None, 0, 0
    if logical == "decimal":
        precision, scale = data.get("precision"), data.get("scale", 0)
        if not isinstance(precision, int) or not isinstance(scale, int):
            return None, 0, 0
        if precision <= 0:
            return None, 0, 0
        # A scale outside 0..precision is kept: a decimal of text (module docstring).
        if base == "fixed" and precision > _max_precision(size):
            return None, 0, 0
        return logical, precision, scale
    if (logical == "uuid" and base == "fixed" and size != 16) or (
        logical == "duration" and size != 12
    ):
        return None, 0, 0
    return logical, 0, 0


class _Expander:
    """Expands a schema's named references, as the Avro specification resolves names."""

    def __init__(self) -> None:
        self.named: dict[str, tuple[dict[str, Any], str]] = {}

    def expand(self, data: Any, namespace: str, stack: tuple[str, ...], path: str) -> AvroNode:
        if isinstance(data, list):
            return AvroNode(
                "union",
                branches=tuple(self.expand(b, namespace, stack, path) for b in data),
            )
        if isinstance(data, str):
            if data in PRIMITIVES:
                return AvroNode(data)
            return self._reference(data, namespace, stack, path)
        if not isinstance(data, dict):
            raise ValueError(f"not an Avro schema at {path}: {data!r}")
        kind = data.get("type")
        if isinstance(kind, list | dict) or (isinstance(kind, str) and kind not in _COMPLEX):
            if isinstance(kind, str) and kind in PRIMITIVES:
                logical, precision, scale = _logical(data, kind, 0)
                prop = data.get("spark.sql.catalyst.type")
                return AvroNode(
                    kind,
                    logical=logical,
                    precision=precision,
                    scale=scale,
                    catalyst_type=prop if isinstance(prop, str) else None,
                )
            return self.expand(kind, namespace, stack, path)
        if kind == "array":
            return AvroNode(
                "array", items=self.expand(data["items"], namespace, stack, path + "[]")
            )
        if kind == "map":
            return AvroNode("map", items=self.expand(data["values"], namespace, stack, path + "{}"))
        return self._named(data, namespace, stack, path)

    def _full_name(self, data: dict[str, Any], namespace: str) -> tuple[str, str]:
        name = str(data["name"])
        if "." in name:
            return name, name.rsplit(".", 1)[0]
        space = data.get("namespace", namespace) or ""
        return (f"{space}.{name}" if space else name), space

    def _reference(self, name: str, namespace: str, stack: tuple[str, ...], path: str) -> AvroNode:
        candidates = [name] if "." in name else [f"{namespace}.{name}", name]
        for full in candidates:
            if full in self.named:
                data, space = self.named[full]
                return self._named(data, space, stack, path, known=full)
        raise ValueError(f"unknown Avro type name {name!r} at {path}")

    def _named(
        self,
        data: dict[str, Any],
        namespace: str,
        stack: tuple[str, ...],
        path: str,
        known: str | None = None,
    ) -> AvroNode:
        full, space = self._full_name(data, namespace)
        if known is None:
            self.named[full] = (data, namespace)
        aliases = tuple(str(a) for a in data.get("aliases", ()))
        kind = data["type"]
        if kind == "enum":
            return AvroNode("enum", name=full, aliases=aliases, symbols=tuple(data["symbols"]))
        if kind == "fixed":
            size = int(data["size"])
            logical, precision, scale = _logical(data, "fixed", size)
            return AvroNode(
                "fixed",
                logical=logical,
                name=full,
                aliases=aliases,
                precision=precision,
                scale=scale,
                size=size,
            )
        if full in stack:
            raise ValueError(
                f"Avro record {full} is recursive at {path}: "
                "a recursive record has no Spark struct type"
            )
        inner = (*stack, full)
        fields = []
        for field in data["fields"]:
            name = str(field["name"])
            where = f"{path}.{name}" if path != "<root>" else name
            fields.append(
                AvroField(
                    name,
                    self.expand(field["type"], space, inner, where),
                    tuple(str(a) for a in field.get("aliases", ())),
                    "default" in field,
                )
            )
        return AvroNode("record", name=full, aliases=aliases, fields=tuple(fields))


_COMPLEX = frozenset({"record", "error", "enum", "fixed", "array", "map"})


def without_logical_types(data: Any) -> Any:
    """A copy of the schema JSON without logical types: fastavro then reads and writes raw
    values, and does not refuse a logical type Avro's Java parser would ignore."""
    if isinstance(data, list):
        return [without_logical_types(b) for b in data]
    if not isinstance(data, dict):
        return data
    if data.get("type") in PRIMITIVES:
        # Properties of a primitive do not change its encoding; a bare name is fastavro's
        # quickest path.
        return data["type"]
    out = {k: v for k, v in data.items() if k != "logicalType"}
    for key in ("type", "items", "values"):
        if key in out:
            out[key] = without_logical_types(out[key])
    if isinstance(out.get("fields"), list):
        out["fields"] = [
            {**f, "type": without_logical_types(f["type"])} if isinstance(f, dict) else f
            for f in out["fields"]
        ]
    return out


def expand(schema: dict[str, Any] | list[Any] | str) -> AvroNode:
    """The schema as a tree of :class:`AvroNode`; :class:`ValueError` if invalid or recursive."""
    data = load(schema)
    try:
        fastavro.parse_schema(without_logical_types(data))
    except (SchemaParseException, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a valid Avro schema: {exc}") from None
    return _Expander().expand(data, "", (), "<root>")


def non_null(node: AvroNode) -> tuple[AvroNode, ...]:
    """A union's branches other than null."""
    return tuple(b for b in node.branches if b.type != "null")


def is_member_union(node: AvroNode) -> bool:
    """Whether a union maps to a struct of ``member<i>`` fields (module table)."""
    if node.type != "union":
        return False
    rest = non_null(node)
    if len(rest) == 1:
        return False
    return not (len(rest) == 2 and {b.type for b in rest} in ({"int", "long"}, {"float", "double"}))


def spark_type(node: AvroNode, path: str = "<root>") -> tuple[DataType, bool]:
    """The Spark type of a node and whether it is nullable (spark-avro's ``SchemaType``)."""
    if node.catalyst_type is not None:
        raise ValueError(
            f"{path}: spark.sql.catalyst.type {node.catalyst_type!r} (an interval type) "
            "is not supported"
        )
    if node.type == "null":
        return NullType(), True
    if node.logical == "decimal":
        if spark_holds(node.precision, node.scale):
            return DecimalType(node.precision, node.scale), False
        try:
            check_text_scale(node.precision, node.scale)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        return StringType(), False  # no Spark decimal: each number's exact text
    if node.logical in _LOGICAL:
        return _LOGICAL[node.logical], False
    if node.type in _SIMPLE:
        return _SIMPLE[node.type], False
    if node.type == "record":
        fields = []
        for field in node.fields:
            where = field.name if path == "<root>" else f"{path}.{field.name}"
            kind, nullable = spark_type(field.node, where)
            fields.append(StructField(field.name, kind, nullable))
        return StructType(fields), False
    if node.type == "array":
        assert node.items is not None
        kind, nullable = spark_type(node.items, path + "[]")
        return ArrayType(kind, containsNull=nullable), False
    if node.type == "map":
        assert node.items is not None
        kind, nullable = spark_type(node.items, path + "{}")
        return MapType(StringType(), kind, valueContainsNull=nullable), False
    return _union_type(node, path)


def _union_type(node: AvroNode, path: str) -> tuple[DataType, bool]:
    rest = non_null(node)
    has_null = len(rest) != len(node.branches)
    if len(rest) == 1:
        kind, nullable = spark_type(rest[0], path)
        return kind, nullable or has_null
    types = {b.type for b in rest}
    if len(rest) == 2 and types == {"int", "long"}:
        return LongType(), has_null
    if len(rest) == 2 and types == {"float", "double"}:
        return DoubleType(), has_null
    members = [
        StructField(f"member{i}", spark_type(b, f"{path}<member{i}>")[0], True)
        for i, b in enumerate(rest)
    ]
    return StructType(members), has_null


def is_text_decimal(node: AvroNode) -> bool:
    """Whether ``node`` is a decimal whose Spark column is its exact text (module
    docstring)."""
    return node.logical == "decimal" and not spark_holds(node.precision, node.scale)


def avro_to_spark(schema: dict[str, Any] | list[Any] | str) -> DataType:
    """The Spark type of an Avro schema (a record gives a ``StructType``); module table."""
    return spark_type(expand(schema))[0]


def arrow_type(datatype: DataType) -> pa.DataType:
    """The Arrow type Spark accepts for a Spark type: ``string`` not ``large_string``,
    timestamps as ``timestamp[us, tz=UTC]`` and ``timestamp_ntz`` as ``timestamp[us]``."""
    return to_arrow_type(datatype, timezone="UTC")
