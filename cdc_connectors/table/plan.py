"""The merge planner: a batch of changes and the table's rows of their keys -> what to write.

One planner serves every table format. It is given the changes (:mod:`.layout`, their row
columns already the table's), the table's current rows of the keys they touch and the
tombstones of deleted keys, and says which keys' current rows (and tombstones) are replaced
by which (:class:`Plan`). A writer replaces them in one transaction.

- Changes are applied in their ``(stream, offset)`` order (the input's order between
  equals); a change not past what the table holds of its key (its row, or its tombstone)
  is stale and changes nothing, so a replayed or late older change never undoes a newer one.
- A create, update or snapshot writes the row; columns it leaves unset (``_cdc_unset``) keep
  the value the key had (an earlier change of the batch, else the table's row), and the
  row notes where each of those came from (``_cdc_inherited``: the order of the change that
  gave it, none where the table held no row). A change older than the row that
  arrives late (a stream read out of order) changes nothing of it but the columns it sets
  whose value came from an older change than it or from none, or that the table did not
  hold when the row was written: those take its value (a delete's: none).
- A delete removes the row and leaves a tombstone with its order (``deletes: hard``), or
  keeps the row flagged deleted (``deletes: soft``).
- In ``history`` mode each change is a version of the row: the key's current row is closed
  (``_cdc_valid_to``, no longer current) and the new version added; a delete closes it.

All of it is Arrow compute over *generations*: the first change of every key, then the
second, and so on. Only keys whose changes need it go through more than one generation
(history mode, and a key with unset columns): for the others the last change is all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.table.layout import (
    AT,
    CLOSED_BY,
    CLOSED_BY_TYPE,
    DELETED,
    DELETED_AT,
    DELETES_BEFORE,
    INHERITED,
    INHERITED_TYPE,
    IS_CURRENT,
    OFFSET,
    OP,
    STREAM,
    TIME,
    UNSET,
    VALID_FROM,
    VALID_TO,
)

__all__ = [
    "Deletes",
    "Mode",
    "Plan",
    "bookkeeping_fields",
    "needed",
    "notes_mark",
    "past_held",
    "plan",
    "tombstone_schema",
]

Deletes = Literal["hard", "soft"]
Mode = Literal["upsert", "history"]
_INDEX = "__cdc_index"


@dataclass(frozen=True)
class Plan:
    """What a batch does to a table: the current rows of ``keys`` are replaced by ``rows``,
    their tombstones by ``tombstones``; ``applied`` changes took effect, ``stale`` did not."""

    keys: pa.Table
    rows: pa.Table
    tombstones: pa.Table
    applied: int
    stale: int


def bookkeeping_fields(mode: Mode, deletes: Deletes) -> list[pa.Field]:
    """The columns a table of ``mode`` and ``deletes`` keeps after the row's own (and
    ``_cdc_inherited``, added with the first change that leaves a row columns from before
    it: :func:`~cdc_connectors.table.apply.apply_changes`)."""
    fields = [pa.field(STREAM, pa.string()), pa.field(OFFSET, pa.int64())]
    if mode == "history":
        fields += [
            pa.field(VALID_FROM, TIME),
            pa.field(VALID_TO, TIME),
            pa.field(IS_CURRENT, pa.bool_()),
            pa.field(CLOSED_BY, CLOSED_BY_TYPE),
        ]
    elif deletes == "soft":
        fields += [pa.field(DELETED, pa.bool_()), pa.field(DELETED_AT, TIME)]
    return fields


def tombstone_schema(schema: pa.Schema, keys: Sequence[str]) -> pa.Schema:
    """A table of deleted keys and the order and time of their deletes (in history mode,
    with the deletes before it that closed nothing, once the table notes them)."""
    noted = [schema.field(DELETES_BEFORE)] if DELETES_BEFORE in schema.names else []
    return pa.schema(
        [
            *(schema.field(k) for k in keys),
            schema.field(STREAM),
            schema.field(OFFSET),
            pa.field(AT, TIME),
            *noted,
        ]
    )


def _as_tombstones(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` (changes, or tombstones read back) as tombstones of ``schema``."""
    for field in schema:
        if field.name not in rows.column_names:  # (notes: none)
            rows = rows.append_column(field.name, pa.nulls(rows.num_rows, field.type))
    return rows.select(schema.names).cast(schema)


