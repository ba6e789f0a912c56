"""JSON Schema rows -> an Arrow batch, against confluent-kafka's ``JSONDeserializer`` per
message, validation on for both.

The rows are the orders of :mod:`bench.bench_schema` (a dozen fields: nullable strings, an
enum, a decimal as a number, a timestamp as ``date-time`` text) under a draft-07 schema with
bounds and required properties. Ours validates each message against its writer's schema and
builds one typed Arrow batch (what ``cdc_connectors.spark.expand`` does per batch); the
anchor is what a consumer using confluent-kafka's serde gets: a dict per message.
"""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from bench.bench_schema import rows
from bench.common import entry, rates
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.spark.json_schema_decode import JsonSchemaColumnDecoder

CONTEXT = SerializationContext("orders", MessageField.VALUE)
TEXT = {"type": ["string", "null"], "maxLength": 64}
ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "title": "shop.Order",
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "customer": TEXT,
        "status": {"enum": ["new", "paid", "shipped", "cancelled"]},
        "amount": {"type": "number", "minimum": 0},
        "created_at": {"type": "string", "format": "date-time"},
        "note": TEXT,
        "qty": {"type": "integer", "connect.type": "int32", "minimum": 1},
        "price": {"type": "number"},
        "vip": {"type": "boolean"},
        "city": TEXT,
        "zip": TEXT,
        "version": {"type": "integer", "connect.type": "int32"},
    },
    "required": ["id", "status", "amount", "created_at"],
    "additionalProperties": False,
}


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A row as JSON holds it: the decimal a number, the time ISO 8601 text."""
    return {
        **row,
        "amount": float(row["amount"]),
        "created_at": row["created_at"].isoformat(),
    }


def run() -> dict[str, dict[str, Any]]:
    registry = open_registry("memory://bench-jsonschema")
    data = [_plain(r) for r in rows()]
    messages = [JSONSerializer(json.dumps(ORDER), registry)(row, CONTEXT) for row in data]
    store = SchemaStore(registry)
    reader = store.latest("orders-value")
    n = len(messages)

    def ours() -> Any:
        # A fresh decoder each time, as on an executor that has seen the topic once.
        array, errors, _ = JsonSchemaColumnDecoder(store, reader).decode(messages)
        assert not any(errors)
        return array

    deserializer = JSONDeserializer(None, schema_registry_client=registry)

    def confluent() -> list[Any]:
        return [deserializer(m, CONTEXT) for m in messages]

    first = ours().to_pylist()[0]
    assert first["id"] == confluent()[0]["id"]
    found = rates({"ours": ours, "confluent": confluent}, n)
    return {
        "jsonschema_decode_vs_confluent": entry(
            found["ours"],
            "rows/s",
            "confluent-kafka JSONDeserializer per message (validation on)",
            found["confluent"],
        )
    }
