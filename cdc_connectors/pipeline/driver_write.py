"""A few rows written by the driver itself, through a data source's own Arrow writer.

A Spark write job of a batch's dead letters costs a planner process to make the writer, a
task, and a planner process to commit: two of the three seconds a 14-line batch took here,
for four rows. When the rows are few (the runner says how few), the driver collects them as
Arrow and does what Spark would: the data source's ``writer``, its ``write`` of the
batches (as one task would), then ``commit``, or ``abort`` when either fails. The output
is the data source's own, in one task's file instead of one per task that had rows.

The rows are collected as Spark hands Arrow batches to a data source's tasks: PySpark's
``DataFrame._collect_as_arrow``, what ``toArrow`` does before casting to its own schema (a
cast that refuses a null ``variant``, as dead letters hold). A PySpark without it gets the
Spark write.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.datasource import DataSourceArrowWriter

__all__ = ["write_on_driver"]


def write_on_driver(source_class: Any, settings: dict[str, str], frame: DataFrame) -> bool:
    """Append the rows of ``frame`` with data source ``source_class`` configured by
    ``settings``; ``False`` (nothing done) when its writer does not take Arrow batches.
    The data source's errors are raised as they are."""
    collect = getattr(frame, "_collect_as_arrow", None)
    if collect is None:
        return False
    writer = source_class(settings).writer(frame.schema, False)
    if not isinstance(writer, DataSourceArrowWriter):
        return False
    batches = collect()
    message = None
    try:
        message = writer.write(iter(batches))
        writer.commit([message])
    except BaseException:
        writer.abort([message])
        raise
    return True
