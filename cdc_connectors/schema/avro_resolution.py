"""Avro schema resolution, writer to reader, as the specification reads it, for fastavro.

fastavro resolves a writer schema to a reader schema itself, but in three places it
differs from the specification (and from Avro's Java resolver), and every path that reads
Avro with a reader schema (``convert``, the registry decoder, Spark's ``expand``, the
columnar batch decoder, the typed Debezium path) goes through :func:`for_reading`, which
edits copies of both schemas to close them:

- **Defaults.** fastavro hands back a reader field's default as the JSON the schema
  holds. The specification gives defaults in the JSON encoding of their type: a
  ``bytes`` or ``fixed`` default is a string whose code points 0-255 are the bytes, a
  decimal default is those bytes as its unscaled value, a record default may leave out
  fields that have defaults of their own, a ``float`` default is a 32-bit float, a union
  default is of the first branch it fits, and a default of a logical type is the value of
  its underlying type. Each default a read needs (a reader field the writer lacks) becomes
  the value a decoded body would give (:func:`decoded_default`).
- **Promotion to float.** An ``int`` or ``long`` read as ``float`` is the nearest 32-bit
  float, rounded once (16777217 reads as 16777216.0); fastavro gives the double.
- **Union branches.** A writer's branch goes to the reader union's branch of its own type
  before one it would be promoted to (``bytes`` in ``["string","bytes"]`` stays bytes);
  fastavro takes the first that matches. The writer branch is marked to be read as written.

A default the reader needs but that does not fit its type is a :class:`ResolutionError`
naming the field: every body read with that pair fails with it, since every one would
need the default. (Registering such a schema is refused already: ``schema.avro``.)
"""

from __future__ import annotations

import copy
import struct
import threading
from decimal import Decimal
from typing import Any, NamedTuple

import fastavro.read

__all__ = [
    "PROMOTIONS",
    "ResolutionError",
    "decoded_default",
    "for_reading",
    "integer_to_float32",
    "to_float32",
]

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
#: Avro's promotions: a writer type -> the reader types that read it.
PROMOTIONS = {
    "int": ("int", "long", "float", "double"),
    "long": ("long", "float", "double"),
    "float": ("float", "double"),
    "string": ("string", "bytes"),
    "bytes": ("bytes", "string"),
}
_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_FLOAT32 = "cdc-float32"  # marks a writer int or long read as a 32-bit float
_EXACT = "cdc-exact"  # marks a writer branch read into the reader branch of its own type
_MAX_DEPTH = 100
_NAMED = ("record", "error", "enum", "fixed")


class ResolutionError(ValueError):
    """A writer schema cannot be read as a reader schema (for every body alike)."""


def to_float32(value: float) -> float:
    """``value`` rounded to the nearest 32-bit float (infinite beyond its range)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def integer_to_float32(value: int) -> float:
    """The 32-bit float nearest ``value`` (ties to even), rounded once: through a double
    first, 2**60 + 2**37 + 1 would land on a tie and round the wrong way."""
    magnitude = abs(value)
    extra = magnitude.bit_length() - 24
    if extra > 0:
        kept, rest = divmod(magnitude, 1 << extra)
        half = 1 << (extra - 1)
        if rest > half or (rest == half and kept & 1):
            kept += 1
        magnitude = kept << extra
    return to_float32(float(-magnitude if value < 0 else magnitude))  # exact now


def _promote_to_float32(data: Any, writer_schema: Any = None, reader_schema: Any = None) -> float:
    return integer_to_float32(data)


def _as_written(data: Any, writer_schema: Any = None, reader_schema: Any = None) -> Any:
    return data  # a logical reader's result skips fastavro's promotion


for _base in ("int", "long"):
    fastavro.read.LOGICAL_READERS[f"{_base}-{_FLOAT32}"] = _promote_to_float32
for _base in PROMOTIONS:
    fastavro.read.LOGICAL_READERS[f"{_base}-{_EXACT}"] = _as_written


# --- defaults ----------------------------------------------------------------------------


def decoded_default(
    schema: Any, value: Any, named: dict[str, Any], where: str = "", *, tagged: bool = False
) -> Any:
    """The JSON default ``value`` of ``schema`` (fastavro-parsed: named types by full name
    in ``named``) as the value a decoded body of that type gives; :class:`ValueError`
    naming ``where`` when it does not fit the type. ``tagged``: a value of a named type in
    a union is a ``(name, value)`` tuple, as fastavro's ``return_named_type`` reads it."""
    return _default(_Context(named, tagged), schema, value, where or "default", 0)


