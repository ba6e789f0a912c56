"""A stream reader that only says why the real one could not be made.

PySpark's streaming runner calls ``reader.stop()`` in a ``finally`` around
``streamReader()``: an error raised there surfaces as ``UnboundLocalError: cannot access
local variable 'reader'`` and the user never sees it. ``streamReader`` methods return this
reader instead, which raises the saved error at Spark's first call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from cdc_connectors.connectors.errors import bare


class RefusedStreamReader(DataSourceStreamReader):
    """Raises ``error`` from every call Spark makes but ``stop``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise bare(self.error) from None

    initialOffset = latestOffset = partitions = commit = _refuse

    def read(self, partition: InputPartition) -> Iterator[Any]:
        raise bare(self.error) from None

    def stop(self) -> None:
        """Nothing was opened."""


def stream_reader(make: Callable[[], DataSourceStreamReader]) -> DataSourceStreamReader:
    """``make()``, or a :class:`RefusedStreamReader` carrying the error it raised."""
    try:
        return make()
    except Exception as exc:  # re-raised at Spark's first call, where the user sees it
        return RefusedStreamReader(exc)
