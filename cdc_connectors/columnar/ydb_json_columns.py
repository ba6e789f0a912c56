"""YDB changefeed records (``ydb-json``) read as columns by Arrow's JSON reader, where the
columns hold exactly what :meth:`~cdc_connectors.formats.ydb.YdbJsonFormat.decode` gives.

:class:`YdbColumnsReader` reads a batch of records together, for a format whose
``key.columns`` name the key's columns, and takes a record when it has what the format
asks of its mode (one operation member, the images the mode carries, an empty operation
where images are sent, a ``ts`` of two unsigned integers), its key has one value of the
batch's kind per key column, its images (and an ``update``'s or ``reset``'s columns, in
``UPDATES`` mode) are flat rows without a key column, and its text holds nothing read
otherwise one record at a time (:mod:`~cdc_connectors.columnar.flat_json`: numbers a
double would change, members left out, integers among doubles). ``null`` as an operation,
image or ``ts`` (which the format refuses) and ``resolved`` records go the other way, as
does a batch Arrow cannot read together or whose records hold more than flat rows.
"""

from __future__ import annotations

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
from cdc_connectors.formats.ydb import IMAGE_MODES, OPERATIONS, YdbJsonFormat
from cdc_connectors.opencdc import keys
from cdc_connectors.spark.arrow_names import member

__all__ = ["YdbColumnsReader"]

_IMAGES = ("oldImage", "newImage")
_TOP = frozenset(("key", *OPERATIONS, *_IMAGES, "ts"))
_INT64_MAX = 2**63 - 1
_NS_PER_MS = 1_000_000
#: Where an image's or changed columns' rows are, and their struct column.
Part = tuple[np.ndarray, pa.Array]
# Members the format refuses as null (a pattern tells them from members left out).
_NULLS = members(sorted((*OPERATIONS, *_IMAGES, "ts")), "null")


