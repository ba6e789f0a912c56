"""Config fields beyond the level (aliases, reserved fields, compatibility groups, default and
override metadata) and the metadata schemas carry, on every registry."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry.common.schema_registry_client import (
    ConfigCompatibilityLevel as Level,
)
from confluent_kafka.schema_registry.common.schema_registry_client import Metadata

from cdc_connectors.registry import SchemaRegistry, SchemaRegistryError
from cdc_connectors.registry.base import Schema, ServerConfig

from .conftest import InProcessServer, http


def avro(name: str, *fields: str, defaults: bool = False) -> str:
    """An Avro record of string fields (with defaults when ``defaults``)."""
    spec = [{"name": f, "type": "string", **({"default": ""} if defaults else {})} for f in fields]
    return json.dumps({"type": "record", "name": name, "fields": spec})


def with_meta(text: str, properties: dict[str, str] | None = None, **more: Any) -> Schema:
    meta = None
    if properties is not None or more:
        meta = Metadata.from_dict({"properties": properties or {}, **more})
    return Schema(text, "AVRO", [], metadata=meta)


def properties(registry: SchemaRegistry, subject: str, version: int | str = "latest") -> Any:
    metadata = registry.get_version(subject, version).schema.metadata  # type: ignore[arg-type]
    return None if metadata is None else metadata.to_dict().get("properties")


def test_config_fields_are_kept_changed_and_removed(registry: SchemaRegistry):
    registry.update_config("orders", "FULL", {"validateFields": True, "alias": "orders-v2"})
    assert registry.config_document("orders") == {
        "compatibilityLevel": "FULL",
        "validateFields": True,
        "alias": "orders-v2",
    }
    # a field not named stays; None removes one; an empty alias is no alias
    registry.update_config("orders", None, {"validateFields": None, "alias": ""})
    assert registry.config_document("orders") == {"compatibilityLevel": "FULL"}
    registry.update_config("orders", None, {"compatibilityGroup": "generation"})
    registry.delete_config("orders")
    with pytest.raises(SchemaRegistryError) as e:
        registry.config_document("orders")
    assert e.value.error_code == 40408


def test_a_subject_config_is_merged_over_the_global_one(registry: SchemaRegistry):
    registry.update_config(None, None, {"validateFields": True, "alias": "nowhere"})
    registry.update_config("payments", "NONE", {"compatibilityGroup": "line"})
    assert registry.config_document("payments") == {
        "compatibilityLevel": "NONE",
        "compatibilityGroup": "line",
    }
    # a global alias is not a subject's
    assert registry.config_document("payments", default_to_global=True) == {
        "compatibilityLevel": "NONE",
        "compatibilityGroup": "line",
        "validateFields": True,
    }
    registry.delete_config(None)
    assert registry.config_document(None) == {"compatibilityLevel": "BACKWARD"}


def test_set_config_takes_the_group_and_metadata_of_a_server_config(registry: SchemaRegistry):
    default = Metadata.from_dict({"properties": {"owner": "billing"}})
    config = ServerConfig(
        compatibility=Level.NONE, compatibility_group="gen", default_metadata=default
    )
    registry.set_config("invoices", config)
    got = registry.get_config("invoices")
    assert got.compatibility_group == "gen"
    assert got.default_metadata is not None
    assert got.default_metadata.to_dict()["properties"] == {"owner": "billing"}
    registry.register_schema("invoices", Schema(avro("Invoice", "total"), "AVRO"))
    assert properties(registry, "invoices") == {"owner": "billing"}


def test_metadata_is_kept_and_a_next_version_without_it_inherits_it(registry: SchemaRegistry):
    first = registry.register_schema_full_response(
        "shipments", with_meta(avro("Shipment", "a"), {"steward": "logistics"})
    )
    assert properties(registry, "shipments", 1) == {"steward": "logistics"}
    assert registry.get_schema(int(first.schema_id or 0)).metadata is not None
    registry.register_schema("shipments", Schema(avro("Shipment", "a", "b", defaults=True), "AVRO"))
    assert properties(registry, "shipments", 2) == {"steward": "logistics"}
    # the first schema again, without metadata: it inherits the latest's, so it is version 1
    again = registry.register_schema_full_response(
        "shipments", Schema(avro("Shipment", "a"), "AVRO")
    )
    assert again.version == 1
    # a lookup without metadata finds the content whatever its metadata
    found = registry.lookup_schema("shipments", Schema(avro("Shipment", "a"), "AVRO"))
    assert found.version == 1


def test_the_same_content_with_other_metadata_is_another_schema(registry: SchemaRegistry):
    registry.set_compatibility("tickets", "NONE")
    one = registry.register_schema("tickets", with_meta(avro("Ticket", "a"), {"tier": "1"}))
    two = registry.register_schema("tickets", with_meta(avro("Ticket", "a"), {"tier": "2"}))
    assert one != two
    assert registry.get_versions("tickets") == [1, 2]


def test_default_and_override_metadata_wrap_the_registered_one(registry: SchemaRegistry):
    registry.update_config(
        "audits",
        "NONE",
        {
            "defaultMetadata": {"properties": {"region": "eu", "tier": "low"}},
            "overrideMetadata": {"properties": {"tier": "high"}, "sensitive": ["ssn"]},
        },
    )
    registry.register_schema(
        "audits", with_meta(avro("Audit", "a"), {"tier": "mid", "team": "risk"}, sensitive=["pin"])
    )
    metadata = registry.get_version("audits", 1).schema.metadata
    assert metadata is not None
    assert metadata.to_dict()["properties"] == {"region": "eu", "team": "risk", "tier": "high"}
    assert sorted(metadata.to_dict()["sensitive"]) == ["pin", "ssn"]


def test_the_version_hint_is_not_kept(registry: SchemaRegistry):
    hinted = with_meta(avro("Hint", "a"), {"confluent:version": "7", "owner": "me"})
    assert registry.register_schema_full_response("hints", hinted).version == 1
    assert properties(registry, "hints") == {"owner": "me"}


def test_reserved_fields_are_enforced_with_validate_fields(registry: SchemaRegistry):
    reserving = with_meta(avro("Card", "number"), {"confluent:reserved": "cvv, pin"})
    registry.update_config("cards", "NONE", {"validateFields": True})
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema(
            "cards", with_meta(avro("Card", "pin"), {"confluent:reserved": "pin"})
        )
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert "conflicts with the reserved field pin" in e.value.error_message
    registry.register_schema("cards", reserving)
    dropped = with_meta(avro("Card", "number", "holder"), {"confluent:reserved": "cvv"})
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("cards", dropped)
    assert "reserved field pin removed" in e.value.error_message
    # without metadata, the next version keeps reserving what the last one did
    registry.register_schema("cards", Schema(avro("Card", "number", "expiry"), "AVRO"))


def test_reserved_fields_are_not_enforced_by_default(registry: SchemaRegistry):
    clash = with_meta(avro("Loose", "pin"), {"confluent:reserved": "pin"})
    assert registry.register_schema_full_response("loose", clash).version == 1


@pytest.mark.parametrize(
    ("schema_type", "text"),
    [
        ("JSON", '{"type": "object", "properties": {"pin": {"type": "string"}}}'),
        ("PROTOBUF", 'syntax = "proto3";\nmessage Card {\n  string pin = 1;\n}\n'),
    ],
)
def test_reserved_fields_of_json_schema_and_protobuf(
    registry: SchemaRegistry, schema_type: str, text: str
):
    registry.update_config("typed", "NONE", {"validateFields": True})
    meta = Metadata.from_dict({"properties": {"confluent:reserved": "pin"}})
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("typed", Schema(text, schema_type, [], metadata=meta))
    assert "conflicts with the reserved field pin" in e.value.error_message


def test_a_compatibility_group_checks_only_versions_of_the_same_group(registry: SchemaRegistry):
    registry.update_config("fleet", "BACKWARD", {"compatibilityGroup": "generation"})
    registry.register_schema("fleet", with_meta(avro("Truck", "plate"), {"generation": "1"}))
    breaking = avro("Truck", "vin")
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("fleet", with_meta(breaking, {"generation": "1"}))
    assert e.value.error_code == 409
    assert registry.compatibility_problems("fleet", with_meta(breaking, {"generation": "1"}))
    assert not registry.compatibility_problems("fleet", with_meta(breaking, {"generation": "2"}))
    assert (
        registry.register_schema_full_response(
            "fleet", with_meta(breaking, {"generation": "2"})
        ).version
        == 2
    )


def test_an_alias_reads_and_writes_the_subject_it_names(registry: SchemaRegistry):
    registry.register_schema("ledger", Schema(avro("Entry", "a"), "AVRO"))
    registry.update_config("books", None, {"alias": "ledger"})
    added = registry.register_schema_full_response(
        "books", Schema(avro("Entry", "a", "b", defaults=True), "AVRO")
    )
    assert (added.subject, added.version) == ("ledger", 2)
    assert registry.get_versions("books") == [1, 2]
    assert registry.get_version("books", 1).subject == "ledger"
    assert registry.lookup_schema("books", Schema(avro("Entry", "a"), "AVRO")).version == 1
    assert not registry.compatibility_problems(
        "books", Schema(avro("Entry", "a", "b", "c", defaults=True), "AVRO")
    )
    # an alias of an alias is not followed
    registry.update_config("shelf", None, {"alias": "books"})
    with pytest.raises(SchemaRegistryError) as e:
        registry.get_versions("shelf")
    assert e.value.error_code == 40401


def test_put_config_answers_and_get_config_returns_the_fields(app_server: InProcessServer):
    u = app_server.url
    body = {"compatibility": "FORWARD", "compatibilityGroup": "major", "validateFields": False}
    status, _, answer = http("PUT", f"{u}/config/vans", body)
    assert status == 200
    assert answer == {
        "compatibility": "FORWARD",
        "compatibilityGroup": "major",
        "validateFields": False,
    }
    assert http("GET", f"{u}/config/vans")[2] == {
        "compatibilityLevel": "FORWARD",
        "compatibilityGroup": "major",
        "validateFields": False,
    }
    for bad in ({"alias": 3}, {"validateFields": "yes"}, {"defaultMetadata": {"properties": 1}}):
        status, _, answer = http("PUT", f"{u}/config/vans", bad)
        assert (status, answer["error_code"]) == (422, 422), bad
    status, _, answer = http("PUT", f"{u}/config/vans", {"overrideRuleSet": {"domainRules": []}})
    assert status == 422 and "rule sets" in answer["message"]


def test_registered_metadata_is_served(app_server: InProcessServer):
    u = app_server.url
    body = {"schema": avro("Van", "a"), "metadata": {"properties": {"depot": "north"}}}
    status, _, registered = http("POST", f"{u}/subjects/vans/versions", body)
    assert status == 200
    assert registered["metadata"] == {"properties": {"depot": "north"}}
    for path in ("/subjects/vans/versions/1", f"/schemas/ids/{registered['id']}"):
        assert http("GET", u + path)[2]["metadata"] == {"properties": {"depot": "north"}}, path


def test_an_imported_id_is_free_once_no_version_uses_it(registry: SchemaRegistry):
    registry.update_mode(None, "IMPORT")
    text = Schema('{"type": "string"}', "AVRO")
    registry.register_schema_full_response("old", text, schema_id=70, version=1)
    registry.delete_subject("old")
    registry.delete_subject("old", permanent=True)
    moved = registry.register_schema_full_response("new", text, schema_id=71, version=1)
    assert moved.schema_id == 71
    # an imported version that exists is answered as it is
    other = Schema('{"type": "int"}', "AVRO")
    kept = registry.register_schema_full_response("new", other, schema_id=72, version=1)
    assert (kept.schema_id, kept.version) == (71, 1)
    registry.update_mode(None, "READWRITE")


def test_a_limit_of_zero_is_no_limit(registry: SchemaRegistry):
    for name in ("lim-a", "lim-b"):
        registry.register_schema(name, Schema('{"type": "string"}', "AVRO"))
    assert registry.get_subjects("lim-", limit=0) == ["lim-a", "lim-b"]
