"""Dead-letter rows of an OpenCDC DataFrame, for a dead-letter output.

A source's DataFrame holds a row for every message, the ones that did not convert too: their
``operation`` is ``dead-letter`` (:data:`~cdc_connectors.spark.arrow.DEAD_LETTER_OPERATION`),
their metadata holds the reason (``conduit.dlq.nack.error``) and their payload the original
bytes. Writers take changes only and refuse such rows; drop them with
``df.filter("operation != 'dead-letter'")``, and write :func:`dead_letters` of the same frame
to a dead-letter output::

    df = spark.read.format("cdc-files").option("format", "debezium-json").load("in/")
    df.filter("operation != 'dead-letter'").write.format("cdc-kafka")...save()
    dead_letters(df).write.format("cdc-files").mode("append").save("dead-letters/")
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdc_connectors.opencdc import Operation
from cdc_connectors.spark.arrow import DEAD_LETTER_OPERATION

__all__ = ["DEAD_LETTER_OPERATION", "as_conduit_writes", "dead_letters"]


def as_conduit_writes(operation: Column) -> Column:
    """``operation`` with ``dead-letter`` as Conduit's DLQ writes it: ``create``."""
    return F.when(operation == DEAD_LETTER_OPERATION, F.lit(str(Operation.CREATE))).otherwise(
        operation
    )


def dead_letters(df: DataFrame) -> DataFrame:
    """The dead-letter rows of an OpenCDC DataFrame as Conduit writes dead letters
    (operation ``create``, the reason in the metadata), which any writer takes."""
    return df.where(F.col("operation") == DEAD_LETTER_OPERATION).withColumn(
        "operation", as_conduit_writes(F.col("operation"))
    )
