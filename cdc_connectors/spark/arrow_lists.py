"""List columns, item by item: which row each item of a flattened list column is of."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["item_rows", "list_offsets", "list_sizes"]


def list_sizes(array: pa.Array) -> np.ndarray:
    """The items of each list (0 for a null one), as ``pc.list_flatten`` keeps them."""
    return np.asarray(pc.fill_null(pc.list_value_length(array), 0).to_numpy(), dtype=np.int64)


def item_rows(sizes: np.ndarray) -> np.ndarray:
    """The row of each item of the flattened lists of ``sizes`` (:func:`list_sizes`)."""
    return np.repeat(np.arange(len(sizes)), sizes)


def list_offsets(sizes: np.ndarray) -> pa.Array:
    """Offsets of lists of ``sizes`` items over their flattened items."""
    offsets = np.zeros(len(sizes) + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    return pa.array(offsets)
