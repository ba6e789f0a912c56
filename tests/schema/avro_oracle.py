"""An oracle of the Avro 1.12 specification, written from the specification alone.

Nothing here imports the project: it is what the project is checked against.

Values live in three forms:

- the *serializer value*: what confluent-kafka's ``AvroSerializer`` (fastavro) takes:
  ``int``, ``float``, ``str``, ``bytes``, ``Decimal``, ``datetime``, ``date``, ``time``,
  ``UUID``, ``dict``, ``list``, ``None``; a value of a named type in a union may be
  given in tuple notation, ``(full name, value)``;
- the *datum*: the value of the schema's underlying Avro types, as the binary encoding
  holds it (logical types undone: a decimal is its two's complement bytes, a timestamp its
  count since the epoch); a value in a union is a :class:`Branch` naming the branch;
- the *reader's views* of a datum: :func:`python_value` (what a fastavro-based reader
  such as ``AvroDeserializer`` returns), :func:`opencdc_json` (the value in the OpenCDC
  JSON the project writes, with matchers where JSON spells one value several ways) and
  :func:`spark_value` (the Spark ``Row`` value of spark-avro's type mapping).

:func:`read` is the whole path: a serializer value written with one schema, read with
another (schema resolution, defaults, promotions), as a datum of the reader's schema.
:func:`decode` decodes the binary encoding by the specification, to check that a
serializer value means what the oracle thinks it means.

Where the specification leaves a choice open, the choice made is noted at that place
(``SPEC NOTE``).
"""

from __future__ import annotations

import base64
import datetime as dt
import struct
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from uuid import UUID

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
FLOAT32_MAX = 3.4028234663852886e38

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
MIDNIGHT = dt.datetime(1970, 1, 1)

#: Logical types and the underlying types they may annotate (the specification's list).
LOGICAL_BASES = {
    "decimal": ("bytes", "fixed"),
    "uuid": ("string", "fixed"),
    "date": ("int",),
    "time-millis": ("int",),
    "time-micros": ("long",),
    "timestamp-millis": ("long",),
    "timestamp-micros": ("long",),
    "timestamp-nanos": ("long",),
    "local-timestamp-millis": ("long",),
    "local-timestamp-micros": ("long",),
    "local-timestamp-nanos": ("long",),
    "duration": ("fixed",),
}
#: Temporal logical types: how many of their units make a microsecond, or one a micro.
_PER_MICRO = {
    "timestamp-millis": 1000,
    "timestamp-micros": 1,
    "local-timestamp-millis": 1000,
    "local-timestamp-micros": 1,
}


class SchemaError(ValueError):
    """A schema (or a default in it) the specification does not allow."""


