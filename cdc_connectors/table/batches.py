"""Rows read from a table's data files, in the table's current columns and types."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

__all__ = ["ROW_GROUP", "conformed"]

#: Rows of a row group written, and of a batch read: about what a rewrite holds of a file.
ROW_GROUP = 64 * 1024


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
