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
  row notes where each of its columns came from (``_cdc_inherited``: the order of the
  change that gave it, none where the table held no row). A change older than the row that
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
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.table.layout import (
    AT,
    DELETED,
    DELETED_AT,
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
        ]
    elif deletes == "soft":
        fields += [pa.field(DELETED, pa.bool_()), pa.field(DELETED_AT, TIME)]
    return fields


def tombstone_schema(schema: pa.Schema, keys: Sequence[str]) -> pa.Schema:
    """A table of deleted keys and the order and time of their deletes."""
    return pa.schema(
        [
            *(schema.field(k) for k in keys),
            schema.field(STREAM),
            schema.field(OFFSET),
            pa.field(AT, TIME),
        ]
    )


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
            tombstones.select(self.tomb_schema.names).cast(self.tomb_schema)
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
        row = _take(self.rows.select([STREAM, OFFSET]), at_row)
        order = changes.column(STREAM), changes.column(OFFSET)
        late = (at_row >= 0) & ~_later(*order, row.column(STREAM), row.column(OFFSET))
        late &= ~_same(*order, row.column(STREAM), row.column(OFFSET))
        entries = self.rows.column(INHERITED).to_pylist()
        late &= np.array([r >= 0 and bool(entries[r]) for r in at_row], dtype=bool)
        if not late.any():
            return
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
            for name in names:
                if not deleting and (name in unset or name not in change):
                    continue
                entry = noted.get(name)
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
            self.closed.append(self._closed(row, at_row >= 0, changes.column(AT)))
        self.touched.append(changes.select(self.keys))
        self.rows = pa.concat_tables(
            [self.rows.filter(pa.array(~np.isin(np.arange(self.rows.num_rows), at_row))), written]
        )
        drop = np.isin(np.arange(self.tombstones.num_rows), at_tomb[newer])
        graves = (
            changes.filter(pa.array(deleting)).select(self.tomb_schema.names).cast(self.tomb_schema)
        )
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
        """Of each row a partial change writes, each column of the table with the order of
        the change its value came from: the change's own for those it sets; for those it
        leaves unset, the key's row's (what that row noted, if it was partial too: none
        where it noted nothing), without a row alive its delete's (a tombstone, a soft
        delete) or none. Rows of changes that set every column note nothing; a row a soft
        delete ``kept`` notes what it noted. A column a row does not note was not the table's
        when it was written."""
        count = changes.num_rows
        names = [f.name for f in self.schema if not f.name.startswith("_cdc_")]
        updates = np.asarray(pc.equal(changes.column(OP), "update"), dtype=bool)
        absent = [n for n in names if n not in changes.column_names]
        unset_counts = pc.fill_null(pc.list_value_length(changes.column(UNSET)), 0)
        chosen = kept | (np.asarray(unset_counts) > 0) | (updates & bool(absent))
        kind = self.schema.field(INHERITED).type  # (its list's item named as the table's)
        if not chosen.any():
            return pa.nulls(count, kind)
        wanted = np.flatnonzero(chosen)
        taken = pa.array(wanted)

        def listed(table: pa.Table, name: str) -> dict[int, Any]:
            values = table.column(name).take(taken).to_pylist()
            return dict(zip(wanted.tolist(), values, strict=True))

        unset_lists = listed(changes, UNSET)
        noted = listed(row, INHERITED) if INHERITED in row.column_names else None
        streams, offsets = listed(row, STREAM), listed(row, OFFSET)
        grave_streams, grave_offsets = listed(grave, STREAM), listed(grave, OFFSET)
        own_streams, own_offsets = listed(changes, STREAM), listed(changes, OFFSET)
        found: list[list[dict[str, object]] | None] = [None] * count
        for n in wanted.tolist():
            before = noted[n] if noted is not None else None
            if kept[n]:
                found[n] = before
                continue
            unset = set(unset_lists[n] or ()) | (set(absent) if updates[n] else set())
            partial_before = {e["column"]: e for e in before} if alive[n] and before else None
            if alive[n] or offsets[n] is not None:  # the row's change (a soft delete's)
                origin = (streams[n], offsets[n])
            else:
                origin = (grave_streams[n], grave_offsets[n])
            own = (own_streams[n], own_offsets[n])
            entries = []
            for name in names:
                if name not in unset:
                    stream, offset = own
                elif partial_before is not None:
                    entry = partial_before.get(name, {})
                    stream, offset = entry.get("stream"), entry.get("offset")
                else:
                    stream, offset = origin
                entries.append({"column": name, "stream": stream, "offset": offset})
            found[n] = entries
        return pa.array(found, INHERITED_TYPE).cast(kind)

    def _closed(self, row: pa.Table, had: np.ndarray, at: pa.ChunkedArray) -> pa.Table:
        """History: the current rows the changes close, valid until the change."""
        closed = row.filter(pa.array(had))
        at = at.filter(pa.array(had))
        closed = closed.set_column(closed.schema.get_field_index(VALID_TO), VALID_TO, at)
        return closed.set_column(
            closed.schema.get_field_index(IS_CURRENT),
            IS_CURRENT,
            pa.array(np.zeros(closed.num_rows, dtype=bool)),
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