class ResolutionError(ValueError):
    """Data of the writer's schema that the reader's schema cannot read."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Branch:
    """A datum in a union: the index of its branch and the datum of that branch."""

    index: int
    value: Any


# --- schemas ------------------------------------------------------------------------------


@dataclass(eq=False)
class Field:
    name: str
    type: Node
    aliases: tuple[str, ...] = ()
    default: Any = MISSING  # the default as JSON, MISSING when the field has none


@dataclass(eq=False)
class Node:
    """One schema, named references resolved to the node they name."""

    type: str  # a primitive name, record, enum, fixed, array, map or union
    logical: str | None = None  # only a logical type the specification accepts here
    precision: int = 0
    scale: int = 0
    name: str | None = None  # full name of a named type
    aliases: tuple[str, ...] = ()  # full names
    symbols: tuple[str, ...] = ()
    enum_default: Any = MISSING
    size: int = 0
    fields: list[Field] = field(default_factory=list)
    items: Node | None = None  # array items, map values
    branches: list[Node] = field(default_factory=list)

    @property
    def short_name(self) -> str:
        assert self.name is not None
        return self.name.rsplit(".", 1)[-1]

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)


def parse(schema: Any, check_defaults: bool = True) -> Node:
    """The schema (JSON data) as a :class:`Node`; :class:`SchemaError` when invalid.

    With ``check_defaults``, every field default (and enum default) must be a value of its
    type, read as the specification says (:func:`default_datum`)."""
    names: dict[str, Node] = {}
    node = _parse(schema, "", names)
    if check_defaults:
        _check_defaults(node, set())
    return node


def _full(name: str, namespace: str) -> str:
    if "." in name:
        return name
    return f"{namespace}.{name}" if namespace else name


def _parse(schema: Any, namespace: str, names: dict[str, Node]) -> Node:
    if isinstance(schema, list):
        branches = [_parse(b, namespace, names) for b in schema]
        if any(b.type == "union" for b in branches):
            raise SchemaError("a union may not hold a union")
        return Node("union", branches=branches)
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return Node(schema)
        for candidate in (_full(schema, namespace), schema):
            if candidate in names:
                return names[candidate]
        raise SchemaError(f"unknown type name {schema!r}")
    if not isinstance(schema, dict) or "type" not in schema:
        raise SchemaError(f"not a schema: {schema!r}")
    kind = schema["type"]
    if isinstance(kind, list | dict):
        return _parse(kind, namespace, names)
    if kind in PRIMITIVES:
        node = Node(kind)
        _logical(node, schema)
        return node
    if kind == "array":
        return Node("array", items=_parse(schema["items"], namespace, names))
    if kind == "map":
        return Node("map", items=_parse(schema["values"], namespace, names))
    if kind not in NAMED:
        # A name used as {"type": "Name"} refers to that type.
        return _parse(kind, namespace, names)
    name = schema["name"]
    space = name.rsplit(".", 1)[0] if "." in name else schema.get("namespace", namespace) or ""
    full = _full(name, space)
    if full in names:
        raise SchemaError(f"{full} is defined twice")
    aliases = tuple(_full(a, space) for a in schema.get("aliases", ()))
    if kind == "enum":
        symbols = tuple(schema["symbols"])
        if len(set(symbols)) != len(symbols):
            raise SchemaError(f"enum {full} repeats a symbol")
        node = Node("enum", name=full, aliases=aliases, symbols=symbols)
        node.enum_default = schema.get("default", MISSING)
        names[full] = node
        return node
    if kind == "fixed":
        node = Node("fixed", name=full, aliases=aliases, size=int(schema["size"]))
        _logical(node, schema)
        names[full] = node
        return node
    node = Node("record", name=full, aliases=aliases)
    names[full] = node  # before its fields: a record may refer to itself
    seen = set()
    for spec in schema["fields"]:
        if spec["name"] in seen:
            raise SchemaError(f"record {full} repeats field {spec['name']!r}")
        seen.add(spec["name"])
        node.fields.append(
            Field(
                spec["name"],
                _parse(spec["type"], space, names),
                tuple(spec.get("aliases", ())),
                spec.get("default", MISSING),
            )
        )
    return node


def max_digits(size: int) -> int:
    """The decimal digits a signed two's complement number of ``size`` bytes always holds."""
    return len(str(2 ** (8 * size - 1) - 1)) - 1 if size > 0 else 0


def _logical(node: Node, schema: dict[str, Any]) -> None:
    """Set the node's logical type when the specification accepts it there.

    The specification: an invalid logical type (a decimal whose precision its fixed size
    cannot hold, a scale above the precision, a logical type on another type) is ignored,
    and the underlying type used."""
    logical = schema.get("logicalType")
    if not isinstance(logical, str) or node.type not in LOGICAL_BASES.get(logical, ()):
        return
    if logical == "decimal":
        precision, scale = schema.get("precision"), schema.get("scale", 0)
        if not isinstance(precision, int) or not isinstance(scale, int):
            return
        if precision <= 0 or not 0 <= scale <= precision:
            return
        if node.type == "fixed" and precision > max_digits(node.size):
            return
        node.precision, node.scale = precision, scale
    if logical == "uuid" and node.type == "fixed" and node.size != 16:
        return
    if logical == "duration" and node.size != 12:
        return
    node.logical = logical


def _check_defaults(node: Node, seen: set[int]) -> None:
    if id(node) in seen:
        return
    seen.add(id(node))
    default = node.enum_default
    if node.type == "enum" and default is not MISSING and default not in node.symbols:
        raise SchemaError(f"enum {node.name}: default {node.enum_default!r} is not a symbol")
    for f in node.fields:
        if f.default is not MISSING:
            try:
                default_datum(f.type, f.default)
            except SchemaError as exc:
                raise SchemaError(f"field {f.name!r} of {node.name}: {exc}") from None
        _check_defaults(f.type, seen)
    if node.items is not None:
        _check_defaults(node.items, seen)
    for b in node.branches:
        _check_defaults(b, seen)


# --- numbers ------------------------------------------------------------------------------


def float32(value: float) -> float:
    """A double rounded to the nearest 32-bit float (ties to even), as a double."""
    result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return result


