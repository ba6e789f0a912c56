"""Spark side of cdc-connectors: the OpenCDC schema, Arrow conversion, data source
registration, and typed columns from schema-encoded keys and payloads (``expand`` /
``encode``).

``register(spark)`` registers every connector found through the
``cdc_connectors.connectors`` entry points as a Spark Python data source.

The names below are imported when first used: the columnar converters (and so ``convert``
and every Spark Python worker) use modules of this package without the DataFrame
functions, whose imports (``pyspark.sql``, the registry client) take a fifth of a second.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from cdc_connectors import plugins
from cdc_connectors.lazy import lazy_names

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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

# Each lazily exported name -> the module of this package that defines it.
_EXPORTS = {
    "OPENCDC_ARROW_SCHEMA": "schema",
    "OPENCDC_SCHEMA": "schema",
    "dead_letters": "deadletters",
    "encode": "expand",
    "expand": "expand",
    "record_from_row": "arrow",
    "records_from_batch": "arrow",
    "records_to_batch": "arrow",
    "typed_view": "typed_view",
}


__getattr__ = lazy_names(__name__, _EXPORTS)


class _Package(types.ModuleType):
    """This package, whose ``expand`` and ``typed_view`` stay the functions once their
    modules of the same name are imported (importing a submodule binds it to its name in
    the package)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if _EXPORTS.get(name) == name and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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
    import pyarrow as pa

    from cdc_connectors.spark.arrow import records_to_batch
    from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA

    table = pa.Table.from_batches([records_to_batch(records)], schema=OPENCDC_ARROW_SCHEMA)
    return spark.createDataFrame(table)
