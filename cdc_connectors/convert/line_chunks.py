"""The lines of a file as Arrow columns, without a Python object per line.

:func:`line_chunks` reads a stream of one message per line in large blocks and yields
:class:`LineChunk` s: the lines' contents as one Arrow binary array and their line
numbers as one numpy array, what :func:`~cdc_connectors.convert.streams.read_messages`
gives one :class:`~cdc_connectors.formats.base.Message` at a time for the same stream. A
line is what ends at a ``\\n`` (or at the end of the stream); blank lines (nothing but
ASCII whitespace) are skipped, yet counted; a line's content has its trailing ``\\r`` and
``\\n`` removed, and nothing else. A chunk gives a :class:`Message` only for the lines
asked for (:meth:`LineChunk.__getitem__`): the ones the columns leave to the per-message way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar.slices import binary_views
from cdc_connectors.convert.kv_columns import ValueChecks, kv_columns, reread
from cdc_connectors.convert.streams import BOM
from cdc_connectors.formats.base import Message
from cdc_connectors.opencdc import CodecError

__all__ = ["BLOCK", "PIECE", "LineChunk", "line_chunks"]

#: Bytes read from the stream at a time: below glibc's largest mmap threshold (32 MiB), so
#: that each block reuses the memory of the one before; a block of 32 MiB or more is a fresh
#: mapping each read, its pages faulted in anew (reading and splitting lines three times
#: slower).
BLOCK = 16 << 20
#: The longest line content an Arrow binary array holds (32-bit offsets); a longer line is a
#: message of its own that no format reads, a dead letter with its bytes (:func:`_too_long`).
MAX_LINE = 2**31 - 1
#: Bytes looked through for line ends at a time (the arrays of the lines found take some 50
#: bytes a line).
PIECE = 1 << 20
_NEWLINE, _RETURN = 0x0A, 0x0D
# Lines at least this long on average are found one by one, not byte by byte.
_LONG_LINE = 512
# What bytes.strip() removes: a line of nothing else is blank.
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True


class _Reader(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class LineChunk:
    """Some lines of a stream, in order: their contents (``values``) and line numbers; for
    ``--kv`` lines (:meth:`split_kv`), each line's key and value, and the lines that are no
    kv line (``errors``, by row)."""

    def __init__(
        self,
        values: pa.BinaryArray,
        numbers: np.ndarray,
        source: str,
        keys: pa.Array | None = None,
        errors: dict[int, CodecError] | None = None,
        lines: pa.BinaryArray | None = None,
        unchecked: np.ndarray | None = None,
        checks: ValueChecks | None = None,
    ):
        self.values = values
        self.numbers = numbers
        self.source = source
        self.keys = keys
        self.errors: dict[int, CodecError] = errors or {}
        self.lines = lines
        #: The rows of ``--kv`` lines whose value was left unchecked (:meth:`split_kv`),
        #: and what is told when one of them is read again and was no JSON value.
        self.unchecked = unchecked
        self.checks = checks

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int) -> Message | CodecError:
        """The line ``index`` as the per-message way reads it."""
        where = f"{self.source}:{int(self.numbers[index])}"
        error = self.errors.get(index)
        if error is not None:
            if self.lines is None:  # the error holds the line (one too long for a column)
                return error.at(where)
            return error.at(where, self.lines[index].as_py())
        value: bytes | None = self.values[index].as_py()
        key = None if self.keys is None else self.keys[index].as_py()
        if self.unchecked is not None and self.unchecked[index]:
            assert self.lines is not None
            try:  # the per-message way reads the line again (kv_columns)
                value, key = reread(key, value, self.checks)
            except CodecError as exc:
                return exc.at(where, self.lines[index].as_py())
        return Message(value, key=key, where=where)

    def split_kv(self, checks: ValueChecks | None = None) -> LineChunk:
        """The chunk of ``--kv`` lines (of a text format) as messages: each line's key and
        value (:func:`~cdc_connectors.convert.kv_columns.kv_columns`); their values are
        left unchecked where ``checks`` says so (for columns that check each value
        themselves: a line they leave to the per-message way is read again whole)."""
        if len(self.errors) == len(self):
            return self  # a line too long: no kv line to split
        found = kv_columns(self.values, checks is None or checks.next_chunk())
        return LineChunk(
            found.values,
            self.numbers,
            self.source,
            found.keys,
            found.errors,
            self.values,
            found.unchecked,
            checks,
        )

    def without_errors(self) -> tuple[pa.Array, pa.Array | None, pa.Array]:
        """The values, keys and places of the lines that are messages."""
        values, keys, places = self.values, self.keys, self.places()
        if self.errors:
            kept = np.ones(len(self), dtype=bool)
            kept[list(self.errors)] = False
            mask = pa.array(kept)
            values, places = values.filter(mask), places.filter(mask)
            keys = None if keys is None else keys.filter(mask)
        return values, keys, places

    def places(self) -> pa.Array:
        """Each line's place, ``source:number``, as UTF-8 bytes."""
        numbers = pa.array(self.numbers, pa.int64()).cast(pa.string())
        places = pc.binary_join_element_wise(f"{self.source}:", numbers, "")
        return places.cast(pa.binary())


