"""Avro bodies <-> OpenCDC structured data, one message at a time, with fastavro.

Structured data holds JSON-like values, so Avro's logical types travel in it as exact
text or numbers: ``decimal`` as :class:`~decimal.Decimal`; ``timestamp-*``,
``local-timestamp-*``, ``date`` and ``time-*`` as ISO 8601 strings (what Conduit's JSON
shows for them); ``uuid`` as its string (``timestamp-nanos`` stays an integer: Python's
``datetime`` stops at microseconds). Writing takes those strings back (and native
``datetime``, ``date``, ``time`` and ``UUID`` values, and decimal numbers or text), so a
record decoded here encodes to the same bytes.

A decimal's scale may be below zero (Oracle's ``NUMBER(5,-2)``, unscaled ``123`` is
``Decimal('1.23E+4')``) or above its precision (PostgreSQL's ``numeric(3,5)``): Confluent's
registry takes such schemas and fastavro refuses them, so :func:`parse_schema` (and
:func:`parsed` / :func:`standalone` for a registered schema) parse them with a logical type
of our own for those decimals, read and written exactly as any other decimal.

Every decimal of a schema parsed here is read by our own reader, through fastavro's
custom logical types (:data:`_EXACT`, :data:`_SCALED` in the parsed schema): fastavro's
``decimal`` reader, which other users of fastavro and confluent-kafka in the process rely
on, is left as it is.

Numbers never change on the way. fastavro writes what it is given as the first type
that takes it, so values are checked against the schema first: an ``int`` or ``long``
takes integers only (an integral float such as ``2.0`` too), a ``double`` integers
within +-2**53, a ``float`` only values a 32-bit float holds as they are written; in a
union an integer goes to the ``long``/``int`` branch before a ``double``; a key the
record does not have is an error, not dropped. Reading, a decimal is exact: one with
more digits than its precision is an error (fastavro would round it to the precision).

Decoding resolves the writer's schema to a reader's (Avro schema resolution: added fields
get their defaults, removed ones are dropped, promotions apply). A body that does not
decode, that has bytes left after the value, or that nests deeper than Python can follow
is a :class:`CodecError`.
"""

from __future__ import annotations

import binascii
import copy
import datetime as dt
import io
import math
import re
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple, Protocol
from uuid import UUID

import fastavro
import fastavro.read
import fastavro.write
import orjson
from fastavro.read import SchemaResolutionError
from fastavro.schema import SchemaParseException

from cdc_connectors.opencdc import CodecError
from cdc_connectors.schema import avro_resolution, float32, instants
from cdc_connectors.schema.errors import SchemaError

__all__ = [
    "Branches",
    "Registered",
    "branches_in",
    "branches_key",
    "decode",
    "encode",
    "from_structured",
    "has_ambiguous_unions",
    "needs_text",
    "parse_schema",
    "parsed",
    "standalone",
    "to_structured",
    "union_branches",
]

#: Paths of values in unions (``a.b[2].c``) -> the name of the branch each is of.
Branches = dict[str, str]

_TEMPORAL = {
    "timestamp-millis": dt.datetime.fromisoformat,
    "timestamp-micros": dt.datetime.fromisoformat,
    "timestamp-nanos": dt.datetime.fromisoformat,
    "local-timestamp-millis": dt.datetime.fromisoformat,
    "local-timestamp-micros": dt.datetime.fromisoformat,
    "local-timestamp-nanos": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time-millis": dt.time.fromisoformat,
    "time-micros": dt.time.fromisoformat,
}
#: Logical types written as a count of a unit: how a value's nanoseconds are found, and
#: how many units make a second.
_COUNTED: dict[str, tuple[Callable[[Any], int], int]] = {
    "timestamp-millis": (instants.epoch_nanos, 1_000),
    "timestamp-micros": (instants.epoch_nanos, 1_000_000),
    "timestamp-nanos": (instants.epoch_nanos, 1_000_000_000),
    "local-timestamp-millis": (instants.local_epoch_nanos, 1_000),
    "local-timestamp-micros": (instants.local_epoch_nanos, 1_000_000),
    "local-timestamp-nanos": (instants.local_epoch_nanos, 1_000_000_000),
    "time-millis": (instants.day_nanos, 1_000),
    "time-micros": (instants.day_nanos, 1_000_000),
}
_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
#: A time of day's counts: below one day of the unit (``24:00:00`` reads as no time of day).
_DAY_COUNTS = {"time-millis": 86_400_000, "time-micros": 86_400_000_000}
_EXACT_DOUBLE = 2**53
_NAMED = ("record", "error", "enum", "fixed")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _exact_decimal(data: bytes, writer_schema: Any = None, reader_schema: Any = None) -> Decimal:
    """A decimal's bytes as an exact ``Decimal`` with the schema's scale (below zero too);
    more digits than its precision is an error naming the field (:func:`parse_schema`)."""
    scale = int(writer_schema.get("scale", 0))
    precision = int(writer_schema["precision"])
    unscaled = int.from_bytes(data, "big", signed=True)
    # Digits counted, not compared with 10**precision: a huge precision costs nothing.
    text = str(abs(unscaled))
    if len(text) > precision:
        field = writer_schema.get(_FIELD)
        shown = ("-" if unscaled < 0 else "") + (text if len(text) <= 60 else text[:57] + "...")
        raise ValueError(
            f"{f'{field}: ' if field else ''}decimal with unscaled value {shown} has more "
            f"digits than decimal({precision},{scale}) holds"
        )
    return Decimal((int(unscaled < 0), tuple(int(d) for d in text), -scale))


