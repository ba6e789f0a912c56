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
    "log_position",
    "order_of",
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
