"""Arrow columns -> Avro bytes in numpy, with no Python value per cell.

Each column of a flat record becomes its Avro bytes for every row at once (varints by
zigzag and bit arithmetic, strings and bytes as spans of their buffer, decimals as two's
complement), then the rows are cut from one buffer (:func:`assemble`). The bytes are those
fastavro writes. :func:`column_encoder` is None for a type written here by no rule; a
column of a batch this path cannot take (a decimal of another scale) encodes to None, and
:class:`~cdc_connectors.spark.avro_encode.AvroBatchEncoder` takes the row path instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import DecimalType

from cdc_connectors.spark.avro_types import (
    MICROS_PER_UNIT,
    AvroNode,
    arrow_type,
    non_null,
    spark_type,
)
from cdc_connectors.spark.column_errors import cast_column

__all__ = ["Columnar", "Piece", "assemble", "column_encoder", "validity"]


# --- encoding: Arrow columns -> Avro bytes, no Python value per cell -------------------

_Ints = npt.NDArray[np.int64]
_Bytes = npt.NDArray[np.uint8]
_Bools = npt.NDArray[np.bool_]
#: 2**7, 2**14, ... 2**63: a zigzag value at or above the i-th needs i + 2 varint bytes.
_VARINT_STEPS = np.array([1 << (7 * i) for i in range(1, 10)], dtype=np.uint64)
_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)
_COLUMNS = np.arange(16)
#: Rows assembled at once: the index arrays of a chunk stay tens of megabytes at most.
_CHUNK_ROWS = 1 << 15
#: Longer string or bytes values are copied one by one, not through a per-byte index.
_SHORT_RUN = 64


class _Block:
    """Per row, ``length`` bytes of a row of ``block`` starting at column ``begin``."""

    def __init__(self, block: _Bytes, length: _Ints | None = None, begin: _Ints | None = None):
        self.block = block
        self.full = length is None and begin is None  # every row is the block's whole width
        self.length = np.full(len(block), block.shape[1]) if length is None else length
        self.begin = begin

    def masked(self, keep: _Bools) -> _Block:
        return _Block(self.block, np.where(keep, self.length, 0), self.begin)

    def take(self, rows: _Ints | slice) -> _Block:
        if self.full:
            return _Block(self.block[rows])
        begin = None if self.begin is None else self.begin[rows]
        return _Block(self.block[rows], self.length[rows], begin)

    def write(self, out: _Bytes, cursor: _Ints) -> None:
        width = self.block.shape[1]
        columns = _COLUMNS[:width] if width <= len(_COLUMNS) else np.arange(width)
        if self.full:
            out[cursor[:, None] + columns] = self.block
            return
        begin = 0 if self.begin is None else self.begin[:, None]
        keep = columns < self.length[:, None] + begin
        if self.begin is not None:
            keep &= columns >= begin
        out[((cursor[:, None] - begin) + columns)[keep]] = self.block[keep]


class _Spans:
    """Per row, ``length`` bytes of ``data`` from ``start`` (a string or bytes column)."""

    def __init__(self, data: _Bytes, start: _Ints, length: _Ints):
        self.data, self.start, self.length = data, start, length

    def masked(self, keep: _Bools) -> _Spans:
        return _Spans(self.data, self.start, np.where(keep, self.length, 0))

    def take(self, rows: _Ints | slice) -> _Spans:
        return _Spans(self.data, self.start[rows], self.length[rows])

    def write(self, out: _Bytes, cursor: _Ints) -> None:
        length = self.length
        long = length > _SHORT_RUN
        if long.any():
            target, source = out.data, self.data.data
            for at, start, size in zip(
                cursor[long].tolist(), self.start[long].tolist(), length[long].tolist(), strict=True
            ):
                target[at : at + size] = source[start : start + size]
            length = np.where(long, 0, length)
        total = int(length.sum())
        if not total:
            return
        # Byte k of all runs laid end to end belongs to row r: k - before[r] into its run.
        before = np.cumsum(length) - length
        at = np.arange(total)
        skew = self.start - before
        if (skew == skew[0]).all():  # the runs are one stretch of the buffer
            first = int(skew[0])
            data = self.data[first : first + total]
        else:
            data = self.data[at + np.repeat(skew, length)]
        out[at + np.repeat(cursor - before, length)] = data


Piece = _Block | _Spans
#: One column -> its pieces (its bytes per row) and where rows do not fit (None: all do).
_Leaf = Callable[[pa.Array], tuple[list[Piece], _Bools | None]]
#: As :data:`_Leaf`, or None when this batch's column needs the row path (a decimal of
#: another scale).
Columnar = Callable[[pa.Array], tuple[list[Piece], _Bools | None] | None]


def _values(array: pa.Array, dtype: str) -> npt.NDArray[Any]:
    """The value buffer of a fixed-width array (whatever lies under its nulls)."""
    first = array.offset
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=first + len(array))[first:]


def validity(array: pa.Array) -> _Bools:
    return array.is_valid().to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def _zigzag(values: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    wide = values.astype(np.int64, copy=False)
    # int64 shifts wrap, which is what zigzag wants at the extremes.
    return ((wide << 1) ^ (wide >> 63)).view(np.uint64)


def _varints(zigzag: npt.NDArray[np.uint64]) -> _Block:
    """Avro's varints of zigzag-encoded values: 7 bits a byte, low first, high bit = more."""
    length = np.searchsorted(_VARINT_STEPS, zigzag, side="right").astype(np.int64) + 1
    width = int(length.max(initial=1))
    block = ((zigzag[:, None] >> _SHIFTS[:width]) & 0x7F).astype(np.uint8)
    block |= (_COLUMNS[:width] < (length - 1)[:, None]).view(np.uint8) << 7
    return _Block(block, length)


