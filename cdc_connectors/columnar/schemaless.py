"""Debezium JSON change events without a schema block (JsonConverter's
``schemas.enable=false``, or its ``{"payload": ...}`` wrapper alone, as YDB writes), typed
from the batch itself so the columns can take them.

:func:`infer_envelope` reads a batch of such values with Arrow's JSON reader, which infers
a type per field, and writes the Kafka Connect envelope schema those types are: flat rows
of integers (``int64``), doubles, strings and booleans, a ``source`` and a
``transaction`` of scalars. Typed by that schema, an event gives the record the
per-message way gives it (which keeps the JSON values as they are) when its images have
exactly the fields of the schema, none missing, and each number is of its column's kind:
:meth:`Inferred.misfits` finds the events that do not, which go the per-message way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from cdc_connectors.json_values import ESCAPE
from cdc_connectors.spark.arrow_masks import mask
from cdc_connectors.spark.arrow_names import member, names_are_text
from cdc_connectors.spark.json_blocks import read_lines, too_deep

__all__ = ["Inferred", "infer_envelope"]

_SCALARS = {pa.int64(): "int64", pa.float64(): "double", pa.bool_(): "boolean"}
_IMAGES = ("before", "after")
_METADATA_BLOCKS = ("source", "transaction")
_TOP_SCALARS = {"op": "string", "ts_ms": "int64", "ts_us": "int64", "ts_ns": "int64"}


@dataclass(frozen=True)
class Inferred:
    """An envelope schema block inferred from a batch (:func:`infer_envelope`), with what
    every event must hold to be typed by it exactly."""

    block: dict[str, Any]
    fields: frozenset[str]  # each image's fields
    doubles: frozenset[str]  # image fields read as doubles
    #: The events are ``{"payload": {...}}``: JsonConverter's wrapper without its schema
    #: (YDB writes so).
    wrapped: bool = False
    #: Each event's payload as Arrow read it to infer the block (one row per event), which
    #: the typed read need not read again (:meth:`TypedDebeziumDecoder.decode_fast`).
    payloads: pa.Array | None = dataclass_field(default=None, compare=False, repr=False)
    #: Image fields of objects or arrays, with the shape of their values (:func:`_shape`).
    nested: dict[str, Any] = dataclass_field(default_factory=dict, compare=False)

    def misfits(self, values: pa.Array, exact_kinds: bool) -> np.ndarray:
        """Events whose images miss a field or have one more (the per-message way keeps
        them as they are), or are no JSON object; with ``exact_kinds``, also those where a
        double column holds an integer (a writer of JSON text tells ``1`` from ``1.0``).

        ``values`` are those :func:`infer_envelope` read into :attr:`payloads`, so each is
        one JSON object without a member named twice (Arrow refuses that) whose images hold
        no member besides :attr:`fields`. A field is missing where Arrow read a null and
        the text has no ``"field": null`` member: a key at one place of the text, as
        quotes inside strings are escaped. Fields also named outside the images (in
        ``source``, say) and names spelt otherwise (escapes) are read again by orjson in
        the events they are null in, and so are events holding an escape (``\\u0061`` is
        ``a`` to Arrow, not to a pattern). The caller reads no message holding another
        document after its own (Arrow would give its rows to others)."""
        payloads = self.payloads
        if payloads is None or len(payloads) != len(values):
            return self._parsed(values, np.ones(len(values), dtype=bool), exact_kinds)
        others = _names_besides_images(payloads.type) | ({"payload"} if self.wrapped else set())
        plain = sorted(f for f in self.fields if f not in others and _PLAIN_NAME.match(f))
        nulls = np.zeros(len(values), dtype=np.int64)  # plain fields read as null
        # rows read again by orjson: first those that may spell a name with an escape
        parse = mask(pc.match_substring_regex(values, ESCAPE))
        doubles = exact_kinds and bool(self.doubles)
        for image in _images(payloads):
            present = mask(image.is_valid())
            for name in self.nested:  # an object's members are told by orjson
                parse |= present & mask(member(image, name).is_valid())
            for name in self.fields:
                null = present & mask(member(image, name).is_null())
                if name in plain:
                    nulls += null
                else:
                    parse |= null
                if doubles and name in self.doubles and name not in plain:
                    parse |= present & ~null
        bad = np.zeros(len(values), dtype=bool)
        counted = np.flatnonzero((nulls > 0) & ~parse)
        if len(counted):
            found = pc.count_substring_regex(
                values.take(pa.array(counted)), _members(plain, "null")
            )
            bad[counted] = np.asarray(found) != nulls[counted]
        whole = [f for f in plain if f in self.doubles]
        if doubles and whole:
            # an integer where Arrow read a double: the member's text has no '.' or exponent
            bad |= mask(pc.match_substring_regex(values, _members(whole, "-?[0-9]+\\s*[,}]")))
        parse &= ~bad
        if parse.any():
            bad |= self._parsed(values, parse, exact_kinds)
        return bad

    def _parsed(self, values: pa.Array, rows: np.ndarray, exact_kinds: bool) -> np.ndarray:
        """:meth:`misfits` of the ``rows`` of ``values``, each read by orjson."""
        bad = np.zeros(len(values), dtype=bool)
        fields, doubles, nested = self.fields, self.doubles, self.nested
        loads = orjson.loads
        wrapped = self.wrapped
        for n in np.flatnonzero(rows).tolist():
            try:
                payload = loads(values[n].as_py())
            except orjson.JSONDecodeError:
                bad[n] = True
                continue
            if wrapped:
                payload = payload.get("payload") if isinstance(payload, dict) else None
                if not isinstance(payload, dict):
                    bad[n] = True
                    continue
            for name in _IMAGES:
                image = payload.get(name) if isinstance(payload, dict) else None
                if image is None:
                    continue
                if not isinstance(image, dict) or image.keys() != fields:
                    bad[n] = True
                    break
                if exact_kinds and any(type(image[f]) is int for f in doubles):
                    bad[n] = True
                    break
                if any(not _fits(image[f], shape, exact_kinds) for f, shape in nested.items()):
                    bad[n] = True
                    break
        return bad


def _fits(value: Any, shape: Any, exact_kinds: bool) -> bool:
    """Whether an image's object or array ``value`` (as orjson read it) is what its column
    of ``shape`` gives: the members of an object, none more, none missing; no integer a
    double rounds in a column of doubles (nor, with ``exact_kinds``, any integer there)."""
    if value is None:
        return True
    if isinstance(shape, dict) and "fields" in shape:
        members: dict[str, Any] = shape["fields"]
        return (
            type(value) is dict
            and value.keys() == members.keys()
            and all(_fits(value[name], inner, exact_kinds) for name, inner in members.items())
        )
    if isinstance(shape, dict):
        return type(value) is list and all(_fits(v, shape["items"], exact_kinds) for v in value)
    if shape == "double" and type(value) is int:
        return not exact_kinds and abs(value) < 2**53
    return True


def _shape(field: dict[str, Any]) -> Any:
    """What :func:`_fits` checks of a Connect field block: an object's members, an array's
    items, or the kind of a scalar."""
    if field["type"] == "struct":
        return {"fields": {f["field"]: _shape(f) for f in field["fields"]}}
    if field["type"] == "array":
        return {"items": _shape(field["items"])}
    return field["type"]


# Field names written into a pattern as they are; others are told by orjson.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+\Z")


def _members(names: list[str], value: str) -> str:
    """A pattern of a member named one of ``names`` whose value starts with ``value``: a
    key after ``{`` or ``,`` (a quote inside a string is escaped, so no string holds it)."""
    return '[{,]\\s*"(?:' + "|".join(names) + ')"\\s*:\\s*' + value


def _images(payloads: pa.StructArray) -> list[pa.StructArray]:
    """The image columns Arrow read as objects (an image null in every event is none)."""
    found = []
    for name in _IMAGES:
        if payloads.type.get_field_index(name) >= 0:
            image = member(payloads, name)
            if pa.types.is_struct(image.type):
                found.append(image)
    return found


def _names_besides_images(payload_type: pa.StructType) -> frozenset[str]:
    """Every member name of the events but the images' own: the top level's, those of
    its objects but the images (``source``, ``transaction``) and those of the objects in
    the images (a geometry's ``srid``)."""
    names = {field.name for field in payload_type}
    for field in payload_type:
        if not pa.types.is_struct(field.type):
            continue
        if field.name not in _IMAGES:
            names.update(child.name for child in field.type)
            continue
        for column in field.type:
            if pa.types.is_struct(column.type):
                names.update(child.name for child in column.type)
    return frozenset(names)


def infer_envelope(values: pa.Array) -> Inferred | None:
    """The envelope schema of a batch of schemaless change events as Arrow types them;
    ``None`` when Arrow cannot read them together or they hold more than the columns
    take (objects in objects, arrays of objects, doubles in metadata, fields that change
    type)."""
    count = len(values)
    if not count:
        return None
    table = _read(values)
    if table is None:
        return None
    if table.num_rows != count or not names_are_text(table.schema):
        return None
    schema = table.schema
    wrapped = schema.names == ["payload"] and pa.types.is_struct(schema.field(0).type)
    if wrapped:
        schema = pa.schema(list(schema.field(0).type))
    if "op" not in schema.names:
        return None
    row = _row(schema)
    if row is None:
        return None
    fields: list[dict[str, Any]] = []
    for name in _IMAGES:
        fields.append({**row, "field": name})
    for name in schema.names:
        if name in _IMAGES:
            continue
        if name in _METADATA_BLOCKS:
            type_ = schema.field(name).type
            if pa.types.is_null(type_):  # null in every event: Debezium's "transaction": null
                fields.append({"type": "struct", "optional": True, "fields": [], "field": name})
                continue
            block = _scalars_struct(type_, metadata=True)
            if block is None:
                return None
            fields.append({**block, "optional": True, "field": name})
        elif name in _TOP_SCALARS:
            fields.append({"type": _TOP_SCALARS[name], "optional": True, "field": name})
        else:
            return None
    for field in (*fields, *row["fields"]):
        _typed(field)
    block = {"type": "struct", "optional": False, "name": "Envelope", "fields": fields}
    names = frozenset(f["field"] for f in row["fields"])
    doubles = frozenset(f["field"] for f in row["fields"] if f["type"] == "double")
    nested = {f["field"]: _shape(f) for f in row["fields"] if f["type"] in ("struct", "array")}
    if wrapped:
        payloads = table.column("payload").combine_chunks()
    else:
        payloads = pa.StructArray.from_arrays(
            [column.combine_chunks() for column in table.columns], fields=list(table.schema)
        )
    return Inferred(block, names, doubles, wrapped, payloads, nested)


def _typed(field: dict[str, Any]) -> None:
    """``field`` and what it holds without the marks of types read from nulls alone."""
    field.pop("untyped", None)
    for child in field.get("fields", ()):
        _typed(child)
    if "items" in field:
        _typed(field["items"])


def _read(values: pa.Array) -> pa.Table | None:
    """The events read together, each field of the type Arrow infers, but text that Arrow
    would read as a time kept as text (what the typed read gives, so that it need not read
    them again): the types inferred from a sample spread over the batch and given to the
    read of all, or, where the others do not fit them, inferred from all; ``None`` when
    Arrow cannot read them."""
    count = len(values)
    if too_deep(values).any():
        return None
    text = _joined(values)
    if count > _SAMPLE:
        picks = np.unique(np.linspace(0, count - 1, _SAMPLE).astype(np.int64))
        sample = _joined(values.take(pa.array(picks)))
        try:
            inferred = read_lines(sample)
            types = _read_types(inferred.schema)
            options = pajson.ParseOptions(explicit_schema=types, unexpected_field_behavior="infer")
            return _lists_whole(read_lines(text, options), text)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # a field of another type elsewhere (or null throughout the sample)
    try:
        return _lists_whole(read_lines(text), text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _lists_whole(table: pa.Table, text: pa.Buffer) -> pa.Table:
    """``table`` as read from ``text``, or, where it holds an array whose type Arrow
    inferred (Arrow 26 reads arrays of nulls into columns it cannot join, and arrays of
    nulls then of numbers into ones that lose the nulls), ``text`` read again with the
    types inferred."""
    if not any(_holds_lists(field.type) for field in table.schema):
        return table
    options = pajson.ParseOptions(explicit_schema=_read_types(table.schema))
    return read_lines(text, options)


def _holds_lists(type_: pa.DataType) -> bool:
    """Whether ``type_`` holds an array."""
    if pa.types.is_list(type_):
        return True
    if pa.types.is_struct(type_):
        return any(_holds_lists(field.type) for field in type_)
    return False


def _joined(values: pa.Array) -> pa.Buffer:
    """The events as lines of one buffer."""
    lists = pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)
    return pc.binary_join(lists, b"\n")[0].as_buffer()


#: Events whose types are inferred before all are read with them.
_SAMPLE = 256


def _read_types(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each time Arrow inferred from text as text, and arrays of nulls (or
    empty throughout) as arrays of text, which Arrow's reader gives whole."""

    def text(type_: pa.DataType, item: bool = False) -> pa.DataType:
        if pa.types.is_timestamp(type_) or (item and pa.types.is_null(type_)):
            return pa.string()
        if pa.types.is_struct(type_):
            return pa.struct([f.with_type(text(f.type)) for f in type_])
        if pa.types.is_list(type_):
            return pa.list_(type_.value_field.with_type(text(type_.value_type, item=True)))
        return type_

    return pa.schema([f.with_type(text(f.type)) for f in schema])


def _row(schema: pa.Schema) -> dict[str, Any] | None:
    """The row struct of the images: one type for both (an image null in every event is
    typed by the other one)."""
    found: dict[str, Any] | None = None
    for name in _IMAGES:
        if name not in schema.names:
            continue
        type_ = schema.field(name).type
        if pa.types.is_null(type_):
            continue
        block = _scalars_struct(type_, metadata=False, nested=True)
        if block is None:
            return None
        if found is None:
            found = block
        elif found != block:
            found = _merged(found, block)
            if found is None:
                return None
    if found is None:
        return None
    return {**found, "optional": True, "name": "Value"}


def _merged(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any] | None:
    """Two row structs of the same fields, a field typed in one and null in every event of
    the other taking its type; ``None`` if they differ otherwise."""
    ones = {f["field"]: f for f in first["fields"]}
    others = {f["field"]: f for f in second["fields"]}
    if ones.keys() != others.keys():
        return None
    fields = []
    for name, one in ones.items():
        other = others[name]
        if one == other or other.get("untyped"):
            fields.append(one)
        elif one.get("untyped"):
            fields.append(other)
        else:
            return None
    return {**first, "fields": fields}


def _scalars_struct(
    type_: pa.DataType, *, metadata: bool, nested: bool = False
) -> dict[str, Any] | None:
    """A Connect struct of the scalar fields of ``type_`` (with ``nested``, an image's:
    objects of scalars and arrays of scalars too, as Debezium writes a PostgreSQL
    ``numeric``, a geometry or an array); ``None`` for any other field (a double in
    metadata too: the per-message way writes its JSON text)."""
    if not pa.types.is_struct(type_) or not type_.num_fields:
        return None
    fields = []
    for field in type_:
        if nested and pa.types.is_struct(field.type):
            inner = _scalars_struct(field.type, metadata=False)
            if inner is None:
                return None
            fields.append({**inner, "field": field.name})
            continue
        if nested and pa.types.is_list(field.type):
            items = _scalar_kind(field.type.value_type)
            if items is None:
                return None
            fields.append({"type": "array", "optional": True, "items": items, "field": field.name})
            continue
        if pa.types.is_string(field.type) or pa.types.is_timestamp(field.type):
            # Arrow reads some strings as timestamps; the text is what the event holds.
            kind: str | None = "string"
        elif pa.types.is_null(field.type):
            fields.append({"type": "string", "optional": True, "field": field.name})
            fields[-1]["untyped"] = True
            continue
        else:
            kind = _SCALARS.get(field.type)
        if kind is None or (metadata and kind == "double"):
            return None
        fields.append({"type": kind, "optional": True, "field": field.name})
    return {"type": "struct", "optional": True, "fields": fields}


def _scalar_kind(type_: pa.DataType) -> dict[str, Any] | None:
    """The Connect block of an array's scalar items (a null throughout: text)."""
    if pa.types.is_string(type_) or pa.types.is_timestamp(type_) or pa.types.is_null(type_):
        return {"type": "string", "optional": True}
    kind = _SCALARS.get(type_)
    return None if kind is None else {"type": kind, "optional": True}
