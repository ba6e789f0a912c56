"""A stream that may pause (a pipe, a terminal, a socket), read as its bytes come.

:class:`LiveInput` reads the stream's file descriptor itself (``os.read``: what is there,
up to a block), keeps what it has read in its own buffer, and tells whether more is
waiting without blocking (:meth:`LiveInput.waiting`), so that ``convert`` writes what has
arrived before it waits for the rest. No thread is left reading when the run ends (a
thread blocked in a buffered read of standard input aborts the interpreter's exit).
"""

from __future__ import annotations

import os
import select
from collections.abc import Iterator
from typing import Protocol

__all__ = ["LiveInput"]

_BLOCK = 1 << 16
#: How long :meth:`LiveInput.waiting` waits for bytes on an empty buffer: long enough for a
#: writer between two writes (``cat``), short against a person's wait.
WAIT = 0.01


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


class LiveInput:
    """The bytes of ``stream``'s file descriptor as they come (module docstring); the
    stream must not have been read yet (its own buffer would be skipped)."""

    def __init__(self, stream: _HasFileno):
        self._fd = stream.fileno()
        self._buffer = bytearray()
        self._ended = False

    def waiting(self) -> bool:
        """Whether bytes are there to read now (or the stream has ended)."""
        if self._buffer or self._ended:
            return True
        ready, _, _ = select.select([self._fd], [], [], WAIT)
        return bool(ready)

    def _fill(self) -> bool:
        """Read what is there (blocking until something is); ``False`` at the end."""
        if self._ended:
            return False
        data = os.read(self._fd, _BLOCK)
        if not data:
            self._ended = True
            return False
        self._buffer += data
        return True

    def read(self, size: int = -1, /) -> bytes:
        """Up to ``size`` bytes (all until the end for ``-1``): what is buffered, else what
        one read gives; ``b""`` at the end."""
        if size < 0:
            while self._fill():
                pass
            size = len(self._buffer)
        elif not self._buffer:
            self._fill()
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def __iter__(self) -> Iterator[bytes]:
        """The lines, each with its line break (the last one may have none)."""
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                start = 0
                yield line
                continue
            start = len(self._buffer)
            if not self._fill():
                if self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    yield line
                return
