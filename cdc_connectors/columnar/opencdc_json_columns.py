"""OpenCDC JSON records read as columns by Arrow's JSON reader, where the columns hold
exactly what the per-message reading gives.

:class:`RecordColumnsReader` reads a batch of ``opencdc-json`` messages together, and
takes a record when its key and images are flat rows (integers, doubles, text, booleans)
or its key is raw, and nothing in its text would be read otherwise one message at a time
(:func:`~cdc_connectors.opencdc.json_codec.load_exact`, then ``record_from_obj``):

- numbers a double would change or beyond 64 bits (the text that makes ``load_exact``
  look closer at a number, found over the whole batch as it finds it in one message);
- a member of a key or image left out (Arrow reads it as a null): told from the text,
  which has a ``"name": null`` member for each null the record holds (:func:`members`);
- an integer in a column of doubles (OpenCDC JSON tells ``1`` from ``1.0``);
- a metadata value that is null, an operation other than the four names, a position or
  raw key that is no strict base64, escapes of surrogates (orjson refuses lone ones),
  text that is no UTF-8 (Arrow's reader takes it in strings), ``NaN`` and ``Infinity``
  (which Arrow's reader takes too).

A batch Arrow cannot read together, or whose records hold more than flat rows (nested
values, arrays, members beside the record's own), is left whole to
:class:`~cdc_connectors.columnar.flat_changes.FlatChanges`, which reads one message at a
time; so are the records this reader does not take.
"""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.confluent_frames import non_finite
from cdc_connectors.opencdc import json_codec
from cdc_connectors.spark.arrow_names import names_are_text
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA

__all__ = ["RecordColumns", "RecordColumnsReader", "members"]

# One thread: a Spark Python worker has one core.
_READ_OPTIONS = pajson.ReadOptions(block_size=1 << 20, use_threads=False)
_TOP = frozenset(("position", "operation", "metadata", "key", "payload"))
_IMAGES = ("before", "after")
_OPERATIONS = pa.array(["create", "update", "delete", "snapshot"], pa.string())
_KINDS: dict[pa.DataType, type | None] = {
    pa.int64(): int,
    pa.float64(): float,
    pa.string(): str,
    pa.bool_(): bool,
    pa.null(): None,
}
_METADATA = OPENCDC_ARROW_SCHEMA.field("metadata").type
# Names a pattern holds (dots and dashes escaped); others are told one message at a time.
_SPELT = re.compile(r"[A-Za-z0-9_.\-]+\Z")


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


class RecordColumnsReader:
    """Batches of ``opencdc-json`` messages -> :class:`RecordColumns` (module docstring).
    The types read last are given to the next read, so that text Arrow would take for a
    timestamp stays text and a batch is read once."""

    def __init__(self, raw_as_string: bool = False):
        self.raw_as_string = raw_as_string
        self._schema: pa.Schema | None = None

    def read(self, values: pa.Array, places: pa.Array) -> RecordColumns | None:
        """The records of ``values`` the columns hold (``places``: each message's place,
        the position of a record without one); ``None`` when none."""
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        rows = np.flatnonzero(wire.mask(pc.starts_with(values, "{")))
        if not len(rows):
            return None
        texts = values.take(pa.array(rows))
        plain = ~_looked_at_closer(texts)
        if not plain.all():
            rows, texts = rows[plain], texts.filter(pa.array(plain))
        if not len(rows):
            return None
        table = self._table(texts)
        if table is None or not _flat(table.schema):
            return None
        return self._taken(rows, texts, table, places)

    def _table(self, texts: pa.Array) -> pa.Table | None:
        """The batch as Arrow reads it: by the types of the last batch where they serve,
        else as inferred (text read as timestamps read again as text)."""
        count = len(texts)
        joined = pc.binary_join(
            pa.ListArray.from_arrays(pa.array([0, count], pa.int32()), texts), b"\n"
        )
        text = joined[0].as_buffer()
        for schema in (self._schema, None):
            options = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
            try:
                table = pajson.read_json(text, read_options=_READ_OPTIONS, parse_options=options)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
            if table.num_rows != count or not names_are_text(table.schema):
                return None
            as_text = _timestamps_as_text(table.schema)
            if as_text != table.schema:
                try:
                    table = pajson.read_json(
                        text,
                        read_options=_READ_OPTIONS,
                        parse_options=pajson.ParseOptions(
                            explicit_schema=as_text, unexpected_field_behavior="infer"
                        ),
                    )
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    return None
            self._schema = table.schema
            return table
        return None

    def _taken(
        self, rows: np.ndarray, texts: pa.Array, table: pa.Table, places: pa.Array
    ) -> RecordColumns | None:
        count = len(rows)
        columns = {name: table.column(name).combine_chunks() for name in table.column_names}
        keep = np.ones(count, dtype=bool)
        operation = columns.get("operation", pa.nulls(count, pa.string()))
        if operation.type != pa.string():
            return None
        keep &= wire.mask(pc.is_in(operation, _OPERATIONS))
        payload = columns.get("payload")
        images = [_image(payload, name, count) for name in _IMAGES]
        metadata = columns.get("metadata")
        key = columns.get("key")
        structured = key is not None and pa.types.is_struct(key.type)
        objects = [*images, *([key] if structured else [])]
        if structured:
            assert key is not None
            keep &= wire.mask(key.is_valid())  # no key among structured ones: written apart
        keep &= ~_misfits(texts, objects, metadata, keep)
        for obj in objects:
            if pa.types.is_struct(obj.type):
                keep &= ~non_finite(obj)  # NaN, Infinity: Arrow reads them, JSON has none
        for image, other in ((images[0], images[1]), (images[1], images[0])):
            if _lacks(image.type, other.type):
                keep &= ~wire.mask(image.is_valid())  # of columns the other one has not
        if metadata is not None and metadata.type.num_fields:
            keep &= ~_null_metadata(texts, metadata, keep)
        positions = _base64(columns.get("position"), keep, strict=True)
        raw_keys = None
        if not structured:
            raw_keys = _base64(key, keep, strict=not self.raw_as_string)
        taken = np.flatnonzero(keep)
        if not len(taken):
            return None
        pick = pa.array(taken)
        batch_places = places.take(pa.array(rows[taken])).to_pylist()
        position = pa.array(
            [
                found or place  # none, or empty: the message's place
                for found, place in zip([positions[n] for n in taken], batch_places, strict=True)
            ],
            pa.binary(),
        )
        row_type = _row_type([image.type for image in images])
        if row_type is None or not row_type.num_fields:
            return None
        batch = pa.RecordBatch.from_arrays(
            [
                position,
                operation.take(pick),
                _map(metadata, taken),
                *(_as_row(image, row_type).take(pick) for image in images),
            ],
            names=["position", "operation", "metadata", *_IMAGES],
        )
        row_kinds = tuple((f.name, _KINDS[f.type]) for f in row_type)
        if structured:
            assert key is not None
            if not key.type.num_fields:
                return None
            key_kinds = tuple((f.name, _KINDS[f.type]) for f in key.type)
            return RecordColumns(rows[taken], batch, row_kinds, key.take(pick), key_kinds, None)
        assert raw_keys is not None
        return RecordColumns(
            rows[taken], batch, row_kinds, None, None, [raw_keys[n] for n in taken]
        )


