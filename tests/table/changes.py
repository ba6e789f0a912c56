"""Batches of changes for the table tests, written as plain dictionaries."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from cdc_connectors.table.layout import AT, OFFSET, OP, STREAM, TIME, UNSET

EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
ORDERS = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("status", pa.string()),
        pa.field("amount", pa.decimal128(10, 2)),
    ]
)


def batch(
    changes: Sequence[tuple[Any, ...]], schema: pa.Schema = ORDERS, stream: str = "orders/0"
) -> pa.Table:
    """Changes ``(op, offset, row[, unset])`` (``row`` a dict of the schema's columns) as the
    layout's table; each change happened ``offset`` seconds after :data:`EPOCH`."""
    columns: dict[str, list[Any]] = {f.name: [] for f in schema}
    ops, offsets, ats, unsets = [], [], [], []
    for change in changes:
        op, offset, row = change[0], change[1], change[2]
        unset = change[3] if len(change) > 3 else None
        for name in columns:
            columns[name].append(row.get(name))
        ops.append(op)
        offsets.append(offset)
        ats.append(EPOCH + dt.timedelta(seconds=offset))
        unsets.append(unset)
    arrays = {f.name: pa.array(columns[f.name], f.type) for f in schema}
    arrays[OP] = pa.array(ops, pa.string())
    arrays[STREAM] = pa.array([stream] * len(ops), pa.string())
    arrays[OFFSET] = pa.array(offsets, pa.int64())
    arrays[AT] = pa.array(ats, TIME)
    arrays[UNSET] = pa.array(unsets, pa.list_(pa.string()))
    return pa.table(arrays)