def int_to_float32(n: int) -> float:
    """An integer rounded directly to the nearest 32-bit float (ties to even).

    Directly: rounding to a double first and then to 32 bits may round twice
    (2**60 + 2**36 + 1 is 2**60 + 2**37 as a float, 2**60 through a double)."""
    if n == 0:
        return 0.0
    sign = -1 if n < 0 else 1
    magnitude = abs(n)
    shift = magnitude.bit_length() - 24
    if shift > 0:
        quotient, rest = divmod(magnitude, 1 << shift)
        half = 1 << (shift - 1)
        if rest > half or (rest == half and quotient % 2 == 1):
            quotient += 1
        magnitude = quotient << shift
    return sign * float(magnitude)  # exact: at most 25 significant bits


def unscaled_of(data: bytes) -> int:
    """Decimal bytes as their unscaled value: big-endian two's complement.

    SPEC NOTE: the specification does not say what no bytes at all are; here they are 0
    (Python's ``int.from_bytes``), so a decimal default ``""`` is zero. Avro's Java
    ``new BigInteger(new byte[0])`` throws instead."""
    return int.from_bytes(data, "big", signed=True)


def decimal_of(unscaled: int, scale: int) -> Decimal:
    """The exact decimal ``unscaled * 10**-scale``, with exponent ``-scale``."""
    digits = tuple(int(d) for d in str(abs(unscaled)))
    return Decimal((int(unscaled < 0), digits, -scale))


def twos_complement(unscaled: int, size: int | None = None) -> bytes:
    """``unscaled`` as big-endian two's complement, in ``size`` bytes or the fewest."""
    if size is None:
        size = 1
        while not -(2 ** (8 * size - 1)) <= unscaled < 2 ** (8 * size - 1):
            size += 1
    return unscaled.to_bytes(size, "big", signed=True)


def unscaled_value(number: Decimal, scale: int) -> int:
    """The unscaled integer of ``number`` at ``scale``; :class:`ValueError` if digits lost."""
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    value = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        value *= 10**shift
    else:
        value, rest = divmod(value, 10**-shift)
        if rest:
            raise ValueError(f"{number} has more than {scale} decimal places")
    return -value if sign else value


# --- defaults -----------------------------------------------------------------------------


def default_datum(node: Node, value: Any) -> Any:
    """A field default (JSON) as a datum of ``node``: the specification's table of default
    values (the JSON encoding of each type), with logical types on their underlying type.

    - bytes and fixed: a string whose code points 0-255 are the bytes;
    - a decimal on bytes or fixed: those bytes, its unscaled value in two's complement,
      which must have at most ``precision`` digits;
    - float and double: a JSON number (float rounded to 32 bits);
    - record: an object; a field it leaves out takes that field's own default;
    - union: Avro 1.12 lets the default be of any branch; it is read as the first branch
      it is a value of (before 1.12 it had to be of the first branch).
    """
    kind = node.type
    if kind == "union":
        for index, branch in enumerate(node.branches):
            try:
                return Branch(index, default_datum(branch, value))
            except SchemaError:
                continue
        raise SchemaError(f"default {value!r:.60} is of no branch of the union")
    if kind == "null":
        if value is not None:
            raise SchemaError(f"default {value!r:.60} is not null")
        return None
    if kind == "boolean":
        if not isinstance(value, bool):
            raise SchemaError(f"default {value!r:.60} is not a boolean")
        return value
    if kind in ("int", "long"):
        low, high = INT_RANGE if kind == "int" else LONG_RANGE
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise SchemaError(f"default {value!r:.60} is not an {kind}")
        return value
    if kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SchemaError(f"default {value!r:.60} is not a number")
        if kind == "float":
            return int_to_float32(value) if isinstance(value, int) else float32(value)
        return float(value)
    if kind == "string":
        if not isinstance(value, str):
            raise SchemaError(f"default {value!r:.60} is not a string")
        return value
    if kind in ("bytes", "fixed"):
        if not isinstance(value, str) or any(ord(c) > 255 for c in value):
            raise SchemaError(f"default {value!r:.60} is not bytes (code points 0-255)")
        data = value.encode("latin-1")
        if kind == "fixed" and len(data) != node.size:
            raise SchemaError(f"default {value!r:.60} is not {node.size} bytes")
        if node.logical == "decimal" and abs(unscaled_of(data)) >= 10**node.precision:
            raise SchemaError(
                f"default {value!r:.60} has more digits than decimal({node.precision},{node.scale})"
            )
        return data
    if kind == "enum":
        if value not in node.symbols:
            raise SchemaError(f"default {value!r:.60} is not a symbol of {node.name}")
        return value
    if kind == "array":
        if not isinstance(value, list):
            raise SchemaError(f"default {value!r:.60} is not an array")
        assert node.items is not None
        return [default_datum(node.items, v) for v in value]
    if kind == "map":
        if not isinstance(value, dict):
            raise SchemaError(f"default {value!r:.60} is not an object")
        assert node.items is not None
        return {k: default_datum(node.items, v) for k, v in value.items()}
    if kind == "record":
        if not isinstance(value, dict):
            raise SchemaError(f"default {value!r:.60} is not an object")
        out = {}
        for f in node.fields:
            if f.name in value:
                out[f.name] = default_datum(f.type, value[f.name])
            elif f.default is not MISSING:
                out[f.name] = default_datum(f.type, f.default)
            else:
                raise SchemaError(f"default {value!r:.60} has no field {f.name!r}")
        return out
    raise SchemaError(f"no defaults for {kind}")


