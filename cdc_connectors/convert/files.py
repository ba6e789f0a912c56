"""The files and standard streams of ``convert``: checked before anything is touched.

- :func:`check_places` refuses, before any file is opened, an input that is
  missing, a directory or unreadable, an output or dead-letter path in a
  missing directory, one that is a directory, and any two of input, output,
  dead letters and redirected standard streams that are the same file
  (however spelled: symlinks, ``./``, hard links). Each is a
  :class:`PlaceError`: one line naming the path.
- :class:`Output` writes a regular file through a temporary file in the same
  directory, renamed over the target only when the run finishes, so an
  existing output is never truncated by a run that then fails. Devices and
  pipes (``/dev/stdout``, ``/dev/null``) are written directly.
- :class:`Guarded` wraps a stream so that an ``OSError`` while reading or
  writing (a full disk, ``/dev/full``, a closed pipe) becomes one
  :class:`StreamError` naming the stream.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import os
import re
import socket
import stat
import sys
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO

from cdc_connectors.errors import ConfigError
from cdc_connectors.text import printable


class PlaceError(ConfigError):
    """A path or standard stream cannot be used as asked; the message names it."""


class StreamError(OSError):
    """Reading or writing a stream failed; the message names the stream.

    ``closed_pipe``: the reader of a pipe went away (``| head``), which Unix tools take
    quietly."""

    closed_pipe = False


@dataclass(frozen=True)
class Place:
    """A path given on the command line, or a standard stream when ``path`` is ``None``."""

    label: str  # how the message names it: "IN", "-o", "--errors"
    path: str | None
    fd: int  # the standard stream used when path is None

    def __str__(self) -> str:
        if self.path is not None:
            return f"{self.label} {printable(self.path)}"
        return "standard input" if self.fd == 0 else "standard output"


def _identity(place: Place) -> tuple[object, ...] | None:
    """What makes two places the same file: (device, inode) of a regular file or a
    pipe (writing into the pipe being read would never end), or the resolved path
    of one that does not exist yet; ``None`` for terminals and devices, which may
    well be shared."""
    try:
        st = os.stat(place.path) if place.path is not None else os.fstat(place.fd)
    except FileNotFoundError:
        return ("new", os.path.realpath(place.path)) if place.path is not None else None
    except OSError:  # NotADirectoryError among others: _check_* refused those already
        return None
    shared = stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)
    return ("file", st.st_dev, st.st_ino) if shared else None


def _refuse_file_as_directory(place: Place) -> None:
    """:class:`PlaceError` when a path uses a file as a directory (``in.jsonl/``,
    ``in.jsonl/x``) or ends in ``/`` without naming a directory: opening it would
    fail, and resolving it by name would hit the file itself."""
    path = place.path
    if path is None:
        return
    try:
        os.stat(path)
    except NotADirectoryError:
        parts = path.split("/")
        for end in range(1, len(parts)):
            prefix = "/".join(parts[:end]) or "/"
            if os.path.lexists(prefix) and not os.path.isdir(prefix):
                raise PlaceError(f"{place}: {printable(prefix)} is not a directory") from None
        raise PlaceError(f"{place}: a part of the path is not a directory") from None
    except OSError:
        if path.endswith("/"):
            raise PlaceError(f"{place}: no such directory") from None


def _check_input(place: Place) -> None:
    if place.path is None:
        if sys.stdin is None:
            raise PlaceError("standard input is closed: give IN or open standard input")
        return
    _refuse_file_as_directory(place)
    if not os.path.lexists(place.path):
        raise PlaceError(f"{place}: no such file")
    if os.path.isdir(place.path):
        raise PlaceError(f"{place}: is a directory")
    if not os.path.exists(place.path):
        raise PlaceError(f"{place}: a symlink to nothing")
    if not os.access(place.path, os.R_OK):
        raise PlaceError(f"{place}: not readable")


def _check_output(place: Place) -> None:
    if place.path is None:
        if stdout_closed():
            raise PlaceError("standard output is closed: give -o or open standard output")
        return
    path = place.path
    if path == "":
        raise PlaceError(f"{place.label}: an empty path")
    if os.path.isdir(path):
        raise PlaceError(f"{place}: is a directory")
    _refuse_file_as_directory(place)
    parent = os.path.dirname(os.path.realpath(path)) or "."
    if not os.path.isdir(parent):
        shown = printable(os.path.dirname(path) or ".")
        if os.path.exists(parent):
            raise PlaceError(f"{place}: {shown} is not a directory")
        raise PlaceError(f"{place}: no such directory {shown}")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise PlaceError(f"{place}: not writable")
    elif not os.access(parent, os.W_OK):
        raise PlaceError(
            f"{place}: directory {printable(os.path.dirname(path) or '.')} is not writable"
        )


def check_places(source: Place, outputs: list[Place], kept: Sequence[Place] = ()) -> None:
    """Refuse, with one :class:`PlaceError`, any place that cannot serve or that clashes:
    two of ``source`` and ``outputs``, or an output and one of ``kept`` (files the run
    uses otherwise and must not write over: a registry's store)."""
    _check_input(source)
    for place in outputs:
        _check_output(place)
    places = [source, *outputs]
    for i, first in enumerate(places):
        ident = _identity(first)
        if ident is None:
            continue
        for second in places[i + 1 :]:
            if _identity(second) == ident:
                raise PlaceError(f"{second} is the same file as {first}")
    for place in kept:
        ident = _identity(place)
        for output in outputs if ident is not None else ():
            if _identity(output) == ident:
                raise PlaceError(f"{output} is the same file as {place}")


#: What reading a stream raises besides ``OSError``: a gzip file cut short (``EOFError``)
#: or corrupt inside (``zlib.error``).
_READ_ERRORS = (OSError, EOFError, zlib.error)


def open_input(path: str) -> IO[bytes]:
    """A file to read, decompressed as it is read when its name ends in ``.gz`` (as a
    ``cdc-files`` source reads it)."""
    if path.endswith(".gz"):
        return gzip.GzipFile(path, "rb")  # type: ignore[return-value]  # an IO[bytes] reader
    return open(path, "rb")


class Guarded:
    """A binary stream whose ``OSError`` (and a gzip stream's errors) is a
    :class:`StreamError` naming ``name``."""

    def __init__(self, stream: IO[bytes], name: str):
        self.stream = stream
        self.name = name

    def _failed(self, action: str, exc: Exception) -> StreamError:
        reason = getattr(exc, "strerror", None) or exc
        if isinstance(exc, EOFError | zlib.error):
            reason = f"not a whole gzip file ({exc})"
        error = StreamError(f"cannot {action} {self.name}: {reason}")
        error.closed_pipe = isinstance(exc, BrokenPipeError)
        return error

    def fileno(self) -> int:
        """The stream's file descriptor (``OSError`` for a stream without one)."""
        return self.stream.fileno()

    def read(self, size: int = -1) -> bytes:
        try:
            return self.stream.read(size)
        except _READ_ERRORS as exc:
            raise self._failed("read", exc) from None

    def __iter__(self) -> Iterator[bytes]:
        lines = iter(self.stream)
        while True:
            try:
                line = next(lines)
            except StopIteration:
                return
            except _READ_ERRORS as exc:
                raise self._failed("read", exc) from None
            yield line

    def write(self, data: bytes | memoryview) -> int:
        try:
            return self.stream.write(data)
        except OSError as exc:
            raise self._failed("write", exc) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as exc:
            raise self._failed("write", exc) from None


class Output:
    """An output file written whole or not at all (see the module docstring)."""

    def __init__(self, path: str):
        if path.endswith("/"):  # realpath would drop the slash and hit a file of that name
            raise NotADirectoryError(errno.ENOTDIR, "a path ending in / names a directory", path)
        self.path = path
        self.target = os.path.realpath(path)
        self.temp: str | None = None
        existing = os.stat(path) if os.path.exists(path) else None
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            self.stream: IO[bytes] = open(path, "wb")  # noqa: SIM115 - closed by commit/discard
            return
        directory, name = os.path.split(self.target)
        owner = f"{_HOST}-{os.getpid()}"
        _sweep_partials(directory, name)
        try:
            fd, self.temp = tempfile.mkstemp(
                prefix=f".{name}.{owner}.", suffix=".partial", dir=directory
            )
        except OSError as exc:  # e.g. /proc/version: the file is there, its directory is not ours
            raise OSError(
                exc.errno,
                f"no temporary file can be made in {printable(directory)}: {exc.strerror or exc}",
            ) from None
        try:  # a signal from here on, before the caller holds this output, leaves nothing
            self.stream = os.fdopen(fd, "wb")
            if existing is not None:
                os.chmod(self.temp, stat.S_IMODE(existing.st_mode))
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(self.temp, 0o666 & ~umask)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(self.temp)
            raise

    def commit(self) -> None:
        """Flush and put the output in place; :class:`StreamError` if that fails."""
        try:
            self.stream.flush()
            if self.temp is not None:
                os.fsync(self.stream.fileno())
            self.stream.close()
            if self.temp is not None:
                os.replace(self.temp, self.target)
                self.temp = None
        except OSError as exc:
            self.discard()
            raise StreamError(
                f"cannot write -o {printable(self.path)}: {exc.strerror or exc}"
            ) from None

    def discard(self) -> None:
        """Drop what was written; an existing output stays as it was."""
        with contextlib.suppress(OSError):  # the failure was reported; closing repeats it
            self.stream.close()
        if self.temp is not None:
            with contextlib.suppress(FileNotFoundError):  # renamed just before a signal
                os.unlink(self.temp)
            self.temp = None


#: This machine's name, in the names of the temporary outputs it writes (see
#: :func:`_sweep_partials`); dots and slashes would read as parts of the name.
_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname()) or "host"


