"""A driver ends with the ``cdc-connectors`` process that started it.

``cdc-connectors run`` and ``submit`` put their own process id in the driver's environment
(:data:`LAUNCHER_ENV`). The driver watches that process (a pidfd on Linux, else a check
twice a second) and, when it ends in a way that let it say nothing (SIGKILL from a
supervisor or the out-of-memory killer), stops at once: the Spark JVM is asked to end
(SIGTERM, SIGKILL after a few seconds), then the driver exits. Spark's Python workers end
with their JVM. A restart then finds the checkpoint lock free only once nothing of the old
run writes any more (:mod:`~cdc_connectors.pipeline.lock`).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["LAUNCHER_ENV", "end_process", "watch_launcher"]

#: The process id of the ``cdc-connectors`` command that started this driver.
LAUNCHER_ENV = "CDC_CONNECTORS_LAUNCHER_PID"
_POLL = 0.5


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ancestors() -> list[int]:
    """This process's ancestors' ids, nearest first, as far as /proc shows them."""
    found: list[int] = []
    pid = os.getppid()
    while pid > 1 and len(found) < 16:
        found.append(pid)
        try:
            with open(f"/proc/{pid}/stat") as stream:
                stat = stream.read()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def _wait_for_exit(pid: int) -> None:
    """Return once process ``pid`` has ended."""
    opener = getattr(os, "pidfd_open", None)
    if opener is not None:
        try:
            fd = opener(pid)
        except ProcessLookupError:
            return
        except OSError:
            fd = None
        if fd is not None:
            try:
                # the id is ours to watch only while it is still an ancestor: checked after
                # the pidfd is open, so it cannot be taken by another process in between
                if os.path.exists("/proc/self/stat") and pid not in _ancestors():
                    return
                poller = select.poll()
                poller.register(fd, select.POLLIN)
                while not poller.poll():
                    pass
                return
            finally:
                os.close(fd)
    parent = os.getppid()
    while alive(pid) and (parent != pid or os.getppid() == pid):
        time.sleep(_POLL)


def watch_launcher(on_exit: Callable[[int], None]) -> threading.Thread | None:
    """Call ``on_exit(pid)`` in a thread of its own when the launcher (:data:`LAUNCHER_ENV`)
    ends; ``None`` when no launcher started this process."""
    value = os.environ.get(LAUNCHER_ENV, "")
    try:
        pid = int(value)
    except ValueError:
        return None
    if pid <= 1:
        return None

    def watch() -> None:
        _wait_for_exit(pid)
        on_exit(pid)

    thread = threading.Thread(target=watch, name="launcher-watch", daemon=True)
    thread.start()
    return thread


def end_process(pid: int, grace: float = 5.0) -> None:
    """SIGTERM to process ``pid`` (a child of ours, or our parent), SIGKILL if it still runs
    after ``grace`` seconds; returns once it has ended (or after the SIGKILL)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _running(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _running(pid):
        time.sleep(0.05)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (reaping it when it is our child and has ended)."""
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    if not alive(pid):
        return False
    # ended but not reaped by its parent (not us): a zombie runs nothing
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as stream:
        return stream.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def say(line: str) -> None:
    """A line on stderr, if there is still one to write to."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)
