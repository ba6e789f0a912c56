"""One driver per pipeline checkpoint.

Two drivers of one streaming pipeline on one checkpoint would both run its batches and write
them twice; two of one batch pipeline would write its output twice. So a driver holds, for
its whole life, an exclusive lock (``fcntl.flock``, not waiting) on the file
``cdc-connectors.lock`` in the checkpoint directory of each of its pipelines
(``<spark.checkpoint>/<pipeline id>``, batch pipelines included, though they keep nothing
else there), with its process id written in it. A second driver is refused, naming the
pipeline, the lock and the process holding it. The system releases the lock when the
process ends, however it ends, so a killed driver leaves nothing to clean up.

Checkpoints on a distributed file system (a URL such as ``hdfs://`` or ``s3a://``) are not
locked: ``flock`` holds only on this machine's file systems.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from cdc_connectors.errors import CdcError
from cdc_connectors.pipeline.config import Pipeline

__all__ = ["LOCK_FILE", "CheckpointBusy", "CheckpointLocks", "lock_checkpoints"]

LOCK_FILE = "cdc-connectors.lock"


class CheckpointBusy(CdcError):
    """A checkpoint locked by another process (or not lockable); the message says which."""


@dataclass
class CheckpointLocks:
    """The locks a driver holds; released by :meth:`release` or when the process ends."""

    fds: list[int]

    def release(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()


def local_directory(checkpoint: str) -> str | None:
    """The directory of ``checkpoint`` on this machine; ``None`` for a distributed one."""
    scheme = urlsplit(checkpoint).scheme
    if scheme == "file":
        return urlsplit(checkpoint).path
    if len(scheme) > 1:  # a one-letter scheme is a Windows drive
        return None
    return checkpoint


def holder(path: str) -> int | None:
    """The process id written in the lock file at ``path``, if any."""
    with contextlib.suppress(OSError, ValueError), open(path) as stream:
        return int(stream.read().strip())
    return None


def _lock(pipeline: Pipeline) -> int | None:
    directory = local_directory(pipeline.checkpoint)
    if directory is None:
        return None
    path = os.path.abspath(os.path.join(directory, LOCK_FILE))
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise CheckpointBusy(
            f"pipeline {pipeline.id}: cannot lock its checkpoint {path}: {exc.strerror or exc}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise CheckpointBusy(
                f"pipeline {pipeline.id}: cannot lock its checkpoint {path}: {exc.strerror or exc}"
            ) from None
        pid = holder(path)
        by = f"process {pid}" if pid is not None else "another process"
        raise CheckpointBusy(
            f"pipeline {pipeline.id} is already running: {by} holds {path} "
            "(one run per checkpoint; stop that one first)"
        ) from None
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def lock_checkpoints(pipelines: list[Pipeline]) -> CheckpointLocks:
    """Lock the checkpoint of every pipeline of ``pipelines``, all or none: a
    :class:`CheckpointBusy` names the first that could not be."""
    locks = CheckpointLocks([])
    try:
        for pipeline in pipelines:
            fd = _lock(pipeline)
            if fd is not None:
                locks.fds.append(fd)
    except BaseException:
        locks.release()
        raise
    return locks
