"""Spark side of cdc-connectors: the OpenCDC schema, Arrow conversion, data source
registration, and typed columns from schema-encoded keys and payloads (``expand`` /
``encode``).

``register(spark)`` registers every connector found through the
``cdc_connectors.connectors`` entry points as a Spark Python data source.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from cdc_connectors import plugins
from cdc_connectors.opencdc import Record
from cdc_connectors.spark.arrow import record_from_row, records_from_batch, records_to_batch
from cdc_connectors.spark.deadletters import dead_letters
from cdc_connectors.spark.expand import encode, expand
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA, OPENCDC_SCHEMA
from cdc_connectors.spark.typed_view import typed_view

CONNECTORS_GROUP = plugins.CONNECTORS

__all__ = [
    "OPENCDC_ARROW_SCHEMA",
    "OPENCDC_SCHEMA",
    "dead_letters",
    "encode",
    "expand",
    "record_from_row",
    "records_dataframe",
    "records_from_batch",
    "records_to_batch",
    "register",
    "typed_view",
]


def register(spark: SparkSession) -> list[str]:
    """Register every installed connector as a Spark data source; return their names."""
    names = []
    from pyspark.sql.datasource import DataSource

    for source in plugins.load_all(CONNECTORS_GROUP, DataSource).values():
        spark.dataSource.register(source)
        names.append(source.name())
    return names


def records_dataframe(spark: SparkSession, records: Iterable[Record]) -> DataFrame:
    """A DataFrame with the OpenCDC schema holding ``records`` (built on the driver)."""
    table = pa.Table.from_batches([records_to_batch(records)], schema=OPENCDC_ARROW_SCHEMA)
    return spark.createDataFrame(table)
