"""`cdc-connectors registry serve` over real HTTP, with confluent-kafka's own client and serdes."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2
from cdc_connectors.registry import open_registry

from .conftest import Served, http, self_signed, serve
from .test_contract import BREAKING, V1, V2

CT = "application/vnd.schemaregistry.v1+json"
V1_XML = {"schema": V1.schema_str, "schemaType": "XML"}
V1_LOWER = {"schema": V1.schema_str, "schemaType": "avro"}
VALUE = SerializationContext("orders", MessageField.VALUE)
ORDER_V2 = V2.schema_str


def client(served: Served, **conf: object) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": served.url, **conf})


def test_avro_serializer_and_deserializer_round_trip(served: Served):
    serializer = AvroSerializer(client(served), ORDER_V2)
    data = serializer({"id": 7, "note": "gift"}, VALUE)
    assert data[0] == 0 and int.from_bytes(data[1:5], "big") == 1
    deserializer = AvroDeserializer(client(served))  # a fresh client: fetches by id over HTTP
    assert deserializer(data, VALUE) == {"id": 7, "note": "gift"}
    assert client(served).get_subjects() == ["orders-value"]


def test_protobuf_serializer_and_deserializer_round_trip(served: Served):
    serializer = ProtobufSerializer(opencdc_pb2.Record, client(served))
    message = opencdc_pb2.Record(position=b"p-1", operation=opencdc_pb2.OPERATION_UPDATE)
    message.metadata["opencdc.collection"] = "orders"
    message.payload.after.structured_data.update({"id": 7})
    data = serializer(message, VALUE)
    latest = client(served).get_latest_version("orders-value")
    assert latest.schema.schema_type == "PROTOBUF"
    deserializer = ProtobufDeserializer(opencdc_pb2.Record, {})
    assert deserializer(data, VALUE) == message
    # the stored descriptor compiles back (served in serialized form on request)
    status, _, body = http("GET", f"{served.url}/schemas/ids/{latest.schema_id}?format=serialized")
    assert status == 200
    assert base64.b64decode(body["schema"])


def test_protobuf_text_schema_is_served_serialized_on_request(served: Served):
    text = 'syntax = "proto3";\npackage shop;\nmessage Order { int64 id = 1; }\n'
    schema_id = client(served).register_schema("shop-value", Schema(text, "PROTOBUF"))
    _, _, plain = http("GET", f"{served.url}/schemas/ids/{schema_id}")
    assert plain["schema"] == text and plain["schemaType"] == "PROTOBUF"
    _, _, packed = http("GET", f"{served.url}/subjects/shop-value/versions/1?format=serialized")
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(packed["schema"]))
    assert fd.package == "shop" and fd.message_type[0].name == "Order"


def test_client_register_evolve_refuse_and_delete(served: Served):
    c = client(served)
    assert c.register_schema("s", V1) == 1
    assert c.register_schema("s", V1) == 1
    assert c.register_schema("s", V2) == 2
    with pytest.raises(SchemaRegistryError) as e:
        c.register_schema("s", BREAKING)
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert c.test_compatibility("s", V2) is True
    assert c.test_compatibility("s", BREAKING) is False
    assert c.get_version("s", 1).schema_id == 1
    for call, expected in [
        (lambda: c.get_version("nope", 1), 40401),
        (lambda: c.get_version("s", 9), 40402),
        (lambda: c.get_schema(99), 40403),
    ]:
        with pytest.raises(SchemaRegistryError) as e:
            call()
        assert e.value.error_code == expected
    assert c.delete_version("s", 2) == 2
    assert c.get_versions("s") == [1]
    assert c.delete_subject("s") == [1]
    assert c.delete_subject("s", permanent=True) == [1, 2]  # every soft-deleted version goes
    assert c.get_subjects() == []


def test_endpoints_answer_with_confluent_content_type_and_error_bodies(served: Served):
    u = served.url
    status, head, body = http("POST", f"{u}/subjects/s/versions", {"schema": V1.schema_str})
    assert status == 200 and head["content-type"] == CT
    assert body["id"] == 1 and body["version"] == 1 and body["subject"] == "s"
    assert http("GET", f"{u}/schemas/types")[2] == ["AVRO", "PROTOBUF", "JSON"]
    assert http("GET", f"{u}/schemas/ids/1/schema")[2] == {
        "type": "record",
        "name": "Order",
        "fields": [{"name": "id", "type": "long"}],
    }
    assert http("GET", f"{u}/schemas/ids/1/versions")[2] == [{"subject": "s", "version": 1}]
    assert http("GET", f"{u}/subjects")[2] == ["s"]
    assert http("GET", f"{u}/subjects/s/versions")[2] == [1]
    assert http("GET", f"{u}/subjects/s/versions/latest")[2]["id"] == 1
    assert http("GET", f"{u}/subjects/s/versions/1/schema")[2]["name"] == "Order"
    assert http("POST", f"{u}/subjects/s", {"schema": V1.schema_str})[2]["version"] == 1
    assert http("GET", f"{u}/config")[2] == {"compatibilityLevel": "BACKWARD"}
    assert http("PUT", f"{u}/config/s", {"compatibility": "FULL"})[2] == {"compatibility": "FULL"}
    assert http("GET", f"{u}/config/s")[2] == {"compatibilityLevel": "FULL"}
    assert (
        http(
            "POST",
            f"{u}/compatibility/subjects/s/versions/latest?verbose=true",
            {"schema": BREAKING.schema_str},
        )[2]["is_compatible"]
        is False
    )

    for method, path, body, status_code, error_code in [
        ("GET", "/subjects/none/versions", None, 404, 40401),
        ("GET", "/subjects/s/versions/5", None, 404, 40402),
        ("GET", "/subjects/s/versions/zero", None, 422, 42202),
        ("GET", "/schemas/ids/77", None, 404, 40403),
        ("POST", "/subjects/s/versions", {"schema": "{nope"}, 422, 42201),
        ("POST", "/subjects/s/versions", {"schema": ""}, 422, 42201),
        ("POST", "/subjects/s/versions", b"{not json", 422, 422),
        ("POST", "/subjects/s/versions", [1, 2], 422, 422),
        ("POST", "/subjects/s/versions", V1_XML, 422, 42201),
        # schemaType is case-sensitive, as Confluent's
        ("POST", "/subjects/s/versions", V1_LOWER, 422, 42201),
        ("POST", "/subjects/s/versions", {"schema": BREAKING.schema_str}, 409, 409),
        ("PUT", "/config", {"compatibility": "SOMETIMES"}, 422, 42203),
        ("GET", "/config/other", None, 404, 40408),
        ("DELETE", "/subjects/s?permanent=true", None, 404, 40405),
        ("GET", "/no/such/path", None, 404, 404),
        ("PATCH", "/subjects/s/versions", None, 405, 405),
    ]:
        status, head, answer = http(method, u + path, body)
        assert (status, answer["error_code"]) == (status_code, error_code), (path, answer)
        assert head["content-type"] == CT and answer["message"]
    # none of the bad requests changed the store
    assert http("GET", f"{u}/subjects/s/versions")[2] == [1]
    assert http("GET", f"{u}/subjects")[2] == ["s"]


def test_store_survives_a_restart(tmp_path: Path):
    store = f"sqlite:///{tmp_path}/registry.db"
    first = serve(store)
    try:
        client(first).register_schema("s", V1)
        client(first).register_schema("s", V2)
        client(first).set_compatibility("s", "FULL")
        client(first).update_mode("s", "READONLY")
    finally:
        first.stop()
    second = serve(store)
    try:
        c = client(second)
        assert c.get_versions("s") == [1, 2]
        assert c.get_compatibility("s") == "FULL"
        assert c.get_mode("s") == "READONLY"
        c.update_mode("s", "READWRITE")
        assert c.register_schema("s", V2) == 2
    finally:
        second.stop()


def test_http_registrations_are_in_the_sqlite_store_and_the_other_way_round(served: Served):
    over_http = client(served).register_schema("from-http", V1)
    direct = open_registry(served.store)
    assert direct.get_version("from-http", 1).schema_id == over_http
    registered = direct.register_schema("from-sqlite", V2)
    assert client(served).get_version("from-sqlite", 1).schema_id == registered
    direct.close()


def test_basic_auth_and_bearer_token_are_required_when_configured(tmp_path: Path):
    server = serve(f"sqlite:///{tmp_path}/r.db", "--basic-auth", "ada:secret", "--token", "t0ken")
    try:
        status, head, body = http("GET", f"{server.url}/subjects")
        assert status == 401 and body["error_code"] == 401 and "Basic" in head["www-authenticate"]
        with pytest.raises(SchemaRegistryError) as e:
            client(server, **{"basic.auth.user.info": "ada:wrong"}).get_subjects()
        assert e.value.http_status_code == 401
        assert client(server, **{"basic.auth.user.info": "ada:secret"}).get_subjects() == []
        with_user_in_url = open_registry(server.url.replace("http://", "http://ada:secret@"))
        assert with_user_in_url.register_schema_full_response("s", V1).version == 1
        with_token = open_registry(server.url, bearer_token="t0ken")
        assert with_token.get_subjects() == ["s"]
    finally:
        server.stop()


def test_several_urls_fall_over_to_a_live_one(served: Served):
    from .conftest import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    registry = open_registry(f"{dead},{served.url}")
    assert registry.register_schema_full_response("s", V1).version == 1


def test_https_with_tls_settings_passed_to_the_client(tmp_path: Path):
    from .conftest import free_port

    cert, key = self_signed(tmp_path)
    port = free_port()
    server = serve(
        f"sqlite:///{tmp_path}/r.db",
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
        port=port,
        scheme="https",
    )
    try:
        url = f"https://127.0.0.1:{port}"
        trusted = open_registry(f"{url}?ssl.ca.location={cert}")
        assert trusted.register_schema_full_response("s", V1).version == 1
        assert open_registry(url, **{"ssl.ca.location": str(cert)}).get_subjects() == ["s"]
        untrusted = open_registry(url, **{"max.retries": 0})
        with pytest.raises(Exception, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            untrusted.get_subjects()
    finally:
        server.stop()
