"""Where a row's error lands in nested Arrow columns, and column casts that name their path.

Shared by the Avro batch decoder and encoder: an error found in the flattened values of
a list column belongs to the row holding that list; a column cast to the type a schema
wants fails as one line naming the column.
"""

from __future__ import annotations

from bisect import bisect_right

import pyarrow as pa

__all__ = ["cast_column", "child_errors"]


def child_errors(errors: dict[int, str], offsets: list[int]) -> dict[int, str]:
    """Errors at positions of a flattened child, moved to the positions of their lists."""
    return {bisect_right(offsets, pos) - 1: why for pos, why in errors.items()}


def cast_column(array: pa.Array, target: pa.DataType, path: str) -> pa.Array:
    """``array`` as ``target``; :class:`ValueError` naming ``path`` when it does not cast."""
    if array.type == target:
        return array
    try:
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"{path}: column of type {array.type} is not {target}: {exc}") from None
