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

from cdc_connectors.table.layout import STREAM

__all__ = [
    "ARRIVAL",
    "AUTO",
    "POSITION",
    "arrived",
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


def order_of(
    position: bytes, metadata: Mapping[str, str], order_by: str = AUTO, arrival: int = 0
) -> tuple[str, int]:
    """The ``(stream, offset)`` of a record (``arrival``: its place among the records of
    this write); ``ValueError`` when ``order_by`` finds none."""
    if order_by == AUTO:
        numbered = _numbered(position)
        log = log_position(metadata)
        if log is None:
            return numbered if numbered is not None else (ARRIVAL, arrival)
        if numbered is None:
            return log, 0
        return f"{log} {numbered[0]}", numbered[1]
    if order_by == POSITION:
        numbered = _numbered(position)
        if numbered is None:
            raise ValueError(
                f"position {position[:80]!r} has no order (topic/partition/offset, file:line); "
                "set orderBy to a metadata key holding one, or auto"
            )
        return numbered
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


def rebased(changes: pa.Table, keys: list[str], held: list[pa.Table]) -> pa.Table:
    """``changes`` where a change and an order the table holds of its key (``held``: its
    rows and tombstones, with their keys and ``_cdc_stream``) are of one stream, one with a
    log position and one without (:func:`same_stream`): the change takes the held order's
    stream, so that their places in that stream compare them."""
    known = [h.select([*keys, STREAM]) for h in held if h.num_rows and STREAM in h.column_names]
    if changes.num_rows == 0 or not known:
        return changes
    stored = pa.concat_tables([k.cast(known[0].schema) for k in known])
    logged, held_logged = _logged(changes.column(STREAM)), _logged(stored.column(STREAM))
    if not (((~logged).any() and held_logged.any()) or (logged.any() and (~held_logged).any())):
        return changes  # one kind of order throughout: nothing to compare across kinds
    index = changes.select([*keys, STREAM]).append_column(
        "__row", pa.array(np.arange(changes.num_rows), pa.int64())
    )
    stored = stored.rename_columns([*keys, "__held"])
    typed = stored.cast(pa.schema([*(index.schema.field(k) for k in keys), stored.schema[-1]]))
    pairs = index.join(typed, keys, join_type="inner", use_threads=False)
    mixed = _logged(pairs.column(STREAM)) != _logged(pairs.column("__held"))
    pairs = pairs.filter(pa.array(mixed))
    found = changes.column(STREAM).to_pylist()
    for row, stream, other in zip(
        pairs.column("__row").to_pylist(),
        pairs.column(STREAM).to_pylist(),
        pairs.column("__held").to_pylist(),
        strict=True,
    ):
        if stream is None or other is None:
            continue
        if same_stream(stream, other) or same_stream(other, stream):
            found[row] = max(found[row], other) if found[row] != stream else other
    if not pairs.num_rows:
        return changes
    where = changes.schema.get_field_index(STREAM)
    return changes.set_column(where, STREAM, pa.array(found, pa.string()))


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
    return _numbered(position)


def _numbered(position: bytes) -> tuple[str, int] | None:
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
