"""A schema that another one references cannot be deleted from under it (42206), as Confluent's."""

from __future__ import annotations

import orjson
import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.registry import Schema, SchemaReference, SchemaRegistry, SchemaRegistryError

from .conftest import InProcessServer, http
from .test_contract import avro

ADDRESS = avro(("street", "string"), name="Address", namespace="shop")


def customer(version: int = 1, *extra: dict[str, object]) -> Schema:
    fields = [{"name": "home", "type": "shop.Address"}, *extra]
    text = {"type": "record", "name": "Customer", "namespace": "shop", "fields": fields}
    return Schema(
        orjson.dumps(text).decode(), "AVRO", [SchemaReference("shop.Address", "address", version)]
    )


def _code(call) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(SchemaRegistryError) as e:
        call()
    return int(e.value.error_code)


def test_a_referenced_version_or_subject_cannot_be_deleted(registry: SchemaRegistry):
    registry.register_schema("address", ADDRESS)
    referrer = registry.register_schema("customers-value", customer())
    assert registry.get_referenced_by("address", 1) == [referrer]
    assert registry.get_referenced_by("address") == [referrer]  # latest

    assert _code(lambda: registry.delete_version("address", 1)) == 42206
    assert _code(lambda: registry.delete_subject("address")) == 42206
    assert registry.get_versions("address") == [1]  # nothing changed
    with pytest.raises(SchemaRegistryError) as e:
        registry.delete_subject("address")
    assert e.value.http_status_code == 422 and "address" in e.value.error_message

    # once the referrer is soft-deleted the reference may be soft-deleted too, but not
    # removed for good while the soft-deleted referrer could still be read
    registry.delete_subject("customers-value")
    assert registry.get_referenced_by("address", 1) == []
    assert registry.get_referenced_by("address", 1, deleted=True) == [referrer]
    assert registry.delete_version("address", 1) == 1
    assert _code(lambda: registry.delete_version("address", 1, permanent=True)) == 42206
    # the referrer still resolves its soft-deleted reference
    assert registry.get_schema(referrer).references[0].subject == "address"

    registry.delete_subject("customers-value", permanent=True)
    assert registry.delete_subject("address", permanent=True) == [1]


def test_references_within_one_subject_do_not_block_deleting_it(registry: SchemaRegistry):
    registry.set_compatibility("shop", "NONE")
    registry.register_schema("shop", ADDRESS)
    inner = customer()
    inner = Schema(inner.schema_str, "AVRO", [SchemaReference("shop.Address", "shop", 1)])
    registry.register_schema("shop", inner)
    assert registry.delete_subject("shop") == [1, 2]


def test_unknown_reference_targets_are_confluent_errors(registry: SchemaRegistry):
    assert _code(lambda: registry.get_referenced_by("nobody", 1)) == 40401
    registry.register_schema("address", ADDRESS)
    assert _code(lambda: registry.get_referenced_by("address", 9)) == 40402
    assert _code(lambda: registry.get_referenced_by("address", "+1")) == 42202  # type: ignore[arg-type]


def test_referencedby_endpoint_and_a_referenced_delete_over_http(app_server: InProcessServer):
    u = app_server.url
    address = {"schema": ADDRESS.schema_str}
    assert http("POST", f"{u}/subjects/address/versions", address)[0] == 200
    body = customer().to_dict()
    status, _, registered = http("POST", f"{u}/subjects/customers-value/versions", body)
    assert status == 200
    assert http("GET", f"{u}/subjects/address/versions/1/referencedby")[2] == [registered["id"]]
    # limit=0 is no limit, as Confluent's
    latest = f"{u}/subjects/address/versions/latest/referencedby"
    assert http("GET", f"{latest}?limit=0")[2] == [registered["id"]]
    assert http("GET", f"{latest}?offset=1")[2] == []
    for path in ("/subjects/address", "/subjects/address/versions/1"):
        status, _, answer = http("DELETE", u + path)
        assert (status, answer["error_code"]) == (422, 42206), path
    assert http("GET", f"{u}/subjects/address/versions")[2] == [1]


def test_avro_records_with_references_round_trip_through_confluents_serdes(
    registry: SchemaRegistry,
):
    registry.register_schema("address", ADDRESS)
    registry.register_schema("customers-value", customer())
    ctx = SerializationContext("customers", MessageField.VALUE)
    serializer = AvroSerializer(
        registry, None, conf={"auto.register.schemas": False, "use.latest.version": True}
    )
    data = serializer({"home": {"street": "Main"}}, ctx)
    assert AvroDeserializer(registry)(data, ctx) == {"home": {"street": "Main"}}


def test_one_resolver_gives_identity_parsing_and_the_serialized_protobuf(
    registry: SchemaRegistry,
):
    money = 'syntax = "proto3";\npackage shop;\nmessage Money { int64 cents = 1; }\n'
    registry.register_schema("money.proto", Schema(money, "PROTOBUF"))
    order = Schema(
        'syntax = "proto3";\npackage shop;\nimport "money.proto";\n'
        "message Order { int64 id = 1; shop.Money total = 2; }\n",
        "PROTOBUF",
        [SchemaReference("money.proto", "money.proto", 1)],
    )
    schema_id = registry.register_schema("orders-value", order)
    serialized = registry.get_schema(schema_id, fmt="serialized")
    from base64 import b64decode

    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto.FromString(b64decode(serialized.schema_str))
    assert list(fd.dependency) == ["money.proto"]
    assert registry.get_version("orders-value", 1, fmt="serialized").schema_id == schema_id


