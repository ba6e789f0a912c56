"""Copy-on-write of a Delta table's data files with Arrow, committed through delta-rs.

A batch's replacement is one Delta transaction of ``remove`` and ``add`` actions
(:meth:`deltalake.DeltaTable.create_write_transaction`): each data file holding a row that
goes is read batch by batch and written again without it, the new rows are written to files
of their own, and the commit carries the stream's ``txn``. A file none of whose rows goes
stays as it is (its key columns alone are read to know). What is held is a row group or so
of one file at a time, whatever the size of the table; files written by a transaction that
never commits are in no version of the table (``DeltaTable.vacuum(full=True)`` removes
them; the default vacuum only those that versions removed).

Each file written carries Delta's statistics (``numRecords``, ``nullCount``, and the bounds
of the columns whose values Delta keeps exactly: integers and dates, and text of at most 32
characters in the key columns, the text most worth skipping files by), so that later
batches and readers skip the files their keys are not in.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from cdc_connectors.table import folding
from cdc_connectors.table.batches import ROW_GROUP, conformed, read_one

__all__ = ["FileWriter", "Statistics", "rewrite", "row_groups"]

#: A column's dictionary stops at this size: a column of many values is written plain soon
#: (the default, a megabyte, makes the writer take twice as long with larger files), one of
#: few values keeps its dictionary.
DICTIONARY_PAGE = 64 * 1024
#: Delta keeps text bounds cut to this many characters: longer ones are left out here.
TEXT_BOUND = 32


class Statistics:
    """Delta's statistics of one data file, gathered batch by batch."""

    def __init__(self, schema: pa.Schema, text_bounds: Collection[str] = ()):
        self.schema = schema
        self.text_bounds = set(text_bounds)
        self.records = 0
        self.nulls = {f.name: 0 for f in schema if not pa.types.is_nested(f.type)}
        self.low: dict[str, Any] = {}
        self.high: dict[str, Any] = {}
        #: Columns left without bounds (a value no bound can be written of).
        self.unbounded: set[str] = set()

    def add(self, batch: pa.RecordBatch) -> None:
        self.records += batch.num_rows
        for field, column in zip(self.schema, batch.columns, strict=True):
            if field.name not in self.nulls:
                continue
            self.nulls[field.name] += column.null_count
            if column.null_count == len(column) or not (
                _bounded(field.type)
                or (pa.types.is_string(field.type) and field.name in self.text_bounds)
            ):
                continue
            if field.name in self.unbounded:
                continue
            bounds = pc.min_max(column)
            try:
                low, high = bounds["min"].as_py(), bounds["max"].as_py()
            except (OverflowError, ValueError):  # a date past what Python's dates hold
                self.unbounded.add(field.name)
                self.low.pop(field.name, None)
                self.high.pop(field.name, None)
                continue
            held_low, held_high = self.low.get(field.name), self.high.get(field.name)
            self.low[field.name] = low if held_low is None else min(low, held_low)
            self.high[field.name] = high if held_high is None else max(high, held_high)

    def to_json(self) -> str:
        low, high = {}, {}
        for name, value in self.low.items():
            other = self.high[name]
            if isinstance(value, str) and max(len(value), len(other)) > TEXT_BOUND:
                continue
            low[name], high[name] = _json_value(value), _json_value(other)
        return json.dumps(
            {
                "numRecords": self.records,
                "minValues": low,
                "maxValues": high,
                "nullCount": self.nulls,
            }
        )


def _bounded(datatype: pa.DataType) -> bool:
    """Types whose bounds Delta keeps exactly (and readers compare as written), text aside."""
    return bool(pa.types.is_integer(datatype) or pa.types.is_date32(datatype))