class YdbColumnsReader:
    """Batches of ``ydb-json`` records -> :class:`RecordColumns` (module docstring)."""

    def __init__(self, fmt: YdbJsonFormat):
        assert fmt.key_columns is not None
        self.fmt = fmt
        self.key_columns: tuple[str, ...] = fmt.key_columns
        self._batch = JsonBatchReader()

    def read(self, values: pa.Array, places: pa.Array, read_at: str) -> RecordColumns | None:
        """The records of ``values`` the columns hold (``places``: each message's place,
        its record's position; ``read_at``: the batch's read time); ``None`` when none."""
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        candidate = wire.mask(pc.starts_with(values, "{"))
        candidate &= ~wire.mask(pc.match_substring(values, '"resolved"'))
        rows = np.flatnonzero(candidate)
        if not len(rows):
            return None
        texts = values.take(pa.array(rows))
        plain = ~looked_at_closer(texts) & ~wire.mask(pc.match_substring_regex(texts, _NULLS))
        if not plain.all():
            rows, texts = rows[plain], texts.filter(pa.array(plain))
        if not len(rows):
            return None
        table = self._batch.read(texts)
        if table is None or not set(table.schema.names) <= _TOP:
            return None
        columns = {name: table.column(name).combine_chunks() for name in table.column_names}
        return self._taken(rows, texts, columns, places, read_at)

    def _taken(
        self,
        rows: np.ndarray,
        texts: pa.Array,
        columns: dict[str, pa.Array],
        places: pa.Array,
        read_at: str,
    ) -> RecordColumns | None:
        count = len(rows)
        mode = self.fmt.mode
        none = np.zeros(count, dtype=bool)
        found = self._key_values(columns.get("key"), count)
        if found is None:
            return None
        keep, key_arrays = found
        ops = {name: columns[name] for name in OPERATIONS if name in columns}
        images = [columns.get(name, pa.nulls(count)) for name in _IMAGES]
        if not all(_object(column.type) for column in (*ops.values(), *images)):
            return None
        present = {name: wire.mask(column.is_valid()) for name, column in ops.items()}
        keep &= sum((mask.astype(np.int64) for mask in present.values()), np.zeros(count)) == 1
        erase = present.get("erase", none)
        old, new = (wire.mask(image.is_valid()) for image in images)
        keep &= ~self._against_mode(texts, ops, present, old, new)
        stamps = _stamps(columns.get("ts"), keep)
        if stamps is None:
            return None
        # the rows: the images, and where none is sent the changed columns (but KEYS_ONLY)
        changing = ~erase & ~old & ~new & (mode not in IMAGE_MODES) & (mode != "KEYS_ONLY")
        # an update's or reset's columns are a row only where no image is sent
        changed = {
            name: _masked(column, present[name] & changing)
            for name, column in ops.items()
            if name != "erase" and (present[name] & changing & keep).any()
        }
        objects = [*images, *changed.values()]
        keep &= ~self._key_columns_in(texts, objects)
        row = row_type([obj.type for obj in objects if _fields(obj.type)])
        if row is None:
            if any(_fields(obj.type) for obj in objects):
                return None  # a column of two kinds
            row = pa.struct([])
        row = pa.struct([f for f in row if f.name not in self.key_columns])
        before_parts = [(old, images[0])]
        after_parts = [(new, images[1])]
        after_parts += [(wire.mask(column.is_valid()), column) for column in changed.values()]
        for where, column in (*before_parts, *after_parts):
            if lacks(column.type, row):
                keep &= ~where  # a row of fewer columns than the others: one at a time
        rows_of = [_without(o, self.key_columns) for o in objects if _fields(o.type)]
        keep &= ~misfits(texts, rows_of, set(_TOP), keep)
        taken = np.flatnonzero(keep)
        if not len(taken):
            return None
        update = present.get("update", none)
        with_images = old | new | (mode in IMAGE_MODES)
        created = ~erase & with_images & (mode == "NEW_AND_OLD_IMAGES") & ~old
        operation = np.where(erase, "delete", np.where(created, "create", "update"))
        return self._records(
            rows[taken],
            taken,
            places,
            key_arrays,
            (row, before_parts, after_parts),
            operation[taken],
            self._metadata(
                [s.take(pa.array(taken)) for s in stamps], (changing & update)[taken], read_at
            ),
        )

    def _against_mode(
        self,
        texts: pa.Array,
        ops: dict[str, pa.Array],
        present: dict[str, np.ndarray],
        old: np.ndarray,
        new: np.ndarray,
    ) -> np.ndarray:
        """Records the format refuses in its mode (``YdbJsonFormat.check_shape``)."""
        mode = self.fmt.mode
        refused = np.zeros(len(texts), dtype=bool)
        erase = present.get("erase", np.zeros(len(texts), dtype=bool))
        # an operation that may hold columns (Arrow reads an empty one and one of nulls
        # alike) only where they are the change
        flag_only = old | new | (mode in IMAGE_MODES) | (mode == "KEYS_ONLY")
        for name, column in ops.items():
            flag = present[name] & (flag_only | (name == "erase"))
            if _fields(column.type) and flag.any():
                refused |= flag & _holds_columns(texts, column)
        refused |= erase & new
        if mode in ("UPDATES", "KEYS_ONLY"):
            refused |= old | new
        if mode == "NEW_IMAGE":
            refused |= old
        if mode == "OLD_IMAGE":
            refused |= new
        if mode in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES"):
            refused |= ~(erase | new)
        return refused

    def _records(
        self,
        rows: np.ndarray,
        taken: np.ndarray,
        places: pa.Array,
        key_arrays: list[pa.Array],
        images: tuple[pa.StructType, list[Part], list[Part]],
        operation: np.ndarray,
        metadata: pa.MapArray,
    ) -> RecordColumns:
        """The ``taken`` records (their ``rows`` in the batch): the key columns first in
        each image, as the format adds them."""
        row, before_parts, after_parts = images
        key_fields = [
            pa.field(name, values.type)
            for name, values in zip(self.key_columns, key_arrays, strict=True)
        ]
        full = pa.struct([*key_fields, *row])
        pick = pa.array(taken)
        batch = pa.RecordBatch.from_arrays(
            [
                places.take(pa.array(rows)).cast(pa.binary()),
                pa.array(operation, pa.string()),
                metadata,
                _chosen(key_arrays, before_parts, row, full).take(pick),
                _chosen(key_arrays, after_parts, row, full).take(pick),
            ],
            names=["position", "operation", "metadata", "before", "after"],
        )
        keys_struct = pa.StructArray.from_arrays(
            [values.take(pick) for values in key_arrays], fields=key_fields
        )
        return RecordColumns(
            rows,
            batch,
            tuple((f.name, FLAT[f.type]) for f in full),
            keys_struct,
            tuple((f.name, FLAT[f.type]) for f in key_fields),
            None,
        )

    def _metadata(self, stamps: list[pa.Array], partial: np.ndarray, read_at: str) -> pa.MapArray:
        """Each record's metadata: the format's own, ``ts``'s, the read time, partial."""
        count = len(partial)
        names, values, has = [keys.VERSION], [_constant(keys.OPENCDC_VERSION, count)], []
        has.append(np.ones(count, dtype=bool))
        if self.fmt.collection is not None:
            names.append(keys.COLLECTION)
            values.append(_constant(self.fmt.collection, count))
            has.append(np.ones(count, dtype=bool))
        for name, column in zip(("ydb.step", "ydb.txId", keys.CREATED_AT), stamps, strict=True):
            names.append(name)
            values.append(column)
            has.append(wire.mask(column.is_valid()))
        names += [keys.READ_AT, "ydb.partial"]
        values += [_constant(read_at, count), _constant("true", count)]
        has += [np.ones(count, dtype=bool), partial]
        return map_column(names, values, np.stack(has, axis=1))

    def _key_columns_in(self, texts: pa.Array, objects: list[pa.Array]) -> np.ndarray:
        """Records with a key column in a row (checked against the key one at a time): a
        value Arrow read, or a ``"column": null`` in the text where it read a null."""
        found = np.zeros(len(texts), dtype=bool)
        unsure = np.zeros(len(texts), dtype=bool)
        spelt = []
        for obj in objects:
            present = wire.mask(obj.is_valid())
            for name in set(_fields(obj.type)) & set(self.key_columns):
                null = wire.mask(member(obj, name).is_null())
                found |= present & ~null
                if name in _TOP or not SPELT.match(name):
                    found |= present & null
                else:
                    unsure |= present & null
                    spelt.append(name)
        check = np.flatnonzero(unsure & ~found)
        if len(check):
            nulls = pc.match_substring_regex(
                texts.take(pa.array(check)), members(sorted(set(spelt)), "null")
            )
            found[check] = wire.mask(nulls)
        return found

    def _key_values(
        self, key: pa.Array | None, count: int
    ) -> tuple[np.ndarray, list[pa.Array]] | None:
        """Which records have a key of one value a key column, and each column's values."""
        if key is None or not pa.types.is_list(key.type):
            return None
        item = key.type.value_type
        if item not in FLAT or item in (pa.null(), pa.float64()):
            return None  # (a double key column would hide integers)
        keep = wire.mask(key.is_valid())
        keep &= np.asarray(pc.fill_null(pc.list_value_length(key), 0)) == len(self.key_columns)
        arrays = []
        for n in range(len(self.key_columns)):
            sized = pc.if_else(
                pa.array(keep), key, pa.scalar([None] * len(self.key_columns), key.type)
            )
            value = pc.list_element(sized, n)
            keep &= ~wire.mask(value.is_null())  # a null key value: told one at a time
            arrays.append(value)
        return keep, arrays


