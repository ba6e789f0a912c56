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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.flat_json import (
    FLAT,
    SPELT,
    JsonBatchReader,
    RecordColumns,
    as_row,
    flat_row,
    lacks,
    looked_at_closer,
    map_column,
    members,
    misfits,
    row_type,
)
from cdc_connectors.spark.arrow_names import member

__all__ = ["RecordColumns", "RecordColumnsReader"]

_TOP = frozenset(("position", "operation", "metadata", "key", "payload"))
_IMAGES = ("before", "after")
_OPERATIONS = pa.array(["create", "update", "delete", "snapshot"], pa.string())


class RecordColumnsReader:
    """Batches of ``opencdc-json`` messages -> :class:`RecordColumns` (module docstring).
    The types read last are given to the next read, so that text Arrow would take for a
    timestamp stays text and a batch is read once."""

    def __init__(self, raw_as_string: bool = False):
        self.raw_as_string = raw_as_string
        self._batch = JsonBatchReader()

    def read(self, values: pa.Array, places: pa.Array) -> RecordColumns | None:
        """The records of ``values`` the columns hold (``places``: each message's place,
        the position of a record without one); ``None`` when none."""
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        rows = np.flatnonzero(wire.mask(pc.starts_with(values, "{")))
        if not len(rows):
            return None
        texts = values.take(pa.array(rows))
        plain = ~looked_at_closer(texts)
        if not plain.all():
            rows, texts = rows[plain], texts.filter(pa.array(plain))
        if not len(rows):
            return None
        table = self._batch.read(texts)
        if table is None or not _flat(table.schema):
            return None
        return self._taken(rows, texts, table, places)

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
        besides = set(_TOP) | set(_IMAGES)
        if metadata is not None and pa.types.is_struct(metadata.type):
            besides |= {f.name for f in metadata.type}
        keep &= ~misfits(texts, objects, besides, keep)
        for image, other in ((images[0], images[1]), (images[1], images[0])):
            if lacks(image.type, other.type):
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
        row = row_type([image.type for image in images])
        if row is None or not row.num_fields:
            return None
        batch = pa.RecordBatch.from_arrays(
            [
                position,
                operation.take(pick),
                _map(metadata, taken),
                *(as_row(image, row).take(pick) for image in images),
            ],
            names=["position", "operation", "metadata", *_IMAGES],
        )
        row_kinds = tuple((f.name, FLAT[f.type]) for f in row)
        if structured:
            assert key is not None
            if not key.type.num_fields:
                return None
            key_kinds = tuple((f.name, FLAT[f.type]) for f in key.type)
            return RecordColumns(rows[taken], batch, row_kinds, key.take(pick), key_kinds, None)
        assert raw_keys is not None
        return RecordColumns(
            rows[taken], batch, row_kinds, None, None, [raw_keys[n] for n in taken]
        )


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
        if type_ not in (pa.string(), pa.null()) and not flat_row(type_):
            return False
    if "payload" in schema.names:
        type_ = schema.field("payload").type
        if pa.types.is_null(type_):
            return True
        if not pa.types.is_struct(type_) or not {f.name for f in type_} <= set(_IMAGES):
            return False
        return all(pa.types.is_null(f.type) or flat_row(f.type) for f in type_)
    return True


def _image(payload: pa.Array | None, name: str, count: int) -> pa.Array:
    """A payload's image column (nulls where the payload or image is none)."""
    if payload is None or pa.types.is_null(payload.type):
        return pa.nulls(count)
    if payload.type.get_field_index(name) < 0:
        return pa.nulls(count)
    return member(payload, name)


def _null_metadata(texts: pa.Array, metadata: pa.Array, rows: np.ndarray) -> np.ndarray:
    """Records whose metadata has a null value (the per-message way refuses one), or may
    have: a null Arrow read of a member that may be left out or null."""
    present = wire.mask(metadata.is_valid())
    nulls = np.zeros(len(texts), dtype=bool)
    unsure = np.zeros(len(texts), dtype=bool)
    spelt = []
    for field in metadata.type:
        null = present & wire.mask(member(metadata, field.name).is_null())
        if SPELT.match(field.name):
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
        return map_column([], [], np.zeros((count, 0), dtype=bool))
    metadata = metadata.take(pa.array(taken))
    present = wire.mask(metadata.is_valid())
    names = [f.name for f in metadata.type]
    values = [member(metadata, name).cast(pa.string()) for name in names]
    has = np.stack([wire.mask(v.is_valid()) & present for v in values], axis=1)
    return map_column(names, values, has)