def _sweep_partials(directory: str, name: str) -> None:
    """Remove the temporary outputs of ``name`` that a run on this machine left when it was
    killed without a chance to clean up (SIGKILL, a crash): those whose process is gone.
    Another run's, still writing, stays."""
    pattern = re.compile(rf"\.{re.escape(name)}\.{re.escape(_HOST)}-(\d+)\.[^/]*\.partial")
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return  # mkstemp says what is wrong with the directory
    for entry in entries:
        found = pattern.fullmatch(entry)
        if found is None or _alive(int(found.group(1))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, entry))


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists here (one of another user counts)."""
    if pid <= 0:
        return True  # not a process of ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


class ClosedStdout(io.TextIOBase):
    """Stands in for the standard output of a process started without one: writing
    to it is an ``OSError``, so that what was meant for it cannot vanish silently."""

    encoding = "utf-8"
    errors = "strict"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass


def stdout_closed() -> bool:
    """True when the process has no standard output to write to."""
    return sys.stdout is None or isinstance(sys.stdout, ClosedStdout)


def settle_stdout() -> None:
    """Flush standard output; if it cannot take more (``/dev/full``, a closed pipe), point
    it at ``/dev/null`` so that the interpreter's own flush at exit cannot fail again."""
    if stdout_closed():
        return
    try:
        sys.stdout.flush()
    except OSError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def close_quietly(stream: IO[bytes]) -> None:
    """Close a stream whose last write failed and was reported: closing would only
    repeat that failure. Streams that succeeded were flushed before this runs."""
    with contextlib.suppress(OSError):
        stream.close()
