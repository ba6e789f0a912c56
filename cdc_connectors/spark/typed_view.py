"""Typed columns from structured data a registry subject describes: no bytes to decode.

Records read from a CDC format with a registry (``debezium-json`` and the others) carry
their payload as structured data (a ``VARIANT`` in the OpenCDC DataFrame) and name its
schema in ``opencdc.payload.schema.subject`` / ``.version``. :func:`typed_view` casts that
structured data to the subject's Spark type in the JVM (``variant_get(..., '$', <type>)``):
decimals stay exact, ISO 8601 text becomes ``timestamp`` / ``date``, and a decimal Spark
has no type for (``DECIMAL(65,30)``) is a ``string`` of its exact text
(:mod:`cdc_connectors.spark.decimal_text`). Rows naming another
subject are left out. A value that does not fit its column fails the query, naming it
(Spark's cast error), rather than becoming a null.

For payloads that are schema-encoded bytes (Avro, Protobuf), use
:func:`cdc_connectors.spark.expand` instead.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdc_connectors.registry import registry_for
from cdc_connectors.schema import avro_values, framing
from cdc_connectors.schema.subjects import Part
from cdc_connectors.spark.avro_types import avro_to_spark
from cdc_connectors.spark.decimal_text import text_avro

__all__ = ["typed_view"]


def typed_view(
    df: DataFrame,
    registry: str,
    subject: str,
    *,
    part: Part = "payload",
    reader: str | int = "latest",
) -> DataFrame:
    """``df`` (the OpenCDC schema) with ``part`` as typed columns of ``subject``'s schema.

    For ``part="payload"``: ``before`` and ``after`` typed struct columns in place of
    ``payload``; for ``part="key"``: ``key`` typed. ``reader`` is ``latest`` or a version.
    """
    if part not in ("key", "payload"):
        raise ValueError(f"part must be 'key' or 'payload', not {part!r}")
    from cdc_connectors.registry.store import SchemaStore  # (the client: only where used)

    store = SchemaStore(registry_for(registry))
    if reader == "latest":
        resolved = store.latest(subject)
    elif isinstance(reader, int) or (isinstance(reader, str) and reader.isdigit()):
        resolved = store.by_version(subject, int(reader))
    else:
        raise ValueError(f"reader must be 'latest' or a version number, not {reader!r}")
    # A decimal Spark has no type for (more than 38 digits) is its exact text.
    type_name = avro_to_spark(text_avro(avro_values.standalone(resolved))).simpleString()
    named = F.col("metadata").getItem(framing.CONDUIT_KEYS[part][0])
    rows = df.where(named == F.lit(subject))

    def cast(data: Column) -> Column:
        return F.variant_get(data.getField("structured_data"), "$", type_name)

    others = [c for c in df.columns if c not in ("key", "payload")]
    if part == "payload":
        payload = F.col("payload")
        return rows.select(
            *others,
            "key",
            cast(payload.getField("before")).alias("before"),
            cast(payload.getField("after")).alias("after"),
        )
    return rows.select(*others, cast(F.col("key")).alias("key"), "payload")
