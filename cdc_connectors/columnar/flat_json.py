"""What the readers of JSON messages without a schema by Arrow's JSON reader share
(:mod:`~cdc_connectors.columnar.opencdc_json_columns`,
:mod:`~cdc_connectors.columnar.ydb_json_columns`): reading a batch at once, the messages
``load_exact`` would read otherwise, and the rows (objects of flat columns) whose text
holds what Arrow read: no member left out (Arrow reads it as a null), no integer in a
column of doubles, no NaN or Infinity.

A member is told from the text by a pattern (:func:`members`): a key after ``{`` or ``,``,
as a quote inside a string is escaped; the number of ``"name": null`` members of a message
is the number of nulls its rows hold when no member is left out, for names that no other
object of the message has (the caller names those, ``besides``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.confluent_frames import non_finite
from cdc_connectors.json_values import ESCAPE
from cdc_connectors.opencdc import json_codec
from cdc_connectors.spark.arrow_names import member, names_are_text
from cdc_connectors.spark.json_blocks import read_lines, too_deep
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA

__all__ = [
    "FLAT",
    "SPELT",
    "JsonBatchReader",
    "as_row",
    "flat_row",
    "lacks",
    "looked_at_closer",
    "map_column",
    "members",
    "misfits",
    "row_type",
]

#: The Arrow types of a flat column and the kind :class:`FlatChanges` gives each.
FLAT: dict[pa.DataType, type | None] = {
    pa.int64(): int,
    pa.float64(): float,
    pa.string(): str,
    pa.bool_(): bool,
    pa.null(): None,
}
_METADATA = OPENCDC_ARROW_SCHEMA.field("metadata").type
#: The start of another document after a message's own (``}{``, with any whitespace).
SECOND_DOCUMENT = r"\}[ \t\n\r]*\{"
#: Names a pattern holds (dots and dashes escaped); others are told another way.
SPELT = re.compile(r"[A-Za-z0-9_.\-]+\Z")


def members(names: list[str], value: str) -> str:
    """A pattern of a member named one of ``names`` whose value starts with ``value``: a
    key after ``{`` or ``,`` (a quote inside a string is escaped, so no string holds it)."""
    spelt = "|".join(re.sub(r"([.\-])", r"\\\1", name) for name in names)
    return '[{,]\\s*"(?:' + spelt + ')"\\s*:\\s*' + value


@dataclass
class RecordColumns:
    """The records a batch's columns hold: their ``rows`` in the batch and ``batch``
    (``position``, ``operation``, ``metadata``, ``before``, ``after``), the images'
    columns and kinds, and the keys: structured (``keys`` of ``key_kinds``) or raw."""

    rows: np.ndarray
    batch: pa.RecordBatch
    row_kinds: tuple[tuple[str, Any], ...]
    keys: pa.StructArray | None
    key_kinds: tuple[tuple[str, Any], ...] | None
    raw_keys: list[bytes | None] | None


class JsonBatchReader:
    """A batch of JSON messages read at once by Arrow's reader, text Arrow would take for
    a timestamp read as text. Where the last batch had such text, its places are given to
    the next read as text (and only those: a member the next batch has not would become
    nulls it does not hold), so that a batch is read once."""

    def __init__(self) -> None:
        self._hint: frozenset[tuple[str, ...]] = frozenset()

    def read(self, texts: pa.Array) -> pa.Table | None:
        """The batch as Arrow reads it, one row a message, or ``None`` when Arrow cannot
        read it so."""
        count = len(texts)
        if too_deep(texts).any():
            return None
        joined = pc.binary_join(
            pa.ListArray.from_arrays(pa.array([0, count], pa.int32()), texts), b"\n"
        )
        text = joined[0].as_buffer()
        hint = self._hint
        for _ in range(3):
            table = _read(text, hint)
            if table is None or (hint and _hinted_null(table, hint)):
                if not hint:
                    return None
                hint = frozenset()  # read as inferred
                continue
            if table.num_rows != count or not names_are_text(table.schema):
                return None
            stamps = frozenset(_timestamp_paths(table.schema))
            if not stamps:
                break
            hint |= stamps
        else:
            return None
        try:
            table = table.combine_chunks()  # (one chunk a column, as callers read it)
            # Arrow's reader writes lists such as [null, 0] with their offsets past their
            # values: what it read is not used unless it is valid
            table.validate()
        except pa.ArrowException:
            return None
        self._hint = hint
        return table


def _read(text: pa.Buffer, hint: frozenset[tuple[str, ...]]) -> pa.Table | None:
    """Arrow's reading of ``text``, the places of ``hint`` as text."""
    schema = _schema_of(hint) if hint else None
    options = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
    try:
        return read_lines(text, options)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _timestamp_paths(
    schema: pa.Schema | pa.StructType, at: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    """The places (member names, ``[]`` for a list's items) Arrow read as timestamps."""
    found: list[tuple[str, ...]] = []
    for field in schema:
        type_, path = field.type, (*at, field.name)
        while pa.types.is_list(type_):
            type_, path = type_.value_type, (*path, "[]")
        if pa.types.is_timestamp(type_):
            found.append(path)
        elif pa.types.is_struct(type_):
            found += _timestamp_paths(type_, path)
    return found


def _schema_of(paths: frozenset[tuple[str, ...]]) -> pa.Schema:
    """A schema of the places ``paths``, each text."""

    def node(prefixes: list[tuple[str, ...]]) -> list[pa.Field]:
        fields = []
        for name in sorted({p[0] for p in prefixes}):
            rests = [p[1:] for p in prefixes if p[0] == name]
            fields.append(pa.field(name, typed(rests)))
        return fields

    def typed(rests: list[tuple[str, ...]]) -> pa.DataType:
        if any(not rest for rest in rests):
            return pa.string()
        if all(rest[0] == "[]" for rest in rests):
            return pa.list_(typed([rest[1:] for rest in rests]))
        return pa.struct(node([rest for rest in rests if rest[0] != "[]"]))

    return pa.schema(node(list(paths)))


def _hinted_null(table: pa.Table, hint: frozenset[tuple[str, ...]]) -> bool:
    """Whether a place given as text is null in every row (a member the batch has not,
    which the hint would add as nulls)."""
    for path in hint:
        column: Any = table.column(path[0])
        for name in path[1:]:
            column = pc.list_flatten(column) if name == "[]" else member(column, name)
        if column.null_count == len(column):
            return True
    return False


def looked_at_closer(texts: pa.Array) -> np.ndarray:
    """Messages to read one at a time: those whose text ``load_exact`` would look at
    closer (a number a double may change, or beyond 64 bits; an escaped surrogate), that
    are no UTF-8, that spell a name with an escape (which the patterns of names do not
    see), or that hold the start of another document after their own (``}{``: Arrow
    reads the joined batch as documents, not lines, and would give them other messages'
    rows), or that may nest deeper than Arrow's reader reads safely (:func:`too_deep`)."""
    found: np.ndarray = ~_utf8(texts) | too_deep(texts)
    found |= wire.mask(pc.match_substring_regex(texts, json_codec.CLOSER_LOOK))
    for pattern in (ESCAPE, SECOND_DOCUMENT):  # (apart, each is found by its literal)
        found |= wire.mask(pc.match_substring_regex(texts, pattern))
    return found


def _utf8(texts: pa.Array) -> np.ndarray:
    """Which messages are valid UTF-8 (Arrow's reader takes strings that are not)."""
    try:
        texts.cast(pa.string())
    except pa.ArrowInvalid:
        valid = np.ones(len(texts), dtype=bool)
        for n, text in enumerate(texts.to_pylist()):
            try:
                text.decode("utf-8")
            except UnicodeDecodeError:
                valid[n] = False
        return valid
    return np.ones(len(texts), dtype=bool)


def flat_row(type_: pa.DataType) -> bool:
    return pa.types.is_struct(type_) and all(f.type in FLAT for f in type_)


def row_type(types: list[pa.DataType]) -> pa.StructType | None:
    """The one row type of the images (Arrow types ``before`` and ``after`` apart): each
    column of either, typed where either has values; ``None`` if they type one otherwise."""
    fields: dict[str, pa.DataType] = {}
    for type_ in types:
        if not pa.types.is_struct(type_):
            continue
        for field in type_:
            known = fields.setdefault(field.name, field.type)
            if pa.types.is_null(known):
                fields[field.name] = field.type
            elif not pa.types.is_null(field.type) and field.type != known:
                return None
    if not fields:
        return None
    return pa.struct([pa.field(name, type_) for name, type_ in fields.items()])


def lacks(type_: pa.DataType, other: pa.DataType) -> bool:
    """Whether image type ``type_`` lacks a column the other image's type has."""
    if not pa.types.is_struct(other):
        return False
    names = {f.name for f in type_} if pa.types.is_struct(type_) else set()
    return any(f.name not in names for f in other)


def as_row(image: pa.Array, row_type: pa.StructType) -> pa.Array:
    """An image column as ``row_type`` (a column it has not is null: rows holding such an
    image are not taken)."""
    if not pa.types.is_struct(image.type):
        return pa.nulls(len(image), row_type)
    names = {f.name for f in image.type}
    children = [
        member(image, f.name).cast(f.type) if f.name in names else pa.nulls(len(image), f.type)
        for f in row_type
    ]
    return pa.StructArray.from_arrays(
        children, fields=list(row_type), mask=pc.invert(image.is_valid())
    )


def misfits(
    texts: pa.Array, objects: list[pa.Array], besides: set[str], rows: np.ndarray
) -> np.ndarray:
    """Messages among ``rows`` whose ``objects`` (struct columns of flat columns; others
    are none) have a member left out, an integer in a column of doubles, a NaN or an
    Infinity; ``besides``: every member name the messages hold outside those objects."""
    bad = np.zeros(len(texts), dtype=bool)
    typed = [o for o in objects if pa.types.is_struct(o.type)]
    for obj in typed:
        bad |= non_finite(obj)  # NaN, Infinity: Arrow reads them, JSON has none
    names = sorted({f.name for o in typed for f in o.type})
    counted = [n for n in names if n not in besides and SPELT.match(n)]
    nulls = np.zeros(len(texts), dtype=np.int64)
    unsure = np.zeros(len(texts), dtype=bool)
    doubles: list[str] = []
    integral = np.zeros(len(texts), dtype=bool)  # a double of a whole value: written so?
    for obj in typed:
        present = wire.mask(obj.is_valid())
        if not obj.type.num_fields:
            unsure |= present
        for field in obj.type:
            null = present & wire.mask(member(obj, field.name).is_null())
            if field.name in counted:
                nulls += null
            else:
                unsure |= null
            if field.type == pa.float64():
                values = member(obj, field.name)
                whole = present & ~null & wire.mask(pc.equal(values, pc.trunc(values)))
                if field.name in counted:
                    doubles.append(field.name)
                    integral |= whole
                else:
                    unsure |= whole
    bad |= unsure
    check = np.flatnonzero((nulls > 0) & rows & ~bad)
    if len(check):
        found = pc.count_substring_regex(texts.take(pa.array(check)), members(counted, "null"))
        bad[check] = np.asarray(found) != nulls[check]
    check = np.flatnonzero(integral & rows & ~bad)
    if doubles and len(check):
        integer = members(sorted(set(doubles)), "-?[0-9]+\\s*[,}]")
        found = pc.match_substring_regex(texts.take(pa.array(check)), integer)
        bad[check] |= wire.mask(found)
    return bad


def map_column(names: list[str], values: list[pa.Array], has: np.ndarray) -> pa.MapArray:
    """A metadata map column of the members ``names`` (each row's value in ``values``)
    each row ``has`` (a row per record, a column per name), row by row in name order (a
    map's order is no part of a record)."""
    count = has.shape[0]
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(has.sum(axis=1), out=offsets[1:])
    if not names:
        none = pa.array([], pa.string())
        return pa.MapArray.from_arrays(pa.array(offsets), none, none, type=_METADATA)
    rows_of, columns_of = np.nonzero(has)
    keys = pa.array(names, pa.string()).take(pa.array(columns_of))
    flat = pa.concat_arrays(values).take(pa.array(columns_of * count + rows_of))
    return pa.MapArray.from_arrays(pa.array(offsets), keys, flat, type=_METADATA)
