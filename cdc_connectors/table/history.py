"""History mode's late changes: a change older than a key's current version becomes the
past version it was, instead of being left.

The planner (:mod:`.plan`) applies changes past what the table holds of a key. In
``history`` mode a change that arrives late (older, by the source's order, than the key's
current version or its delete) still happened: the key's versions are rebuilt with it in
its place. Each version keeps its values and order; validity is recomputed along the
chain (a version is valid until the next one starts, or until a delete closes it). A
delete already in the table is known by the gap it left (a version closed with no version
starting then): a late change goes before it when it happened before it. A change whose
order a version already has is a replay and changes nothing. A delete that closes nothing
(the key had no version yet, or was gone already) is noted on the key's next version
(``_cdc_deleted_before``), so that a change older than it that arrives later is closed by
it; keys with a change after a delete that may have closed nothing are rebuilt for that
reason too (:func:`after_a_delete`). Only such keys are rebuilt, and every version of them is
replaced in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.table.keys import among, holding
from cdc_connectors.table.layout import (
    AT,
    CLOSED_BY,
    DELETES_BEFORE,
    INHERITED,
    IS_CURRENT,
    OFFSET,
    OP,
    STREAM,
    UNSET,
    VALID_FROM,
    VALID_TO,
)
from cdc_connectors.table.plan import notes_mark, past_held, tombstone_schema

__all__ = ["Rebuilt", "after_a_delete", "late_keys", "latest", "rebuild"]

_PLACE = "__cdc_place"
_BY_STREAM, _BY_OFFSET = "__cdc_by_stream", "__cdc_by_offset"


@dataclass(frozen=True)
class Rebuilt:
    """Every version of the rebuilt keys, their tombstones, and what the changes did."""

    rows: pa.Table
    tombstones: pa.Table
    applied: int
    stale: int


def late_keys(
    changes: pa.Table, keys: list[str], versions: pa.Table, tombstones: pa.Table
) -> pa.Table:
    """The keys with a change not past their latest version (current or closed: a key
    deleted by a write killed before its tombstone has no current one) or their
    tombstone."""
    if changes.num_rows == 0:
        return changes.select(keys)
    past = past_held(changes, keys, latest(versions, keys), tombstones)[0]
    late = changes.filter(pa.array(~past)).select(keys)
    return late.group_by(keys, use_threads=False).aggregate([])


def after_a_delete(
    changes: pa.Table, keys: list[str], tombstones: pa.Table, versions: pa.Table
) -> pa.Table:
    """The keys with a change of ``changes`` after a delete that may have closed nothing,
    which only :func:`rebuild` notes (on the key's next version, or its tombstone): a
    delete of the batch after another delete of the key, or first of the batch for a key
    with no current version; or the key's tombstone, where it did not close the key's
    latest version (or notes deletes of its own). Other keys stay on the planner's way."""
    found = [_batch_deletes_closing_nothing(changes, keys, versions)]
    if tombstones.num_rows and changes.num_rows:
        touched = changes.select(keys).group_by(keys, use_threads=False).aggregate([])
        graves = among(tombstones, touched)
        if graves.num_rows:
            found.append(_graves_closing_nothing(graves, keys, versions))
    joined = pa.concat_tables([f.cast(found[0].schema) for f in found])
    return joined.group_by(keys, use_threads=False).aggregate([]).select(keys)


def _batch_deletes_closing_nothing(
    changes: pa.Table, keys: list[str], versions: pa.Table
) -> pa.Table:
    """Keys of :func:`after_a_delete` for a delete of the batch itself."""
    count = changes.num_rows
    deleting = np.asarray(pc.equal(changes.column(OP), "delete"), dtype=bool) if count else None
    if deleting is None or not deleting.any():
        return changes.select(keys).slice(0, 0)
    order = np.lexsort((np.arange(count), changes.column(OFFSET).to_numpy(), _ranks(changes)))
    rank = np.empty(count, dtype=np.int64)
    rank[order] = np.arange(count)
    ranked = changes.select(keys).append_column(_PLACE, pa.array(rank, pa.int64()))
    by_key = pc.sort_indices(ranked, [(k, "ascending") for k in [*keys, _PLACE]]).to_numpy()
    ordered = changes.select(keys).take(pa.array(by_key, pa.int64()))
    same = np.zeros(count, dtype=bool)  # the same key as the change before it
    same[1:] = True
    for name in keys:
        column = ordered.column(name).combine_chunks()
        same[1:] &= np.asarray(
            pc.fill_null(pc.equal(column.slice(1), column.slice(0, count - 1)), False), dtype=bool
        )
    deletes = deleting[by_key]
    after_delete = np.zeros(count, dtype=bool)
    after_delete[1:] = same[1:] & deletes[:-1]
    followed = np.zeros(count, dtype=bool)
    followed[:-1] = same[1:]
    current = (
        versions.filter(pc.equal(versions.column(IS_CURRENT), True))
        if versions.num_rows
        else versions
    )
    held = holding(ordered, current.select(keys))
    closing_nothing = deletes & followed & (after_delete | (~same & ~held))
    return ordered.filter(pa.array(closing_nothing))


def _graves_closing_nothing(graves: pa.Table, keys: list[str], versions: pa.Table) -> pa.Table:
    """Keys of :func:`after_a_delete` for a tombstone: one that did not close the key's
    latest version at its time, or that notes deletes before it."""
    noted = (
        np.asarray(
            pc.fill_null(pc.list_value_length(graves.column(DELETES_BEFORE)), 0), dtype=np.int64
        )
        > 0
        if DELETES_BEFORE in graves.column_names
        else np.zeros(graves.num_rows, dtype=bool)
    )
    last = latest(versions, keys) if versions.num_rows else None
    if last is None or not last.num_rows:
        return graves.select(keys)
    noting = CLOSED_BY in last.column_names
    ends = last.select([*keys, VALID_TO]).cast(
        pa.schema([graves.schema.field(k) for k in keys] + [last.schema.field(VALID_TO)])
    )
    if noting:  # the order of the delete that closed it, where the table notes it
        by = last.column(CLOSED_BY).combine_chunks()
        ends = ends.append_column(_BY_STREAM, by.field("stream").cast(pa.string()))
        ends = ends.append_column(_BY_OFFSET, by.field("offset").cast(pa.int64()))
    placed = graves.select([*keys, AT, STREAM, OFFSET]).append_column(
        _PLACE, pa.array(np.arange(graves.num_rows), pa.int64())
    )
    matched = placed.join(ends, keys, join_type="left outer", use_threads=False)
    rows = matched.column(_PLACE).to_numpy()
    closed = np.asarray(
        pc.fill_null(pc.equal(matched.column(VALID_TO), matched.column(AT)), False), dtype=bool
    )
    if noting:  # told by its order, not its time: another delete may share that time
        known = np.asarray(matched.column(_BY_STREAM).is_valid(), dtype=bool)
        same = pc.and_(
            pc.equal(matched.column(_BY_STREAM), matched.column(STREAM).cast(pa.string())),
            pc.equal(matched.column(_BY_OFFSET), matched.column(OFFSET).cast(pa.int64())),
        )
        closed = np.where(known, np.asarray(pc.fill_null(same, False), dtype=bool), closed)
    closed_by_grave = np.zeros(graves.num_rows, dtype=bool)
    closed_by_grave[rows] = closed
    return graves.select(keys).filter(pa.array(~closed_by_grave | noted))


def latest(versions: pa.Table, keys: list[str]) -> pa.Table:
    """Of each key's ``versions``, the one of the latest order."""
    if versions.num_rows == 0:
        return versions
    ordered = versions.take(
        pc.sort_indices(versions, [(STREAM, "ascending"), (OFFSET, "ascending")])
    )
    ordered = ordered.append_column(_PLACE, pa.array(np.arange(ordered.num_rows), pa.int64()))
    last = ordered.group_by(keys, use_threads=False).aggregate([(_PLACE, "max")])
    return ordered.take(last.column(f"{_PLACE}_max")).drop_columns([_PLACE])


def rebuild(
    versions: pa.Table,
    changes: pa.Table,
    tombstones: pa.Table,
    keys: list[str],
    schema: pa.Schema,
) -> Rebuilt:
    """The versions of the keys of ``changes``, rebuilt from the table's (``versions``,
    every one of them) and the changes (module docstring)."""
    own = [n for n in schema.names if not n.startswith("_cdc_")]
    grouped: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in versions.select([n for n in schema.names if n in versions.column_names]).to_pylist():
        grouped.setdefault(tuple(row[k] for k in keys), []).append(row)
    graves = {tuple(r[k] for k in keys): r for r in tombstones.to_pylist()}
    lacking = [n for n in own if n not in changes.column_names]
    order = np.lexsort(
        (np.arange(changes.num_rows), changes.column(OFFSET).to_numpy(), _ranks(changes))
    )
    pending: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for change in changes.take(pa.array(order, pa.int64())).to_pylist():
        pending.setdefault(tuple(change[k] for k in keys), []).append(change)
    out: list[dict[str, Any]] = []
    graves_out: list[dict[str, Any]] = []
    applied = stale = 0
    for key, key_changes in pending.items():
        grave = graves.get(key)
        events = _events(sorted(grouped.get(key, []), key=_order), grave is not None)
        if grave is not None:  # the last delete: it closes what came before it
            for note in sorted(grave.get(DELETES_BEFORE) or [], key=_noted_time):
                if note["stream"] is None:  # (and those before it, unseen: after every
                    events.append(("gone", note["at"]))  # version, a gap's by its time)
                else:
                    _insert(events, _noted_delete(note), None)
            _insert(events, {**grave, OP: "delete"}, None)
        for change in key_changes:
            if _insert(events, change, grave):
                applied += 1
            else:
                stale += 1
        versions, unseen = _replay(events, own, lacking, None if grave is None else _order(grave))
        out.extend(versions)
        deletes = [c for c in key_changes if c[OP] == "delete"]
        if grave is not None:
            deletes.append(grave)
        if deletes and not (versions and versions[-1][IS_CURRENT]):  # the key ends deleted
            last = max(deletes, key=_order)
            before = [u for u in unseen if _noted_order(u) != _order(last)]
            graves_out.append(
                {
                    **dict(zip(keys, key, strict=True)),
                    **{n: last[n] for n in (STREAM, OFFSET, AT)},
                    DELETES_BEFORE: before or None,
                }
            )
    rows = pa.Table.from_pylist(out, schema=schema)
    tomb_schema = tombstone_schema(schema, keys)
    return Rebuilt(rows, pa.Table.from_pylist(graves_out, schema=tomb_schema), applied, stale)


def _ranks(changes: pa.Table) -> np.ndarray:
    """Each change's stream as a number that sorts as the stream's text."""
    streams = changes.column(STREAM).to_pylist()
    ranked = {s: i for i, s in enumerate(sorted(set(streams)))}
    return np.array([ranked[s] for s in streams], dtype=np.int64)


def _order(row: dict[str, Any]) -> tuple[str, int]:
    return row[STREAM], row[OFFSET]


def _events(versions: list[dict[str, Any]], tombstoned: bool = True) -> list[tuple[str, Any]]:
    """A key's versions, oldest first, and the deletes that closed them: each as the change
    it was where the version notes it (``_cdc_closed_by``), else ``gone``, known by its
    time alone. The last one is known by its time too where the key has no tombstone (a
    write killed before its tombstones: its delete, replayed, writes it)."""
    events: list[tuple[str, Any]] = []
    for index, version in enumerate(versions):
        for note in sorted(version.get(DELETES_BEFORE) or [], key=_noted_time):
            if note["stream"] is None:  # a gap's delete, known by its time alone
                events.append(("gone", note["at"]))
            else:
                events.append(("change", _noted_delete(note)))
        events.append(("version", version))
        following = versions[index + 1] if index + 1 < len(versions) else None
        closed = version[VALID_TO]
        if closed is not None and (following is None or following[VALID_FROM] != closed):
            by = version.get(CLOSED_BY) or {}
            if by.get("stream") is not None and (following is not None or tombstoned):
                events.append(("change", _noted_delete({**by, "at": closed})))  # its delete
            else:  # (a table from before _cdc_closed_by: the delete's time alone)
                events.append(("gone", closed))
    return events


def _noted_order(note: dict[str, Any]) -> tuple[str, int]:
    return note["stream"], note["offset"]


def _noted_time(note: dict[str, Any]) -> tuple[Any, ...]:
    """Notes in the order their deletes happened: by time, then by order."""
    return (note["at"] is not None, note["at"] or 0, note["stream"] or "", note["offset"] or 0)


def _noted_delete(note: dict[str, Any]) -> dict[str, Any]:
    """A delete a version notes (``_cdc_deleted_before``) as the change it was."""
    return {OP: "delete", STREAM: note["stream"], OFFSET: note["offset"], AT: note["at"]}


def _insert(events: list[tuple[str, Any]], change: dict[str, Any], grave: Any) -> bool:
    """Put ``change`` in its place among the key's events; False for a replay."""
    order = _order(change)
    if grave is not None and _order(grave) == order:
        return False
    place = 0
    for index, (kind, item) in enumerate(events):
        if kind == "gone":
            if (
                place == index
                and item is not None
                and change[AT] is not None
                and item <= change[AT]
            ):
                place = index + 1  # the delete came before the change
            continue
        if _order(item) == order:
            return False
        if _order(item) < order:
            place = index + 1
    if change[OP] == "delete" and place < len(events) and _closed_at(events, place, change[AT]):
        # the delete that closed the version before it (known by its gap), the key back
        # after it (at the end, it is the key's tombstone, which a killed write may lack)
        return False
    events.insert(place, ("change", change))
    return True


def _closed_at(events: list[tuple[str, Any]], place: int, at: Any) -> bool:
    """Whether the key's event just before ``place`` is a version closed at ``at``
    already, or the gap a delete at ``at`` left: that delete's own replay (a delete and a
    create again in one transaction have one time, so a version closed at that very time
    is closed already)."""
    if place == 0 or at is None:
        return False
    kind, item = events[place - 1]
    if kind == "version":
        return item[VALID_TO] is not None and item[VALID_TO] == at
    return kind == "gone" and item == at


def _replay(
    events: list[tuple[str, Any]],
    own: list[str],
    lacking: list[str],
    grave: tuple[str, int] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The versions the events make, each valid until the next event of the key, and the
    deletes after the last one that closed nothing (as ``_cdc_deleted_before`` notes);
    ``grave``: the order of the key's tombstone."""
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    unseen: list[dict[str, Any]] = []  # deletes since the last version that closed nothing
    closed_at: Any = None  # when a gap closed the last version (None: not since a version)
    for kind, item in events:
        if kind == "gone" or (kind == "change" and item[OP] == "delete"):
            at = item if kind == "gone" else item[AT]
            if current is not None:
                current[VALID_TO], current[IS_CURRENT] = at, False
                if kind == "change":
                    current[CLOSED_BY] = {"stream": item[STREAM], "offset": item[OFFSET]}
                current, closed_at = None, (at if kind == "gone" else None)
            elif not (at == closed_at and kind == "change" and _order(item) == grave):
                # (the key's tombstone put back at the time its gap closed the version is
                # the delete that closed it); a gap's delete that a late delete before it
                # left closing nothing is known by its time
                kept = (item[STREAM], item[OFFSET]) if kind == "change" else (None, None)
                unseen.append({"stream": kept[0], "offset": kept[1], "at": at})
            continue
        closed_at = None
        if kind == "version":
            version = dict(item)
            start = version[VALID_FROM]
            given = _set_by_its_change(version, own)
            if given is not None:
                for name in own:  # what its change left unset: the version before it's
                    if name not in given:  # (none after a delete)
                        version[name] = current.get(name) if current is not None else None
        else:
            version = _version_of(item, own, lacking, current)
            start = item[AT]
        if current is not None:
            current[VALID_TO] = start
            current[IS_CURRENT] = False
        version[VALID_FROM], version[VALID_TO], version[IS_CURRENT] = start, None, True
        version[CLOSED_BY] = None  # (until a delete closes it)
        version[DELETES_BEFORE], unseen = unseen or None, []
        out.append(version)
        current = version
    return out, unseen


def _set_by_its_change(version: dict[str, Any], own: list[str]) -> set[str] | None:
    """The columns a version's own change set, for one written by a partial change (its
    ``_cdc_inherited`` notes those it kept, and how many columns the table had: those
    past them it did not set either); ``None`` for one whose change set them all."""
    entries = version.get(INHERITED)
    if not entries:
        return None
    kept = {e["column"] for e in entries}
    then = next((e["offset"] for e in entries if e["column"] == ""), len(own))
    return {name for name in own[:then] if name not in kept}


def _version_of(
    change: dict[str, Any], own: list[str], lacking: list[str], before: dict[str, Any] | None
) -> dict[str, Any]:
    """A change's row: columns it leaves unset keep the version before it's values (and a
    partial change notes which it set, so that a version put before it later gives it
    them: :func:`_set_by_its_change`)."""
    unset = set(change.get(UNSET) or [])
    if change[OP] == "update":
        unset.update(lacking)
    version: dict[str, Any] = {}
    for name in own:
        if name in unset:
            version[name] = before.get(name) if before is not None else None
        else:
            version[name] = change.get(name)
    version[STREAM], version[OFFSET] = change[STREAM], change[OFFSET]
    if unset:
        version[INHERITED] = [notes_mark(len(own))] + [
            {"column": name, "stream": None, "offset": None} for name in own if name in unset
        ]
    return version
