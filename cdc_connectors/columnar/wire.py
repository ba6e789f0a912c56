"""Protobuf's wire format over Arrow columns: serialized messages per row, no Python object
per row.

A message is built as :class:`Pieces`: binary columns whose row-wise concatenation is
each row's bytes, and each row's size. Small variable parts (tags, varint lengths, fixed
numbers) are :data:`Segment` matrices written by numpy, so a field's framing costs no
copy of its body: every byte of a value is copied once, when the record is joined at the
end (:meth:`Pieces.joined`). A row without a field has no bytes for it (proto3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.spark.arrow_masks import mask

__all__ = [
    "Pieces",
    "Segment",
    "choose",
    "constant",
    "framed",
    "lengths",
    "mask",
    "masked",
    "rows_holding",
    "segments",
    "varint",
    "varint64",
    "varint_size",
]

#: Bytes of each row (a ``uint8`` matrix, one row per message row) and how many of each
#: row's leading bytes count.
Segment = tuple[np.ndarray, np.ndarray]

_VARINT_BYTES = 5  # a varint of a size below 2**35
_NO_SEPARATOR = b""  # (bytes: an Arrow scalar made at import would import pandas)


def valid(array: pa.Array) -> np.ndarray:
    """Which rows of a column are not null."""
    if array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    return mask(pc.is_valid(array))


def lengths(array: pa.Array) -> np.ndarray:
    """The byte length of each value of a binary or string column (0 for nulls), from its
    offsets."""
    count = len(array)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[
        array.offset : array.offset + count + 1
    ]
    found = np.diff(offsets).astype(np.int64)
    if array.null_count:
        found[~valid(array)] = 0
    return found


def rows_holding(array: pa.Array | pa.ChunkedArray, table: np.ndarray) -> np.ndarray:
    """Which rows of a binary or string column (large ones too) hold a byte ``table`` (a
    boolean array of 256, by byte value) marks: one pass over the column's bytes, not a
    kernel call per row; null rows never."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    count = len(array)
    found = np.zeros(count, dtype=bool)
    if not count:
        return found
    buffers = array.buffers()
    wide = pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type)
    offsets = np.frombuffer(buffers[1], dtype=np.int64 if wide else np.int32)
    offsets = offsets[array.offset : array.offset + count + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    if buffers[2] is None or end == start:
        return found
    data = np.frombuffer(buffers[2], dtype=np.uint8)[start:end]
    hits = np.flatnonzero(_marked(data, table))
    if len(hits):
        found[np.searchsorted(offsets, hits + start, side="right") - 1] = True
        if array.null_count:
            found &= valid(array)
    return found


def _marked(data: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Which bytes of ``data`` ``table`` marks: compared with the few runs of byte values
    it marks (a line break, control characters, a quote), several times sooner than a
    look-up of each byte in the table; looked up where it marks many runs."""
    runs = _runs(table.tobytes())
    if len(runs) > _MOST_RUNS:
        found: np.ndarray = table[data]
        return found
    marked = np.zeros(len(data), dtype=bool)
    for low, high in runs:
        if low == high:
            marked |= data == low
        elif low == 0:
            marked |= data <= high
        elif high == 255:
            marked |= data >= low
        else:
            marked |= (data >= low) & (data <= high)
    return marked


#: Runs of marked byte values :func:`_marked` compares with, at most.
_MOST_RUNS = 4


@lru_cache(maxsize=64)
def _runs(table: bytes) -> tuple[tuple[int, int], ...]:
    """The runs of consecutive byte values a table (256 booleans, as bytes) marks."""
    runs: list[tuple[int, int]] = []
    for value in (v for v in range(256) if table[v]):
        if runs and runs[-1][1] == value - 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    return tuple(runs)


def masked(array: pa.Array, keep: np.ndarray) -> pa.Array:
    """A binary column with the rows not in ``keep`` null (no bytes in :class:`Pieces`);
    the values are not copied."""
    if array.type != pa.binary():
        array = array.cast(pa.binary())
    keep = keep & valid(array) if array.null_count else keep
    if keep.all():
        return array
    bits = np.zeros(array.offset + len(array), dtype=bool)
    bits[array.offset :] = keep
    validity = pa.py_buffer(np.packbits(bits, bitorder="little"))
    return pa.Array.from_buffers(
        pa.binary(), len(array), [validity, *array.buffers()[1:3]], offset=array.offset
    )


def varint_size(numbers: np.ndarray) -> np.ndarray:
    """Bytes of each number (below 2**35) as a varint."""
    sizes = np.ones(len(numbers), dtype=np.int64)
    top = int(numbers.max(initial=0))
    for shift in range(7, 7 * _VARINT_BYTES, 7):
        if top < (1 << shift):
            break
        sizes += numbers >= (1 << shift)
    return sizes


def varint(numbers: np.ndarray) -> Segment:
    """Each number (below 2**35) as a varint."""
    values = numbers.astype(np.int64, copy=False)
    sizes = varint_size(values)
    width = int(sizes.max(initial=1))
    if width == 1:
        return values.astype(np.uint8)[:, None], sizes
    matrix = np.zeros((len(values), width), dtype=np.uint8)
    for k in range(width):
        more = (sizes > k + 1).astype(np.int64) << 7
        matrix[:, k] = ((values >> (7 * k)) & 0x7F) | more
    return matrix, sizes


def varint64(values: np.ndarray) -> Segment:
    """Each 64-bit number as a varint of its unsigned value (a negative ``int64`` as its
    two's complement: ten bytes, as Protobuf writes a negative ``int64``)."""
    unsigned = values.astype(np.int64, copy=False).view(np.uint64)
    sizes = np.ones(len(unsigned), dtype=np.int64)
    for shift in range(7, 64, 7):
        sizes += unsigned >= np.uint64(1 << shift)
    width = int(sizes.max(initial=1))
    matrix = np.zeros((len(unsigned), width), dtype=np.uint8)
    for k in range(width):
        low = ((unsigned >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        matrix[:, k] = low | ((sizes > k + 1).astype(np.uint8) << 7)
    return matrix, sizes


@lru_cache(maxsize=256)
def constant(data: bytes, count: int) -> Segment:
    """The same bytes on every row: read-only views of ``data`` and of its size, which hold
    no memory a row, shared by the calls that ask for the same (a batch asks for a few
    constants hundreds of times)."""
    row = np.frombuffer(data, dtype=np.uint8)
    sizes = np.broadcast_to(np.int64(len(data)), (count,))
    return np.broadcast_to(row, (count, len(data))), sizes


def choose(condition: np.ndarray, yes: Segment, no: Segment) -> Segment:
    """``yes`` where ``condition``, else ``no``."""
    width = max(yes[0].shape[1], no[0].shape[1])
    matrix = np.where(condition[:, None], _widened(yes[0], width), _widened(no[0], width))
    return matrix.astype(np.uint8, copy=False), np.where(condition, yes[1], no[1])


def _widened(matrix: np.ndarray, width: int) -> np.ndarray:
    if matrix.shape[1] == width:
        return matrix
    out = np.zeros((matrix.shape[0], width), dtype=np.uint8)
    out[:, : matrix.shape[1]] = matrix
    return out


def segments(parts: list[Segment], present: np.ndarray | None = None) -> Pieces:
    """Segments written one after the other on each row; nothing on rows not ``present``."""
    if present is not None and not present.all():
        parts = [(matrix, np.where(present, sizes, 0)) for matrix, sizes in parts]
    sizes = np.zeros(len(parts[0][1]), dtype=np.int64)
    for _, part_sizes in parts:
        sizes += part_sizes
    return Pieces(list(parts), sizes)


def _column(parts: list[Segment]) -> pa.Array:
    """Segments written one after the other on each row, as one binary column."""
    count = len(parts[0][1])
    uniform = [int(sizes[0]) if count and (sizes == sizes[0]).all() else -1 for _, sizes in parts]
    if min(uniform, default=0) >= 0:
        # Every row the same width: the matrices side by side are the column's bytes.
        matrix = _side_by_side([m[:, :w] for (m, _), w in zip(parts, uniform, strict=True)])
        width = matrix.shape[1]
        if not width:
            return pa.array([b""] * count, pa.binary())
        offsets = np.arange(0, (count + 1) * width, width, dtype=np.int32)
        data = pa.py_buffer(np.ascontiguousarray(matrix, dtype=np.uint8))
        return pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(offsets), data])
    # Rows of different widths: the matrices side by side, and a mask of the bytes that
    # count; boolean indexing keeps them in row order, which is the column's bytes.
    sizes = np.zeros(count, dtype=np.int64)
    for _, part_sizes in parts:
        sizes += part_sizes
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    matrix = _side_by_side([m for m, _ in parts])
    data = np.ascontiguousarray(matrix[_counted(parts)], dtype=np.uint8)
    return pa.Array.from_buffers(
        pa.binary(),
        count,
        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
    )


def _side_by_side(matrices: list[np.ndarray]) -> np.ndarray:
    """The matrices side by side, in row order (C order) whatever their own: concatenated
    as they come, matrices of column order (numpy's own choice for some) would make one of
    column order, which the row-wise reads after it cross many times slower."""
    width = sum(m.shape[1] for m in matrices)
    out = np.empty((len(matrices[0]), width), dtype=np.uint8)
    return np.concatenate(matrices, axis=1, out=out)


def _counted(parts: list[Segment]) -> np.ndarray:
    """Which bytes of the matrices of ``parts`` side by side count: the first ``size``
    of each part's on each row. Compared over the flat bytes (each part's sizes repeated
    over its columns), as comparing a few columns at a time row by row costs three times
    more."""
    count = len(parts[0][1])
    widths = tuple(matrix.shape[1] for matrix, _ in parts)
    places, repeats = _layout(widths, count)
    sizes = np.empty((count, len(parts)), dtype=places.dtype)
    for k, (matrix, part_sizes) in enumerate(parts):
        sizes[:, k] = np.minimum(part_sizes, matrix.shape[1])  # (no more than the width)
    counted: np.ndarray = places < np.repeat(sizes.ravel(), repeats)
    return counted.reshape(count, sum(widths))


@lru_cache(maxsize=16)
def _layout(widths: tuple[int, ...], count: int) -> tuple[np.ndarray, np.ndarray]:
    """For :func:`_counted`: each byte's place in its part, over ``count`` rows of
    ``widths``, and each part's width, over the rows (read-only, shared)."""
    dtype = np.uint8 if max(widths, default=0) < 256 else np.int64
    row = np.concatenate([np.arange(width, dtype=dtype) for width in widths])
    places, repeats = np.tile(row, count), np.tile(np.array(widths, dtype=np.int64), count)
    places.setflags(write=False)
    repeats.setflags(write=False)
    return places, repeats


@dataclass
class Pieces:
    """The bytes of one message per row: ``parts`` (binary columns, a null being no
    bytes, and segments) joined row-wise, and the byte count of each row."""

    parts: list[pa.Array | Segment] = field(default_factory=list)
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @classmethod
    def empty(cls, count: int) -> Pieces:
        return cls([], np.zeros(count, dtype=np.int64))

    @classmethod
    def of(cls, column: pa.Array) -> Pieces:
        """A binary (or string) column as is."""
        if column.type != pa.binary():
            column = column.cast(pa.binary())
        return cls([column], lengths(column))

    def __add__(self, other: Pieces) -> Pieces:
        return Pieces([*self.parts, *other.parts], self.sizes + other.sizes)

    def joined(self) -> pa.Array:
        """One binary column of the whole messages; consecutive segments are written as
        one column first."""
        count = len(self.sizes)
        columns: list[pa.Array] = []
        run: list[Segment] = []
        for part in self.parts:
            if isinstance(part, tuple):
                run.append(part)
                continue
            if run:
                columns.append(_column(run))
                run = []
            columns.append(part)
        if run:
            columns.append(_column(run))
        if not columns:
            return pa.array([b""] * count, pa.binary())
        if len(columns) == 1 and not columns[0].null_count:
            return columns[0]
        return pc.binary_join_element_wise(
            *columns, _NO_SEPARATOR, null_handling="replace", null_replacement=""
        )


def framed(tag: bytes, body: Pieces, present: np.ndarray | None = None) -> Pieces:
    """A length-delimited field around ``body``: ``tag``, the body's size, the body; no
    bytes on rows not ``present`` (whose body must have none either)."""
    count = len(body.sizes)
    header = segments([constant(tag, count), varint(body.sizes)], present)
    return header + body