def plan(
    changes: pa.Table,
    keys: Sequence[str],
    rows: pa.Table,
    tombstones: pa.Table,
    schema: pa.Schema,
    *,
    mode: Mode = "upsert",
    deletes: Deletes = "hard",
) -> Plan:
    """The plan of ``changes`` against a table of ``schema`` (row columns, then its
    bookkeeping) whose current rows of the touched keys are ``rows`` and whose tombstones
    of them are ``tombstones``."""
    state = _State(list(keys), rows, tombstones, schema, mode, deletes)
    state.count(changes)
    state.fill(changes)
    if changes.num_rows:
        for generation in _generations(changes, list(keys), mode, deletes):
            state.apply(generation)
    return state.plan()


def needed(changes: pa.Table, keys: Sequence[str], mode: Mode, deletes: Deletes) -> pa.Table:
    """The changes a merge of ``changes`` needs, in order: of each key its last change, or
    all of them where :func:`plan` goes through them (a task sends only these)."""
    ordered, flat, _place, chosen = _chosen(changes, list(keys), mode, deletes)
    return ordered.take(pa.array(np.sort(flat[chosen]))).drop_columns([_INDEX])


def _generations(
    changes: pa.Table, keys: list[str], mode: Mode, deletes: Deletes
) -> list[pa.Table]:
    """The changes as generations: each holds at most one change of a key, in order."""
    ordered, flat, place, chosen = _chosen(changes, keys, mode, deletes)
    ordered = ordered.drop_columns([_INDEX])
    generations = []
    for number in range(int(place[chosen].max()) + 1 if chosen.any() else 0):
        picked = flat[chosen & (place == number)]
        generations.append(ordered.take(pa.array(np.sort(picked))))
    return generations


def _chosen(
    changes: pa.Table, keys: list[str], mode: Mode, deletes: Deletes
) -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray]:
    """The changes in order, and which of them a merge goes through: the rows of each key
    (``flat``), their place among the key's (``place``, 0 for a key's only one chosen) and
    whether chosen. A key goes through all its changes when one leaves columns unset or,
    with soft deletes, is a delete (whose row keeps the values before it), and in history
    mode; any other key, its last change alone."""
    changes = changes.append_column(_INDEX, pa.array(np.arange(changes.num_rows), pa.int64()))
    ordered = changes.take(
        pc.sort_indices(
            changes, [(STREAM, "ascending"), (OFFSET, "ascending"), (_INDEX, "ascending")]
        )
    )
    ordered = ordered.drop_columns([_INDEX]).append_column(
        _INDEX, pa.array(np.arange(ordered.num_rows), pa.int64())
    )
    grouped = ordered.select([*keys, _INDEX]).group_by(keys, use_threads=False)
    lists = grouped.aggregate([(_INDEX, "list")]).column(f"{_INDEX}_list").combine_chunks()
    flat = np.asarray(lists.flatten())
    parents = np.asarray(pc.list_parent_indices(lists))
    offsets = np.asarray(lists.offsets)
    place = np.arange(len(flat)) - offsets[parents]
    length = np.diff(offsets)[parents]
    last = place == length - 1
    if mode == "upsert":
        partial = np.asarray(
            pc.fill_null(pc.greater(pc.list_value_length(ordered.column(UNSET)), 0), False)
        )
        if deletes == "soft":
            partial |= np.asarray(pc.equal(ordered.column(OP), "delete"), dtype=bool)
        folded_keys = np.zeros(len(lists), dtype=bool)
        folded_keys[parents[partial[flat]]] = True
        folded = folded_keys[parents]
        chosen = folded | last
        place = np.where(folded, place, 0)
    else:
        chosen = np.ones(len(flat), dtype=bool)
    return ordered, flat, place, chosen


