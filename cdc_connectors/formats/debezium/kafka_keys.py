"""The key of a Debezium change event's record: the Kafka key (JsonConverter's wrapper
unwrapped, typed by its ``schema`` block, or raw bytes), else the ``key.fields`` columns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from cdc_connectors.formats.debezium.reading import parse_kafka_key, typed_row, unwrap
from cdc_connectors.formats.debezium.row_schemas import RowSchema, RowSchemas
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc.data import Data
from cdc_connectors.opencdc.json_codec import json_default
from cdc_connectors.opencdc.jsonkinds import json_kind
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.schema.connect import ConnectSchema

__all__ = ["KafkaKeys"]


class KafkaKeys(RowSchemas):
    """The keys of :class:`~cdc_connectors.formats.debezium.DebeziumJsonFormat`'s records."""

    #: Columns of the row that make the key of a message without one (option ``key.fields``).
    key_fields: tuple[str, ...]

    def kafka_key(self, key: bytes | None) -> tuple[Data, ConnectSchema | None]:
        """The record key a Kafka key gives (structured, raw or none, as ``decode`` makes
        it), and the Connect schema of its ``schema`` block if it has one (with a registry,
        ``decode`` names that schema per message)."""
        data, row = self._kafka_key(parse_kafka_key(key))
        return data, None if row is None else row.connect

    def key_schema(self, block: Any) -> RowSchema:
        """The row schema of a Kafka key's ``schema`` block (:class:`CodecError` for one
        that is none), parsed once per distinct block."""
        return self.row_schema(block, "key schema")

    def _kafka_key(self, key: Any) -> tuple[Data, RowSchema | None]:
        """The structured (or raw) key of a Kafka key, and its row schema if it has one."""
        if key is None or isinstance(key, bytes):
            return key, None
        if not isinstance(key, Mapping):
            return orjson.dumps(key, default=json_default), None
        schema, payload = unwrap(key, "key")
        if payload is None:
            return None, None
        if not isinstance(payload, Mapping):
            raise CodecError(f"key payload: expected an object, got {json_kind(payload)}")
        if schema is None:
            return dict(payload), None
        row = self.key_schema(schema)
        return typed_row(row.connect, payload, "key"), row

    def _key(
        self, key: Any, before: Data, after: Data, operation: Operation
    ) -> tuple[Data, RowSchema | None]:
        """The record's key: the Kafka key's, else the ``key.fields`` columns of the image
        the operation names (``before`` of a delete, else ``after``)."""
        found = self._kafka_key(key)
        if found[0] is not None or not self.key_fields:
            return found
        image = before if operation is Operation.DELETE else after
        image = image if image is not None else (after if before is None else before)
        if not isinstance(image, dict):
            raise CodecError(
                "no key: the message has no Kafka key and no image to take key.fields from"
            )
        missing = [f for f in self.key_fields if f not in image]
        if missing:
            raise CodecError(
                f"key.fields: column {missing[0]!r} is not in the row "
                f"(columns: {', '.join(sorted(image)) or 'none'})"
            )
        return {f: image[f] for f in self.key_fields}, None