def default_json(node: Node, datum: Any) -> Any:
    """The JSON default that :func:`default_datum` reads as ``datum`` (for unions, the
    datum's branch must be the first the JSON value is of)."""
    kind = node.type
    if kind == "union":
        assert isinstance(datum, Branch)
        return default_json(node.branches[datum.index], datum.value)
    if kind in ("bytes", "fixed"):
        return datum.decode("latin-1")
    if kind == "array":
        assert node.items is not None
        return [default_json(node.items, v) for v in datum]
    if kind == "map":
        assert node.items is not None
        return {k: default_json(node.items, v) for k, v in datum.items()}
    if kind == "record":
        return {f.name: default_json(f.type, datum[f.name]) for f in node.fields}
    return datum


# --- serializer values -> datums --------------------------------------------------------


def datum_of(node: Node, value: Any) -> Any:
    """What a serializer writes for ``value`` of ``node``, as a datum; :class:`ValueError`
    when the value is not one of the schema's.

    In a union, a tuple ``(name, value)`` names the branch; otherwise the branch is the
    first that takes the value, except that a number a ``float`` branch takes goes to a
    later ``double`` branch when there is one (fastavro's choice, hence confluent-kafka's:
    not the specification's, which leaves picking a branch to the writer)."""
    kind = node.type
    if kind == "union":
        if isinstance(value, tuple):
            name, inner = value
            for index, branch in enumerate(node.branches):
                if _branch_name(branch) == name:
                    return Branch(index, datum_of(branch, inner))
            raise ValueError(f"the union has no branch {name!r}")
        for index, branch in enumerate(node.branches):
            try:
                datum = datum_of(branch, value)
            except ValueError:
                continue
            if branch.type == "float":
                # fastavro: a number a float branch takes goes to a later double branch.
                later = [i for i, b in enumerate(node.branches) if i > index and b.type == "double"]
                if later:
                    return Branch(later[0], datum_of(node.branches[later[0]], value))
            return Branch(index, datum)
        raise ValueError(f"{value!r:.60} is of no branch of the union")
    if kind == "null":
        if value is not None:
            raise ValueError(f"{value!r:.60} is not null")
        return None
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ValueError(f"{value!r:.60} is not a boolean")
        return value
    if kind in ("int", "long"):
        value = _temporal_count(node, value)
        low, high = INT_RANGE if kind == "int" else LONG_RANGE
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{value!r:.60} is not an {kind}")
        return value
    if kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{value!r:.60} is not a number")
        if kind == "float":
            if isinstance(value, float) and abs(value) > FLOAT32_MAX:
                raise ValueError(f"{value!r} is beyond a float's range")
            return int_to_float32(value) if isinstance(value, int) else float32(value)
        return float(value)
    if kind == "string":
        if node.logical == "uuid" and isinstance(value, UUID):
            return str(value)
        if not isinstance(value, str):
            raise ValueError(f"{value!r:.60} is not a string")
        return value
    if kind in ("bytes", "fixed"):
        size = node.size if kind == "fixed" else None
        if node.logical == "decimal" and isinstance(value, Decimal):
            unscaled = unscaled_value(value, node.scale)
            if abs(unscaled) >= 10**node.precision:
                raise ValueError(f"{value} has more digits than its precision")
            return twos_complement(unscaled, size)
        if not isinstance(value, bytes):
            raise ValueError(f"{value!r:.60} is not bytes")
        if size is not None and len(value) != size:
            raise ValueError(f"{value!r:.60} is not {size} bytes")
        return value
    if kind == "enum":
        if value not in node.symbols:
            raise ValueError(f"{value!r:.60} is not a symbol of {node.name}")
        return value
    if kind == "array":
        if not isinstance(value, list):
            raise ValueError(f"{value!r:.60} is not a list")
        assert node.items is not None
        return [datum_of(node.items, v) for v in value]
    if kind == "map":
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ValueError(f"{value!r:.60} is not a map")
        assert node.items is not None
        return {k: datum_of(node.items, v) for k, v in value.items()}
    if kind == "record":
        if not isinstance(value, dict) or set(value) != {f.name for f in node.fields}:
            raise ValueError(f"{value!r:.60} is not a {node.name}")
        return {f.name: datum_of(f.type, value[f.name]) for f in node.fields}
    raise ValueError(f"no values of {kind}")