def _json_value(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


class FileWriter:
    """A data file being written: its rows, their statistics, and its ``add`` action. Rows
    are written in row groups of :data:`ROW_GROUP` rows however small the batches given
    (the row groups of several files, or a filter's few rows of each), so that a file
    rewritten or folded again and again does not gather row groups of a few rows each."""

    def __init__(self, fs: pafs.FileSystem, root: str, schema: pa.Schema, keys: list[str]):
        self.fs, self.schema = fs, schema
        self.name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        self.where = f"{root}/{self.name}"
        self.stats = Statistics(schema, keys)
        self._writer: pq.ParquetWriter | None = None
        self._held: list[pa.RecordBatch] = []
        self._rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self.stats.add(batch)
        self._held.append(batch)
        self._rows += batch.num_rows
        if self._rows >= ROW_GROUP:
            self._flush()

    def _flush(self, last: bool = False) -> None:
        """Write the whole row groups held (and the rest, if ``last``)."""
        held = pa.Table.from_batches(self._held, self.schema)
        cut = held.num_rows if last else held.num_rows - held.num_rows % ROW_GROUP
        if cut == 0:
            return
        rest = held.slice(cut)
        self._held, self._rows = rest.to_batches(), rest.num_rows
        if self._writer is None:
            self._writer = pq.ParquetWriter(
                self.where,
                self.schema,
                filesystem=self.fs,
                compression="snappy",
                dictionary_pagesize_limit=DICTIONARY_PAGE,
            )
        self._writer.write_table(held.slice(0, cut), row_group_size=ROW_GROUP)

    def close(self, now: int, data_change: bool = True) -> Any:
        """The file's ``add`` action (``None`` for a file with no row: none is left);
        ``data_change`` false for rows moved, not changed (a fold)."""
        from deltalake.transaction import AddAction

        self._flush(last=True)
        if self._writer is None:
            return None
        self._writer.close()
        size = self.fs.get_file_info(self.where).size
        return AddAction(self.name, size, {}, now, data_change, self.stats.to_json())


def rewrite(
    table: Any,
    schema: pa.Schema,
    keys: list[str],
    goes: Callable[[pa.RecordBatch], np.ndarray],
    goes_reads: list[str],
    files: pa.Table,
    rows: pa.Table,
    commit: Any,
    every_file: pa.Table | None = None,
) -> None:
    """Commit, on the version of ``table`` (a :class:`deltalake.DeltaTable`) read, one
    transaction: each of ``files`` (add actions: ``path``, ``size_bytes``) holding a row
    ``goes`` takes (given batches of the columns ``goes_reads`` first, to know whether one
    does, then of every column) rewritten without it, and ``rows`` added; ``keys`` are the
    table's key columns (their text bounds are kept); small files of ``every_file`` (the
    table's add actions) not rewritten so, folded into one (:mod:`.folding`).
    :class:`deltalake.exceptions.CommitFailedError` when another writer committed since."""
    from deltalake._internal import RemoveAction

    fs, root = pafs.FileSystem.from_uri(table.table_uri)
    root = root.rstrip("/")
    now = int(time.time() * 1000)
    actions: list[Any] = []
    replaced: set[str] = set()
    for path, size in zip(
        files.column("path").to_pylist(), files.column("size_bytes").to_pylist(), strict=True
    ):
        where = f"{root}/{unquote(path)}"
        if not any(goes(b).any() for b in row_groups(fs, where, schema, goes_reads)):
            continue  # no row of the file goes: it stays as it is
        kept = FileWriter(fs, root, schema, keys)
        for batch in row_groups(fs, where, schema):
            kept.write(batch.filter(pa.array(~goes(batch))))
        actions.append(RemoveAction(unquote(path), True, now, size, {}))  # (escaped again)
        replaced.add(path)
        added = kept.close(now)
        if added is not None:
            actions.append(added)
    folded = _to_fold(every_file, replaced)
    if folded is not None and folded.num_rows:
        fold = FileWriter(fs, root, schema, keys)
        for path, size in zip(
            folded.column("path").to_pylist(), folded.column("size_bytes").to_pylist(), strict=True
        ):
            for batch in row_groups(fs, f"{root}/{unquote(path)}", schema):
                fold.write(batch)
            actions.append(RemoveAction(unquote(path), False, now, size, {}))  # rows moved
        added = fold.close(now, data_change=False)
        if added is not None:
            actions.append(added)
    if rows.num_rows:
        new = FileWriter(fs, root, schema, keys)
        for batch in rows.cast(schema).to_batches(max_chunksize=ROW_GROUP):
            new.write(batch)
        actions.append(new.close(now))
    table.create_write_transaction(
        actions, "append", table.schema(), partition_by=[], commit_properties=commit
    )


def _to_fold(every_file: pa.Table | None, replaced: set[str]) -> pa.Table | None:
    """The small files of ``every_file`` a batch folds, none it ``replaced``."""
    if every_file is None or every_file.num_rows - len(replaced) < folding.FOLD_AT:
        return None
    paths = every_file.column("path").to_pylist()
    taken = np.array([path in replaced for path in paths], dtype=bool)
    sizes = every_file.column("size_bytes").to_numpy()
    return every_file.take(pa.array(folding.to_fold(sizes, taken)))


def row_groups(
    fs: pafs.FileSystem, where: str, schema: pa.Schema, columns: list[str] | None = None
) -> Iterator[pa.RecordBatch]:
    """A data file's rows, a row group at a time (nothing read ahead: Arrow's dataset
    scanner decodes a file's row groups ahead of a slow consumer), in the table's types
    (``columns`` of ``schema`` only, if given): a column the file lacks (added to the table
    after it was written) is null."""
    wanted = schema if columns is None else pa.schema([schema.field(n) for n in columns])
    with fs.open_input_file(where) as source:
        data = pq.ParquetFile(source, pre_buffer=False)
        held = [n for n in wanted.names if n in data.schema_arrow.names]
        for group in range(data.num_row_groups):
            read_one()
            table = data.read_row_group(group, columns=held)
            batch = conformed(table, wanted)
            if batch is None:
                raise pa.ArrowInvalid(f"{where}: a column of the file is not of the table's type")
            yield batch
