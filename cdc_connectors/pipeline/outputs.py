"""The file outputs of a batch pipeline: save modes, and one commit for records and dead letters.

A batch pipeline writes each ``files`` output (destination, dead letters) to a hidden
staging directory beside it, ``.<name>.cdc-staging-<pid>-<id>``; only when every write of the
run went through are they published, the destination first, each by renames:

- ``error`` (the default): the output must be absent or empty; the staging directory is
  renamed onto it in one step, so a second run racing this one fails instead of adding.
- ``append``: the new files are renamed into the output.
- ``overwrite``: the staging directory and the output trade places in one atomic exchange
  (``renameat2(RENAME_EXCHANGE)``; two renames where the file system has no exchange), then
  the old content is removed.
- ``ignore``: a non-empty output skips the pipeline.

A run that fails publishes nothing, so a rerun writes its records and dead letters once.
Staging directories of runs that were killed (their process is gone) are removed by the next
run of the same output.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import uuid
from dataclasses import dataclass

from cdc_connectors.errors import CdcError
from cdc_connectors.pipeline.lifeline import alive

__all__ = [
    "MODES",
    "OutputChanged",
    "StagedOutput",
    "check_publishable",
    "discard",
    "is_empty",
    "publish",
    "stage",
]

#: The save modes of a batch pipeline's file outputs, as Spark names them.
MODES = ("error", "errorifexists", "append", "overwrite", "ignore")
_STAGING = ".cdc-staging-"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class OutputChanged(CdcError):
    """An output another run filled while this one wrote (mode ``error``)."""


@dataclass(frozen=True)
class StagedOutput:
    """A file output of a batch run: where it goes, how, and where it is staged meanwhile."""

    path: str
    mode: str
    staging: str


def is_empty(path: str) -> bool:
    """``True`` for an absent path or a directory without visible entries (names that do not
    start with ``.`` or ``_``, which readers skip)."""
    if not os.path.lexists(path):
        return True
    if not os.path.isdir(path):
        return False
    return not any(not name.startswith((".", "_")) for name in os.listdir(path))


def _delete(path: str) -> None:
    """Remove ``path``, whatever it is (a directory, a file, a link)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def _remove_stale(path: str) -> None:
    """Remove staging directories of ``path`` left by runs that were killed."""
    parent, name = os.path.split(os.path.abspath(path))
    prefix = f".{name}{_STAGING}"
    for entry in os.listdir(parent) if os.path.isdir(parent) else []:
        if not entry.startswith(prefix):
            continue
        pid = entry[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not alive(int(pid)):
            _delete(os.path.join(parent, entry))


def stage(path: str, mode: str) -> StagedOutput:
    """A new staging directory for output ``path`` (its parent is created); a symbolic link
    is followed, so that its target is what is written."""
    absolute = os.path.realpath(path)
    parent, name = os.path.split(absolute)
    os.makedirs(parent, exist_ok=True)
    _remove_stale(absolute)
    staging = os.path.join(parent, f".{name}{_STAGING}{os.getpid()}-{uuid.uuid4().hex[:12]}")
    os.mkdir(staging)  # here, so that a place nothing can be written to fails before a write
    mode = "error" if mode == "errorifexists" else mode
    return StagedOutput(absolute, mode, staging)


def discard(output: StagedOutput) -> None:
    """Remove what a run staged for ``output``."""
    _delete(output.staging)


def _tidy(staging: str) -> None:
    """The staging directory holds only the published files: the writer's own ``_staging``
    (empty after its commit) goes."""
    os.makedirs(staging, exist_ok=True)
    inner = os.path.join(staging, "_staging")
    if os.path.isdir(inner):
        shutil.rmtree(inner, ignore_errors=True)


def _exchange(first: str, second: str) -> bool:
    """Swap two directories in one step; ``False`` where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    result = renameat2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), second)


def _move_in(staging: str, path: str) -> None:
    os.makedirs(path, exist_ok=True)
    for name in sorted(os.listdir(staging)):
        target = os.path.join(path, name)
        if os.path.lexists(target):  # names carry a task id: never so unless tampered with
            raise OutputChanged(f"{target} appeared while this run wrote")
        os.rename(os.path.join(staging, name), target)
    os.rmdir(staging)


def _sync(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def check_publishable(output: StagedOutput) -> None:
    """:class:`OutputChanged` when mode ``error`` finds the output filled meanwhile."""
    if output.mode == "error" and not is_empty(output.path):
        raise OutputChanged(
            f"{output.path} was filled by another run while this one wrote; nothing of this "
            "run was published"
        )


def publish(output: StagedOutput) -> None:
    """Make the staged files ``output``'s, as its mode says (module docstring)."""
    _tidy(output.staging)
    path = output.path
    if output.mode == "append":
        _move_in(output.staging, path)
    elif output.mode == "overwrite":
        if not os.path.lexists(path):
            os.rename(output.staging, path)
        elif _exchange(output.staging, path):
            _delete(output.staging)  # the old content now
        else:
            old = f"{output.staging}-old"
            os.rename(path, old)
            os.rename(output.staging, path)
            _delete(old)
    else:  # error (ignore skipped the pipeline before it ran)
        try:
            os.rename(output.staging, path)  # onto an absent path or an empty directory
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            check_publishable(output)  # only hidden entries there: add the files
            _move_in(output.staging, path)
    _sync(os.path.dirname(path))
