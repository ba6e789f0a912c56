"""Schema-encoded rows <-> Arrow batches, against confluent-kafka's serializers per message.

Rows are realistic: a dozen fields with nullable strings, a decimal and a timestamp.
Ours decodes Confluent-framed messages through the registry into one Arrow batch (what
``cdc_connectors.spark.expand`` does per batch) and encodes an Arrow batch back; the
anchors are confluent-kafka's ``AvroDeserializer`` / ``AvroSerializer`` /
``ProtobufDeserializer`` called per message, and a bare ``fastavro.schemaless_reader``
loop to dicts.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import random
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from bench.common import entry, rates
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.schema.framing import read_frame
from cdc_connectors.schema.protobuf import message_class
from cdc_connectors.spark.avro_encode import AvroBatchEncoder
from cdc_connectors.spark.expand import AvroColumnDecoder
from cdc_connectors.spark.protobuf_batch import ProtobufBatchDecoder

ROWS = 20_000
CONTEXT = SerializationContext("orders", MessageField.VALUE)

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": ["null", "string"], "default": None},
        {"name": "status", "type": "string"},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
        {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "qty", "type": "int"},
        {"name": "price", "type": "double"},
        {"name": "vip", "type": "boolean"},
        {"name": "city", "type": ["null", "string"], "default": None},
        {"name": "zip", "type": ["null", "string"], "default": None},
        {"name": "version", "type": "int"},
    ],
}

ORDER_PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";

message Order {
  int64 id = 1;
  optional string customer = 2;
  string status = 3;
  string amount = 4;
  google.protobuf.Timestamp created_at = 5;
  optional string note = 6;
  int32 qty = 7;
  double price = 8;
  bool vip = 9;
  optional string city = 10;
  optional string zip = 11;
  int32 version = 12;
}
"""


def rows(n: int = ROWS, seed: int = 11) -> list[dict[str, Any]]:
    """``n`` order rows with native values (Decimal, aware datetime, None)."""
    rnd = random.Random(seed)
    start = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    return [
        {
            "id": 10_000_000 + i,
            "customer": rnd.choice([None, "ada", "grace", "linus", "barbara"]),
            "status": rnd.choice(["new", "paid", "shipped", "cancelled"]),
            "amount": Decimal(rnd.randrange(100, 10**8)).scaleb(-2),
            "created_at": start + dt.timedelta(microseconds=rnd.randrange(10**13)),
            "note": None if i % 3 else "leave at the door",
            "qty": rnd.randrange(1, 20),
            "price": rnd.random() * 500,
            "vip": rnd.random() < 0.1,
            "city": rnd.choice([None, "Springfield", "Shelbyville"]),
            "zip": None if i % 5 else "12345",
            "version": rnd.randrange(1, 5),
        }
        for i in range(n)
    ]


def run() -> dict[str, dict[str, Any]]:
    registry = open_registry("memory://bench-schema")
    data = rows()
    results: dict[str, dict[str, Any]] = {}
    results.update(_avro(registry, data))
    results.update(_protobuf(registry, data))
    return results


def _avro(registry: Any, data: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    serializer = AvroSerializer(registry, json.dumps(ORDER))
    messages = [serializer(row, CONTEXT) for row in data]
    store = SchemaStore(registry)
    reader = store.latest("orders-value")
    n = len(messages)

    def ours_decode() -> pa.Array:
        # A fresh decoder each time: nothing cached from the run before but the store's
        # schemas by id, as on an executor that has seen the topic once.
        array, errors, _ = AvroColumnDecoder(store, reader).decode(messages)
        assert not any(errors)
        return array

    deserializer = AvroDeserializer(registry)

    def confluent_decode() -> list[Any]:
        return [deserializer(m, CONTEXT) for m in messages]

    parsed = fastavro.parse_schema(ORDER)

    def fastavro_loop() -> list[Any]:
        out = []
        for m in messages:
            buffer = io.BytesIO(m)
            buffer.seek(5)
            out.append(fastavro.schemaless_reader(buffer, parsed))
        return out

    batch = ours_decode()
    assert batch.to_pylist()[:50] == confluent_decode()[:50]
    decoded = rates(
        {"ours": ours_decode, "confluent": confluent_decode, "fastavro": fastavro_loop}, n
    )
    ours, anchor_confluent, anchor_fastavro = (
        decoded["ours"],
        decoded["confluent"],
        decoded["fastavro"],
    )

    encoder_schema = reader.avro_standalone
    prefix = messages[0][:5]

    def ours_encode() -> list[bytes]:
        framed, errors = AvroBatchEncoder(encoder_schema, prefix=prefix).encode(batch)
        assert not any(errors)
        return [b for b in framed if b is not None]

    def confluent_encode() -> list[bytes]:
        return [serializer(row, CONTEXT) for row in data]

    assert ours_encode() == messages
    encoded = rates({"ours": ours_encode, "confluent": confluent_encode}, n)
    ours_enc, anchor_enc = encoded["ours"], encoded["confluent"]
    return {
        "avro_decode_vs_confluent": entry(
            ours, "rows/s", "confluent-kafka AvroDeserializer per message", anchor_confluent
        ),
        "avro_decode_vs_fastavro_loop": entry(
            ours, "rows/s", "bare fastavro.schemaless_reader loop to dicts", anchor_fastavro
        ),
        "avro_encode_vs_confluent": entry(
            ours_enc, "rows/s", "confluent-kafka AvroSerializer per message", anchor_enc
        ),
    }


def _protobuf(registry: Any, data: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    registered = registry.register_schema("orders-pb-value", Schema(ORDER_PROTO, "PROTOBUF"))
    cls = message_class(ORDER_PROTO)
    proto_rows = []
    for row in data:
        message = cls()
        for name, value in row.items():
            if value is None:
                continue
            if name == "created_at":
                message.created_at.FromDatetime(value)
            elif name == "amount":
                message.amount = str(value)
            else:
                setattr(message, name, value)
        proto_rows.append(message)
    serializer = ProtobufSerializer(
        cls,
        registry,
        {
            "use.deprecated.format": False,
            "auto.register.schemas": False,
            "use.latest.version": True,
        },
    )
    context = SerializationContext("orders-pb", MessageField.VALUE)
    messages = [serializer(m, context) for m in proto_rows]
    assert int.from_bytes(messages[0][1:5], "big") == registered
    n = len(messages)

    store = SchemaStore(registry)

    def ours() -> pa.Array:
        # Through the registry: each message's frame, its schema by id, the class compiled
        # for it (cached), then one batch per schema, as an executor decodes a topic.
        frames = [read_frame(m, protobuf=True) for m in messages]
        first = frames[0]
        writer = store.by_id(first.schema_id or 0)
        decoder = ProtobufBatchDecoder(
            message_class(writer.text, writer.references, first.indexes or (0,))
        )
        array, errors = decoder.decode(messages, [f.offset for f in frames])
        assert not any(errors)
        return array

    deserializer = ProtobufDeserializer(cls, {"use.deprecated.format": False})

    def confluent() -> list[Any]:
        return [deserializer(m, context) for m in messages]

    theirs = confluent()[:100]
    assert [(r["id"], r["customer"], r["status"]) for r in ours().to_pylist()[:100]] == [
        (m.id, m.customer if m.HasField("customer") else None, m.status) for m in theirs
    ]
    measured = rates({"ours": ours, "confluent": confluent}, n)
    value, anchor = measured["ours"], measured["confluent"]
    return {
        "protobuf_decode_vs_confluent": entry(
            value, "rows/s", "confluent-kafka ProtobufDeserializer per message", anchor
        )
    }