def _integers(dtype: str, factor: int) -> _Leaf:
    def encode(array: pa.Array) -> tuple[list[Piece], _Bools | None]:
        values = _values(array, dtype)
        bad = None
        if factor != 1:  # microseconds written as milliseconds: only whole ones fit
            whole, rest = np.divmod(values, factor)
            bad = rest != 0
            values = whole
        return [_varints(_zigzag(values))], bad

    return encode


def _boolean(array: pa.Array) -> tuple[list[Piece], _Bools | None]:
    bits = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    first = array.offset
    flags = np.unpackbits(bits, bitorder="little")[first : first + len(array)]
    return [_Block(flags[:, None])], None


def _float(array: pa.Array) -> tuple[list[Piece], _Bools | None]:
    # Through double and back, as the row path's Python floats go: NaN bits match (a
    # signalling NaN comes out quiet there too, which numpy would warn about).
    with np.errstate(invalid="ignore"):
        values = _values(array, "<f4").astype(np.float64).astype("<f4")
    return [_Block(values.view(np.uint8).reshape(-1, 4))], None


def _double(array: pa.Array) -> tuple[list[Piece], _Bools | None]:
    return [_Block(_values(array, "<f8").view(np.uint8).reshape(-1, 8))], None


def _binary(array: pa.Array) -> tuple[list[Piece], _Bools | None]:
    first = array.offset
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype="<i4", count=first + len(array) + 1)[first:]
    start = offsets[:-1].astype(np.int64)
    length = np.diff(offsets).astype(np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer else np.empty(0, np.uint8)
    return [_varints(_zigzag(length)), _Spans(data, start, length)], None


def _enum(symbols: tuple[str, ...]) -> _Leaf:
    known = pa.array(symbols, pa.string())

    def encode(array: pa.Array) -> tuple[list[Piece], _Bools | None]:
        index = pc.index_in(array, value_set=known)
        bad = validity(array) & ~validity(index) if index.null_count else None
        values = _values(pc.fill_null(index, 0) if index.null_count else index, "<i4")
        return [_varints(_zigzag(values))], bad

    return encode


def _decimal(precision: int, scale: int, path: str) -> Columnar:
    limit = 10**precision
    below = (limit >> 64, limit & (2**64 - 1))  # the limit's high and low words
    above = ((-limit) >> 64, (-limit) & (2**64 - 1))

    def encode(array: pa.Array) -> tuple[list[Piece], _Bools | None] | None:
        kind = array.type
        if not pa.types.is_decimal(kind) or kind.byte_width != 16:
            array = cast_column(array, pa.decimal128(precision, scale), path)
        if array.type.scale != scale:
            return None  # rescaling, and its per-row errors, are the row path's
        first, count = array.offset, len(array)
        raw = np.frombuffer(array.buffers()[1], dtype=np.uint8, count=16 * (first + count))
        little = raw[16 * first :].reshape(count, 16)
        words = little.view("<i8")
        low, high = words[:, 0].view(np.uint64), words[:, 1]
        # -limit < value < limit, compared as 128-bit (high, unsigned low) pairs.
        fits = ((high < below[0]) | ((high == below[0]) & (low < np.uint64(below[1])))) & (
            (high > above[0]) | ((high == above[0]) & (low > np.uint64(above[1])))
        )
        big = little[:, ::-1]
        # The fewest bytes of two's complement (as Java's BigInteger writes): a leading
        # byte goes while it only repeats the sign bit of the byte after it.
        negative = high < 0
        sign = np.where(negative, 0xFF, 0).astype(np.uint8)[:, None]
        spare = (big[:, :15] == sign) & ((big[:, 1:] >> 7) == negative[:, None])
        leading = np.cumprod(spare, axis=1).sum(axis=1)
        length = 16 - leading
        header = (2 * length).astype(np.uint8)[:, None]  # zigzag varint of 1..16: one byte
        return [_Block(header), _Block(big, length, leading)], ~fits

    return encode


def _nullable(inner: Columnar, branch: int) -> Columnar:
    """A [null, T] or [T, null] union: the branch index, then T's bytes unless null."""
    present = np.uint8(2 * branch)  # zigzag of the index
    absent = np.uint8(2 * (1 - branch))

    def encode(array: pa.Array) -> tuple[list[Piece], _Bools | None] | None:
        encoded = inner(array)
        if encoded is None:
            return None
        pieces, bad = encoded
        if not array.null_count:
            index = np.full((len(array), 1), present)
            return [_Block(index), *pieces], bad
        valid = validity(array)
        index = np.where(valid, present, absent)[:, None]
        return [_Block(index), *(p.masked(valid) for p in pieces)], None if bad is None else (
            bad & valid
        )

    return encode


def column_encoder(node: AvroNode, path: str) -> Columnar | None:
    """The vectorised encoder of a field type, or None for a type only the row path writes."""
    if node.type == "union":
        rest = non_null(node)
        if len(node.branches) != 2 or len(rest) != 1:
            return None
        inner = column_encoder(rest[0], path)
        return None if inner is None else _nullable(inner, node.branches.index(rest[0]))
    datatype, _ = spark_type(node, path)
    target = arrow_type(datatype)
    leaf: _Leaf
    if node.logical == "decimal":
        if node.type != "bytes" or not isinstance(datatype, DecimalType):
            return None  # fixed, or a decimal of text: the row path
        return _decimal(node.precision, node.scale, path)
    if node.type in ("int", "long"):
        factor = 1
        if pa.types.is_timestamp(target):
            factor = MICROS_PER_UNIT[(node.logical or "").rpartition("-")[2]]
        leaf = _integers("<i4" if node.type == "int" else "<i8", factor)
    elif node.type == "enum":
        leaf = _enum(node.symbols)
    else:
        simple: dict[str, _Leaf] = {
            "boolean": _boolean,
            "float": _float,
            "double": _double,
            "string": _binary,
            "bytes": _binary,
        }
        if node.type not in simple:
            return None
        leaf = simple[node.type]

    def encode(array: pa.Array) -> tuple[list[Piece], _Bools | None]:
        return leaf(cast_column(array, target, path))

    return encode


def assemble(pieces: list[Piece], count: int, prefix: bytes) -> list[bytes]:
    """Each row's bytes: the prefix, then its run of every piece in turn."""
    bodies: list[bytes] = []
    for first in range(0, count, _CHUNK_ROWS):
        rows = slice(first, min(first + _CHUNK_ROWS, count))
        bodies += _assemble_chunk([p.take(rows) for p in pieces], rows.stop - first, prefix)
    return bodies


def _assemble_chunk(pieces: list[Piece], count: int, prefix: bytes) -> list[bytes]:
    lengths = np.full(count, len(prefix), dtype=np.int64)
    for piece in pieces:
        lengths += piece.length
    ends = np.cumsum(lengths)
    starts = ends - lengths
    out = np.empty(int(ends[-1]) if count else 0, dtype=np.uint8)
    cursor = starts.copy()
    if prefix:
        _Block(np.broadcast_to(np.frombuffer(prefix, np.uint8), (count, len(prefix)))).write(
            out, cursor
        )
        cursor += len(prefix)
    for piece in pieces:
        piece.write(out, cursor)
        cursor += piece.length
    data = out.tobytes()
    return list(map(data.__getitem__, map(slice, starts.tolist(), ends.tolist())))