class _Context(NamedTuple):
    named: dict[str, Any]  # named types by full name
    tagged: bool  # named types in unions as (name, value)


def _default(ctx: _Context, schema: Any, value: Any, where: str, depth: int) -> Any:
    named = ctx.named
    if depth > _MAX_DEPTH:
        raise ValueError(f"{where}: the default nests deeper than {_MAX_DEPTH} levels")
    if isinstance(schema, str):
        if schema not in _PRIMITIVES:
            if schema not in named:
                raise ValueError(f"{where}: unknown Avro type {schema!r}")
            return _default(ctx, named[schema], value, where, depth + 1)
        return _primitive(schema, value, where)
    if isinstance(schema, list):
        problems = []
        for branch in schema:  # Avro 1.12: the first branch the default matches
            try:
                found = _default(ctx, branch, value, where, depth + 1)
            except ValueError as exc:
                problems.append(str(exc))
                continue
            definition = named.get(branch, branch) if isinstance(branch, str) else branch
            if ctx.tagged and isinstance(definition, dict) and definition.get("type") in _NAMED:
                return (definition["name"], found)
            return found
        raise ValueError(problems[0] if problems else f"{where}: an empty union has no value")
    kind = schema.get("type")
    if isinstance(kind, dict | list) or (isinstance(kind, str) and kind in _PRIMITIVES):
        raw = _default(ctx, kind, value, where, depth + 1)
    elif kind == "fixed":
        raw = _latin1(value, where, "fixed")
        if len(raw) != schema["size"]:
            raise ValueError(
                f"{where}: a fixed of {schema['size']} bytes, and the default holds {len(raw)}"
            )
    elif kind == "enum":
        if not isinstance(value, str) or value not in schema["symbols"]:
            raise ValueError(f"{where}: {_shown(value)} is not a symbol of enum {schema['name']}")
        raw = value
    elif kind == "array":
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a JSON array, got {_shown(value)}")
        raw = [
            _default(ctx, schema["items"], v, f"{where}[{i}]", depth + 1)
            for i, v in enumerate(value)
        ]
    elif kind == "map":
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected a JSON object, got {_shown(value)}")
        raw = {
            k: _default(ctx, schema["values"], v, f"{where}.{k}", depth + 1)
            for k, v in value.items()
        }
    elif kind in ("record", "error"):
        raw = _record(ctx, schema, value, where, depth)
    else:
        raise ValueError(f"{where}: unknown Avro type {kind!r}")
    return _logical(schema, raw, where)


def _record(ctx: _Context, schema: dict[str, Any], value: Any, where: str, depth: int) -> Any:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a JSON object for record {schema['name']}")
    out = {}
    for field in schema["fields"]:
        name = field["name"]
        if name in value:
            given = value[name]
        elif "default" in field:
            given = field["default"]
        else:
            raise ValueError(
                f"{where}.{name}: the default of record {schema['name']} leaves out field "
                f"{name!r}, which has no default of its own"
            )
        out[name] = _default(ctx, field["type"], given, f"{where}.{name}", depth + 1)
    return out