def _scaled_bytes(data: Any, schema: Any) -> Any:
    """A ``Decimal`` as the two's complement bytes of its unscaled value at the schema's
    scale (the fewest bytes, or the fixed's size); anything else as it is."""
    if not isinstance(data, Decimal):
        return data
    scale = int(schema.get("scale", 0))
    precision = int(schema["precision"])
    sign, digits, exponent = data.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{data} is not a finite decimal")
    shift = exponent + scale
    if shift < 0:
        if any(digits[shift:]):
            raise ValueError(f"{data} has {_beyond(scale)}")
        digits, shift = digits[:shift], 0
    significant = tuple(digits[next((i for i, d in enumerate(digits) if d), len(digits)) :])
    if len(significant) + shift > precision and significant:
        raise ValueError(f"{data} has more digits than decimal({precision},{scale}) holds")
    unscaled = int(Decimal((sign, significant or (0,), shift)))
    size = schema.get("size") if schema.get("type") == "fixed" else None
    if size is None:
        size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(size, "big", signed=True)


#: The logical type fastavro parses a decimal as whose scale it refuses: below zero
#: (Oracle's ``NUMBER(5,-2)``) or above the precision (PostgreSQL's ``numeric(3,5)``).
#: Read and written exactly as a decimal; :func:`standalone` gives it back as ``decimal``.
_SCALED = "cdc-decimal"
#: The logical type of every other decimal of a schema parsed here (after fastavro checked
#: it as a ``decimal``): fastavro reads decimals in a context of the schema's precision,
#: rounding what does not fit; our reader is exact and refuses such values instead. Written
#: by fastavro's own decimal writer, so the bytes are those of any fastavro user.
_EXACT = "cdc-exact-decimal"
#: The logical types of a decimal, in a plain or a parsed schema.
_DECIMALS = frozenset({"decimal", _SCALED, _EXACT})
#: Where a decimal is in its schema (``a.b[]``), for errors of values fastavro reads.
_FIELD = "cdc-field"
# fastavro's custom logical types (``fastavro.read.LOGICAL_READERS``, documented): the
# names are ours, so no schema of anyone else reads or writes differently.
for _base in ("bytes", "fixed"):
    fastavro.read.LOGICAL_READERS[f"{_base}-{_SCALED}"] = _exact_decimal
    fastavro.write.LOGICAL_WRITERS[f"{_base}-{_SCALED}"] = _scaled_bytes
    fastavro.read.LOGICAL_READERS[f"{_base}-{_EXACT}"] = _exact_decimal
    fastavro.write.LOGICAL_WRITERS[f"{_base}-{_EXACT}"] = fastavro.write.LOGICAL_WRITERS[
        f"{_base}-decimal"
    ]


def _beyond(scale: int) -> str:
    """What a number that does not fit ``scale`` has."""
    if scale >= 0:
        return f"more than {scale} decimal places"
    return f"nonzero digits below 1E+{-scale}"


def _fixed_digits(size: int) -> int:
    """The most digits a decimal on a fixed of ``size`` bytes has, as fastavro counts them."""
    return math.floor(math.log10(2) * (8 * size - 1)) if size > 0 else 0


