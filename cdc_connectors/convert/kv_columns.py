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

A reader whose columns check each value themselves, taking only what is one JSON value
exactly as the per-message way reads it (:func:`~cdc_connectors.columnar.choose.
checks_values`), may leave the values unchecked (``check_values=False``; checking them was
a sixth of reading a change event). A row such a reader leaves to the per-message way is
then read again from its line (:func:`reread`): a value that is no JSON value makes its
line no kv line, as it is when read one by one. Values that are no JSON value cost the
columns more than checking them (Arrow refuses the part of a batch holding one, which is
split and read again), so a stream checks its values for a while once it met one
(:class:`ValueChecks`), and a value that does not start with ``{`` and end with ``}`` (cut
short, something after the document) is checked whatever the stream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.slices import row_slices
from cdc_connectors.convert.streams import COMPACT_KEY, COMPACT_VALUE, kv_pair
from cdc_connectors.json_values import is_json
from cdc_connectors.opencdc import CodecError

__all__ = ["CHECKED_AFTER_BAD", "UNCHECKED", "KvColumns", "ValueChecks", "kv_columns", "reread"]

#: The schema metadata of a batch of raw messages whose kv values were left unchecked
#: (:func:`reread` each row the per-message way reads).
UNCHECKED = {b"cdc.kv.values": b"unchecked"}

# Any separator before the value member (kv_pair's first candidate): JSON whitespace and
# the vertical tab and form feed that Python's \s also takes.
_VALUE_SEPARATOR = ',[ \\t\\n\\r\\x0b\\x0c]*"value"[ \\t\\n\\r\\x0b\\x0c]*:'
_OPEN, _CLOSE = ord("{"), ord("}")
# What bytes.strip() removes around a member's text.
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True


@dataclass
class ValueChecks:
    """Whether the values of a stream's next chunk of kv lines are checked before the
    columns (module docstring): never while the columns do not check them themselves
    (``allowed`` false); else not, but for :data:`CHECKED_AFTER_BAD` chunks after a value
    that is no JSON value was met (a stream that holds one may hold more)."""

    allowed: bool = False
    left: int = 0  # chunks still to check

    def next_chunk(self) -> bool:
        """Whether the values of the next chunk are checked."""
        if not self.allowed:
            return True
        if self.left:
            self.left -= 1
            return True
        return False

    def bad_value(self) -> None:
        """A line read again was not what its unchecked split said: check for a while."""
        self.left = CHECKED_AFTER_BAD


#: Chunks whose values are checked after a value that is no JSON value was met.
CHECKED_AFTER_BAD = 16


@dataclass
class KvColumns:
    """Each line's key and value (binary, null for none) and the lines that are no kv line,
    by row, with :func:`kv_pair`'s error (placed by the caller)."""

    keys: pa.Array
    values: pa.Array
    errors: dict[int, CodecError]
    #: The rows whose value was not checked to be one JSON value (``check_values=False``).
    unchecked: np.ndarray | None = None


def kv_columns(lines: pa.BinaryArray, check_values: bool = True) -> KvColumns:
    """The keys and values of ``lines`` (the contents of ``--kv`` lines of a text format);
    with ``check_values`` false, the values of the lines split at the writers' layout are
    not checked (module docstring)."""
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
    # values left unchecked: objects as they start and end (the others checked still)
    check = fast if check_values else fast & ~_braced(lines, value_start, value_stop, fast)
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
            if not (is_json(key) and (not check[row] or is_json(value))):
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
    return KvColumns(keys, values, errors, None if check_values else fast & ~check)


def reread(
    key: bytes | None, value: bytes | None, checks: ValueChecks | None = None
) -> tuple[bytes | None, bytes | None]:
    """The value and key (as :func:`kv_pair` gives them) of the kv line a row of
    :func:`kv_columns` came from, read again; :class:`CodecError` for a line that is no kv
    line. For a row split at the writers' layout that line is ``{"key":K,"value":V}`` (a
    null for none); any other row's key and value are ones :func:`kv_pair` gave, which it
    gives again from that layout. ``checks`` are told when the line is not what the row
    said (its value was no JSON value)."""
    try:
        found = kv_pair(compact_line(key, value), False)
    except CodecError:
        if checks is not None:
            checks.bad_value()
        raise
    if checks is not None and found != (value, key):
        checks.bad_value()
    return found


def compact_line(key: bytes | None, value: bytes | None) -> bytes:
    """``{"key":K,"value":V}``: the writers' layout of a kv line (a null for none)."""
    return b"".join(
        [
            COMPACT_KEY,
            b"null" if key is None else key,
            COMPACT_VALUE,
            b"null" if value is None else value,
            b"}",
        ]
    )


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


def _braced(
    lines: pa.BinaryArray, starts: np.ndarray, stops: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """Whether each part ``[starts, stops)`` of ``rows`` starts with ``{`` and ends with
    ``}``."""
    buffer = lines.buffers()[2]
    found = np.zeros(len(rows), dtype=bool)
    if buffer is None or not rows.any():
        return found
    data = np.frombuffer(buffer, dtype=np.uint8)
    base = _offsets(lines)
    at = np.flatnonzero(rows)
    first, last = data[base[at] + starts[at]], data[base[at] + stops[at] - 1]
    found[at] = (first == _OPEN) & (last == _CLOSE)
    return found


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