def _primitive(kind: str, value: Any, where: str) -> Any:
    if kind == "null":
        if value is not None:
            raise ValueError(f"{where}: expected null, got {_shown(value)}")
        return None
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected a boolean, got {_shown(value)}")
        return value
    if kind in _RANGES:
        low, high = _RANGES[kind]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ValueError(f"{where}: expected an Avro {kind}, got {_shown(value)}")
        return value
    if kind in ("float", "double"):
        if not isinstance(value, int | float | Decimal) or isinstance(value, bool):
            raise ValueError(f"{where}: expected a number, got {_shown(value)}")
        return to_float32(float(value)) if kind == "float" else float(value)
    if kind == "string":
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected a string, got {_shown(value)}")
        return value
    return _latin1(value, where, "bytes")


def _latin1(value: Any, where: str, kind: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected a string of {kind}, got {_shown(value)}")
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{where}: a {kind} default holds one byte per character (code points 0-255), "
            f"and it has {value[exc.start]!r} (U+{ord(value[exc.start]):04X})"
        ) from None


def _logical(schema: dict[str, Any], raw: Any, where: str) -> Any:
    logical = schema.get("logicalType")
    if not isinstance(logical, str) or raw is None:
        return raw
    base = schema["type"] if isinstance(schema["type"], str) else None
    reader = fastavro.read.LOGICAL_READERS.get(f"{base}-{logical}")
    if reader is None:
        return raw
    try:
        return reader(raw, schema, schema)
    except (ValueError, TypeError, KeyError, OverflowError, ArithmeticError) as exc:
        # (``cdc-decimal``, ``cdc-exact-decimal``: decimals read exactly, ``avro_values``)
        shown = "decimal" if logical.endswith("decimal") else logical.removeprefix("cdc-")
        raise ValueError(f"{where}: not a valid {shown}: {exc}") from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- resolution ----------------------------------------------------------------------------


_PAIRS: dict[tuple[int, int, bool], tuple[Any, Any, Any, Any]] = {}
_LOCK = threading.Lock()


def for_reading(writer: Any, reader: Any, *, named_types: bool = False) -> tuple[Any, Any]:
    """fastavro-parsed ``writer`` and ``reader`` schemas made to read as the specification
    says (module docstring); :class:`ResolutionError` when a default the read needs does
    not fit its type. ``named_types``: the read uses fastavro's ``return_named_type``, so
    defaults tag named types in unions the same way. The pair is cached: call it per body
    freely."""
    key = (id(writer), id(reader), named_types)
    found = _PAIRS.get(key)
    if found is not None and found[0] is writer and found[1] is reader:
        return found[2], found[3]
    pair = _Resolver(writer, reader, named_types).run()
    with _LOCK:
        if len(_PAIRS) > 512:
            _PAIRS.clear()
        _PAIRS[key] = (writer, reader, *pair)
    return pair