def _looked_at_closer(texts: pa.Array) -> np.ndarray:
    """Messages whose text ``load_exact`` would look at closer (a number a double may
    change, or beyond 64 bits; an escaped surrogate), or that are no UTF-8."""
    found: np.ndarray = ~_utf8(texts)
    found |= wire.mask(pc.match_substring_regex(texts, json_codec.CLOSER_LOOK))
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


def _timestamps_as_text(schema: pa.Schema) -> pa.Schema:
    """``schema`` with text Arrow read as timestamps typed as text, at any depth."""

    def typed(type_: pa.DataType) -> pa.DataType:
        if pa.types.is_timestamp(type_):
            return pa.string()
        if pa.types.is_struct(type_):
            return pa.struct([f.with_type(typed(f.type)) for f in type_])
        return type_

    return pa.schema([f.with_type(typed(f.type)) for f in schema])


def _flat(schema: pa.Schema) -> bool:
    """Whether the records hold only what the columns write: the record's own members,
    text position and operation, text metadata, a payload of images, images and a
    structured key of flat columns (or a raw key)."""
    if not set(schema.names) <= _TOP:
        return False
    for name in ("position", "operation"):
        if name in schema.names and schema.field(name).type not in (pa.string(), pa.null()):
            return False
    if "metadata" in schema.names:
        type_ = schema.field("metadata").type
        if not pa.types.is_null(type_) and not (
            pa.types.is_struct(type_) and all(f.type in (pa.string(), pa.null()) for f in type_)
        ):
            return False
    if "key" in schema.names:
        type_ = schema.field("key").type
        if type_ not in (pa.string(), pa.null()) and not _row(type_):
            return False
    if "payload" in schema.names:
        type_ = schema.field("payload").type
        if pa.types.is_null(type_):
            return True
        if not pa.types.is_struct(type_) or not {f.name for f in type_} <= set(_IMAGES):
            return False
        return all(pa.types.is_null(f.type) or _row(f.type) for f in type_)
    return True


def _row(type_: pa.DataType) -> bool:
    return pa.types.is_struct(type_) and all(f.type in _KINDS for f in type_)


def _image(payload: pa.Array | None, name: str, count: int) -> pa.Array:
    """A payload's image column (nulls where the payload or image is none)."""
    if payload is None or pa.types.is_null(payload.type):
        return pa.nulls(count)
    if payload.type.get_field_index(name) < 0:
        return pa.nulls(count)
    return pc.struct_field(payload, name)


def _row_type(types: list[pa.DataType]) -> pa.StructType | None:
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


