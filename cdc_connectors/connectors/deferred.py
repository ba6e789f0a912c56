"""A data source that PySpark's look-up registers without importing its connector.

On the first data source a Spark session looks up, PySpark starts a Python process that
imports every top-level ``pyspark_*`` module to find their ``DefaultSource``
(``pyspark.sql.worker.lookup_data_sources``), in every session, whichever source it
queries. A connector's module imports pyarrow, confluent-kafka and the formats: half a
second of that process's CPU. :class:`Deferred` is what ``pyspark_cdc_kafka`` and
``pyspark_cdc_files`` export instead: the connector's name, and every other call handed
to the connector itself (``module:Class`` in :attr:`Deferred.connector`), imported when a
query first asks for its schema, reader or writer.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

from pyspark.sql.datasource import DataSource

__all__ = ["Deferred"]


class Deferred(DataSource):
    """The connector :attr:`connector` names, imported on first use (module docstring)."""

    #: The connector's class, as ``package.module:Class``.
    connector: ClassVar[str]
    #: Its name (``DataSource.name``), which must be the connector's own.
    source_name: ClassVar[str]

    @classmethod
    def name(cls) -> str:
        return cls.source_name

    @classmethod
    def connector_class(cls) -> type[DataSource]:
        module, _, qualified = cls.connector.partition(":")
        found: type[DataSource] = getattr(importlib.import_module(module), qualified)
        return found

    def _source(self) -> DataSource:
        source: DataSource | None = self.__dict__.get("_connector")
        if source is None:
            source = self.__dict__["_connector"] = self.connector_class()(self.options)
        return source

    def schema(self) -> Any:
        return self._source().schema()

    def reader(self, schema: Any) -> Any:
        return self._source().reader(schema)

    def writer(self, schema: Any, overwrite: bool) -> Any:
        return self._source().writer(schema, overwrite)

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        return self._source().streamWriter(schema, overwrite)

    def simpleStreamReader(self, schema: Any) -> Any:
        return self._source().simpleStreamReader(schema)

    def streamReader(self, schema: Any) -> Any:
        return self._source().streamReader(schema)
