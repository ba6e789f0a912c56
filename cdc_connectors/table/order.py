"""The order of a change: which of two changes of one key is the later.

An order is a ``(stream, offset)`` pair, compared as a pair (text, then number), kept in
the table's ``_cdc_stream`` and ``_cdc_offset`` columns. ``orderBy`` says where it comes
from:

- ``auto`` (the default): the database log's own position, when the record carries one
  (PostgreSQL's and YugabyteDB's LSN, MySQL's binlog file, position and row, CDL's LSN,
  YDB's step and transaction: :func:`log_position`), its numbers zero-padded so that text
  compares them; changes at one log position (a snapshot's rows) follow their record
  positions. Else the record position's number; else the order the records arrive in
  (:data:`ARRIVAL`: every change of a write comes after those of earlier writes).
- ``position``: the record position's number only (``topic/partition/offset``,
  ``file:line``, ``file: message N, byte B``); a record without one is refused.
- a metadata key (``debezium.source.lsn``): its integer value.

A log position is what orders a key's changes in the database: a change that arrives late
(produced again, read from another file) is still older than the one it preceded there.

In ``auto``, a record without a log position in a stream whose other records carry one (a
Kafka tombstone taken as a delete, written right after its key's delete event) takes the log
position of the record before it in its stream (else of the one after it), and keeps its own
place: it orders just after the change it followed, and before the next one
(:func:`in_streams`). Where its batch holds no record of its stream with one, it is compared
with what the table holds of its key by their places in their common stream (and so is a
change with a log position with a key the table holds by such a record): :func:`rebased`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.table.layout import OFFSET, STREAM

__all__ = [
    "ARRIVAL",
    "AUTO",
    "POSITION",
    "arrived",
    "auto_order",
    "in_streams",
    "log_position",
    "order_of",
    "rebased",
    "same_stream",
]

AUTO, POSITION = "auto", "position"
#: The stream of a change ordered by its arrival, until the write stamps it (:func:`arrived`).
ARRIVAL = "\x00arrival"
_ARRIVED = "~arrived {:020d}"  # after every log position and record stream ("~" sorts last)

_MESSAGE = re.compile(rb"^(.*): message (\d+), byte \d+$", re.S)
_NUMBERED = re.compile(rb"^(.*)[/:](\d+)$", re.S)


def auto_order(log: str | None, place: tuple[str, int] | None, arrival: int) -> tuple[str, int]:
    """The ``auto`` order of a record of log position ``log`` and numbered position
    ``place`` (:func:`numbered`), ``arrival``-th of its write."""
    if log is None:
        return place if place is not None else (ARRIVAL, arrival)
    if place is None:
        return log, 0
    return f"{log} {place[0]}", place[1]


def order_of(
    position: bytes, metadata: Mapping[str, str], order_by: str = AUTO, arrival: int = 0
) -> tuple[str, int]:
    """The ``(stream, offset)`` of a record (``arrival``: its place among the records of
    this write); ``ValueError`` when ``order_by`` finds none."""
    if order_by == AUTO:
        return auto_order(log_position(metadata), numbered(position), arrival)
    if order_by == POSITION:
        place = numbered(position)
        if place is None:
            raise ValueError(
                f"position {position[:80]!r} has no order (topic/partition/offset, file:line); "
                "set orderBy to a metadata key holding one, or auto"
            )
        return place
    value = metadata.get(order_by)
    if value is None or not value.strip().lstrip("-").isdigit():
        raise ValueError(f"metadata {order_by!r} (orderBy) is {value!r}, not an integer")
    if not -(2**63) <= int(value) < 2**63:
        raise ValueError(f"metadata {order_by!r} (orderBy) is {value!r}, past 64 bits")
    return "", int(value)


def in_streams(
    orders: list[tuple[str, int]], logs: list[str | None], streams: list[str | None]
) -> list[tuple[str, int]]:
    """``orders`` (of ``auto``, the records of one batch in the order read) with each record
    that has no log position (``logs``) but a place in a stream (``streams``: its numbered
    position's stream, or ``None``) given the log position of the record before it in that
    stream, else of the one after it; a stream none of whose records has one stays as it
    is."""
    by_stream: dict[str, list[int]] = {}
    for index, stream in enumerate(streams):
        if stream is not None:
            by_stream.setdefault(stream, []).append(index)
    result = list(orders)
    for stream, indexes in by_stream.items():
        if all(logs[i] is not None for i in indexes) or all(logs[i] is None for i in indexes):
            continue
        ranked = sorted(indexes, key=lambda i: orders[i][1])  # by place in the stream
        before: str | None = None
        waiting: list[int] = []
        for index in ranked:
            log = logs[index]
            if log is None and before is None:
                waiting.append(index)
            elif log is None:
                result[index] = (f"{before} {stream}", orders[index][1])
            else:
                before = log
                for early in waiting:  # before the first with one: that one's
                    result[early] = (f"{log} {stream}", orders[early][1])
                waiting = []
    return result


def same_stream(bare: str, held: str) -> bool:
    """Whether ``held`` (an order's stream kept by the table) is the stream ``bare`` (one
    with no log position) with a log position before it: then the two orders' offsets are
    places in one stream, and compare as such."""
    return held != bare and held.endswith(" " + bare) and held.startswith(_LOG_KINDS)


def rebased(
    changes: pa.Table, keys: list[str], held: list[pa.Table]
) -> tuple[pa.Table, list[pa.Table]]:
    """``changes`` and ``held`` (what the table holds of their keys: rows, tombstones, with
    the keys, ``_cdc_stream`` and ``_cdc_offset``) where a change and a held order of its key
    are of one stream, one with a log position and one without (:func:`same_stream`): the
    one without takes the log position of the other side's order just before it in that
    stream (else just after it), as :func:`in_streams` does within a batch; each keeps its
    own place. A change keeps a log position it has; a held order given one is compared
    with it, and written with it where the batch writes it again."""
    parts = [(n, h) for n, h in enumerate(held) if h.num_rows and STREAM in h.column_names]
    if changes.num_rows == 0 or not parts:
        return changes, held
    stored = pa.concat_tables(
        [
            h.select([*keys, STREAM, OFFSET])
            .cast(parts[0][1].select([*keys, STREAM, OFFSET]).schema)
            .append_column("__part", pa.array(np.full(h.num_rows, n), pa.int64()))
            .append_column("__at", pa.array(np.arange(h.num_rows), pa.int64()))
            for n, h in parts
        ]
    )
    logged, held_logged = _logged(changes.column(STREAM)), _logged(stored.column(STREAM))
    if not (((~logged).any() and held_logged.any()) or (logged.any() and (~held_logged).any())):
        return changes, held  # one kind of order throughout: nothing to compare across kinds
    index = changes.select([*keys, STREAM, OFFSET]).append_column(
        "__row", pa.array(np.arange(changes.num_rows), pa.int64())
    )
    stored = stored.rename_columns([*keys, "__held", "__held_offset", "__part", "__at"])
    key_fields = [index.schema.field(k) for k in keys]
    typed = stored.cast(pa.schema(key_fields + list(stored.schema)[len(keys) :]))
    pairs = index.join(typed, keys, join_type="inner", use_threads=False)
    pairs = pairs.filter(pa.array(_logged(pairs.column(STREAM)) != _logged(pairs.column("__held"))))
    if not pairs.num_rows:
        return changes, held
    # the neighbours of each bare order in its stream, from the other side
    bare_changes: dict[int, list[tuple[int, str]]] = {}
    bare_held: dict[tuple[int, int], list[tuple[int, str]]] = {}
    held_offsets: dict[tuple[int, int], int] = {}
    for row, stream, offset, other, other_offset, part, at in zip(
        *(
            pairs.column(c).to_pylist()
            for c in ("__row", STREAM, OFFSET, "__held", "__held_offset", "__part", "__at")
        ),
        strict=True,
    ):
        if None in (stream, other, offset, other_offset):
            continue
        if same_stream(stream, other):  # the change is bare
            bare_changes.setdefault(row, []).append((other_offset, other))
        elif same_stream(other, stream):  # the held order is bare
            bare_held.setdefault((part, at), []).append((offset, stream))
            held_offsets[(part, at)] = other_offset
    streams = changes.column(STREAM).to_pylist()
    offsets = changes.column(OFFSET).to_pylist()
    for row, found in bare_changes.items():
        streams[row] = _neighbour(offsets[row], found)
    if bare_changes:
        where = changes.schema.get_field_index(STREAM)
        changes = changes.set_column(where, STREAM, pa.array(streams, pa.string()))
    held = list(held)
    for n, table in parts:
        mine = {at: found for (part, at), found in bare_held.items() if part == n}
        if not mine:
            continue
        texts = table.column(STREAM).to_pylist()
        for at, found in mine.items():
            texts[at] = _neighbour(held_offsets[(n, at)], found)
        where = table.schema.get_field_index(STREAM)
        held[n] = table.set_column(where, table.schema.field(STREAM), pa.array(texts, pa.string()))
    return changes, held


def _neighbour(offset: int, others: list[tuple[int, str]]) -> str:
    """The stream of the order of ``others`` (offset, stream) just before ``offset`` (at it,
    for the same record read again), else just after it."""
    before = [o for o in others if o[0] <= offset]
    return max(before)[1] if before else min(others)[1]


def _logged(streams: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Whether each stream has a log position before it."""
    found = np.zeros(len(streams), dtype=bool)
    for kind in _LOG_KINDS:
        found |= np.asarray(pc.fill_null(pc.starts_with(streams, kind), False))
    return found


#: How the stream of an order with a log position starts (:func:`log_position`).
_LOG_KINDS = ("lsn ", "binlog ", "ydb ")


def numbered(position: bytes) -> tuple[str, int] | None:
    """A record position's stream and number (``topic/partition/offset``, ``file:line``,
    ``file: message N, byte B``), or ``None``."""
    found = _MESSAGE.match(position) or _NUMBERED.match(position)
    if found is None:
        return None
    offset = int(found.group(2))
    if offset >= 2**63:
        raise ValueError(f"position {position[:80]!r}: its number is past 64 bits")
    return found.group(1).decode("utf-8", "backslashreplace"), offset


def log_position(metadata: Mapping[str, str]) -> str | None:
    """The database log's position a record's metadata holds, as text that sorts in the
    log's order, or ``None``."""
    lsn = _number(metadata.get("debezium.source.lsn"))
    if lsn is None:
        lsn = _number(metadata.get("cdl.lsn"))
    if lsn is not None:
        return f"lsn {lsn:020d}"
    binlog, pos = metadata.get("debezium.source.file"), _number(metadata.get("debezium.source.pos"))
    if binlog and pos is not None:
        row = _number(metadata.get("debezium.source.row")) or 0
        if row >= 10**10:
            row = 0
        return f"binlog {binlog} {pos:020d} {row:010d}"
    step, tx = _number(metadata.get("ydb.step")), _number(metadata.get("ydb.txId"))
    if step is not None and tx is not None:
        return f"ydb {step:020d} {tx:020d}"
    return None


def _number(text: str | None) -> int | None:
    """A non-negative integer of at most 20 digits, else ``None``."""
    if text is None or not text.isdigit() or not text.isascii() or len(text) > 20:
        return None
    return int(text)


def arrived(changes: pa.Table, at: int) -> pa.Table:
    """``changes`` with the changes ordered by arrival stamped with the write's time
    ``at`` (nanoseconds), after every earlier write's."""
    if STREAM not in changes.column_names or changes.num_rows == 0:
        return changes
    streams = changes.column(STREAM)
    waiting = pc.equal(streams, ARRIVAL)
    if not np.any(np.asarray(pc.fill_null(waiting, False))):
        return changes
    stamped = pc.if_else(waiting, pa.scalar(_ARRIVED.format(at)), streams)
    return changes.set_column(changes.schema.get_field_index(STREAM), STREAM, stamped)