def test_a_schema_with_references_keeps_one_id_however_it_is_spelled(registry: SchemaRegistry):
    registry.register_schema("address", ADDRESS)
    first = registry.register_schema("customers-value", customer())
    compact = customer()
    spaced = Schema(
        orjson.dumps(orjson.loads(compact.schema_str), option=orjson.OPT_INDENT_2).decode(),
        "AVRO",
        compact.references,
    )
    assert registry.register_schema("customers-value", spaced) == first
    assert registry.lookup_schema("customers-value", spaced).version == 1
    assert registry.get_versions("customers-value") == [1]


DEP = 'syntax = "proto3";\npackage dep;\nmessage D { string a = 1; }\n'
DEP_V2 = 'syntax = "proto3";\npackage dep;\nmessage D { string a = 1; string b = 2; }\n'
MAIN = 'syntax = "proto3";\npackage app;\nimport "dep2.proto";\nmessage M { dep.D d = 1; }\n'


def _main_latest() -> Schema:
    return Schema(MAIN, "PROTOBUF", [SchemaReference("dep2.proto", "dep2", -1)])


def test_a_reference_to_the_latest_version_is_pinned_to_its_number(registry: SchemaRegistry):
    registry.register_schema("dep2", Schema(DEP, "PROTOBUF"))
    main = registry.register_schema_full_response("main3", _main_latest())
    stored = registry.get_version("main3", 1)
    assert [(r.subject, r.version) for r in stored.schema.references] == [("dep2", 1)]
    assert [r.version for r in registry.get_schema(main.schema_id).references] == [1]
    assert registry.get_referenced_by("dep2", 1) == [main.schema_id]
    # "latest" spelled either way finds the registration, and registers nothing new
    assert registry.lookup_schema("main3", _main_latest()).version == 1
    assert registry.register_schema("main3", _main_latest()) == main.schema_id
    pinned = Schema(MAIN, "PROTOBUF", [SchemaReference("dep2.proto", "dep2", 1)])
    assert registry.register_schema("main3", pinned) == main.schema_id
    assert registry.get_versions("main3") == [1]

    assert _code(lambda: registry.delete_subject("dep2")) == 42206
    assert _code(lambda: registry.delete_version("dep2", 1)) == 42206
    # a newer version of the referenced subject does not change the referrer
    registry.register_schema("dep2", Schema(DEP_V2, "PROTOBUF"))
    assert registry.get_referenced_by("dep2", 2) == []
    assert [r.version for r in registry.get_version("main3", 1).schema.references] == [1]
    assert registry.get_schema(main.schema_id, fmt="serialized").schema_str
    assert registry.test_compatibility("main3", _main_latest())
    registry.delete_version("dep2", 2)
    registry.delete_version("dep2", 2, permanent=True)
    assert _code(lambda: registry.delete_subject("dep2")) == 42206


def test_a_reference_to_the_latest_version_of_nothing_is_invalid(registry: SchemaRegistry):
    assert _code(lambda: registry.register_schema("main3", _main_latest())) == 42201
    registry.register_schema("dep2", Schema(DEP, "PROTOBUF"))
    registry.delete_subject("dep2")  # soft: no live version is the latest
    assert _code(lambda: registry.register_schema("main3", _main_latest())) == 42201


def test_latest_references_over_http_are_stored_pinned(app_server: InProcessServer):
    u = app_server.url
    dep = {"schema": DEP, "schemaType": "PROTOBUF"}
    assert http("POST", f"{u}/subjects/dep2/versions", dep)[0] == 200
    body = {
        "schema": MAIN,
        "schemaType": "PROTOBUF",
        "references": [{"name": "dep2.proto", "subject": "dep2", "version": -1}],
    }
    status, _, registered = http("POST", f"{u}/subjects/main3/versions", body)
    assert status == 200, registered
    refs = http("GET", f"{u}/subjects/main3/versions/1")[2]["references"]
    assert refs == [{"name": "dep2.proto", "subject": "dep2", "version": 1}]
    assert http("GET", f"{u}/subjects/dep2/versions/1/referencedby")[2] == [registered["id"]]
    status, _, found = http("POST", f"{u}/subjects/main3", body)
    assert (status, found["version"]) == (200, 1)
    for path in ("/subjects/dep2", "/subjects/dep2/versions/1"):
        status, _, answer = http("DELETE", u + path)
        assert (status, answer["error_code"]) == (422, 42206), path
    assert http("GET", f"{u}/schemas/ids/{registered['id']}?format=serialized")[0] == 200


def test_a_soft_deleted_referrer_does_not_hold_a_subject_being_removed_for_good(
    registry: SchemaRegistry,
):
    registry.register_schema("address", ADDRESS)
    registry.register_schema("customers-value", customer())
    registry.delete_subject("customers-value")
    assert registry.delete_subject("address") == [1]
    assert registry.delete_subject("address", permanent=True) == [1]
    # what referred to it now names a version that is gone
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("orders-value", customer())
    assert e.value.error_code == 42201
