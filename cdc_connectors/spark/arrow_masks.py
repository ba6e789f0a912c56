"""Boolean Arrow columns as numpy masks: the one way every columnar step reads them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow.compute as pc

__all__ = ["mask"]


def mask(array: Any) -> np.ndarray:
    """A boolean column (or chunked column) as a numpy mask, null as false; a column without
    nulls is read as it is, with no kernel call (a step calls this dozens of times a batch)."""
    if array.null_count:
        array = pc.fill_null(array, False)
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=bool)
