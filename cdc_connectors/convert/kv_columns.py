"""``--kv`` lines split into key and value columns, as :func:`~cdc_connectors.convert.streams.
read_messages` splits them one by one.

A line as the writers write it, ``{"key":K,"value":V}`` without blanks, is split by Arrow
where its first ``,"value":`` is the first candidate separator
(:func:`~cdc_connectors.convert.streams.kv_pair`'s own fast way), the parts sliced without a
Python object per line (:func:`~cdc_connectors.columnar.slices.row_slices`); each part is
then checked to be one JSON value, as that fast way checks it. Any other line (spaced, the
members the other way round, one that is no kv line) is read by
:func:`~cdc_connectors.convert.streams.kv_pair` itself: the columns hold what it gives, or
the line is one of :attr:`KvColumns.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.slices import row_slices
from cdc_connectors.convert.streams import COMPACT_KEY, COMPACT_VALUE, is_json, kv_pair
from cdc_connectors.opencdc import CodecError

__all__ = ["KvColumns", "kv_columns"]

# Any separator before the value member (kv_pair's first candidate): JSON whitespace and
# the vertical tab and form feed that Python's \s also takes.
_VALUE_SEPARATOR = ',[ \\t\\n\\r\\x0b\\x0c]*"value"[ \\t\\n\\r\\x0b\\x0c]*:'
# What bytes.strip() removes around a member's text.
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True


@dataclass
class KvColumns:
    """Each line's key and value (binary, null for none) and the lines that are no kv line,
    by row, with :func:`kv_pair`'s error (placed by the caller)."""

    keys: pa.Array
    values: pa.Array
    errors: dict[int, CodecError]


def kv_columns(lines: pa.BinaryArray) -> KvColumns:
    """The keys and values of ``lines`` (the contents of ``--kv`` lines of a text format)."""
    count = len(lines)
    sizes = wire.lengths(lines).astype(np.int64)
    fast = wire.mask(pc.starts_with(lines, COMPACT_KEY)) & wire.mask(pc.ends_with(lines, b"}"))
    found = _numbers(pc.find_substring(lines, COMPACT_VALUE))
    fast &= found == _numbers(pc.find_substring_regex(lines, _VALUE_SEPARATOR))
    split = np.where(fast, found, len(COMPACT_KEY))
    key_stop = np.where(fast, split, len(COMPACT_KEY))
    value_start = np.where(fast, split + len(COMPACT_VALUE), 0)
    value_stop = np.where(fast, sizes - 1, 0)
    fast &= (key_stop > len(COMPACT_KEY)) & (value_stop > value_start)
    fast &= _unpadded(lines, len(COMPACT_KEY), key_stop, fast)
    fast &= _unpadded(lines, value_start, value_stop, fast)
    # each part one JSON value, as kv_pair checks (read where it lies, not copied)
    nulls = np.zeros(count, dtype=bool)
    null_keys = np.zeros(count, dtype=bool)
    if fast.any():
        data = memoryview(lines.buffers()[2]).cast("B")
        base = _offsets(lines)
        key_from = base + len(COMPACT_KEY)
        for row, at, key_end, value_from, value_end in zip(
            np.flatnonzero(fast).tolist(),
            key_from[fast].tolist(),
            (base + key_stop)[fast].tolist(),
            (base + value_start)[fast].tolist(),
            (base + value_stop)[fast].tolist(),
            strict=True,
        ):
            key, value = data[at:key_end], data[value_from:value_end]
            if not (is_json(key) and is_json(value)):
                fast[row] = False
            else:
                nulls[row] = value.tobytes() == b"null" if len(value) == 4 else False
                null_keys[row] = key.tobytes() == b"null" if len(key) == 4 else False
    starts = np.full(count, len(COMPACT_KEY), dtype=np.int64)
    keys = row_slices(lines, np.where(fast, starts, 0), np.where(fast, key_stop, 0), fast)
    values = row_slices(lines, value_start, value_stop, fast)
    errors: dict[int, CodecError] = {}
    slow = np.flatnonzero(~fast)
    pairs: list[tuple[bytes | None, bytes | None]] = []
    for row in slow.tolist():
        try:
            pairs.append(kv_pair(lines[row].as_py(), False))
        except CodecError as exc:
            errors[row] = exc
            pairs.append((None, None))
    values = _replaced(values, slow, [v for v, _ in pairs], nulls)
    keys = _replaced(keys, slow, [k for _, k in pairs], null_keys)
    return KvColumns(keys, values, errors)


def _offsets(lines: pa.BinaryArray) -> np.ndarray:
    """Where each line starts in the data buffer."""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
    return offsets[lines.offset : lines.offset + len(lines)].astype(np.int64)


def _numbers(found: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _unpadded(
    lines: pa.BinaryArray, starts: np.ndarray | int, stops: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """Whether each part ``[starts, stops)`` of ``rows`` neither starts nor ends with
    whitespace (``kv_pair`` strips it; such lines are its to read)."""
    buffer = lines.buffers()[2]
    if buffer is None or not rows.any():
        return rows.copy()
    data = np.frombuffer(buffer, dtype=np.uint8)
    base = _offsets(lines)
    first = base + starts
    last = base + stops - 1
    ok = rows.copy()
    at = np.flatnonzero(rows)
    ok[at] = ~_WHITESPACE[data[first[at]]] & ~_WHITESPACE[data[last[at]]]
    return ok


def _replaced(
    column: pa.Array, rows: np.ndarray, texts: list[bytes | None], nulls: np.ndarray
) -> pa.Array:
    """``column`` with ``rows`` set to ``texts`` and ``nulls`` set to null."""
    if len(rows):
        mask = np.zeros(len(column), dtype=bool)
        mask[rows] = True
        column = pc.replace_with_mask(column, pa.array(mask), pa.array(texts, pa.binary()))
    if nulls.any():
        column = pc.if_else(pa.array(nulls), pa.scalar(None, pa.binary()), column)
    return column