def _stamps(ts: pa.Array | None, keep: np.ndarray) -> list[pa.Array] | None:
    """``ydb.step``, ``ydb.txId`` and ``opencdc.createdAt`` texts (null without
    ``ts``); ``keep`` loses records whose ``ts`` the format refuses."""
    count = len(keep)
    if ts is None:
        return [pa.nulls(count, pa.string())] * 3
    if not pa.types.is_list(ts.type) or ts.type.value_type != pa.int64():
        return None
    has = wire.mask(ts.is_valid())
    two = np.asarray(pc.fill_null(pc.list_value_length(ts), 0)) == 2
    keep &= ~has | two
    sized = pc.if_else(pa.array(has & two), ts, pa.scalar([0, 0], ts.type))
    step = np.asarray(pc.fill_null(pc.list_element(sized, 0), -1))
    tx_id = np.asarray(pc.fill_null(pc.list_element(sized, 1), -1))
    fits = (step >= 0) & (tx_id >= 0) & (step <= _INT64_MAX // _NS_PER_MS)
    keep &= ~has | fits
    valid = pa.array(~(has & two & fits))
    step_text = pa.array(step).cast(pa.string())
    created = pa.array(np.where(fits, step, 0) * _NS_PER_MS).cast(pa.string())
    tx_text = pa.array(tx_id).cast(pa.string())
    none = pa.nulls(count, pa.string())
    return [pc.if_else(valid, none, text) for text in (step_text, tx_text, created)]


def _object(type_: pa.DataType) -> bool:
    """Whether a member is read as objects of flat columns (or is null in every record)."""
    return pa.types.is_null(type_) or flat_row(type_)


def _holds_columns(texts: pa.Array, column: pa.StructArray) -> np.ndarray:
    """Which operation objects hold a column: a value Arrow read, or (where it read
    nulls, as it reads an empty object) a ``"name": null`` member in the text, or one it
    cannot tell."""
    found = np.zeros(len(texts), dtype=bool)
    spelt = [f.name for f in column.type if SPELT.match(f.name)]
    for f in column.type:
        found |= ~wire.mask(member(column, f.name).is_null())
    if len(spelt) < column.type.num_fields:
        found |= wire.mask(column.is_valid())
        return found
    check = np.flatnonzero(~found & wire.mask(column.is_valid()))
    if len(check):
        nulls = pc.match_substring_regex(texts.take(pa.array(check)), members(spelt, "null"))
        found[check] = wire.mask(nulls)
    return found


def _masked(column: pa.Array, where: np.ndarray) -> pa.Array:
    """``column`` null but ``where``."""
    if not pa.types.is_struct(column.type):
        return column
    valid = where & wire.mask(column.is_valid())
    children = [member(column, f.name) for f in column.type]
    return pa.StructArray.from_arrays(children, fields=list(column.type), mask=pa.array(~valid))


def _without(obj: pa.StructArray, names: tuple[str, ...]) -> pa.StructArray:
    """``obj`` without its columns ``names`` (records holding them are not taken)."""
    kept = [f for f in obj.type if f.name not in names]
    if len(kept) == obj.type.num_fields:
        return obj
    return pa.StructArray.from_arrays(
        [member(obj, f.name) for f in kept], fields=kept, mask=pc.invert(obj.is_valid())
    )


def _fields(type_: pa.DataType) -> list[str]:
    return [f.name for f in type_] if pa.types.is_struct(type_) else []


def _constant(text: str, count: int) -> pa.Array:
    return pa.array([text] * count, pa.string())


def _chosen(
    key_arrays: list[pa.Array],
    parts: list[tuple[np.ndarray, pa.Array]],
    row: pa.StructType,
    full: pa.StructType,
) -> pa.StructArray:
    """Rows of the first of ``parts`` (where, columns) whose mask holds, with the key
    columns first; null where none does."""
    count = len(key_arrays[0])
    valid = np.zeros(count, dtype=bool)
    children: dict[str, pa.Array] = {f.name: pa.nulls(count, f.type) for f in row}
    for where, columns in reversed(parts):
        if not where.any():
            continue
        rows = as_row(columns, row)
        chosen = pa.array(where)
        for f in row:
            children[f.name] = pc.if_else(chosen, member(rows, f.name), children[f.name])
        valid |= where
    arrays = [*key_arrays, *(children[f.name] for f in list(full)[len(key_arrays) :])]
    return pa.StructArray.from_arrays(arrays, fields=list(full), mask=pa.array(~valid))
