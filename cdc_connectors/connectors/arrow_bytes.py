"""Binary Arrow columns from Python bytes and back, one copy for a whole column.

``pa.array(list_of_bytes)`` grows its buffer as it goes (a reallocation and a copy each time
it doubles) and, in a fresh process, pays for every page again: on 10,000 messages of a few
kilobytes it took ten times the single ``b"".join`` of :func:`binary_array`.
:func:`binary_slices` goes the other way without a Python ``bytes`` per value: zero-copy
Arrow buffer slices, which librdkafka's ``produce`` reads as it reads bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

#: Offsets of Arrow's ``binary`` (what Spark's ``BinaryType`` is) are 32-bit.
MAX_BINARY_BYTES = 2**31 - 1


def binary_array(items: Sequence[bytes | None]) -> pa.Array:
    """A ``binary`` array of ``items`` (``None`` is null); ValueError past 2 GiB."""
    count = len(items)
    validity = None
    present: Sequence[bytes] = items  # type: ignore[assignment]  # no None, checked next
    if None in items:
        valid = np.fromiter((item is not None for item in items), np.bool_, count)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        present = [b"" if item is None else item for item in items]
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(np.fromiter(map(len, present), np.int64, count), out=offsets[1:])
    if offsets[-1] > MAX_BINARY_BYTES:
        raise ValueError(f"{offsets[-1]} bytes do not fit one binary column (2 GiB at most)")
    data = pa.py_buffer(b"".join(present))
    return pa.Array.from_buffers(
        pa.binary(), count, [validity, pa.py_buffer(offsets.astype(np.int32)), data]
    )


def binary_slices(array: pa.Array) -> list[pa.Buffer | None]:
    """The values of a ``binary`` or ``string`` array (either ``large_`` kind too) as
    zero-copy buffer slices (UTF-8 bytes for strings); ``None`` for a null."""
    kind = array.type
    if pa.types.is_large_binary(kind) or pa.types.is_large_string(kind):
        width: type[np.integer] = np.int64
    elif pa.types.is_binary(kind) or pa.types.is_string(kind):
        width = np.int32
    else:
        raise TypeError(f"not a binary or string column: {kind}")
    count = len(array)
    buffers = array.buffers()
    if count == 0:
        return []
    offsets = np.frombuffer(buffers[1], width, count + 1, array.offset * np.dtype(width).itemsize)
    data = buffers[2] if buffers[2] is not None else pa.py_buffer(b"")
    starts = offsets[:-1].tolist()
    sizes = np.diff(offsets).tolist()
    found: list[pa.Buffer | None] = [
        data.slice(start, size) for start, size in zip(starts, sizes, strict=True)
    ]
    if array.null_count:
        for index in np.flatnonzero(~array.is_valid().to_numpy(zero_copy_only=False)).tolist():
            found[index] = None
    return found