def past_held(
    changes: pa.Table, keys: list[str], rows: pa.Table, tombstones: pa.Table
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Whether each change is past what ``rows`` and ``tombstones`` hold of its key; the
    index of the key's row and tombstone (-1: none)."""
    at_row = _lookup(changes, rows, keys)
    at_tomb = _lookup(changes, tombstones, keys)
    row = _take(rows.select([STREAM, OFFSET]), at_row)
    tomb = _take(tombstones.select([STREAM, OFFSET]), at_tomb)
    order = changes.column(STREAM), changes.column(OFFSET)
    newer = _later(*order, row.column(STREAM), row.column(OFFSET))
    past_tomb = _later(*order, tomb.column(STREAM), tomb.column(OFFSET))
    if OP in changes.column_names:
        # the key's delete again, while a row older than it is there (written by another
        # writer between the delete's rows and its tombstone): it removes that row
        again = _same(*order, tomb.column(STREAM), tomb.column(OFFSET)) & (at_row >= 0)
        past_tomb |= again & np.asarray(pc.equal(changes.column(OP), "delete"), dtype=bool)
    return newer & past_tomb, at_row, at_tomb


def _same(
    stream_a: pa.Array, offset_a: pa.Array, stream_b: pa.Array, offset_b: pa.Array
) -> np.ndarray:
    """Whether orders a and b are the same, row by row."""
    same = pc.fill_null(pc.and_(pc.equal(stream_a, stream_b), pc.equal(offset_a, offset_b)), False)
    return np.asarray(same, dtype=bool)


def _later(
    stream_a: pa.Array, offset_a: pa.Array, stream_b: pa.Array, offset_b: pa.Array
) -> np.ndarray:
    """Whether order a is past order b, row by row (a missing b: yes)."""
    past = pc.or_(
        pc.greater(stream_a, stream_b),
        pc.and_(pc.equal(stream_a, stream_b), pc.greater(offset_a, offset_b)),
    )
    return np.asarray(pc.fill_null(pc.or_(pc.is_null(offset_b), past), True), dtype=bool)


def _lookup(left: pa.Table, right: pa.Table, keys: list[str]) -> np.ndarray:
    """For each row of ``left``, the index of its key's row in ``right`` (-1: none)."""
    found = np.full(left.num_rows, -1, dtype=np.int64)
    if right.num_rows == 0 or left.num_rows == 0:
        return found
    lhs = left.select(keys).append_column("__l", pa.array(np.arange(left.num_rows), pa.int64()))
    rhs = right.select(keys).append_column("__r", pa.array(np.arange(right.num_rows), pa.int64()))
    joined = lhs.join(rhs, keys, join_type="left outer", use_threads=False)
    found[joined.column("__l").to_numpy()] = pc.fill_null(joined.column("__r"), -1).to_numpy()
    return found


def _take(table: pa.Table, index: np.ndarray) -> pa.Table:
    """Rows of ``table`` at ``index``, all nulls where it is -1."""
    mask = index < 0
    if table.num_rows == 0:
        return pa.table(
            {f.name: pa.nulls(len(index), f.type) for f in table.schema}, schema=table.schema
        )
    return table.take(pa.array(np.where(mask, 0, index), mask=mask))


def _unset(unset: pa.ChunkedArray | pa.Array, column: str) -> np.ndarray:
    """Rows whose unset list names ``column``."""
    unset = unset.combine_chunks() if isinstance(unset, pa.ChunkedArray) else unset
    mask = np.zeros(len(unset), dtype=bool)
    hits = np.asarray(pc.fill_null(pc.equal(unset.flatten(), column), False), dtype=bool)
    if hits.any():
        mask[np.asarray(pc.list_parent_indices(unset))[hits]] = True
    return mask


def _pair_codes(unset: pa.ListArray, names: list[str]) -> np.ndarray:
    """``row * len(names) + column`` of each column each row's unset list names (names
    that are no column, ``*`` among them, left out)."""
    flat = unset.flatten()
    if not len(flat):
        return np.zeros(0, dtype=np.int64)
    index = pc.index_in(flat, pa.array(names, pa.string()))
    parents = np.asarray(pc.list_parent_indices(unset), dtype=np.int64)
    found = np.asarray(pc.fill_null(index, -1), dtype=np.int64)
    named = found >= 0
    return parents[named] * len(names) + found[named]


def _strings(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A text column as a numpy array of objects (``None`` for nulls)."""
    found = np.empty(len(column), dtype=object)
    found[:] = column.to_pylist()
    return found


def _numbers(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An integer column as numbers (0 for nulls) and which are null."""
    return (
        np.asarray(pc.fill_null(column, 0), dtype=np.int64),
        np.asarray(column.is_null(), dtype=bool),
    )


def _noted(
    notes: pa.Array | pa.ChunkedArray,
    alive: np.ndarray,
    pair_rows: np.ndarray,
    columns: np.ndarray,
    names: list[str],
    came: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``came`` (stream, offset, unknown of each pair) where the row before a pair's change
    is alive and noted the column (its order), or had not the column then (unknown)."""
    stream, offset, unknown = came
    notes = notes.combine_chunks() if isinstance(notes, pa.ChunkedArray) else notes
    if not notes.null_count < len(notes) or not len(pair_rows):
        return came
    width = len(names)
    flat = notes.flatten()
    parents = np.asarray(pc.list_parent_indices(notes), dtype=np.int64)
    index = np.asarray(pc.fill_null(pc.index_in(flat.field("column"), pa.array(names)), -1))
    marks = np.asarray(pc.equal(flat.field("column"), ""), dtype=bool)
    then = np.full(len(notes), width, dtype=np.int64)
    mark_offsets = np.asarray(pc.fill_null(flat.field("offset"), width), dtype=np.int64)
    then[parents[marks]] = mark_offsets[marks]
    partial = np.zeros(len(notes), dtype=bool)
    partial[parents] = True
    stream, offset, unknown = stream.copy(), offset.copy(), unknown.copy()
    from_before = alive[pair_rows] & partial[pair_rows]
    # a column the row before did not hold: unknown
    newer = from_before & (columns >= then[pair_rows])
    unknown[newer] = True
    # a column it noted: its order
    keyed = np.flatnonzero(index >= 0)
    note_codes = parents[keyed] * width + index[keyed]
    order = np.argsort(note_codes, kind="stable")
    note_codes = note_codes[order]
    pair_codes = pair_rows * width + columns
    at = np.searchsorted(note_codes, pair_codes)
    hit = (at < len(note_codes)) & from_before
    hit[hit] = note_codes[at[hit]] == pair_codes[hit]
    if hit.any():
        rows = keyed[order[at[hit]]]
        note_offsets, note_unknown = _numbers(flat.field("offset"))
        stream[hit] = _strings(flat.field("stream"))[rows]
        offset[hit] = note_offsets[rows]
        unknown[hit] = note_unknown[rows]
    return stream, offset, unknown


def notes_mark(columns: int) -> dict[str, object]:
    """The note that a row's change set every column of the table's first ``columns`` it
    does not note otherwise (a later one it did not: the table did not hold it then)."""
    return {"column": "", "stream": None, "offset": columns}


class _State:
    """The table's current rows and tombstones of the touched keys, as changes apply."""

    def __init__(
        self,
        keys: list[str],
        rows: pa.Table,
        tombstones: pa.Table,
        schema: pa.Schema,
        mode: Mode,
        deletes: Deletes,
    ):
        self.keys, self.schema, self.mode, self.deletes = keys, schema, mode, deletes
        self.tomb_schema = tombstone_schema(schema, keys)
        for field in schema:  # columns not read (only the order was needed): nulls
            if rows.num_rows and field.name not in rows.column_names:
                rows = rows.append_column(field.name, pa.nulls(rows.num_rows, field.type))
        self.rows = (
            rows.select(schema.names).cast(schema) if rows.num_rows else schema.empty_table()
        )
        self.tombstones = (
            _as_tombstones(tombstones, self.tomb_schema)
            if tombstones.num_rows
            else self.tomb_schema.empty_table()
        )
        self.closed: list[pa.Table] = []  # history: versions closed by this batch
        self.touched: list[pa.Table] = []
        self.applied = self.stale = 0

    def count(self, changes: pa.Table) -> None:
        """Count the changes the table's rows and tombstones make stale (and the others)."""
        newer = self._newer(changes)[0]
        self.stale, self.applied = int((~newer).sum()), int(newer.sum())

    def fill(self, changes: pa.Table) -> None:
        """Late changes (older than their key's row) give a row written by a partial change
        the columns whose value came from an older change than theirs, or from none, or
        that the table did not hold then (module docstring); each that gives one counts as
        applied."""
        if INHERITED not in self.rows.column_names or not self.rows.num_rows:
            return
        if self.mode == "history":  # (late changes become past versions: .history)
            return
        noting = pc.fill_null(pc.list_value_length(self.rows.column(INHERITED)), 0)
        if not pc.any(pc.greater(noting, 0)).as_py():
            return  # (no row written by a partial change: the common case, at no cost)
        at_row = _lookup(changes, self.rows, self.keys)
        has_notes = np.asarray(noting) > 0
        late = (at_row >= 0) & has_notes[np.maximum(at_row, 0)]
        if not late.any():
            return
        row = _take(self.rows.select([STREAM, OFFSET]), at_row)
        order = changes.column(STREAM), changes.column(OFFSET)
        late &= ~_later(*order, row.column(STREAM), row.column(OFFSET))
        late &= ~_same(*order, row.column(STREAM), row.column(OFFSET))
        if not late.any():
            return
        entries = self.rows.column(INHERITED).to_pylist()
        names = [f.name for f in self.schema if not f.name.startswith("_cdc_")]
        picked = np.flatnonzero(late)
        given = changes.take(pa.array(picked)).to_pylist()
        values: dict[str, dict[int, object]] = {}
        filled = np.zeros(len(picked), dtype=bool)
        for n in sorted(range(len(picked)), key=lambda k: (given[k][STREAM], given[k][OFFSET])):
            change, r = given[n], int(at_row[picked[n]])
            at = (change[STREAM], change[OFFSET])
            deleting = change[OP] == "delete"
            unset = set(change[UNSET] or ())
            noted = {entry["column"]: entry for entry in entries[r]}
            held = noted[""]["offset"] if "" in noted else len(names)  # columns then
            for index, name in enumerate(names):
                if not deleting and (name in unset or name not in change):
                    continue
                entry = noted.get(name)
                if entry is None and index < held:
                    continue  # the row's own change set it: newer than this one
                came = None if entry is None or entry["offset"] is None else entry
                if came is not None and at <= (came["stream"], came["offset"]):
                    continue  # its value came from a change as new as this one or newer
                if entry is None:  # a column the table did not hold when the row was written
                    entry = noted[name] = {"column": name}
                    entries[r].append(entry)
                values.setdefault(name, {})[r] = None if deleting else change[name]
                entry["stream"], entry["offset"] = at
                filled[n] = True
        if not filled.any():
            return
        for name, by_row in values.items():
            column = self.rows.column(name).to_pylist()
            for r, value in by_row.items():
                column[r] = value
            index = self.rows.schema.get_field_index(name)
            field = self.rows.schema.field(index)
            self.rows = self.rows.set_column(index, field, pa.array(column, field.type))
        index = self.rows.schema.get_field_index(INHERITED)
        field = self.rows.schema.field(index)
        self.rows = self.rows.set_column(
            index, field, pa.array(entries, INHERITED_TYPE).cast(field.type)
        )
        self.touched.append(changes.take(pa.array(picked[filled])).select(self.keys))
        self.stale -= int(filled.sum())
        self.applied += int(filled.sum())

    def _newer(self, changes: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Whether each change is past what the state holds of its key; the index of the
        key's row and tombstone (-1: none)."""
        return past_held(changes, self.keys, self.rows, self.tombstones)

    def apply(self, changes: pa.Table) -> None:
        """Apply one generation: at most one change per key."""
        newer, at_row, at_tomb = self._newer(changes)
        if not newer.any():
            return
        changes, at_row = changes.filter(pa.array(newer)), at_row[newer]
        row = _take(self.rows, at_row)
        deleting = np.asarray(pc.equal(changes.column(OP), "delete"), dtype=bool)
        grave = _take(self.tombstones.select([STREAM, OFFSET]), at_tomb[newer])
        written = self._written(changes, row, at_row >= 0, deleting, grave)
        if self.mode == "history" and (at_row >= 0).any():
            self.closed.append(self._closed(row, at_row >= 0, changes, deleting))
        self.touched.append(changes.select(self.keys))
        self.rows = pa.concat_tables(
            [self.rows.filter(pa.array(~np.isin(np.arange(self.rows.num_rows), at_row))), written]
        )
        drop = np.isin(np.arange(self.tombstones.num_rows), at_tomb[newer])
        graves = _as_tombstones(changes.filter(pa.array(deleting)), self.tomb_schema)
        if self.deletes == "soft" and self.mode == "upsert":
            graves = graves.slice(0, 0)
        self.tombstones = pa.concat_tables([self.tombstones.filter(pa.array(~drop)), graves])

    def _written(
        self,
        changes: pa.Table,
        row: pa.Table,
        had: np.ndarray,
        deleting: np.ndarray,
        grave: pa.Table,
    ) -> pa.Table:
        """The current rows the changes leave (none for a hard or history delete); ``row``
        and ``grave``: the key's row and tombstone before them."""
        alive = had.copy()
        if DELETED in row.column_names:  # a soft-deleted row gives no values
            alive &= ~np.asarray(pc.fill_null(row.column(DELETED), False), dtype=bool)
        soft = self.deletes == "soft" and self.mode == "upsert"
        columns: dict[str, pa.Array | pa.ChunkedArray] = {}
        for field in self.schema:
            name = field.name
            if not name.startswith("_cdc_"):
                value = (
                    changes.column(name)
                    if name in changes.column_names
                    else pa.nulls(changes.num_rows, field.type)
                )
                unset = _unset(changes.column(UNSET), name)
                if name not in changes.column_names:  # an update keeps a column it lacks
                    unset |= np.asarray(pc.equal(changes.column(OP), "update"), dtype=bool)
                # an unset column keeps the key's value (none without one: a null, never
                # the placeholder the image holds); a soft-deleted row keeps what it had
                keep = unset | (deleting & had) if soft else unset
                if keep.any():
                    value = pc.if_else(
                        pa.array(keep & (alive | (deleting & had))),
                        row.column(name),
                        pc.if_else(pa.array(keep), pa.nulls(len(value), field.type), value),
                    )
                columns[name] = value
            elif name in (STREAM, OFFSET):
                columns[name] = changes.column(name)
            elif name == DELETED:
                columns[name] = pa.array(deleting)
            elif name == DELETED_AT:
                columns[name] = pc.if_else(
                    pa.array(deleting), changes.column(AT), pa.nulls(changes.num_rows, TIME)
                )
            elif name == VALID_FROM:
                columns[name] = changes.column(AT)
            elif name == IS_CURRENT:
                columns[name] = pa.array(np.ones(changes.num_rows, dtype=bool))
            elif name == INHERITED:
                columns[name] = self._inherited(changes, row, alive, deleting & had, grave)
            else:
                columns[name] = pa.nulls(changes.num_rows, field.type)
        written = pa.table(columns, schema=self.schema)
        return written if soft else written.filter(pa.array(~deleting))

    def _inherited(
        self,
        changes: pa.Table,
        row: pa.Table,
        alive: np.ndarray,
        kept: np.ndarray,
        grave: pa.Table,
    ) -> pa.Array:
        """Of each row a partial change writes, the columns it keeps from before its change,
        each with the order of the change its value came from: the key's row's (what that
        row noted, if it kept the column too; none for a column it did not hold), without
        a row alive its delete's (a tombstone, a soft delete) or none; after a mark
        (:func:`notes_mark`) of how many columns the table had, those the change set. Rows
        of changes that set every column note nothing; a row a soft delete ``kept`` notes
        what it noted. Column by column over the rows, no Python object a row."""
        count = changes.num_rows
        names = [f.name for f in self.schema if not f.name.startswith("_cdc_")]
        width = len(names)
        kind = self.schema.field(INHERITED).type  # (its list's item named as the table's)
        updates = np.asarray(pc.equal(changes.column(OP), "update"), dtype=bool)
        absent = [i for i, n in enumerate(names) if n not in changes.column_names]
        # (row, column) pairs each change leaves unset, as row * width + column
        unset = changes.column(UNSET)
        unset = unset.combine_chunks() if isinstance(unset, pa.ChunkedArray) else unset
        codes = _pair_codes(unset, names)
        if absent and updates.any():
            rows = np.flatnonzero(updates)
            codes = np.concatenate([codes, (rows[:, None] * width + np.array(absent)).ravel()])
        codes = np.unique(codes)
        pair_rows = codes // width
        pairs = ~kept[pair_rows]
        codes, pair_rows = codes[pairs], pair_rows[pairs]
        lengths = np.asarray(pc.fill_null(pc.list_value_length(unset), 0)) > 0
        chosen = lengths & ~kept  # (``*`` alone: its other columns are the later ones)
        chosen[pair_rows] = True
        if not (chosen | kept).any():
            return pa.nulls(count, kind)
        columns = codes % width
        # where each kept value came from: the row's own change (or its delete's) ...
        stream = _strings(row.column(STREAM))[pair_rows]
        offset, unknown = _numbers(row.column(OFFSET))
        offset, unknown = offset[pair_rows], unknown[pair_rows]
        no_row = ~alive[pair_rows] & unknown
        if no_row.any():  # ... the key's tombstone's, else none
            grave_offsets, grave_unknown = _numbers(grave.column(OFFSET))
            stream[no_row] = _strings(grave.column(STREAM))[pair_rows[no_row]]
            offset[no_row] = grave_offsets[pair_rows[no_row]]
            unknown[no_row] = grave_unknown[pair_rows[no_row]]
        if INHERITED in row.column_names:  # ... or what a partial row before it noted
            stream, offset, unknown = _noted(
                row.column(INHERITED), alive, pair_rows, columns, names, (stream, offset, unknown)
            )
        # each chosen row: its mark, then its pairs in the table's column order
        written = _inherited_lists(
            chosen,
            pair_rows,
            np.array(names, dtype=object)[columns],
            (stream, offset, unknown),
            width,
        ).cast(kind)
        if kept.any() and INHERITED in row.column_names:
            written = pc.if_else(pa.array(kept), row.column(INHERITED).cast(kind), written)
        return written

    def _closed(
        self, row: pa.Table, had: np.ndarray, changes: pa.Table, deleting: np.ndarray
    ) -> pa.Table:
        """History: the current rows the changes close, valid until the change (and, where
        the table notes it, closed by the order of the delete that closed them)."""
        kept = pa.array(had)
        closed = row.filter(kept)
        at = changes.column(AT).filter(kept)
        closed = closed.set_column(closed.schema.get_field_index(VALID_TO), VALID_TO, at)
        closed = closed.set_column(
            closed.schema.get_field_index(IS_CURRENT),
            IS_CURRENT,
            pa.array(np.zeros(closed.num_rows, dtype=bool)),
        )
        if CLOSED_BY not in closed.column_names:
            return closed
        by = pa.StructArray.from_arrays(
            [
                changes.column(STREAM).combine_chunks().cast(pa.string()),
                changes.column(OFFSET).combine_chunks().cast(pa.int64()),
            ],
            fields=list(CLOSED_BY_TYPE),
            mask=pa.array(~deleting),
        ).filter(kept)
        index = closed.schema.get_field_index(CLOSED_BY)
        return closed.set_column(
            index, closed.schema.field(index), by.cast(closed.schema.field(index).type)
        )

    def plan(self) -> Plan:
        key_schema = pa.schema([self.schema.field(k) for k in self.keys])
        touched = (
            pa.concat_tables([t.cast(key_schema) for t in self.touched])
            .group_by(self.keys, use_threads=False)
            .aggregate([])
            if self.touched
            else key_schema.empty_table()
        )
        touched = touched.select(self.keys).cast(key_schema)
        current = self.rows.take(
            pa.array(np.flatnonzero(_lookup(self.rows, touched, self.keys) >= 0))
        )
        rows = pa.concat_tables([*self.closed, current]) if self.closed else current
        graves = self.tombstones.take(
            pa.array(np.flatnonzero(_lookup(self.tombstones, touched, self.keys) >= 0))
        )
        return Plan(touched, rows, graves, self.applied, self.stale)


def _inherited_lists(
    chosen: np.ndarray,
    pair_rows: np.ndarray,
    column_names: np.ndarray,
    origins: tuple[np.ndarray, np.ndarray, np.ndarray],
    width: int,
) -> pa.ListArray:
    """:meth:`_State._inherited`'s lists: for each row ``chosen``, a mark of the table's
    ``width`` first, then an entry per pair of that row (``pair_rows``, in order): the
    column's name and the stream and offset (none where ``unknown``) its value came
    from, of ``origins``; null on the other rows."""
    stream, offset, unknown = origins
    count = len(chosen)
    per_row = np.bincount(pair_rows, minlength=count) + chosen
    starts = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(per_row, out=starts[1:])
    total = int(starts[-1])
    rank = np.arange(len(pair_rows)) - np.searchsorted(pair_rows, pair_rows)  # within its row
    place = starts[pair_rows] + 1 + rank
    column_out = np.full(total, "", dtype=object)
    stream_out = np.full(total, None, dtype=object)
    offset_out = np.full(total, width, dtype=np.int64)
    valid_offset = np.ones(total, dtype=bool)
    column_out[place] = column_names
    stream_out[place] = stream
    stream_out[place[unknown]] = None
    offset_out[place] = offset
    valid_offset[place] = ~unknown
    entries = pa.StructArray.from_arrays(
        [
            pa.array(column_out, pa.string()),
            pa.array(stream_out, pa.string()),
            pa.array(offset_out, pa.int64(), mask=~valid_offset),
        ],
        fields=list(INHERITED_TYPE.value_type),
    )
    return pa.ListArray.from_arrays(pa.array(starts, pa.int32()), entries, mask=pa.array(~chosen))
