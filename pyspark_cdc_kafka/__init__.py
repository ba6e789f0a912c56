"""PySpark finds ``cdc-kafka`` here by itself: a top-level ``pyspark_*`` module with a
``DefaultSource`` is registered when a session first looks up a data source, with no call
to :func:`cdc_connectors.spark.register`."""

from cdc_connectors.connectors.kafka import KafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