def _branch_name(node: Node) -> str:
    return node.name if node.name is not None else node.type


def _temporal_count(node: Node, value: Any) -> Any:
    """A date, time or datetime as the count its logical type stores; others as given."""
    logical = node.logical
    if logical == "date" and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return (value - EPOCH_DATE).days
    if logical in ("time-millis", "time-micros") and isinstance(value, dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 10**6
        micros += value.microsecond
        return micros // 1000 if logical == "time-millis" else micros
    if logical in _PER_MICRO and isinstance(value, dt.datetime):
        local = logical.startswith("local-")
        if (value.tzinfo is None) != local:
            raise ValueError(f"{value!r} for {logical}: {'naive' if local else 'aware'} wanted")
        delta = value - (EPOCH_NAIVE if local else EPOCH)
        micros = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds
        return micros // _PER_MICRO[logical]
    return value


# --- schema resolution --------------------------------------------------------------------

_PROMOTIONS = {
    ("int", "long"),
    ("int", "float"),
    ("int", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "bytes"),
    ("bytes", "string"),
}


def _names_match(writer: Node, reader: Node) -> bool:
    """Named types match by unqualified name, or the reader's aliases name the writer's."""
    if writer.short_name == reader.short_name:
        return True
    assert writer.name is not None
    return writer.name in reader.aliases or writer.short_name in {
        a.rsplit(".", 1)[-1] for a in reader.aliases
    }


def matches(writer: Node, reader: Node) -> bool:
    """The specification's "match" of two schemas (both not unions here)."""
    if writer.type == "union" or reader.type == "union":
        return True
    if writer.type == reader.type:
        if writer.type in ("array", "map"):
            assert writer.items is not None and reader.items is not None
            return matches(writer.items, reader.items)
        if writer.type == "fixed":
            return writer.size == reader.size and _names_match(writer, reader)
        if writer.type in ("enum", "record"):
            return _names_match(writer, reader)
        return True
    return (writer.type, reader.type) in _PROMOTIONS


def _same_type(writer: Node, reader: Node) -> bool:
    """Whether a reader's union branch is of the writer's own type (no promotion)."""
    return writer.type == reader.type and matches(writer, reader)


def resolve(writer: Node, datum: Any, reader: Node) -> Any:
    """A datum of ``writer`` as the reader's schema reads it: the specification's schema
    resolution. :class:`ResolutionError` where the specification signals an error.

    SPEC NOTE: where the reader is a union, the specification reads "the first schema in
    the reader's union that matches", and its "match" includes promotion. Taken to the
    letter, ``bytes`` in ``["string", "bytes"]`` read with that very schema would land in
    ``string`` (bytes promote to string). Here, as in Avro's Java implementation
    (``Resolver.ReaderUnion``), the first branch of the writer's own type (for a named
    type: its name) is taken, and only without one the first that matches through a
    promotion."""
    if writer.type == "union":
        assert isinstance(datum, Branch)
        return resolve(writer.branches[datum.index], datum.value, reader)
    if reader.type == "union":
        same = [i for i, b in enumerate(reader.branches) if _same_type(writer, b)]
        promoted = [i for i, b in enumerate(reader.branches) if matches(writer, b)]
        for index in same[:1] or promoted[:1]:
            return Branch(index, resolve(writer, datum, reader.branches[index]))
        raise ResolutionError(f"no branch of the reader's union matches {writer.type}")
    if not matches(writer, reader):
        raise ResolutionError(f"writer {writer.type} does not match reader {reader.type}")
    if writer.type != reader.type:
        return _promote(writer.type, reader.type, datum)
    kind = reader.type
    if kind == "record":
        out = {}
        for f in reader.fields:
            source = next(
                (w for w in writer.fields if w.name == f.name or w.name in f.aliases), None
            )
            if source is not None:
                out[f.name] = resolve(source.type, datum[source.name], f.type)
            elif f.default is not MISSING:
                try:
                    out[f.name] = default_datum(f.type, f.default)
                except SchemaError as exc:
                    raise ResolutionError(f"field {f.name!r}: {exc}") from None
            else:
                raise ResolutionError(f"reader field {f.name!r} has no writer field or default")
        return out
    if kind == "enum":
        if datum in reader.symbols:
            return datum
        if reader.enum_default is not MISSING:
            return reader.enum_default
        raise ResolutionError(f"symbol {datum!r} is not in the reader's enum")
    if kind == "array":
        assert writer.items is not None and reader.items is not None
        return [resolve(writer.items, v, reader.items) for v in datum]
    if kind == "map":
        assert writer.items is not None and reader.items is not None
        return {k: resolve(writer.items, v, reader.items) for k, v in datum.items()}
    return datum


def _promote(writer: str, reader: str, datum: Any) -> Any:
    if reader == "float":
        return int_to_float32(datum)  # int and long only: float to float is no promotion
    if reader == "double":
        return float(datum)  # Python rounds an int to the nearest double, ties to even
    if reader == "long":
        return datum
    if reader == "bytes":
        return datum.encode("utf-8")
    if reader == "string":
        # SPEC NOTE: the specification does not say what bytes that are not UTF-8 become.
        return datum.decode("utf-8")
    raise AssertionError((writer, reader))


def read(writer_schema: Any, value: Any, reader_schema: Any | None = None) -> Any:
    """``value`` written with ``writer_schema``, read with ``reader_schema`` (default: the
    writer's), as a datum of the reader's schema."""
    writer = parse(writer_schema)
    reader = writer if reader_schema is None else parse(reader_schema)
    return resolve(writer, datum_of(writer, value), reader)


# --- the binary encoding ------------------------------------------------------------------


class _Bytes:
    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def take(self, count: int) -> bytes:
        if count < 0 or self.at + count > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.at : self.at + count]
        self.at += count
        return out

    def long(self) -> int:
        shift = result = 0
        while True:
            byte = self.take(1)[0]
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        return (result >> 1) ^ -(result & 1)  # zigzag