def _mark(node: Any, where: str, named: bool) -> None:
    """Mark, in place, the decimals of schema JSON that fastavro refuses for their scale
    (:data:`_SCALED`); with ``named``, name where each decimal is (:data:`_FIELD`)."""
    stack: list[tuple[Any, str]] = [(node, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, list):
            stack.extend((member, path) for member in item)
            continue
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if item.get("logicalType") == "decimal" and kind in ("bytes", "fixed"):
            if named:
                item[_FIELD] = path or "value"
            if _refused_scale(item):
                item["logicalType"] = _SCALED
        if isinstance(kind, dict | list):
            stack.append((kind, path))
        if kind in ("record", "error") and isinstance(item.get("fields"), list):
            for field in item["fields"]:
                if isinstance(field, dict):
                    name = field.get("name")
                    stack.append((field.get("type"), f"{path}.{name}" if path else str(name)))
        if kind == "array" and "items" in item:
            stack.append((item["items"], f"{path}[]"))
        if kind == "map" and "values" in item:
            stack.append((item["values"], f"{path}{{}}"))


def _refused_scale(decimal: dict[str, Any]) -> bool:
    """Whether a decimal is one fastavro refuses only for its scale."""
    precision, scale = decimal.get("precision"), decimal.get("scale", 0)
    if type(precision) is not int or type(scale) is not int or precision <= 0:
        return False
    if 0 <= scale <= precision:
        return False
    if decimal.get("type") == "fixed":
        size = decimal.get("size")
        return type(size) is int and precision <= _fixed_digits(size)
    return True


def parse_schema(text: str, references: Sequence[str] = (), *, expand: bool = False) -> Any:
    """An Avro schema text (with the texts of the schemas it references) parsed by fastavro,
    decimals of any scale included (module docstring); :class:`SchemaError` saying why
    fastavro does not read it.

    With ``expand``, the schema as plain JSON with every named type spelled out where used
    and each decimal as written (what ``fastavro.parse_schema(..., expand=True)`` gives,
    without fastavro's own keys)."""
    named: dict[str, Any] = {}
    try:
        for ref in references:
            data = orjson.loads(ref)
            _mark(data, "", not expand)
            fastavro.parse_schema(data, named)
        data = orjson.loads(text)
        _mark(data, "", not expand)
        parsed = fastavro.parse_schema(data, named, expand=expand)
        if expand:
            return _plain(parsed)
        _read_exactly(parsed)
        return parsed
    except RecursionError:
        raise SchemaError("not an Avro schema fastavro reads: it nests too deeply") from None
    except (SchemaParseException, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise SchemaError(f"not an Avro schema fastavro reads: {_reason(exc)}") from None


def _read_exactly(parsed: Any, *, check: bool = False) -> bool:
    """Give, in place, every ``decimal`` of a fastavro-parsed schema (its named types
    included) our exact reader (:data:`_EXACT`); with ``check``, only say whether it has
    such a decimal."""
    stack = [parsed]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if node.get("logicalType") == "decimal" and node.get("type") in ("bytes", "fixed"):
                if check:
                    return True
                node["logicalType"] = _EXACT
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
    return False


def _plain(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {
            k: _plain(v)
            for k, v in schema.items()
            if not k.startswith("__fastavro") and k not in ("__named_schemas", _FIELD)
        }
        if out.get("logicalType") == _SCALED:
            out["logicalType"] = "decimal"
        return out
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


class Registered(Protocol):
    """A registered schema with the texts of the schemas it references, as
    :class:`cdc_connectors.registry.store.Resolved` holds it."""

    @property
    def schema_type(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def references(self) -> tuple[tuple[str, str], ...]: ...
    def label(self) -> str: ...


_PARSED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_STANDALONE: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()


class _Refused(NamedTuple):
    """Why fastavro does not read a registered schema (kept: asked once per schema)."""

    reason: str


def parsed(schema: Registered) -> Any:
    """A registered Avro schema parsed by fastavro, as :func:`encode` and :func:`decode`
    take it (cached per schema); a :class:`CodecError` naming it when fastavro does not
    read it (for a decoder, one bad message)."""
    return _cached(_PARSED, schema, expand=False)


def standalone(schema: Registered) -> Any:
    """A registered Avro schema as plain JSON, every named type spelled out where used
    (what values are checked against, :func:`encode`'s ``shape``); cached per schema; a
    :class:`CodecError` naming it when fastavro does not read it."""
    return _cached(_STANDALONE, schema, expand=True)


def _cached(cache: weakref.WeakKeyDictionary[Any, Any], schema: Registered, *, expand: bool) -> Any:
    found = cache.get(schema)
    if found is None:
        if schema.schema_type != "AVRO":
            found = _Refused(f"{schema.label()} is {schema.schema_type}, not Avro")
        else:
            try:
                found = parse_schema(schema.text, [t for _, t in schema.references], expand=expand)
            except SchemaError as exc:
                found = _Refused(f"{schema.label()} is {exc}")
        with _CACHE_LOCK:
            found = cache.setdefault(schema, found)
    if isinstance(found, _Refused):
        raise CodecError(found.reason)
    return found


def encode(
    schema: Any, data: Any, shape: Any | None = None, branches: Branches | None = None
) -> bytes:
    """``data`` (structured data) as an Avro body of ``schema`` (parsed by fastavro).

    ``shape`` is the same schema with named types spelled out (:func:`standalone`),
    to check values against; without it, ``schema`` is used. ``branches`` names the union
    branch of values by path, as :func:`union_branches` found them.
    """
    buffer = io.BytesIO()
    try:
        value = from_structured(shape if shape is not None else schema, data, "", branches)
    except CodecError as exc:
        raise CodecError(f"does not fit its Avro schema: {exc.reason}") from None
    except RecursionError:
        raise CodecError("nests deeper than can be written") from None
    try:
        fastavro.schemaless_writer(buffer, schema, value)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
        raise CodecError(f"does not fit its Avro schema: {_reason(exc)}") from None
    return buffer.getvalue()


def decode(
    body: bytes | memoryview,
    writer: Any,
    reader: Any | None = None,
    *,
    offset: int = 0,
    named_types: bool = False,
) -> Any:
    """The value of an Avro ``body`` written with ``writer``, read as ``reader``.

    With ``named_types``, a value of a named type in a union is a ``(name, value)`` tuple
    (for :func:`union_branches`)."""
    shape = _shape(writer)
    writer = shape.exact
    if shape.empty_items:
        raise CodecError(
            "is not read: its schema has arrays or maps of items that take no bytes, so a "
            "few bytes could claim billions of them"
        )
    if reader is not None:
        try:
            writer, reader = avro_resolution.for_reading(writer, reader, named_types=named_types)
        except avro_resolution.ResolutionError as exc:
            raise CodecError(f"cannot be read with the reader schema: {exc}") from None
    buffer = io.BytesIO(body)
    buffer.seek(offset)
    try:
        if shape.recursive and len(body) - offset > _SMALL:
            value = _read_deep(buffer, writer, reader, len(body) - offset, named_types)
        else:
            value = fastavro.schemaless_reader(
                buffer, writer, reader, return_named_type=named_types
            )
    except CodecError:
        raise
    except SchemaResolutionError as exc:
        raise CodecError(f"cannot be read with the reader schema: {exc}") from None
    except RecursionError:
        raise CodecError("is not Avro of its schema: it nests deeper than can be read") from None
    except (EOFError, ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        raise CodecError(f"is not Avro of its schema: {_reason(exc)}") from None
    left = len(body) - buffer.tell()
    if left:
        raise CodecError(f"is not Avro of its schema: {left} bytes are left after the value")
    return value


# A recursive schema nests as deep as its bytes allow, and fastavro's compiled reader
# recurses on the C stack: a deep body is read in a thread with a stack for it.
_SMALL = 2_000
_MAX_RECURSIVE_BODY = 64 * 1024
_DEEP_STACK = 256 * 1024 * 1024


class _Shape(NamedTuple):
    recursive: bool
    empty_items: bool
    #: The schema with every decimal read exactly (itself when parsed here).
    exact: Any


_SHAPES: dict[int, tuple[Any, _Shape]] = {}


def _shape(schema: Any) -> _Shape:
    """Whether a parsed schema is recursive, and has arrays or maps of zero-byte items; and
    the schema to read it with: a copy whose decimals our reader reads when it was parsed
    by fastavro itself (``decimal``, :func:`_read_exactly`)."""
    cached = _SHAPES.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    named: dict[str, Any] = {}
    recursive = empty = False
    stack: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
    while stack:
        node, enclosing = stack.pop()
        if isinstance(node, str):
            recursive = recursive or node in enclosing
            continue
        if isinstance(node, list):
            stack.extend((m, enclosing) for m in node)
            continue
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if kind in ("record", "error"):
            name = str(node.get("name"))
            named[name] = node
            stack.extend((f["type"], (*enclosing, name)) for f in node.get("fields", []))
        elif kind == "array":
            empty = empty or _zero_size(node["items"], named)
            stack.append((node["items"], enclosing))
        elif kind == "map":
            empty = empty or _zero_size(node["values"], named)
            stack.append((node["values"], enclosing))
        elif isinstance(kind, dict | list):
            stack.append((kind, enclosing))
    exact = schema
    if _read_exactly(schema, check=True):
        exact = copy.deepcopy(schema)
        _read_exactly(exact)
    shape = _Shape(recursive, empty, exact)
    if len(_SHAPES) > 1024:
        _SHAPES.clear()
    _SHAPES[id(schema)] = (schema, shape)
    return shape


def _zero_size(node: Any, named: dict[str, Any], depth: int = 0) -> bool:
    """Whether values of ``node`` may be written in no bytes at all."""
    if depth > 64:
        return False
    if isinstance(node, str):
        return node == "null" or (node in named and _zero_size(named[node], named, depth + 1))
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "fixed":
            return int(node.get("size", 1)) == 0
        if kind in ("record", "error"):
            return all(_zero_size(f["type"], named, depth + 1) for f in node.get("fields", []))
        if isinstance(kind, dict | str) and kind not in ("array", "map", "enum"):
            return _zero_size(kind, named, depth + 1)
    return False  # unions, arrays, maps, enums and other primitives take a byte at least


def _read_deep(buffer: io.BytesIO, writer: Any, reader: Any, size: int, named: bool) -> Any:
    if size > _MAX_RECURSIVE_BODY:
        raise CodecError(
            f"is not read: {size} bytes of a recursive schema could nest deeper than can be "
            f"followed safely (the limit is {_MAX_RECURSIVE_BODY} bytes)"
        )
    result: list[Any] = []
    failure: list[BaseException] = []

    def read() -> None:
        try:
            result.append(
                fastavro.schemaless_reader(buffer, writer, reader, return_named_type=named)
            )
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    previous = threading.stack_size(_DEEP_STACK)
    try:
        thread = threading.Thread(target=read, name="avro-deep-read")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def _reason(exc: BaseException) -> str:
    text = _ADDRESS.sub("", str(exc)) or type(exc).__name__
    if isinstance(exc, EOFError):
        text = f"truncated ({text})"
    elif isinstance(exc, IndexError):  # fastavro reading past the body's end, or a branch
        text = "its bytes end inside a value, or name a union branch or enum symbol it lacks"
    return text if len(text) <= 300 else text[:300] + "..."


def needs_text(schema: Any) -> bool:
    """Whether values of ``schema`` (plain JSON) may hold temporal or UUID values."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("logicalType") in _TEMPORAL or node.get("logicalType") == "uuid":
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def to_structured(value: Any) -> Any:
    """A decoded Avro value as structured data: temporal values and UUIDs as text."""
    try:
        return _structured(value)
    except RecursionError:
        raise CodecError("nests deeper than structured data can hold") from None


def _structured(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _structured(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_structured(v) for v in value]
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value


# --- union branches ----------------------------------------------------------------------
#
# Structured data in JSON does not tell every union branch from another: bytes and fixed
# are base64 text like a string, an enum symbol is text, records and maps are objects.
# Where a union has two branches whose values look alike in JSON, the branch of each value
# travels beside the data (``union_branches`` reading, ``from_structured`` writing), so a
# value read from Avro is written back to the same branch.


def branches_key(where: str) -> str:
    """The metadata key holding the union branches of ``key``, ``payload.before`` or
    ``payload.after`` (a JSON object of path -> branch)."""
    return f"avro.{where}.branches"


def branches_in(metadata: Mapping[str, str], where: str) -> Branches | None:
    """The union branches the metadata names for ``where``, or ``None``; a
    :class:`CodecError` naming the key when they are not a JSON object of strings."""
    key = branches_key(where)
    text = metadata.get(key)
    if text is None:
        return None
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        found = None
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise CodecError(f"metadata {key}: not a JSON object of paths to union branch names")
    return found


_JSON_KINDS = {
    "string": "text",
    "enum": "text",
    "fixed": "text",
    "bytes": "text",
    "temporal": "text",
    "uuid": "text",
    "int": "number",
    "long": "number",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "record": "object",
    "map": "object",
    "array": "array",
    "boolean": "boolean",
}
_NUMBERS = frozenset({"int", "long", "float", "double"})
_AMBIGUOUS: dict[int, tuple[Any, bool]] = {}


def has_ambiguous_unions(schema: Any) -> bool:
    """Whether ``schema`` (plain JSON, named types spelled out) has a union with a named
    type, or with two branches whose values look alike in JSON."""
    cached = _AMBIGUOUS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    found = False
    stack = [schema]
    seen: set[int] = set()
    while stack and not found:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, list):
            branches = [b for b in node if b != "null"]
            kinds = [_JSON_KINDS.get(_family(b), "") for b in branches]
            named = any(isinstance(b, dict) and b.get("type") in _NAMED for b in branches)
            found = len(set(kinds)) < len(kinds) or (named and len(branches) > 1)
            stack.extend(node)
        elif isinstance(node, dict):
            stack.extend(v for k, v in node.items() if k in ("type", "items", "values"))
            stack.extend(f["type"] for f in node.get("fields", ()) if isinstance(f, dict))
    if len(_AMBIGUOUS) > 1024:
        _AMBIGUOUS.clear()
    _AMBIGUOUS[id(schema)] = (schema, found)
    return found


def union_branches(schema: Any, value: Any) -> tuple[Any, Branches]:
    """A value decoded with ``named_types`` as plain decoded data, and the branch of each
    value in a union whose branches look alike in JSON, by path (section comment).
    ``schema`` is the reader's, plain JSON with named types spelled out."""
    branches: Branches = {}
    try:
        plain = _branches(schema, value, "", branches)
    except RecursionError:
        raise CodecError("nests deeper than structured data can hold") from None
    return plain, branches


def _branches(schema: Any, value: Any, where: str, out: Branches) -> Any:
    if isinstance(schema, list):
        members = [b for b in schema if b != "null"]
        if value is None or not members:
            return value
        name = None
        if type(value) is tuple:
            name, value = value
            branch = next((m for m in members if _branch_name(m) == name), members[0])
        else:
            branch = _branch_of(members, value)
        kinds = [_JSON_KINDS.get(_family(m), "") for m in members]
        if branch is not None and len(set(kinds)) < len(kinds):
            json_kind = _JSON_KINDS.get(_family(branch), "")
            # int/long and float/double values do not tell their branch: the union's
            # order decides, as when confluent-kafka's serializer wrote them.
            if kinds.count(json_kind) > 1 and _family(branch) not in _NUMBERS:
                out[where] = _branch_name(branch)
        return value if branch is None else _branches(branch, value, where, out)
    kind = schema.get("type") if isinstance(schema, dict) else schema
    if isinstance(kind, dict | list):
        return _branches(kind, value, where, out)
    if kind in ("record", "error") and isinstance(value, dict):
        types = {f["name"]: f["type"] for f in schema["fields"]}
        return {k: _branches(types[k], v, _join(where, k), out) for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        items = schema["items"]
        return [_branches(items, v, f"{where}[{i}]", out) for i, v in enumerate(value)]
    if kind == "map" and isinstance(value, dict):
        values = schema["values"]
        return {k: _branches(values, v, _join(where, k), out) for k, v in value.items()}
    return value


def _branch_of(members: list[Any], value: Any) -> Any:
    """The branch of an unnamed decoded value, by its Python type."""
    wanted: tuple[str, ...]
    if isinstance(value, bool):
        wanted = ("boolean",)
    elif isinstance(value, int):
        wanted = ("int", "long")
    elif isinstance(value, float):
        wanted = ("float", "double")
    elif isinstance(value, str):
        # An enum read from a writer that was no union comes untagged.
        return next(
            (m for m in members if _family(m) == "string"),
            next((m for m in members if _family(m) == "enum" and value in m["symbols"]), None),
        )
    elif isinstance(value, bytes):
        wanted = ("bytes",)
    elif isinstance(value, Decimal):
        wanted = ("decimal",)
    elif isinstance(value, dt.date | dt.time):
        wanted = ("temporal",)
    elif isinstance(value, UUID):
        wanted = ("uuid",)
    elif isinstance(value, dict):
        # A record read from a writer that was no union comes untagged: the record whose
        # fields it has, else a map.
        keys = set(value)
        for member in members:
            if _family(member) == "record" and {f["name"] for f in member["fields"]} == keys:
                return member
        wanted = ("map",)
    elif isinstance(value, list):
        wanted = ("array",)
    else:
        return None
    return next((m for m in members if _family(m) in wanted), None)


def from_structured(
    schema: Any, value: Any, where: str = "", branches: Branches | None = None
) -> Any:
    """Structured data made writable for ``schema`` exactly (module docstring), or a
    :class:`CodecError` naming the path of the first value that would change.

    ``branches`` maps paths (``a.b[2].c``) to the union branch their value is of."""
    if isinstance(value, tuple):
        return value  # already tagged with its union branch (``infer.prepare``)
    if isinstance(schema, list):
        return _union(schema, value, where, branches)
    kind = schema.get("type") if isinstance(schema, dict) else schema
    if isinstance(kind, dict | list):
        return from_structured(kind, value, where, branches)
    logical = schema.get("logicalType") if isinstance(schema, dict) else None
    if isinstance(logical, str) and value is not None:
        converted = _logical(logical, schema, value, where)
        if converted is not _NOT_LOGICAL:
            return converted
    if kind in _RANGES:
        return _integer(kind, value, where)
    if kind == "double":
        return _double(value, where)
    if kind == "float":
        return _float(value, where)
    if kind == "boolean" and not isinstance(value, bool) and value is not None:
        raise CodecError(f"{_at(where)}: expected a boolean, got {_shown(value)}")
    if kind in ("bytes", "fixed") and isinstance(value, str):
        value = _base64(value, where)  # how structured data in JSON holds bytes
    if kind == "fixed" and isinstance(value, bytes | bytearray) and len(value) != schema["size"]:
        raise CodecError(
            f"{_at(where)}: {len(value)} bytes where the Avro fixed {schema.get('name')!r} "
            f"holds {schema['size']}"
        )
    if kind == "enum" and isinstance(value, str) and value not in schema["symbols"]:
        raise CodecError(
            f"{_at(where)}: {value!r:.60} is not a symbol of the Avro enum {schema.get('name')!r}"
        )
    if kind in ("record", "error") and isinstance(value, dict):
        fields = {f["name"]: f["type"] for f in schema["fields"]}
        extra = [key for key in value if key not in fields]
        if extra:
            raise CodecError(
                f"{_join(where, extra[0])}: not a field of the Avro record "
                f"{schema.get('name')!r} (fields: {', '.join(fields) or 'none'})"
            )
        return {
            k: from_structured(fields[k], v, _join(where, k), branches) for k, v in value.items()
        }
    if kind == "array" and isinstance(value, list):
        items = schema["items"]
        return [from_structured(items, v, f"{where}[{i}]", branches) for i, v in enumerate(value)]
    if kind == "map" and isinstance(value, dict):
        values = schema["values"]
        return {k: from_structured(values, v, _join(where, k), branches) for k, v in value.items()}
    return value


def _base64(text: str, where: str) -> bytes:
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        raise CodecError(f"{_at(where)}: {text!r:.60} is not base64 (bytes in JSON)") from None


_NOT_LOGICAL = object()


def _logical(logical: str, schema: Any, value: Any, where: str) -> Any:
    parse = _TEMPORAL.get(logical)
    counted = _COUNTED.get(logical)
    if counted is not None and isinstance(value, str | dt.datetime | dt.time):
        # The count itself, every digit of the text kept: fastavro would cut a datetime's
        # microseconds to milliseconds, and Python's text to microseconds.
        nanos_of, per_second = counted
        try:
            count = instants.count(nanos_of(value), per_second, value)
        except ValueError as exc:
            if "finer than" in str(exc) or "offset from UTC" in str(exc):
                raise CodecError(f"{_at(where)}: {exc}") from None
            if isinstance(value, str):
                raise CodecError(
                    f"{_at(where)}: {value!r:.60} is not an ISO 8601 {logical}"
                ) from None
            raise CodecError(f"{_at(where)}: {exc}") from None
        low, high = _RANGES.get(schema.get("type"), _RANGES["long"])
        if not low <= count <= high:
            raise CodecError(
                f"{_at(where)}: {value!s:.60} is beyond what a {logical} holds (an Avro "
                f"{schema.get('type')} of 1/{per_second} seconds)"
            )
        return count
    if (
        logical in _DAY_COUNTS
        and isinstance(value, int)
        and not isinstance(value, bool)
        and not 0 <= value < _DAY_COUNTS[logical]
    ):
        raise CodecError(f"{_at(where)}: {value} is not a {logical} (a time of day, below 24:00)")
    if parse is not None and isinstance(value, dt.date | dt.time):
        return value  # native values: fastavro converts them itself
    if logical == "uuid" and isinstance(value, UUID):
        return value
    if parse is not None and isinstance(value, str):
        try:
            return parse(value)
        except ValueError:
            raise CodecError(f"{_at(where)}: {value!r:.60} is not an ISO 8601 {logical}") from None
    if logical in _DECIMALS and not isinstance(value, bytes | Decimal | bool):
        if isinstance(value, str | int):
            text = value if isinstance(value, str) else str(value)
        elif isinstance(value, float):
            text = repr(value)  # the number as JSON wrote it, not the double's binary value
        else:
            return _NOT_LOGICAL
        try:
            number = Decimal(text)
        except InvalidOperation:
            raise CodecError(f"{_at(where)}: {value!r:.60} is not a decimal number") from None
        if not number.is_finite():
            raise CodecError(f"{_at(where)}: {value!r:.60} is not a finite decimal")
        value = number
    if logical in _DECIMALS and isinstance(value, Decimal):
        scaled = _at_scale(value, schema, where)
        if logical == "decimal" and schema.get("type") == "bytes":
            return _fewest_bytes(scaled)
        return scaled
    return _NOT_LOGICAL


def _fewest_bytes(scaled: Decimal) -> bytes:
    """The unscaled value of a decimal already at its schema's scale, as the fewest bytes of
    two's complement, as Java's ``BigInteger`` (Confluent's serializers, Debezium) and the
    columnar writers write it: fastavro would write -128 in two bytes (``ff 80``)."""
    sign, digits, _ = scaled.as_tuple()
    unscaled = int(Decimal((sign, digits, 0)))
    return unscaled.to_bytes(
        (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1, "big", signed=True
    )


def _at_scale(number: Decimal, schema: Any, where: str) -> Decimal:
    """``number`` written with the schema's scale (``1E+2`` as ``100``, ``1.50`` as ``1.5``
    at scale 1), or a :class:`CodecError` when that would change it or it has more digits
    than the precision."""
    scale = int(schema.get("scale", 0))
    precision = int(schema.get("precision", 0))
    if not number.is_finite():
        raise CodecError(f"{_at(where)}: {number} is not a finite decimal")
    sign, digits, exponent = number.as_tuple()
    if not any(digits):
        return Decimal((sign, (0,), -scale))
    # Bounds first: "1E+999999999" must not make a billion-digit integer.
    if precision and number.adjusted() + scale >= precision:
        raise CodecError(
            f"{_at(where)}: {number:.60} has more digits than decimal({precision},{scale}) holds"
        )
    shift = int(exponent) + scale  # the digits' place at the schema's scale
    if shift < 0:
        if any(digits[shift:]):
            raise CodecError(
                f"{_at(where)}: {number:.60} has {_beyond(scale)} (decimal({precision},{scale}))"
            )
        digits = digits[:shift]
    else:
        digits = digits + (0,) * shift
    # From its digits, never its text: no limit on the digits a number has.
    first = next(i for i, d in enumerate(digits) if d)
    return Decimal((sign, digits[first:], -scale))


def _integer(kind: str, value: Any, where: str) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT_DOUBLE:
        value = int(value)  # 2.0 is the integer 2; nothing changes
    if not isinstance(value, int) or isinstance(value, bool):
        raise CodecError(f"{_at(where)}: expected an integer for Avro {kind}, got {_shown(value)}")
    low, high = _RANGES[kind]
    if not low <= value <= high:
        raise CodecError(f"{_at(where)}: integer {value} does not fit an Avro {kind}")
    return value


def _double(value: Any, where: str) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise CodecError(f"{_at(where)}: expected a number for Avro double, got {_shown(value)}")
    if isinstance(value, int) and abs(value) > _EXACT_DOUBLE:
        raise CodecError(f"{_at(where)}: integer {value} would change as an Avro double")
    if isinstance(value, Decimal):
        number = float(value)
        if Decimal(repr(number)) != value:
            raise CodecError(f"{_at(where)}: {value} would change as an Avro double")
        return number
    return float(value)


def _float(value: Any, where: str) -> Any:
    number = _double(value, where)
    if number is None or float32.holds(number):
        return number
    raise CodecError(f"{_at(where)}: {value} would change as an Avro float (32 bits)")


def _union(members: list[Any], value: Any, where: str, branches: Branches | None) -> Any:
    if value is None:
        return None  # fastavro takes the null branch, or says there is none
    named = branches.get(where) if branches else None
    candidates = _candidates(members, value)
    if named is not None:
        chosen = [m for m in members if _branch_name(m) == named]
        if not chosen:
            raise CodecError(f"{_at(where)}: the union has no branch {named!r}")
        candidates = chosen
    problems = []
    for branch in candidates:
        try:
            prepared = from_structured(branch, value, where, branches)
        except CodecError as exc:
            problems.append(exc.reason)
            continue
        return (_branch_name(branch), prepared)
    if problems:
        raise CodecError(problems[0])
    return value  # no branch of its kind: fastavro names the mismatch


#: The candidates of a union for a type of value, by the union's list (held, so that its id
#: stands for it); schemas' shapes are cached and long-lived, so few unions come and go.
_CANDIDATES: dict[tuple[int, type], tuple[list[Any], list[Any]]] = {}
_MAX_CANDIDATES = 4096


def _candidates(members: list[Any], value: Any) -> list[Any]:
    """The union members that may hold ``value``, in the order to try them (cached per union
    and type of value)."""
    key = (id(members), type(value))
    found = _CANDIDATES.get(key)
    if found is not None and found[0] is members:
        return found[1]
    candidates = _candidates_of(members, value)
    if len(_CANDIDATES) >= _MAX_CANDIDATES:
        _CANDIDATES.clear()
    _CANDIDATES[key] = (members, candidates)
    return candidates


def _candidates_of(members: list[Any], value: Any) -> list[Any]:
    # Groups in the order to try them; inside a group, the union's own order (as
    # confluent-kafka's serializer picks the first branch that takes a value).
    order: tuple[frozenset[str], ...]
    if isinstance(value, bool):
        order = (frozenset({"boolean"}),)
    elif isinstance(value, int):
        order = (frozenset({"long", "int"}), frozenset({"decimal"}), _DOUBLE, _FLOAT)
    elif isinstance(value, float):
        # double before float, as confluent-kafka's serializer (fastavro) prefers it
        order = (_DOUBLE, _FLOAT, frozenset({"decimal"}))
    elif isinstance(value, Decimal):
        order = (frozenset({"decimal"}), _DOUBLE, _FLOAT)
    elif isinstance(value, str):
        # bytes and fixed last: a string is base64 for them only when no other branch
        # takes it (a union_branches path names them otherwise).
        order = (_TEXTS, frozenset({"decimal"}), frozenset({"bytes", "fixed"}))
    elif isinstance(value, bytes | bytearray):
        order = (frozenset({"bytes", "fixed"}),)
    elif isinstance(value, dict):
        order = (frozenset({"record", "map"}),)
    elif isinstance(value, list):
        order = (frozenset({"array"}),)
    elif isinstance(value, dt.date | dt.time):
        order = (frozenset({"temporal"}),)
    elif isinstance(value, UUID):
        order = (frozenset({"uuid"}),)
    else:
        return []
    return [m for wanted in order for m in members if _family(m) in wanted]


_DOUBLE = frozenset({"double"})
_FLOAT = frozenset({"float"})
_TEXTS = frozenset({"string", "enum", "temporal", "uuid"})


def _family(member: Any) -> str:
    if isinstance(member, str):
        return member
    logical = member.get("logicalType")
    if logical in _DECIMALS:
        return "decimal"
    if logical in _TEMPORAL:
        return "temporal"
    if logical == "uuid":
        return "uuid"
    kind = member.get("type")
    return "record" if kind == "error" else str(kind)


def _branch_name(member: Any) -> str:
    """How fastavro's tuple notation names a union branch."""
    if isinstance(member, str):
        return member
    kind = member.get("type")
    if kind in _NAMED:
        name = str(member["name"])
        space = member.get("namespace")
        return f"{space}.{name}" if space and "." not in name else name
    return str(kind)


def _at(where: str) -> str:
    return where or "value"


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.40}"