def _lacks(type_: pa.DataType, other: pa.DataType) -> bool:
    """Whether image type ``type_`` lacks a column the other image's type has."""
    if not pa.types.is_struct(other):
        return False
    names = {f.name for f in type_} if pa.types.is_struct(type_) else set()
    return any(f.name not in names for f in other)


def _as_row(image: pa.Array, row_type: pa.StructType) -> pa.Array:
    """An image column as ``row_type`` (a column it has not is null: rows holding such an
    image are not taken)."""
    if not pa.types.is_struct(image.type):
        return pa.nulls(len(image), row_type)
    names = {f.name for f in image.type}
    children = [
        pc.struct_field(image, f.name).cast(f.type)
        if f.name in names
        else pa.nulls(len(image), f.type)
        for f in row_type
    ]
    return pa.StructArray.from_arrays(
        children, fields=list(row_type), mask=pc.invert(image.is_valid())
    )


def _misfits(
    texts: pa.Array, objects: list[pa.Array], metadata: pa.Array | None, rows: np.ndarray
) -> np.ndarray:
    """Records with a member of a key or image left out, or an integer in a column of
    doubles, among ``rows`` (module docstring)."""
    bad = np.zeros(len(texts), dtype=bool)
    typed = [o for o in objects if pa.types.is_struct(o.type)]
    names = sorted({f.name for o in typed for f in o.type})
    besides = set(_TOP) | set(_IMAGES)
    if metadata is not None and pa.types.is_struct(metadata.type):
        besides |= {f.name for f in metadata.type}
    counted = [n for n in names if n not in besides and _SPELT.match(n)]
    nulls = np.zeros(len(texts), dtype=np.int64)
    unsure = np.zeros(len(texts), dtype=bool)
    doubles: list[str] = []
    integral = np.zeros(len(texts), dtype=bool)  # a double of a whole value: written so?
    for obj in typed:
        present = wire.mask(obj.is_valid())
        if not obj.type.num_fields:
            unsure |= present
        for field in obj.type:
            null = present & wire.mask(pc.struct_field(obj, field.name).is_null())
            if field.name in counted:
                nulls += null
            else:
                unsure |= null
            if field.type == pa.float64():
                values = pc.struct_field(obj, field.name)
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


def _null_metadata(texts: pa.Array, metadata: pa.Array, rows: np.ndarray) -> np.ndarray:
    """Records whose metadata has a null value (the per-message way refuses one), or may
    have: a null Arrow read of a member that may be left out or null."""
    present = wire.mask(metadata.is_valid())
    nulls = np.zeros(len(texts), dtype=bool)
    unsure = np.zeros(len(texts), dtype=bool)
    spelt = []
    for field in metadata.type:
        null = present & wire.mask(pc.struct_field(metadata, field.name).is_null())
        if _SPELT.match(field.name):
            nulls |= null
            spelt.append(field.name)
        else:
            unsure |= null
    bad = unsure.copy()
    check = np.flatnonzero(nulls & rows & ~bad)
    if len(check):
        found = pc.match_substring_regex(texts.take(pa.array(check)), members(spelt, "null"))
        bad[check] = wire.mask(found)
    return bad


def _base64(column: pa.Array | None, rows: np.ndarray, *, strict: bool) -> list[bytes | None]:
    """Each text of ``column`` decoded from base64 (``strict``: refused unless strict
    base64; else the text's UTF-8), ``None`` where there is none; ``rows`` loses those
    refused."""
    count = len(rows)
    if column is None or pa.types.is_null(column.type):
        return [None] * count
    found: list[bytes | None] = []
    for n, text in enumerate(column.to_pylist()):
        if text is None or not rows[n]:
            found.append(None)
        elif not strict:
            found.append(text.encode("utf-8"))
        else:
            try:
                found.append(binascii.a2b_base64(text, strict_mode=True))
            except (binascii.Error, ValueError):
                rows[n] = False
                found.append(None)
    return found


def _map(metadata: pa.Array | None, taken: np.ndarray) -> pa.MapArray:
    """The metadata of the ``taken`` records as a map of their members (none for nulls)."""
    count = len(taken)
    if metadata is None or pa.types.is_null(metadata.type) or not metadata.type.num_fields:
        return pa.MapArray.from_arrays(
            pa.array(np.zeros(count + 1, dtype=np.int32)),
            pa.array([], pa.string()),
            pa.array([], pa.string()),
            type=_METADATA,
        )
    metadata = metadata.take(pa.array(taken))
    present = wire.mask(metadata.is_valid())
    names = [f.name for f in metadata.type]
    values = [pc.struct_field(metadata, name).cast(pa.string()) for name in names]
    has = np.stack([wire.mask(v.is_valid()) & present for v in values], axis=1)
    sizes = has.sum(axis=1)
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    # entries row by row, in name order within a row (a map's order is no part of a record)
    rows_of, columns_of = np.nonzero(has)
    keys = pa.array(names, pa.string()).take(pa.array(columns_of))
    flat = pa.concat_arrays(values).take(pa.array(columns_of * count + rows_of))
    return pa.MapArray.from_arrays(pa.array(offsets), keys, flat, type=_METADATA)