def decode(node: Node, body: bytes) -> Any:
    """An Avro binary body (no framing) as a datum of ``node``, by the specification."""
    source = _Bytes(body)
    datum = _decode(node, source)
    if source.at != len(body):
        raise ValueError(f"{len(body) - source.at} bytes left over")
    return datum


def _decode(node: Node, source: _Bytes) -> Any:
    kind = node.type
    if kind == "null":
        return None
    if kind == "boolean":
        return source.take(1) == b"\x01"
    if kind in ("int", "long"):
        return source.long()
    if kind == "float":
        return struct.unpack("<f", source.take(4))[0]
    if kind == "double":
        return struct.unpack("<d", source.take(8))[0]
    if kind == "bytes":
        return source.take(source.long())
    if kind == "string":
        return source.take(source.long()).decode("utf-8")
    if kind == "fixed":
        return source.take(node.size)
    if kind == "enum":
        return node.symbols[source.long()]
    if kind == "union":
        index = source.long()
        return Branch(index, _decode(node.branches[index], source))
    if kind == "record":
        return {f.name: _decode(f.type, source) for f in node.fields}
    assert node.items is not None
    items: list[Any] = []
    entries: dict[str, Any] = {}
    while True:
        count = source.long()
        if count == 0:
            break
        if count < 0:
            count = -count
            source.long()  # the block's size in bytes
        for _ in range(count):
            if kind == "array":
                items.append(_decode(node.items, source))
            else:
                key = source.take(source.long()).decode("utf-8")
                entries[key] = _decode(node.items, source)
    return items if kind == "array" else entries


