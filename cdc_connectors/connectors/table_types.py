"""The row types of a record's registered schema, for the table connector.

A record read with a registry names its payload's schema in ``opencdc.payload.schema.
subject`` / ``.version``; the row's Arrow types are those :func:`~cdc_connectors.spark.
expand` and :func:`~cdc_connectors.spark.typed_view` give the same schema (decimals with
their precision and scale, timestamps in microseconds, dates), cached per subject and
version in each process.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

import pyarrow as pa

from cdc_connectors.opencdc import keys
from cdc_connectors.registry import registry_for
from cdc_connectors.schema import avro_values
from cdc_connectors.spark.avro_types import arrow_type, avro_to_spark
from cdc_connectors.spark.decimal_text import text_avro

__all__ = ["RegisteredTypes"]


class RegisteredTypes:
    """``types(metadata)``: the row schema of the record's registered payload schema (named
    in its metadata), or ``None``."""

    def __init__(self, registry: str):
        self.registry = registry

    def __call__(self, metadata: Mapping[str, str]) -> pa.Schema | None:
        subject = metadata.get(keys.PAYLOAD_SCHEMA_SUBJECT)
        version = metadata.get(keys.PAYLOAD_SCHEMA_VERSION)
        if not subject or not version or not version.isdigit():
            return None
        return _row_schema(self.registry, subject, int(version))


@lru_cache(maxsize=256)
def _row_schema(registry: str, subject: str, version: int) -> pa.Schema | None:
    from cdc_connectors.registry.store import SchemaStore

    resolved = SchemaStore(registry_for(registry)).by_version(subject, version)
    if resolved.schema_type != "AVRO":
        return None
    row = arrow_type(avro_to_spark(text_avro(avro_values.standalone(resolved))))
    if not pa.types.is_struct(row):
        return None
    return pa.schema(list(row))
