"""PySpark finds ``cdc-files`` here by itself: a top-level ``pyspark_*`` module with a
``DefaultSource`` is registered when a session first looks up a data source, with no call
to :func:`cdc_connectors.spark.register`. The connector's module is imported when a query
first uses it (:mod:`cdc_connectors.connectors.deferred`), not by the look-up."""

from cdc_connectors.connectors.deferred import Deferred

__all__ = ["DefaultSource"]


class DefaultSource(Deferred):
    """``cdc-files``: :class:`cdc_connectors.connectors.files.FilesDataSource`."""

    connector = "cdc_connectors.connectors.files:FilesDataSource"
    source_name = "cdc-files"
