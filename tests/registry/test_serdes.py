"""confluent-kafka's own serializers and deserializers take every registry of ours as it is."""

from __future__ import annotations

from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

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