def line_chunks(
    stream: _Reader, source: str, size: int, max_bytes: int, block: int = BLOCK
) -> Iterator[LineChunk]:
    """The lines of ``stream`` (named ``source`` in their places) in chunks of at most
    ``size`` lines and ``max_bytes`` bytes of content (a longer line is a chunk of its own)."""
    pending = _Pending(source, size, max_bytes)
    first = 1  # the number of the first line of what is read next
    held: list[bytes] = []  # the start of a line not ended yet
    at_start = True
    while True:
        data = stream.read(block)
        if not data:
            break
        start = 0
        if at_start:  # a byte order mark is no part of the first line (text_lines)
            at_start = False
            while len(data) < len(BOM) and BOM.startswith(data):
                more = stream.read(block)
                if not more:
                    break
                data += more
            start = len(BOM) if data.startswith(BOM) else 0
        if held:  # the line begun before ends in this block, or goes on past it
            end = data.find(b"\n")
            if end < 0:
                held.append(data)
                continue
            joined = b"".join([*held, data[: end + 1]])
            held = []
            start = end + 1
            if len(joined) > MAX_LINE:
                yield from pending.flush()  # what came before, in order
                too_long, joined = _too_long(joined, first, source), b""
                yield from too_long
                first += 1
            else:
                piece, count = _lines(joined, 0, len(joined), first)
                first += count
                # a line that spanned blocks may be large: held by its chunk alone
                adding, joined = pending.add(piece), b""
                del piece
                yield from adding
        end = data.rfind(b"\n", start)
        if end < 0:
            held.append(data[start:])
            continue
        at = start
        while at <= end:  # read where they are, a piece the chunk's room of lines at most
            stop, ends = _piece(data, at, end + 1, pending.room())
            piece, count = _lines(data, at, stop, first, ends)
            first += count
            yield from pending.add(piece)
            at = stop
        if end + 1 < len(data):
            held.append(data[end + 1 :])
    rest = b"".join(held)
    if len(rest) > MAX_LINE:
        yield from pending.flush()
        yield from _too_long(rest, first, source)
    elif rest:
        piece, _ = _lines(rest + b"\n", 0, len(rest) + 1, first)
        yield from pending.add(piece)
    yield from pending.flush()


def _too_long(line: bytes, number: int, source: str) -> Iterator[LineChunk]:
    """A line longer than :data:`MAX_LINE` as a chunk of one bad message holding its bytes
    (nothing, if it is blank: skipped as any blank line)."""
    content = line.rstrip(b"\r\n")
    del line  # (its bytes twice at most: the caller keeps none)
    if not content.strip():
        return
    error = CodecError(
        f"a line of {len(content):,} bytes: longer than the {MAX_LINE:,} bytes a message may hold",
        data=content,
    )
    yield LineChunk(
        pa.array([b""], pa.binary()), np.array([number], dtype=np.int64), source, errors={0: error}
    )


@dataclass
class _Lines:
    """Lines found in a block, not copied yet: each content is ``buffer[starts:stops]``."""

    buffer: pa.Buffer
    starts: np.ndarray
    stops: np.ndarray
    numbers: np.ndarray

    def __len__(self) -> int:
        return len(self.numbers)

    def part(self, begin: int, end: int) -> _Lines:
        return _Lines(
            self.buffer,
            self.starts[begin:end],
            self.stops[begin:end],
            self.numbers[begin:end],
        )


def _lines(
    region: bytes, begin: int, end: int, first: int, ends: np.ndarray | None = None
) -> tuple[_Lines, int]:
    """The non-blank lines of ``region[begin:end]`` (whole lines, each ending in ``\\n``;
    ``ends``: where each ``\\n`` is from ``begin``, when known), their numbers counting from
    ``first``, and how many lines (blank ones too) it holds."""
    data = np.frombuffer(region, dtype=np.uint8, count=end - begin, offset=begin)
    if ends is None:
        ends = _newlines(region, begin, end, data)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    numbers = np.arange(first, first + len(ends), dtype=np.int64)
    stops = ends.copy()  # where each content ends: before the \n and any \r before it
    returns = np.flatnonzero((stops > starts) & (data[stops - 1] == _RETURN))
    stops[returns] -= 1
    # More than one \r before the \n (rare): each such line's run is found by rstrip.
    more = returns[(stops[returns] > starts[returns]) & (data[stops[returns] - 1] == _RETURN)]
    for row in more:
        line = region[begin + starts[row] : begin + stops[row]]
        stops[row] = starts[row] + len(line.rstrip(b"\r"))
    # Blank: empty, or nothing but whitespace; a line starting with anything else is not.
    blank = stops == starts
    for row in np.flatnonzero(~blank & _WHITESPACE[data[starts]]):
        blank[row] = not region[begin + starts[row] : begin + stops[row]].strip()
    lines = _Lines(pa.py_buffer(region), starts + begin, stops + begin, numbers)
    if blank.any():
        keep = ~blank
        lines = _Lines(lines.buffer, lines.starts[keep], lines.stops[keep], numbers[keep])
    return lines, len(ends)


