"""confluent-kafka's Protobuf serde and our run-time classes read each other's messages.

Their serializer registers the schema (a serialized descriptor, its import as a
reference) in our registry, in process and over HTTP; our classes, compiled
from what the registry holds, decode the body to the same values. Bodies we
write behind a header from confluent's ``SchemaId`` are read by their
deserializer.
"""

from __future__ import annotations

import datetime
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.common.serde import SchemaId
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.registry import open_registry
from cdc_connectors.schema.protobuf import from_dict, message_class, message_indexes, to_dict
from tests.registry.conftest import Served, serve
from tests.schema.test_protobuf_codec import CUSTOMER, FULL, REFERENCES

VALUE = SerializationContext("customers", MessageField.VALUE)
SERIALIZER_CONF = {"use.deprecated.format": False, "auto.register.schemas": True}


def resolve(registry: Any, schema: Schema) -> list[tuple[str, str]]:
    """(import path, schema text) of every reference of ``schema``, dependencies first."""
    resolved: list[tuple[str, str]] = []
    for ref in schema.references or []:
        referenced = registry.get_version(ref.subject, ref.version).schema
        resolved += [r for r in resolve(registry, referenced) if r not in resolved]
        resolved.append((ref.name, referenced.schema_str))
    return resolved


def decode(registry: Any, data: bytes) -> Any:
    """A Confluent-framed message, decoded with a class compiled from the registry's schema."""
    schema_id = SchemaId("PROTOBUF")
    offset = schema_id.from_bytes(io.BytesIO(data)).tell()
    schema = registry.get_schema(schema_id.id)
    cls = message_class(schema.schema_str, resolve(registry, schema), schema_id.message_indexes)
    return cls.FromString(data[offset:])


def frame(registry: Any, subject: str, message: Any) -> bytes:
    """Our body behind a header naming the subject's latest schema and the message's path."""
    schema_id = registry.get_latest_version(subject).schema_id
    indexes = message_indexes(message.DESCRIPTOR)
    return SchemaId("PROTOBUF", schema_id, message_indexes=indexes).id_to_bytes() + bytes(
        message.SerializeToString()
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = serve(f"sqlite:///{tmp_path}/registry.db")
    yield server
    server.stop()


def customer() -> Any:
    return from_dict(FULL, message_class(CUSTOMER, REFERENCES))


def nested() -> Any:
    inner = message_class(CUSTOMER, REFERENCES, [1, 0, 0])
    return inner(y=-(2**63))


def test_confluent_serialized_messages_decode_to_the_same_values_in_process():
    registry = open_registry("memory://")
    original = customer()
    data = ProtobufSerializer(type(original), registry, SERIALIZER_CONF)(original, VALUE)
    registered = registry.get_latest_version("customers-value").schema
    assert [r.name for r in registered.references] == ["shop/money.proto"]
    assert to_dict(decode(registry, data)) == FULL


def test_a_nested_message_travels_with_its_index_path():
    registry = open_registry("memory://")
    original = nested()
    data = ProtobufSerializer(type(original), registry, SERIALIZER_CONF)(original, VALUE)
    decoded = decode(registry, data)
    assert decoded.DESCRIPTOR.full_name == "test.v1.Other.Inner.Deeper"
    assert to_dict(decoded) == {"y": -(2**63)}


def test_confluent_serialized_messages_over_http_decode_from_the_same_store(served: Served):
    client = SchemaRegistryClient({"url": served.url})
    original = customer()
    data = ProtobufSerializer(type(original), client, SERIALIZER_CONF)(original, VALUE)
    data_nested = ProtobufSerializer(type(nested()), client, SERIALIZER_CONF)(nested(), VALUE)
    store = open_registry(served.store)
    try:
        assert to_dict(decode(store, data)) == FULL
        assert to_dict(decode(store, data_nested)) == {"y": -(2**63)}
    finally:
        store.close()
    assert to_dict(decode(client, data)) == FULL


@pytest.mark.parametrize("how", ["memory", "http"])
def test_confluent_deserializer_reads_the_bytes_we_write(how: str, tmp_path: Path):
    server = serve(f"sqlite:///{tmp_path}/registry.db") if how == "http" else None
    registry: Any = (
        SchemaRegistryClient({"url": server.url}) if server else open_registry("memory://")
    )
    try:
        original = customer()
        # register the schema as confluent's serializer does, then frame our own body
        ProtobufSerializer(type(original), registry, SERIALIZER_CONF)(original, VALUE)
        ours = from_dict(to_dict(original), type(original))
        data = frame(registry, "customers-value", ours)
        deserializer = ProtobufDeserializer(type(original), {}, registry)
        read = deserializer(data, VALUE)
        assert read == original
        assert to_dict(read)["created_at"] == datetime.datetime(
            2024, 2, 29, 23, 59, 59, 999999, tzinfo=datetime.UTC
        )
        # a nested message: the header carries its index path [1, 0, 0]
        inner = nested()
        data = frame(registry, "customers-value", inner)
        assert data[5:9] == bytes([6, 2, 0, 0])  # zigzag varints: count 3, then 1, 0, 0
        assert ProtobufDeserializer(type(inner), {}, registry)(data, VALUE) == inner
    finally:
        if server:
            server.stop()
