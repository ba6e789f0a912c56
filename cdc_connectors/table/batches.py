"""Rows read from a table's data files, in the table's current columns and types."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pyarrow as pa

__all__ = ["RELEASE_EVERY", "ROW_GROUP", "conformed", "read_one"]

#: Rows of a row group written, and of a batch read: about what a rewrite holds of a file.
ROW_GROUP = 64 * 1024

#: Batches of data files read between two returns to the system of what Arrow's allocator
#: holds freed. mimalloc (Arrow's default) keeps it, and a process rewriting a table read
#: ever more of it: applying 20,000 changes to a table of 1,000,000 rows peaked 30 MiB
#: higher than to one of 100,000, 10 to 15 MiB with a return every second batch, which
#: costs the rewrite about 5% (every batch: 10%).
RELEASE_EVERY = 2
_read = itertools.count(1)


def read_one() -> None:
    """Count a batch about to be read from a data file; every :data:`RELEASE_EVERY`-th,
    give the memory Arrow's allocator holds freed back to the system first."""
    if next(_read) % RELEASE_EVERY == 0:
        pa.default_memory_pool().release_unused()


def conformed(
    read: pa.Table, wanted: pa.Schema, names: Mapping[str, str] | None = None
) -> pa.RecordBatch | None:
    """``read`` (rows of a data file) as a batch of ``wanted``: each column cast to its
    type (``names``: the file's name of each, where the file names them otherwise), a
    column the file lacks (added to the table after it was written) null; ``None`` where a
    column does not cast."""
    count = read.num_rows
    columns = []
    for field in wanted:
        name = field.name if names is None else names.get(field.name)
        if name is None or name not in read.column_names:
            columns.append(pa.nulls(count, field.type))
            continue
        try:
            columns.append(read.column(name).cast(field.type).combine_chunks())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
    return pa.RecordBatch.from_arrays(columns, schema=wanted)
