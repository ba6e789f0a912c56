"""The error a connector raises in a Spark task, made to reach the user as one line.

Spark reports a failed task with the text of its Python exception: formatted by PySpark's
worker as a traceback (frames of PySpark itself left out, as
``spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled`` is by default), inside the
exception the driver raises and again in the executor's and the scheduler's log. What we
control is that text. A :class:`ConnectorError` has a one-line message that starts with the
connector and says what failed and where (the record's position, the topic and partition),
and :func:`bare` lets a task's entry point raise it again with no traceback of its own: the
user reads one frame and that line, not the call chain that found the problem. Any other
exception (a bug) keeps its whole traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from cdc_connectors.errors import CdcError

__all__ = ["ConnectorError", "bare", "guarded"]

_T = TypeVar("_T")
_E = TypeVar("_E", bound=Exception)


class ConnectorError(CdcError, RuntimeError):
    """A connector cannot go on; the message is one line naming the connector, what failed
    and where (line breaks in it become spaces)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).splitlines()))


def bare(error: _E) -> _E:
    """``error`` without the frames it came through, to be raised again ``from None`` at a
    task's entry point (module docstring), or at the driver's (a setting refused)."""
    return error.with_traceback(None)


def guarded(items: Iterator[_T]) -> Iterator[_T]:
    """``items``, a :class:`ConnectorError` raised while they are produced coming out
    :func:`bare`: for a reader's ``read``, which Spark iterates after it returned."""
    try:
        yield from items
    except ConnectorError as failure:
        raise bare(failure) from None
