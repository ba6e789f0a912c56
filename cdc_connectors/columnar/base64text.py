"""Standard padded base64 of a binary column: what ``base64.b64encode`` gives each value.

Short values (images' bytes columns, positions) are encoded together with numpy, with no
Python call per row: each value is padded to whole triples by Arrow, then every triple of
the column becomes four characters at once. Long values (whole messages) are encoded one
call per value by ``binascii``, whose per-call cost is small beside theirs.
"""

from __future__ import annotations

import binascii

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["encode"]

_ALPHABET = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8
)
# Each 12 bits -> their two characters, as one little-endian 16-bit word.
_PAIRS = (
    _ALPHABET[np.arange(4096) >> 6].astype(np.uint16)
    | (_ALPHABET[np.arange(4096) & 63].astype(np.uint16) << 8)
).astype("<u2")
_PADDING = pa.array([b"", b"\0\0", b"\0"], pa.binary())  # by length % 3
_PAD = ord("=")
#: Mean value size above which values are encoded one call each.
LONG = 256


def encode(array: pa.Array) -> pa.Array:
    """The base64 text of each value of a binary column, as binary; nulls stay null."""
    if array.type != pa.binary():
        array = array.cast(pa.binary())
    count = len(array)
    if not count:
        return pa.array([], pa.binary())
    sizes = pc.fill_null(pc.binary_length(array), 0)
    total = pc.sum(sizes).as_py() or 0
    if total > LONG * count:
        encode_one = binascii.b2a_base64
        return pa.array(
            [None if v is None else encode_one(v, newline=False) for v in array.to_pylist()],
            pa.binary(),
        )
    lengths = np.asarray(sizes.to_numpy(zero_copy_only=False), dtype=np.int64)
    left = lengths % 3
    padded = pc.binary_join_element_wise(
        pc.fill_null(array, b""), _PADDING.take(pa.array(left)), b""
    )
    offsets = np.frombuffer(padded.buffers()[1], dtype=np.int32)[
        padded.offset : padded.offset + count + 1
    ].astype(np.int64)
    data = padded.buffers()[2]
    triples = (
        np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]]
        if data is not None
        else np.zeros(0, dtype=np.uint8)
    )
    triples = triples.reshape(-1, 3).astype(np.uint32)
    numbers = (triples[:, 0] << 16) | (triples[:, 1] << 8) | triples[:, 2]
    words = np.empty((len(numbers), 2), dtype="<u2")
    words[:, 0] = _PAIRS[numbers >> 12]
    words[:, 1] = _PAIRS[numbers & 4095]
    text = words.view(np.uint8).ravel()
    out_offsets = (offsets - offsets[0]) // 3 * 4
    ends = out_offsets[1:]
    text[ends[left == 1] - 2] = _PAD
    text[ends[left != 0] - 1] = _PAD
    validity = None
    if array.null_count:
        validity = pa.array(np.asarray(array.is_valid().to_numpy(zero_copy_only=False))).buffers()[
            1
        ]
    return pa.Array.from_buffers(
        pa.binary(),
        count,
        [validity, pa.py_buffer(out_offsets.astype(np.int32)), pa.py_buffer(text)],
        null_count=array.null_count,
    )