class _Resolver:
    """One walk of writer and reader side by side, editing copies of both."""

    def __init__(self, writer: Any, reader: Any, tagged: bool) -> None:
        self.tagged = tagged
        self.writer = copy.deepcopy(writer)
        self.writer_named = _named(self.writer)
        self.source_reader = reader
        self.reader_named = _named(reader)
        # The walk reads the original reader; its copy (found through the memo) gets the
        # converted defaults.
        self.reader_memo: dict[int, Any] = {}
        self.reader = copy.deepcopy(reader, self.reader_memo)
        self.seen: set[tuple[int, int]] = set()

    def run(self) -> tuple[Any, Any]:
        self.writer = self._walk(self.writer, self.source_reader, "<root>")
        return self.writer, self.reader

    def _resolve(self, node: Any, named: dict[str, Any]) -> Any:
        while isinstance(node, str) and node not in _PRIMITIVES and node in named:
            node = named[node]
        if isinstance(node, dict) and isinstance(node.get("type"), dict | list):
            return self._resolve(node["type"], named)
        return node

    def _walk(self, writer: Any, reader: Any, path: str) -> Any:
        """``writer`` (a node of the copy), edited to read as ``reader`` (of the original);
        returns the node to put in its place."""
        w = self._resolve(writer, self.writer_named)
        r = self._resolve(reader, self.reader_named)
        if isinstance(w, dict) and w.get("type") in ("record", "error"):
            key = (id(w), id(r))  # a recursive record is walked once
            if key in self.seen:
                return writer
            self.seen.add(key)
        if isinstance(w, list):
            for index, branch in enumerate(w):
                w[index] = self._into(branch, r, path)
            return writer
        if isinstance(r, list):
            return self._into(writer, r, path)
        w_kind, r_kind = _kind(w), _kind(r)
        if w_kind in ("int", "long") and r_kind == "float":
            base = {"type": w_kind} if isinstance(w, str) else dict(w)
            base["logicalType"] = _FLOAT32
            return base
        if w_kind in ("record", "error") and r_kind in ("record", "error"):
            self._record(w, r, path)
        elif w_kind == r_kind == "array":
            w["items"] = self._walk(w["items"], r["items"], path + "[]")
        elif w_kind == r_kind == "map":
            w["values"] = self._walk(w["values"], r["values"], path + "{}")
        return writer

    def _record(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        by_name = {f["name"]: f for f in writer["fields"]}
        for field in reader["fields"]:
            where = field["name"] if path == "<root>" else f"{path}.{field['name']}"
            names = [field["name"], *field.get("aliases", ())]
            found = next((by_name[n] for n in names if n in by_name), None)
            if found is not None:
                found["type"] = self._walk(found["type"], field["type"], where)
                continue
            if "default" not in field:
                continue  # fastavro names the missing default itself
            try:
                value = decoded_default(
                    field["type"], field["default"], self.reader_named, where, tagged=self.tagged
                )
            except ValueError as exc:
                raise ResolutionError(
                    f"reader field {where} has no value for data of the writer schema: its "
                    f"default does not fit its type ({exc})"
                ) from None
            self.reader_memo[id(field)]["default"] = value

    def _into(self, writer: Any, reader: Any, path: str) -> Any:
        """``writer`` (not a union) edited to read as the reader type (maybe a union) it
        resolves to."""
        w = self._resolve(writer, self.writer_named)
        branches = reader if isinstance(reader, list) else [reader]
        resolved = [self._resolve(b, self.reader_named) for b in branches]
        matching = [i for i, b in enumerate(resolved) if _matches(w, b)]
        if not matching:
            return writer  # fastavro names the mismatch when such a value comes
        # As Avro's Java resolver picks a union branch: the writer's own type first, then
        # the first promotion. fastavro takes the first match, promotion or not.
        kind = _kind(w)
        best = next((i for i in matching if _kind(resolved[i]) == kind), matching[0])
        edited = self._walk(writer, branches[best], path)
        if best != matching[0] and isinstance(edited, str) and edited in PROMOTIONS:
            return {"type": edited, "logicalType": _EXACT}  # read as written, no promotion
        return edited


def _named(schema: Any) -> dict[str, Any]:
    if isinstance(schema, dict):
        found = schema.get("__named_schemas")
        if isinstance(found, dict):
            return found
    return {}


def _kind(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "union"
    kind = node.get("type")
    return kind if isinstance(kind, str) else _kind(kind)


def _matches(writer: Any, reader: Any) -> bool:
    w, r = _kind(writer), _kind(reader)
    if w in PROMOTIONS:
        return r in PROMOTIONS[w]
    if w != r:
        return False
    if w in ("record", "error", "enum", "fixed"):
        names = {reader["name"], reader["name"].rsplit(".", 1)[-1], *reader.get("aliases", ())}
        name = writer["name"]
        if name not in names and name.rsplit(".", 1)[-1] not in names:
            return False
        return w != "fixed" or writer["size"] == reader["size"]
    return True