def same_datum(node: Node, a: Any, b: Any) -> bool:
    """Whether two datums of ``node`` are the same value (decimals by their unscaled value,
    whatever the length of their two's complement bytes)."""
    kind = node.type
    if kind == "union":
        return (
            isinstance(a, Branch)
            and isinstance(b, Branch)
            and a.index == b.index
            and same_datum(node.branches[a.index], a.value, b.value)
        )
    if kind in ("bytes", "fixed") and node.logical == "decimal":
        return unscaled_of(a) == unscaled_of(b)
    if kind == "record":
        return all(same_datum(f.type, a[f.name], b[f.name]) for f in node.fields)
    if kind == "array":
        assert node.items is not None
        return len(a) == len(b) and all(
            same_datum(node.items, x, y) for x, y in zip(a, b, strict=True)
        )
    if kind == "map":
        assert node.items is not None
        return set(a) == set(b) and all(same_datum(node.items, a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# --- what readers show ----------------------------------------------------------------------


def python_value(node: Node, datum: Any) -> Any:
    """The datum as a fastavro-based reader (confluent-kafka's ``AvroDeserializer``) gives
    it: logical types as ``Decimal``, ``date``, ``time``, ``datetime`` (UTC-aware for
    ``timestamp-*``, naive for ``local-timestamp-*``) and ``UUID``; ``*-nanos`` as their
    integer count (fastavro has no logical type for them)."""
    kind = node.type
    if kind == "union":
        return python_value(node.branches[datum.index], datum.value)
    if kind == "record":
        return {f.name: python_value(f.type, datum[f.name]) for f in node.fields}
    if kind == "array":
        assert node.items is not None
        return [python_value(node.items, v) for v in datum]
    if kind == "map":
        assert node.items is not None
        return {k: python_value(node.items, v) for k, v in datum.items()}
    logical = node.logical
    if logical == "decimal":
        return decimal_of(unscaled_of(datum), node.scale)
    if logical == "uuid" and kind == "string":
        return UUID(datum)
    if logical == "date":
        return EPOCH_DATE + dt.timedelta(days=datum)
    if logical in ("time-millis", "time-micros"):
        micros = datum * 1000 if logical == "time-millis" else datum
        return (MIDNIGHT + dt.timedelta(microseconds=micros)).time()
    if logical in _PER_MICRO:
        base = EPOCH_NAIVE if logical.startswith("local-") else EPOCH
        return base + dt.timedelta(microseconds=datum * _PER_MICRO[logical])
    return datum


# OpenCDC JSON: JSON spells a number or an instant several ways; these match any of them.


@dataclass(frozen=True)
class JsonDouble:
    """A JSON number whose double is ``value`` (a float's value is its 32 bits as a double)."""

    value: float

    def matches(self, actual: Any) -> bool:
        if isinstance(actual, bool) or not isinstance(actual, int | float | Decimal):
            return False
        return float(actual) == self.value


@dataclass(frozen=True)
class JsonDecimal:
    """A JSON number that is exactly ``value`` (read with ``parse_float=Decimal``)."""

    value: Decimal

    def matches(self, actual: Any) -> bool:
        if isinstance(actual, bool) or not isinstance(actual, int | Decimal):
            return False
        return Decimal(actual) == self.value


@dataclass(frozen=True)
class JsonTemporal:
    """An ISO 8601 string of ``value`` (a date, time or datetime; aware or naive alike)."""

    value: dt.date | dt.time

    def matches(self, actual: Any) -> bool:
        if not isinstance(actual, str):
            return False
        try:
            parsed = type(self.value).fromisoformat(actual)
        except ValueError:
            return False
        if isinstance(self.value, dt.datetime | dt.time):
            aware = getattr(parsed, "tzinfo", None) is not None
            if aware != (self.value.tzinfo is not None):
                return False
        return bool(parsed == self.value)


MATCHERS = (JsonDouble, JsonDecimal, JsonTemporal)


def opencdc_json(node: Node, datum: Any) -> Any:
    """The datum as the project writes it in OpenCDC JSON structured data: bytes and fixed
    as padded base64, decimals as exact numbers, ``date``, ``time-*``, ``timestamp-*`` and
    ``local-timestamp-*`` as ISO 8601 strings, ``*-nanos`` as integers, ``uuid`` as its
    string, a float as the double of its 32 bits; a union value as its branch's value."""
    kind = node.type
    if kind == "union":
        return opencdc_json(node.branches[datum.index], datum.value)
    if kind == "record":
        return {f.name: opencdc_json(f.type, datum[f.name]) for f in node.fields}
    if kind == "array":
        assert node.items is not None
        return [opencdc_json(node.items, v) for v in datum]
    if kind == "map":
        assert node.items is not None
        return {k: opencdc_json(node.items, v) for k, v in datum.items()}
    if kind in ("float", "double"):
        return JsonDouble(datum)
    if node.logical == "decimal":
        return JsonDecimal(decimal_of(unscaled_of(datum), node.scale))
    if kind in ("bytes", "fixed"):
        return base64.b64encode(datum).decode("ascii")
    if node.logical in ("date", "time-millis", "time-micros", *_PER_MICRO):
        return JsonTemporal(python_value(node, datum))
    return datum  # null, boolean, int, long (and *-nanos), string (and uuid), enum


def spark_type_is_member_struct(node: Node) -> bool:
    """Whether spark-avro maps this union to a struct of ``member<i>`` fields."""
    rest = [b for b in node.branches if b.type != "null"]
    if len(rest) <= 1:
        return False
    return not (len(rest) == 2 and {b.type for b in rest} in ({"int", "long"}, {"float", "double"}))


def spark_value(node: Node, datum: Any) -> Any:
    """The datum as a Spark ``Row`` of spark-avro's type mapping shows it (nested rows as
    dicts, as ``Row.asDict(recursive=True)`` gives them): bytes and fixed as binary
    (``bytes``; :func:`differences` takes a ``bytearray`` too), decimals (precision up to
    38) as ``Decimal``, ``date`` as a date, ``timestamp-millis``/``-micros`` as Spark's
    ``timestamp`` and ``local-timestamp-*`` as ``timestamp_ntz`` (naive datetimes, as
    PySpark presents them), ``time-*`` and ``*-nanos`` as their raw counts, enums and
    uuids as strings; ``[null, T]`` as T; ``[int, long]`` and ``[float, double]`` as one
    number; any other union as a struct of ``member0, member1, ...`` (the non-null
    branches in order), only the value's member set."""
    kind = node.type
    if kind == "union":
        branch = node.branches[datum.index]
        if branch.type == "null":
            return None
        if not spark_type_is_member_struct(node):
            return spark_value(branch, datum.value)
        rest = [b for b in node.branches if b.type != "null"]
        return {
            f"member{i}": spark_value(b, datum.value) if b is branch else None
            for i, b in enumerate(rest)
        }
    if kind == "record":
        return {f.name: spark_value(f.type, datum[f.name]) for f in node.fields}
    if kind == "array":
        assert node.items is not None
        return [spark_value(node.items, v) for v in datum]
    if kind == "map":
        assert node.items is not None
        return {k: spark_value(node.items, v) for k, v in datum.items()}
    logical = node.logical
    if logical == "decimal":
        return decimal_of(unscaled_of(datum), node.scale)
    if kind in ("bytes", "fixed"):
        return bytes(datum)  # PySpark 4 collects binary as bytes (3 as bytearray)
    if logical == "date":
        return python_value(node, datum)
    if logical in _PER_MICRO:
        from pyspark.sql.types import TimestampNTZType, TimestampType

        micros = datum * _PER_MICRO[logical]
        kind_type = TimestampNTZType() if logical.startswith("local-") else TimestampType()
        return kind_type.fromInternal(micros)
    return datum  # null, boolean, int/long (and raw time-*, *-nanos), float, double, ...


# --- comparing ----------------------------------------------------------------------------


def differences(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected`` (matchers match; other values must be
    equal and of the same type), one line each."""
    here = where or "value"
    if isinstance(expected, MATCHERS):
        return [] if expected.matches(actual) else [f"{here}: expected {expected}, got {actual!r}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{here}: expected an object {expected!r:.200}, got {actual!r:.200}"]
        out = []
        for key in expected.keys() | actual.keys():
            path = f"{where}.{key}" if where else str(key)
            if key not in actual:
                out.append(f"{path}: missing, expected {expected[key]!r:.200}")
            elif key not in expected:
                out.append(f"{path}: not expected, got {actual[key]!r:.200}")
            else:
                out.extend(differences(expected[key], actual[key], path))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{here}: expected {expected!r:.200}, got {actual!r:.200}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out.extend(differences(e, a, f"{where}[{i}]"))
        return out
    binary = (bytes, bytearray)
    if isinstance(expected, binary) and isinstance(actual, binary):
        if bytes(expected) == bytes(actual):
            return []  # PySpark 3 collects binary as bytearray, 4 as bytes
    elif type(expected) is type(actual) and expected == actual:
        return []
    return [
        f"{here}: expected {type(expected).__name__} {expected!r:.200}, "
        f"got {type(actual).__name__} {actual!r:.200}"
    ]