def _contents(pieces: list[_Lines]) -> pa.BinaryArray:
    """The contents of the lines of ``pieces``, in order, as one binary array: Arrow's
    views of them where they lie (a view holds up to 12 bytes itself), copied once."""
    views = [
        binary_views(
            np.frombuffer(piece.buffer, dtype=np.uint8),
            piece.starts,
            piece.stops - piece.starts,
            index,
        )
        for index, piece in enumerate(pieces)
    ]
    count = sum(len(piece) for piece in pieces)
    joined = views[0] if len(views) == 1 else np.concatenate(views)
    array = pa.Array.from_buffers(
        pa.binary_view(),
        count,
        [None, pa.py_buffer(joined), *(piece.buffer for piece in pieces)],
    )
    return array.cast(pa.binary())


def _piece(region: bytes, begin: int, limit: int, lines: int) -> tuple[int, np.ndarray]:
    """The next piece of ``region[begin:limit]`` (whole lines): its first ``lines`` lines (at
    least one), or all of them; where it ends, and where each of its ``\\n`` is from
    ``begin``. Lines are looked for :data:`PIECE` bytes at a time, so that what the line
    arrays hold stays small however short the lines are; a piece that is the room left in a
    chunk makes the chunk one slice of the block, not a copy of pieces joined."""
    found: list[np.ndarray] = []
    total, at, lines = 0, begin, max(lines, 1)
    while at < limit and total < lines:
        stop = min(limit, at + PIECE)
        window = np.frombuffer(region, dtype=np.uint8, count=stop - at, offset=at)
        ends = _newlines(region, at, stop, window)[: lines - total] + (at - begin)
        found.append(ends)
        total += len(ends)
        at = stop
    ends = np.concatenate(found) if len(found) > 1 else found[0]
    return begin + int(ends[-1]) + 1, ends


def _newlines(region: bytes, begin: int, end: int, data: np.ndarray) -> np.ndarray:
    """Where each ``\\n`` of ``region[begin:end]`` (``data``) is, from ``begin``: found
    one after another (memchr) where lines are long, by a look at every byte where they
    are short (judged by the first 64 KiB)."""
    sample = min(end, begin + (64 << 10))
    if region.count(b"\n", begin, sample) * _LONG_LINE > sample - begin:
        return np.flatnonzero(data == _NEWLINE)
    found = []
    at = region.find(b"\n", begin, end)
    while at >= 0:
        found.append(at - begin)
        at = region.find(b"\n", at + 1, end)
    return np.array(found, dtype=np.int64)


class _Pending:
    """Lines read but not yet yielded, cut into chunks."""

    def __init__(self, source: str, size: int, max_bytes: int):
        self.source, self.size, self.max_bytes = source, size, max_bytes
        self.pieces: list[_Lines] = []
        self.count = 0
        self.bytes = 0

    def room(self) -> int:
        """Lines the chunk being made still takes."""
        return self.size - self.count

    def add(self, lines: _Lines | None) -> Iterator[LineChunk]:
        assert lines is not None
        total = np.cumsum(lines.stops - lines.starts)
        count = len(lines)
        at = 0
        while at < count:
            assert lines is not None
            # the lines this chunk still takes: up to size lines, and up to max_bytes (at
            # least one line, however long)
            room = self.size - self.count
            before = total[at - 1] if at else 0
            fits = int(np.searchsorted(total[at:], before + self.max_bytes - self.bytes, "right"))
            taken = max(1 if self.count == 0 else 0, min(room, fits))
            if taken:
                self.pieces.append(lines.part(at, at + taken))
                self.count += taken
                self.bytes += int(total[at + taken - 1] - before)
                at += taken
            if at >= count:
                lines = None  # taken: the pieces hold what they need of its buffer
            if self.count >= self.size or self.bytes >= self.max_bytes or at < count:
                yield from self.flush()

    def flush(self) -> Iterator[LineChunk]:
        if not self.count:
            return
        pieces = self.pieces
        numbers = (
            pieces[0].numbers
            if len(pieces) == 1
            else np.concatenate([piece.numbers for piece in pieces])
        )
        self.pieces, self.count, self.bytes = [], 0, 0
        chunk = LineChunk(_contents(pieces), numbers, self.source)
        del pieces  # their blocks: the chunk holds its own copy of the lines
        yield chunk
