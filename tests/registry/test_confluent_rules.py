"""Where Confluent 8 has a rule, ours is the same: modes, config, listings and error codes."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry.common.schema_registry_client import ConfigCompatibilityLevel

from cdc_connectors.registry import SchemaRegistry, SchemaRegistryError, open_registry
from cdc_connectors.registry.base import ServerConfig

from .conftest import InProcessServer, http
from .test_contract import BREAKING, V1, V2, avro


def _code(call) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(SchemaRegistryError) as e:
        call()
    return int(e.value.error_code)


def test_readonly_mode_refuses_every_write(registry: SchemaRegistry):
    registry.register_schema("s", V1)
    assert registry.get_global_mode() == "READWRITE"
    assert _code(lambda: registry.get_mode("s")) == 40409  # no subject-level mode
    assert registry.update_mode("s", "READONLY") == "READONLY"
    assert registry.get_mode("s") == "READONLY"
    for write in (
        lambda: registry.register_schema("s", V2),
        lambda: registry.delete_version("s", 1),
        lambda: registry.delete_subject("s"),
    ):
        assert _code(write) == 42205
    assert registry.register_schema("other", V1) == 1  # only the subject is read-only
    assert registry.get_versions("s") == [1]
    assert registry.delete_mode("s") == "READONLY"
    assert _code(lambda: registry.delete_mode("s")) == 40401
    registry.update_global_mode("READONLY_OVERRIDE")
    assert registry.get_mode("s", default_to_global=True) == "READONLY_OVERRIDE"
    assert _code(lambda: registry.register_schema("s", V2)) == 42205
    assert registry.delete_mode(None) == "READONLY_OVERRIDE"
    assert registry.register_schema_full_response("s", V2).version == 2
    assert _code(lambda: registry.update_mode("s", "SIDEWAYS")) == 42204


def test_readonly_mode_refuses_config_changes_in_its_scope(registry: SchemaRegistry):
    registry.register_schema("s", V1)
    registry.set_compatibility("s", "FULL")
    registry.update_mode("s", "READONLY")
    for change in (
        lambda: registry.set_compatibility("s", "NONE"),
        lambda: registry.set_config("s", ServerConfig(ConfigCompatibilityLevel.NONE)),
        lambda: registry.delete_config("s"),
    ):
        assert _code(change) == 42205
    assert registry.get_compatibility("s") == "FULL"
    assert _code(lambda: registry.delete_config("t")) == 40401  # nothing to delete comes first
    assert registry.set_compatibility(None, "FORWARD") == "FORWARD"  # the global scope is not
    registry.delete_mode("s")

    registry.update_global_mode("READONLY_OVERRIDE")
    for change in (
        lambda: registry.set_compatibility(None, "NONE"),
        lambda: registry.set_compatibility("t", "NONE"),
        lambda: registry.delete_config(None),
        lambda: registry.delete_config("s"),
    ):
        assert _code(change) == 42205
    assert registry.get_compatibility() == "FORWARD"
    assert registry.get_compatibility("s") == "FULL"
    registry.delete_mode(None)
    assert registry.delete_config("s").compatibility_level.value == "FULL"  # type: ignore[union-attr]


def test_readonly_mode_refuses_config_changes_over_http(app_server: InProcessServer):
    u = app_server.url
    http("POST", f"{u}/subjects/s/versions", {"schema": V1.schema_str})
    assert http("PUT", f"{u}/config/s", {"compatibility": "FULL"})[0] == 200
    assert http("PUT", f"{u}/mode", {"mode": "READONLY"})[0] == 200
    for method, path, body in (
        ("PUT", "/config", {"compatibility": "NONE"}),
        ("PUT", "/config", {}),
        ("PUT", "/config/s", {"compatibility": "NONE"}),
        ("DELETE", "/config/s", None),
        ("DELETE", "/config", None),
    ):
        status, _, answer = http(method, u + path, body)
        assert (status, answer["error_code"]) == (422, 42205), (method, path)
    assert http("GET", f"{u}/config/s")[2] == {"compatibilityLevel": "FULL"}
    assert http("GET", f"{u}/config")[2] == {"compatibilityLevel": "BACKWARD"}
    assert http("DELETE", f"{u}/mode")[0] == 200
    assert http("DELETE", f"{u}/config/s")[2] == {"compatibilityLevel": "FULL"}


def test_import_mode_takes_ids_and_versions_and_only_then(registry: SchemaRegistry):
    # an explicit id outside IMPORT mode is refused
    assert _code(lambda: registry.register_schema_full_response("s", V1, schema_id=40)) == 42205
    registry.register_schema("live", V1)
    # entering IMPORT with live subjects needs force
    assert _code(lambda: registry.update_global_mode("IMPORT")) == 42205
    assert registry.update_mode("s", "IMPORT") == "IMPORT"  # "s" itself is empty
    imported = registry.register_schema_full_response("s", V2, schema_id=40, version=7)
    assert (imported.schema_id, imported.version) == (40, 7)
    assert registry.get_schema(40).schema_str == V2.schema_str
    # the same schema and id again is the same registration; another schema on the id is not
    again = registry.register_schema_full_response("s", V2, schema_id=40, version=7)
    assert (again.schema_id, again.version) == (40, 7)
    other_schema = lambda: registry.register_schema_full_response("s", BREAKING, schema_id=40)  # noqa: E731
    assert _code(other_schema) == 42205
    # no compatibility check while importing; no id is refused in IMPORT mode
    assert registry.register_schema_full_response("s", BREAKING, schema_id=41).version == 8
    assert _code(lambda: registry.register_schema("s", V1)) == 42205
    registry.update_mode("s", "READWRITE")
    assert registry.register_schema_full_response("s", BREAKING).version == 8
    # ids handed out later do not collide with imported ones
    assert registry.register_schema("new", avro(("id", "long"), name="Fresh")) > 41


def test_entering_import_mode_removes_soft_deleted_versions(registry: SchemaRegistry):
    registry.register_schema("s", V1)
    registry.delete_subject("s")
    assert registry.update_mode("s", "IMPORT") == "IMPORT"
    assert registry.get_subjects(deleted=True) == []
    assert registry.update_mode("s", "READWRITE", force=True) == "READWRITE"
    registry.register_schema("t", V1)
    assert registry.update_global_mode("IMPORT", force=True) == "IMPORT"  # force: kept
    assert registry.get_subjects() == ["t"]


def test_compatibility_checks_against_missing_subjects_and_versions(registry: SchemaRegistry):
    assert registry.test_compatibility("nobody", V1) is True  # latest of nothing
    assert registry.test_compatibility_all_versions("nobody", V1) is True
    assert _code(lambda: registry.test_compatibility("nobody", V1, version=1)) == 40402
    registry.register_schema("s", V1)
    assert _code(lambda: registry.test_compatibility("s", V1, version=2)) == 40402


def test_the_only_version_soft_deleted_makes_the_subject_unknown(registry: SchemaRegistry):
    registry.register_schema("s", V1)
    registry.delete_version("s", 1)
    assert _code(lambda: registry.get_version("s", 1)) == 40401
    assert _code(lambda: registry.get_latest_version("s")) == 40401
    assert _code(lambda: registry.get_versions("s")) == 40401
    assert registry.get_version("s", 1, deleted=True).version == 1


def test_listings_take_prefix_deleted_and_paging(registry: SchemaRegistry):
    for subject in ("a-1", "a-2", "b-1"):
        registry.register_schema(subject, V1)
    registry.register_schema("a-2", V2)
    registry.delete_subject("b-1")
    registry.delete_version("a-2", 1)
    assert registry.get_subjects("a-") == ["a-1", "a-2"]
    assert registry.get_subjects(deleted=True) == ["a-1", "a-2", "b-1"]
    assert registry.get_subjects(deleted_only=True) == ["a-2", "b-1"]
    assert registry.get_subjects(offset=1, limit=1) == ["a-2"]
    assert registry.get_versions("a-2") == [2]
    assert registry.get_versions("a-2", deleted=True) == [1, 2]
    assert registry.get_versions("a-2", deleted_only=True) == [1]
    assert registry.get_versions("a-2", deleted=True, offset=1) == [2]
    assert [(v.subject, v.version) for v in registry.get_schema_versions(1)] == [("a-1", 1)]
    assert len(registry.get_schema_versions(1, deleted=True)) == 3
    assert registry.get_subjects_by_schema_id(1, deleted=True, limit=2) == ["a-1", "a-2"]
    everything = registry.get_schemas()
    assert [(s.subject, s.version) for s in everything] == [("a-1", 1), ("a-2", 2)]
    latest = registry.get_schemas("a-", deleted=True, latest_only=True)
    assert [(s.subject, s.version) for s in latest] == [("a-1", 1), ("a-2", 2)]
    assert len(registry.get_schemas(deleted=True, offset=1, limit=2)) == 2
    assert registry.get_max_schema_id() == 2


def test_config_endpoints_answer_as_confluents(app_server: InProcessServer):
    u = app_server.url
    assert http("PUT", f"{u}/config", {})[2] == {"compatibility": "BACKWARD"}
    assert http("PUT", f"{u}/config", {"compatibility": "full"})[2] == {"compatibility": "FULL"}
    assert http("PUT", f"{u}/config", {})[2] == {"compatibility": "FULL"}
    assert http("DELETE", f"{u}/config")[2] == {"compatibilityLevel": "FULL"}
    assert http("GET", f"{u}/config")[2] == {"compatibilityLevel": "BACKWARD"}
    status, _, body = http("DELETE", f"{u}/config/nobody")
    assert (status, body["error_code"]) == (404, 40401)
    http("PUT", f"{u}/config/s", {"compatibility": "NONE"})
    assert http("GET", f"{u}/config/s?defaultToGlobal=true")[2] == {"compatibilityLevel": "NONE"}
    assert http("DELETE", f"{u}/config/s")[2] == {"compatibilityLevel": "NONE"}


def test_mode_endpoints_answer_as_confluents(app_server: InProcessServer):
    u = app_server.url
    assert http("GET", f"{u}/mode")[2] == {"mode": "READWRITE"}
    http("POST", f"{u}/subjects/s/versions", {"schema": V1.schema_str})
    status, _, body = http("PUT", f"{u}/mode", {"mode": "IMPORT"})
    assert (status, body["error_code"]) == (422, 42205)
    assert http("PUT", f"{u}/mode?force=true", {"mode": "IMPORT"})[2] == {"mode": "IMPORT"}
    registered = http("POST", f"{u}/subjects/t/versions", {"schema": V2.schema_str, "id": 9})
    assert registered[2]["id"] == 9
    assert http("GET", f"{u}/mode/t?defaultToGlobal=true")[2] == {"mode": "IMPORT"}
    status, _, body = http("GET", f"{u}/mode/t")
    assert (status, body["error_code"]) == (404, 40409)
    assert http("PUT", f"{u}/mode/t", {"mode": "READONLY"})[2] == {"mode": "READONLY"}
    assert http("DELETE", f"{u}/mode/t")[2] == {"mode": "READONLY"}
    assert http("DELETE", f"{u}/mode")[2] == {"mode": "IMPORT"}
    assert http("GET", f"{u}/mode")[2] == {"mode": "READWRITE"}


def test_schema_listing_metadata_and_response_shapes(app_server: InProcessServer):
    u = app_server.url
    http("POST", f"{u}/subjects/a/versions", {"schema": V1.schema_str})
    http("POST", f"{u}/subjects/a/versions", {"schema": V2.schema_str})
    http("POST", f"{u}/subjects/b/versions", {"schema": V1.schema_str})
    listed = http("GET", f"{u}/schemas?subjectPrefix=a&latestOnly=true")[2]
    assert [(s["subject"], s["version"], s["id"]) for s in listed] == [("a", 2, 2)]
    assert listed[0]["schemaType"] == "AVRO"  # for Avro too, as Confluent 8
    assert len(http("GET", f"{u}/schemas?offset=1&limit=1")[2]) == 1
    by_id = http("GET", f"{u}/schemas/ids/1?fetchMaxId=true")[2]
    assert by_id["schemaType"] == "AVRO" and by_id["maxId"] == 2
    assert http("GET", f"{u}/subjects/a/versions/1")[2]["schemaType"] == "AVRO"
    assert http("GET", f"{u}/subjects/a/versions?deletedOnly=true")[2] == []
    assert http("GET", f"{u}/schemas/ids/1/subjects?limit=1")[2] == ["a"]
    assert http("GET", f"{u}/schemas/ids/1/versions?subject=b")[2] == [
        {"subject": "b", "version": 1}
    ]
    cluster = http("GET", f"{u}/v1/metadata/id")[2]
    assert cluster["scope"]["clusters"]["schema-registry-cluster"]
    version = http("GET", f"{u}/v1/metadata/version")[2]
    assert version["version"] and "commitId" in version


def test_compatibility_endpoint_follows_confluents_rules(app_server: InProcessServer):
    u = app_server.url
    body = {"schema": V1.schema_str}
    check = f"{u}/compatibility/subjects/nobody/versions"
    assert http("POST", f"{check}/latest", body)[2] == {"is_compatible": True}
    assert http("POST", check, body)[2] == {"is_compatible": True}
    status, _, answer = http("POST", f"{check}/1", body)
    assert (status, answer["error_code"]) == (404, 40402)
    # an invalid schema is 42201, or a reason among the messages when verbose
    broken = {"schema": "{nope"}
    assert http("POST", f"{check}/latest", broken)[2]["error_code"] == 42201
    verbose = http("POST", f"{check}/latest?verbose=true", broken)[2]
    assert verbose["is_compatible"] is False and verbose["messages"]


def test_an_id_no_version_uses_any_more_is_40403(app_server: InProcessServer):
    u = app_server.url
    first = http("POST", f"{u}/subjects/s/versions", {"schema": V1.schema_str})[2]
    http("POST", f"{u}/subjects/t/versions", {"schema": V1.schema_str})  # the same id
    guid = http("GET", f"{u}/schemas/ids/{first['id']}")[2]["guid"]
    for subject in ("s", "t"):
        http("DELETE", f"{u}/subjects/{subject}")
        # soft-deleted versions still use it
        assert http("GET", f"{u}/schemas/ids/{first['id']}")[0] == 200
        http("DELETE", f"{u}/subjects/{subject}?permanent=true")
    for path in ("", "/schema", "/versions", "/subjects"):
        status, _, body = http("GET", f"{u}/schemas/ids/{first['id']}{path}")
        assert (status, body["error_code"]) == (404, 40403), path
    status, _, body = http("GET", f"{u}/schemas/guids/{guid}")
    assert (status, body["error_code"]) == (404, 40403)
    # registered again, the schema keeps its id
    again = http("POST", f"{u}/subjects/s/versions", {"schema": V1.schema_str})[2]
    assert again["id"] == first["id"]
    assert http("GET", f"{u}/schemas/ids/{first['id']}")[0] == 200


def test_an_id_read_before_another_process_removed_it_may_stay_cached(tmp_path):
    url = f"sqlite:///{tmp_path}/registry.db"
    reader, writer = open_registry(url), open_registry(url)
    schema_id = writer.register_schema("s", V1)
    assert reader.get_schema(schema_id).schema_str == V1.schema_str
    assert writer.get_schema(schema_id).schema_str == V1.schema_str
    writer.delete_subject("s")
    writer.delete_subject("s", permanent=True)
    assert reader.get_schema(schema_id).schema_str == V1.schema_str  # as a client's cache
    assert _code(lambda: writer.get_schema(schema_id)) == 40403
    fresh = open_registry(url)
    assert _code(lambda: fresh.get_schema(schema_id)) == 40403
    for registry in (reader, writer, fresh):
        registry.close()


def test_a_json_schema_its_metaschema_refuses_is_42201(registry: SchemaRegistry):
    from cdc_connectors.registry import Schema

    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("j", Schema('{"type": 5}', "JSON"))
    assert e.value.error_code == 42201 and "/type" in e.value.error_message
    assert registry.get_subjects() == []
    assert registry.register_schema("j", Schema('{"type": "integer"}', "JSON")) == 1
