"""Rows picked by their key: the exact step after a coarse filter of a table's files."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.table.layout import IS_CURRENT

__all__ = ["Going", "KeySet", "among", "holding"]


def among(rows: pa.Table, keys: pa.Table, *, anti: bool = False) -> pa.Table:
    """The rows of ``rows`` whose key (the columns of ``keys``) is in ``keys`` (or, with
    ``anti``, is not), in their order."""
    if rows.num_rows == 0:
        return rows
    held = holding(rows, keys)
    return rows.filter(pa.array(~held if anti else held))


def holding(rows: pa.Table, keys: pa.Table) -> np.ndarray:
    """Which of ``rows`` have their key (the columns of ``keys``) in ``keys``."""
    found = np.zeros(rows.num_rows, dtype=bool)
    if rows.num_rows == 0 or keys.num_rows == 0:
        return found
    names = keys.column_names
    typed = keys.cast(pa.schema([rows.schema.field(n) for n in names]))
    index = rows.select(names).append_column(
        "__row", pa.array(np.arange(rows.num_rows), pa.int64())
    )
    hit = index.join(typed, names, join_type="left semi", use_threads=False).column("__row")
    found[hit.to_numpy()] = True
    return found


def _numbered(datatype: pa.DataType) -> bool:
    """Types whose values compare as the integers under them (numpy sorts those)."""
    return bool(
        pa.types.is_integer(datatype)
        or pa.types.is_date(datatype)
        or pa.types.is_timestamp(datatype)
        or pa.types.is_time(datatype)
    )


class KeySet:
    """A set of keys (the columns of ``keys``), made once and asked of batch after batch
    of a table's rows: which rows hold one. A single key column of integers, dates or
    times is looked up in its sorted values (no hash table made again for each batch);
    other keys are joined."""

    def __init__(self, keys: pa.Table):
        self.names = keys.column_names
        self.keys = keys
        self._sorted: np.ndarray | None = None
        if len(self.names) == 1 and _numbered(keys.schema.field(0).type):
            column = keys.column(0).drop_null()
            self._sorted = np.sort(_integers(column))

    def __len__(self) -> int:
        return int(self.keys.num_rows)

    def holds(self, rows: pa.RecordBatch | pa.Table) -> np.ndarray:
        """Whether each row's key is one of the set's (a null key is none)."""
        count = rows.num_rows
        if self.keys.num_rows == 0 or count == 0:
            return np.zeros(count, dtype=bool)
        if self._sorted is not None:
            column = rows.column(self.names[0])
            values = _integers(column)
            at = np.searchsorted(self._sorted, values).clip(0, len(self._sorted) - 1)
            found: np.ndarray = self._sorted[at] == values
            if column.null_count:
                found &= np.asarray(column.is_valid())
            return found
        table = pa.Table.from_batches([rows]) if isinstance(rows, pa.RecordBatch) else rows
        index = table.select(self.names).append_column(
            "__row", pa.array(np.arange(count), pa.int64())
        )
        typed = self.keys.cast(pa.schema([table.schema.field(n) for n in self.names]))
        hit = index.join(typed, self.names, join_type="left semi", use_threads=False)
        found = np.zeros(count, dtype=bool)
        found[hit.column("__row").to_numpy()] = True
        return found


def _integers(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The integers under a column of integers, dates or times (nulls as zero)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    as_int = column
    if not pa.types.is_integer(column.type):
        as_int = column.view(pa.int32() if column.type.bit_width == 32 else pa.int64())
    values: np.ndarray = pc.fill_null(as_int, 0).to_numpy(zero_copy_only=False)
    return values.astype(np.int64) if values.dtype != np.uint64 else values


class Going:
    """The rows of a table a replacement takes away: the current rows of ``keys`` (and of
    ``coming``'s, the keys of the new rows, where a key has one row: no ``history``), and
    every row of ``every``'s keys; all three typed as the table's key columns."""

    def __init__(self, keys: pa.Table, coming: pa.Table, every: pa.Table, history: bool):
        self.history = history
        self.current = keys if history else pa.concat_tables([keys, coming.cast(keys.schema)])
        self.every = every.cast(keys.schema)
        self._current, self._every = KeySet(self.current), KeySet(self.every)
        #: The columns :meth:`__call__` reads.
        self.columns = [*keys.column_names, *([IS_CURRENT] if history else [])]

    def keys(self) -> pa.Table:
        """Every key whose rows may go (to find the files that may hold them)."""
        return pa.concat_tables([self.current, self.every])

    def __call__(self, batch: pa.RecordBatch) -> np.ndarray:
        """Whether each row of ``batch`` (holding :attr:`columns`) goes."""
        found = self._current.holds(batch)
        if self.history:
            found &= np.asarray(pc.fill_null(batch.column(IS_CURRENT), False))
        if len(self._every):
            found |= self._every.holds(batch)
        return found
