"""Rows picked by their key: the exact step after a coarse filter of a table's files."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["among"]


def among(rows: pa.Table, keys: pa.Table, *, anti: bool = False) -> pa.Table:
    """The rows of ``rows`` whose key (the columns of ``keys``) is in ``keys`` (or, with
    ``anti``, is not), in their order."""
    if rows.num_rows == 0:
        return rows
    names = keys.column_names
    typed = keys.cast(pa.schema([rows.schema.field(n) for n in names]))
    index = rows.select(names).append_column(
        "__row", pa.array(np.arange(rows.num_rows), pa.int64())
    )
    how = "left anti" if anti else "left semi"
    hit = index.join(typed, names, join_type=how, use_threads=False).column("__row")
    return rows.take(pa.array(np.sort(hit.to_numpy()), pa.int64()))
