"""confluent-kafka's own serializers and deserializers take every registry of ours as it is."""

from __future__ import annotations

import base64

from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import struct_pb2

from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2
from cdc_connectors.registry import SchemaRegistry

from .test_contract import V1, V2

VALUE = SerializationContext("orders", MessageField.VALUE)


def test_avro_serializer_and_deserializer_round_trip(registry: SchemaRegistry):
    registry.register_schema("orders-value", V1)
    data = AvroSerializer(registry, V2.schema_str)({"id": 7, "note": "gift"}, VALUE)
    assert int.from_bytes(data[1:5], "big") == registry.get_latest_version("orders-value").schema_id
    assert AvroDeserializer(registry)(data, VALUE) == {"id": 7, "note": "gift"}
    # a reader schema: the writer's record resolved into it
    reader = AvroDeserializer(registry, V1.schema_str)
    assert reader(data, VALUE) == {"id": 7}


def test_avro_serializer_with_use_latest_version(registry: SchemaRegistry):
    registry.register_schema("orders-value", V2)
    serializer = AvroSerializer(
        registry, None, conf={"auto.register.schemas": False, "use.latest.version": True}
    )
    data = serializer({"id": 1, "note": None}, VALUE)
    assert AvroDeserializer(registry)(data, VALUE) == {"id": 1, "note": None}


def test_protobuf_serializer_and_deserializer_round_trip(registry: SchemaRegistry):
    serializer = ProtobufSerializer(opencdc_pb2.Record, registry, {"use.deprecated.format": False})
    message = opencdc_pb2.Record(position=b"p-1", operation=opencdc_pb2.OPERATION_UPDATE)
    message.metadata["opencdc.collection"] = "orders"
    message.payload.after.structured_data.update({"id": 7})
    data = serializer(message, VALUE)
    assert registry.get_latest_version("orders-value").schema.schema_type == "PROTOBUF"
    deserializer = ProtobufDeserializer(
        opencdc_pb2.Record, {"use.deprecated.format": False}, registry
    )
    assert deserializer(data, VALUE) == message


def test_json_serializer_and_deserializer_round_trip(registry: SchemaRegistry):
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

    schema = '{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}'
    data = JSONSerializer(schema, registry)({"id": 5}, VALUE)
    assert registry.get_latest_version("orders-value").schema.schema_type == "JSON"
    assert JSONDeserializer(None, schema_registry_client=registry)(data, VALUE) == {"id": 5}


def test_protobuf_with_well_known_imports_registered_as_references(registry: SchemaRegistry):
    # skip.known.types off: the serializer registers google/protobuf/struct.proto and
    # google/protobuf/descriptor.proto as subjects of their own, names holding "/"
    conf = {"use.deprecated.format": False, "skip.known.types": False}
    message = opencdc_pb2.Record(position=b"p-1")
    message.payload.after.structured_data.update({"id": 7, "tags": ["a", None]})
    data = ProtobufSerializer(opencdc_pb2.Record, registry, conf)(message, VALUE)
    latest = registry.get_latest_version("orders-value")
    assert {r.name for r in latest.schema.references} == {
        "google/protobuf/struct.proto",
        "google/protobuf/descriptor.proto",
    }
    assert "google/protobuf/struct.proto" in registry.get_subjects()
    deserializer = ProtobufDeserializer(opencdc_pb2.Record, {}, registry)
    assert deserializer(data, VALUE) == message


def test_a_well_known_type_as_the_record_is_served_as_it_was_registered(
    registry: SchemaRegistry,
):
    # confluent-kafka's deserializer cannot read it back: it renames the writer's file to
    # "default" and adds it to a pool that already holds google/protobuf/struct.proto
    # ("duplicate symbol 'google.protobuf.NullValue'"), whatever the registry. What the
    # registry can do is serve the descriptor the serializer registered, unchanged.
    data = ProtobufSerializer(struct_pb2.Struct, registry, {"use.deprecated.format": False})(
        struct_pb2.Struct(fields={"a": struct_pb2.Value(number_value=1)}), VALUE
    )
    schema_id = int.from_bytes(data[1:5], "big")
    served = registry.get_schema(schema_id, fmt="serialized").schema_str
    assert base64.b64decode(served) == struct_pb2.DESCRIPTOR.serialized_pb
