"""Confluent-framed JSON Schema values of one subject -> one Arrow struct array.

JSON needs no schema resolution: each value is checked against its writer's schema (as
confluent-kafka's ``JSONDeserializer`` checks it) and shaped by the reader's
(:mod:`cdc_connectors.spark.json_schema_types`): a property the reader does not name is
left out, one the value lacks is null. A value that does not match its writer's schema, or
that its reader column cannot hold, is an error row naming the place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.types import StructType

from cdc_connectors.opencdc import CodecError
from cdc_connectors.registry.serde import compiled_json
from cdc_connectors.schema import json_values, jsontext
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.spark.avro_types import arrow_type
from cdc_connectors.spark.expand import AvroColumnDecoder
from cdc_connectors.spark.json_schema_types import shape_of

if TYPE_CHECKING:
    from cdc_connectors.registry.store import Resolved, SchemaStore

__all__ = ["JsonSchemaColumnDecoder"]


class JsonSchemaColumnDecoder(AvroColumnDecoder):
    """JSON Schema values of the reader's subject, validated and typed (module docstring)."""

    def __init__(self, store: SchemaStore, reader: Resolved):
        self.store = store
        self.reader = reader
        try:
            shape = shape_of(jsontext.load(reader.text, "JSON schema"))
        except SchemaError as exc:
            raise ValueError(f"{reader.label()}: {exc}") from None
        if not isinstance(shape.spark, StructType):
            raise ValueError(
                f"{reader.label()} describes no object with properties (its values would be "
                f"{shape.spark.simpleString()}): expand reads JSON Schemas of objects with "
                "properties"
            )
        self.shape = shape
        self.spark_type = shape.spark
        self.type = arrow_type(shape.spark)
        self._subject_ids: dict[int, bool] = {}

    def decode(
        self,
        values: Sequence[bytes | None],
        named: Sequence[tuple[str, int] | None] | None = None,
    ) -> tuple[pa.Array, list[str | None], list[bool]]:
        count = len(values)
        errors: list[str | None] = [None] * count
        mine = [True] * count
        rows: list[object] = [None] * count
        for i, value in enumerate(values):
            if value is None:
                continue
            try:
                writer, offset = self._writer(value, named[i] if named is not None else None)
                if writer.schema_type != "JSON":
                    raise CodecError(f"{writer.label()} is {writer.schema_type}, not JSON")
                if not self._of_subject(writer):
                    mine[i] = False
                    continue
                data = json_values.decode(memoryview(value)[offset:], compiled_json(writer))
                rows[i] = self.shape.convert(data, "")
            except CodecError as exc:
                errors[i] = exc.reason
            except ValueError as exc:
                errors[i] = f"{self.reader.label()}: {exc}"
        return pa.array(rows, type=self.type), errors, mine
