"""A part of each value of a binary column, without copying the bytes twice.

:func:`row_slices` gives ``array[n][starts[n]:stops[n]]`` for every row as a
``binary_view`` column over ``array``'s own data buffer (no byte copied: a view is 16
bytes a row, the parts of up to 12 bytes inline), then as a plain ``binary`` column (one
copy, in Arrow).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["binary_views", "row_slices"]

_INLINE = 12  # bytes a view holds itself (Arrow's binary_view layout)
_REACH = np.arange(_INLINE)


def row_slices(
    array: pa.BinaryArray, starts: np.ndarray, stops: np.ndarray, valid: np.ndarray | None = None
) -> pa.BinaryArray:
    """``array[n][starts[n]:stops[n]]`` for each row ``n`` (``0 <= starts <= stops <=`` the
    value's length), null where ``valid`` is false (or ``array`` is null)."""
    count = len(array)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[
        array.offset : array.offset + count + 1
    ]
    buffer = array.buffers()[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(1, np.uint8)
    if not len(data):
        data = np.zeros(1, np.uint8)
    begin = offsets[:-1].astype(np.int64) + starts
    views = binary_views(data, begin, (stops - starts).astype(np.int64), 0)
    present = ~np.zeros(count, dtype=bool) if valid is None else valid
    if array.null_count:
        present = present & np.asarray(array.is_valid().to_numpy(zero_copy_only=False))
    bitmap = None if present.all() else pa.array(present, pa.bool_()).buffers()[1]
    sliced = pa.Array.from_buffers(
        pa.binary_view(),
        count,
        [bitmap, pa.py_buffer(views), buffer if buffer is not None else pa.py_buffer(b"\0")],
    )
    return sliced.cast(pa.binary())


def binary_views(data: np.ndarray, begin: np.ndarray, sizes: np.ndarray, buffer: int) -> np.ndarray:
    """Arrow ``binary_view`` views (16 bytes a row) of ``data[begin:begin + sizes]`` for
    each row, ``data`` being the array's data buffer number ``buffer``: up to 12 bytes held
    inline, longer values as their first 4 bytes, the buffer and where they start."""
    count = len(sizes)
    views = np.zeros((count, 16), dtype=np.uint8)
    views[:, 0:4] = sizes.astype("<i4").view(np.uint8).reshape(count, 4)
    inside = _REACH[None, :] < np.minimum(sizes, _INLINE)[:, None]
    first = data[np.where(inside, begin[:, None] + _REACH[None, :], 0)]
    views[:, 4:16] = np.where(inside, first, 0)
    long = sizes > _INLINE
    if long.any():
        views[long, 8:12] = np.array([buffer], dtype="<i4").view(np.uint8)
        views[long, 12:16] = begin[long].astype("<i4").view(np.uint8).reshape(-1, 4)
    return views
