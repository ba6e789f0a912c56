"""The registry contract, the same for memory://, sqlite:/// and http:// (our server)."""

from __future__ import annotations

import inspect
import pickle

import orjson
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from cdc_connectors.registry import (
    Schema,
    SchemaReference,
    SchemaRegistry,
    SchemaRegistryError,
    open_registry,
    registry_for,
)


def avro(*fields: tuple[str, object], name: str = "Order", **extra: object) -> Schema:
    spec = [
        {"name": n, "type": t, **({"default": None} if t == ["null", "string"] else {})}
        for n, t in fields
    ]
    return Schema(
        orjson.dumps({"type": "record", "name": name, "fields": spec, **extra}).decode(), "AVRO"
    )


V1 = avro(("id", "long"))
V2 = avro(("id", "long"), ("note", ["null", "string"]))  # adds an optional field
BREAKING = avro(("id", "string"))

PROTO_V1 = Schema(
    'syntax = "proto3";\npackage shop;\nmessage Order {\n  int64 id = 1;\n  string note = 2;\n}\n',
    "PROTOBUF",
)
PROTO_V2 = Schema(
    'syntax = "proto3";\npackage shop;\nmessage Order {\n  int64 id = 1;\n  string note = 2;\n'
    "  repeated string tags = 3;\n}\n",
    "PROTOBUF",
)
PROTO_RETYPED = Schema(PROTO_V1.schema_str.replace("int64 id = 1", "string id = 1"), "PROTOBUF")


def code(excinfo: pytest.ExceptionInfo[SchemaRegistryError]) -> int:
    return int(excinfo.value.error_code)


def test_register_gives_global_ids_and_per_subject_versions(registry: SchemaRegistry):
    assert registry.register_schema("orders-value", V1) == 1  # the id, as confluent-kafka's
    first = registry.register_schema_full_response("orders-value", V1)
    assert (first.schema_id, first.version, first.subject) == (1, 1, "orders-value")
    again = registry.register_schema_full_response("orders-value", V1)
    assert (again.schema_id, again.version) == (1, 1)  # idempotent
    second = registry.register_schema_full_response("orders-value", V2)
    assert (second.schema_id, second.version) == (2, 2)
    elsewhere = registry.register_schema_full_response("archive-value", V1)
    assert (elsewhere.schema_id, elsewhere.version) == (1, 1)  # same schema, same id
    assert registry.get_subjects() == ["archive-value", "orders-value"]
    assert registry.get_versions("orders-value") == [1, 2]
    pairs = {(v.subject, v.version) for v in registry.get_schema_versions(1)}
    assert pairs == {("orders-value", 1), ("archive-value", 1)}


def test_whitespace_does_not_make_a_new_schema(registry: SchemaRegistry):
    first = registry.register_schema("s", V1)
    spaced = Schema(orjson.dumps(orjson.loads(V1.schema_str), option=orjson.OPT_INDENT_2).decode())
    assert registry.register_schema("s", spaced) == first
    assert registry.lookup_schema("s", spaced).version == 1


def test_protobuf_schemas_keep_their_type(registry: SchemaRegistry):
    registered = registry.register_schema_full_response("p", PROTO_V1)
    assert registered.version == 1
    assert registry.get_schema(registered.schema_id).schema_type == "PROTOBUF"


def test_get_by_id_guid_version_and_latest(registry: SchemaRegistry):
    registry.register_schema("s", V1)
    second = registry.register_schema_full_response("s", V2)
    assert second.guid
    assert registry.get_schema_by_guid(second.guid).schema_str == V2.schema_str
    with pytest.raises(SchemaRegistryError) as e:
        registry.get_schema_by_guid("00000000-0000-0000-0000-000000000000")
    assert code(e) == 40403
    assert orjson.loads(registry.get_schema(2).schema_str) == orjson.loads(V2.schema_str)
    assert registry.get_version("s", 1).schema_id == 1
    latest = registry.get_latest_version("s")
    assert (latest.version, latest.schema_id) == (2, 2)
    assert registry.get_version("s", "latest").version == 2


def test_unknown_subject_version_and_id_have_confluent_codes(registry: SchemaRegistry):
    registry.register_schema("s", V1)
    with pytest.raises(SchemaRegistryError) as e:
        registry.get_version("nope", 1)
    assert code(e) == 40401
    with pytest.raises(SchemaRegistryError) as e:
        registry.get_version("s", 7)
    assert code(e) == 40402
    with pytest.raises(SchemaRegistryError) as e:
        registry.get_schema(999)
    assert code(e) == 40403
    with pytest.raises(SchemaRegistryError) as e:
        registry.get_versions("nope")
    assert code(e) == 40401
    with pytest.raises(SchemaRegistryError) as e:
        registry.lookup_schema("s", V2)
    assert code(e) == 40403
    with pytest.raises(SchemaRegistryError) as e:
        registry.lookup_schema("nope", V1)
    assert code(e) == 40401


def test_backward_is_the_default_and_refuses_an_incompatible_change(registry: SchemaRegistry):
    assert registry.get_compatibility() == "BACKWARD"
    registry.register_schema("s", V1)
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("s", BREAKING)
    assert (e.value.http_status_code, code(e)) == (409, 409)
    assert "string" in e.value.error_message and "long" in e.value.error_message
    assert registry.get_versions("s") == [1]  # nothing half-registered
    assert registry.register_schema_full_response("s", V2).version == 2
    assert registry.test_compatibility("s", V2) is True
    assert registry.test_compatibility("s", BREAKING) is False
    assert registry.test_compatibility_all_versions("s", BREAKING) is False
    assert registry.compatibility_problems("s", BREAKING, version=1)


def test_levels_none_forward_full_and_transitive(registry: SchemaRegistry):
    registry.set_compatibility("fwd", "FORWARD")
    registry.register_schema("fwd", V2)
    # dropping the optional field: old readers (V2) fill the default -> FORWARD ok
    assert registry.register_schema_full_response("fwd", V1).version == 2

    registry.set_compatibility("full", "FULL")
    registry.register_schema("full", V1)
    with pytest.raises(SchemaRegistryError) as e:  # a required new field breaks BACKWARD
        registry.register_schema("full", avro(("id", "long"), ("qty", "int")))
    assert code(e) == 409
    assert registry.register_schema_full_response("full", V2).version == 2

    registry.set_compatibility("none", "NONE")
    registry.register_schema("none", V1)
    assert registry.register_schema_full_response("none", BREAKING).version == 2

    # V1 -> V2 -> V3 where V3 reads V2 but not V1: only the transitive level refuses it
    with_default = Schema(
        orjson.dumps(
            {
                "type": "record",
                "name": "Order",
                "fields": [
                    {"name": "id", "type": "long"},
                    {"name": "note", "type": "string", "default": "-"},
                ],
            }
        ).decode()
    )
    v3 = avro(("id", "long"), ("note", "string"))  # note required, no default
    for subject in ("plain", "trans"):
        if subject == "trans":
            registry.set_compatibility(subject, "BACKWARD_TRANSITIVE")
        registry.register_schema(subject, V1)
        registry.register_schema(subject, with_default)
    assert registry.register_schema_full_response("plain", v3).version == 3
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("trans", v3)
    assert code(e) == 409


def test_compatibility_config_global_and_per_subject(registry: SchemaRegistry):
    with pytest.raises(SchemaRegistryError) as e:
        registry.get_compatibility("s")
    assert code(e) == 40408
    assert registry.get_compatibility("s", default_to_global=True) == "BACKWARD"
    assert registry.set_compatibility("s", "full") == "FULL"
    assert registry.get_compatibility("s") == "FULL"
    assert registry.set_compatibility(level="NONE") == "NONE"
    assert registry.get_compatibility() == "NONE"
    assert registry.get_config().compatibility_level.value == "NONE"
    assert registry.delete_config("s").compatibility_level.value == "FULL"
    assert registry.get_compatibility("s", default_to_global=True) == "NONE"
    with pytest.raises(SchemaRegistryError) as e:
        registry.delete_config("s")  # nothing set any more: Confluent answers 40401
    assert code(e) == 40401
    assert registry.delete_config().compatibility_level.value == "NONE"  # resets the global
    assert registry.get_compatibility() == "BACKWARD"
    with pytest.raises(SchemaRegistryError) as e:
        registry.set_compatibility(level="SIDEWAYS")
    assert code(e) == 42203


def test_soft_and_permanent_deletes(registry: SchemaRegistry):
    registry.register_schema("s", V1)
    registry.register_schema("s", V2)
    with pytest.raises(SchemaRegistryError) as e:
        registry.delete_version("s", 1, permanent=True)
    assert code(e) == 40407  # soft delete first
    assert registry.delete_version("s", 1) == 1
    assert registry.get_versions("s") == [2]
    assert registry.get_versions("s", deleted=True) == [1, 2]
    with pytest.raises(SchemaRegistryError) as e:
        registry.get_version("s", 1)
    assert code(e) == 40402
    assert registry.get_version("s", 1, deleted=True).schema_id == 1
    with pytest.raises(SchemaRegistryError) as e:
        registry.delete_version("s", 1)
    assert code(e) == 40406
    assert registry.delete_version("s", 1, permanent=True) == 1

    with pytest.raises(SchemaRegistryError) as e:
        registry.delete_subject("s", permanent=True)
    assert code(e) == 40405
    assert registry.delete_subject("s") == [2]
    assert registry.get_subjects() == []
    assert registry.get_subjects(deleted=True) == ["s"]
    with pytest.raises(SchemaRegistryError) as e:
        registry.delete_subject("s")
    assert code(e) == 40404
    assert registry.delete_subject("s", permanent=True) == [2]
    assert registry.get_subjects(deleted=True) == []
    # no version uses id 2 any more: it is no schema (a client that read it may cache it)
    fresh = open_registry(registry.url)
    with pytest.raises(SchemaRegistryError) as e:
        fresh.get_schema(2)
    assert code(e) == 40403
    fresh.close()
    with pytest.raises(SchemaRegistryError) as e:
        registry.delete_subject("never")
    assert code(e) == 40401


def test_versions_are_not_reused_after_a_soft_delete(registry: SchemaRegistry):
    registry.register_schema("s", V1)
    registry.delete_subject("s")
    again = registry.register_schema_full_response("s", V1)
    assert (again.schema_id, again.version) == (1, 2)


def test_invalid_schemas_are_42201_and_leave_nothing_behind(registry: SchemaRegistry):
    bad = [
        Schema('{"type": "record", "name": "X"}', "AVRO"),  # no fields
        Schema("{not json", "AVRO"),
        Schema('syntax = "proto3"; message {', "PROTOBUF"),
        Schema("[1, 2]", "JSON"),
    ]
    for schema in bad:
        with pytest.raises(SchemaRegistryError) as e:
            registry.register_schema("bad", schema)
        assert code(e) == 42201, schema
    assert registry.get_subjects() == []
    assert registry.register_schema("good", V1) == 1  # no id was burnt


def test_avro_references_resolve_named_types_from_other_subjects(registry: SchemaRegistry):
    address = avro(("street", "string"), name="Address", namespace="shop")
    registry.register_schema("shop.Address", address)
    customer = Schema(
        orjson.dumps(
            {
                "type": "record",
                "name": "Customer",
                "namespace": "shop",
                "fields": [{"name": "home", "type": "shop.Address"}],
            }
        ).decode(),
        "AVRO",
        [SchemaReference("shop.Address", "shop.Address", 1)],
    )
    registered = registry.register_schema_full_response("customers-value", customer)
    fetched = registry.get_schema(registered.schema_id)
    assert [(r.name, r.subject, r.version) for r in fetched.references] == [
        ("shop.Address", "shop.Address", 1)
    ]
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("other", Schema(customer.schema_str, "AVRO"))  # unresolved
    assert code(e) == 42201


def test_protobuf_imports_resolve_through_references(registry: SchemaRegistry):
    registry.register_schema(
        "money.proto",
        Schema(
            'syntax = "proto3";\npackage shop;\nmessage Money { int64 cents = 1; }\n', "PROTOBUF"
        ),
    )
    order = Schema(
        'syntax = "proto3";\npackage shop;\nimport "money.proto";\n'
        "message Order { int64 id = 1; shop.Money total = 2; }\n",
        "PROTOBUF",
        [SchemaReference("money.proto", "money.proto", 1)],
    )
    assert registry.register_schema_full_response("orders-value", order).version == 1


def test_protobuf_rules_under_backward(registry: SchemaRegistry):
    registry.register_schema("p", PROTO_V1)
    assert registry.register_schema_full_response("p", PROTO_V2).version == 2  # a new field
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("p", PROTO_RETYPED)
    assert code(e) == 409
    assert "int64" in e.value.error_message and "string" in e.value.error_message


def test_json_schemas_are_stored(registry: SchemaRegistry):
    schema = Schema('{"type": "object", "properties": {"id": {"type": "integer"}}}', "JSON")
    schema_id = registry.register_schema("j", schema)
    assert registry.get_schema(schema_id).schema_type == "JSON"
    assert set(registry.get_schema_types()) == {"AVRO", "PROTOBUF", "JSON"}


def test_registries_refuse_pickling_naming_the_url_without_its_password(tmp_path):
    for url in ("memory://pickle", f"sqlite:///{tmp_path}/r.db"):
        with pytest.raises(TypeError, match="cannot be pickled: pass the registry URL"):
            pickle.dumps(open_registry(url))
    remote = open_registry("http://ada:s3cret-pw@127.0.0.1:1")
    with pytest.raises(TypeError) as e:
        pickle.dumps(remote)
    assert "s3cret-pw" not in str(e.value) and "127.0.0.1:1" in str(e.value)
    assert "s3cret-pw" not in repr(remote)


def test_registry_for_gives_one_client_per_url(tmp_path):
    # one store opened once per process: what one caller registers, the next sees by id
    # from the same cache; another URL is another store
    first_url, second_url = f"sqlite:///{tmp_path}/a.db", f"sqlite:///{tmp_path}/b.db"
    schema_id = registry_for(first_url).register_schema("s", V1)
    registry_for(first_url).get_schema(schema_id)
    assert schema_id in registry_for(first_url)._by_id  # type: ignore[attr-defined]
    with pytest.raises(SchemaRegistryError):
        registry_for(second_url).get_schema(schema_id)
    assert registry_for(second_url).url == second_url


@pytest.mark.parametrize("url", ["memory://", "sqlite:///{tmp}/r.db", "http://127.0.0.1:1"])
def test_every_registry_takes_confluent_kafkas_client_signatures(url: str, tmp_path):
    """Every method of confluent-kafka's client takes the same arguments, in the same order."""
    registry = open_registry(url.format(tmp=tmp_path))
    assert isinstance(registry, SchemaRegistryClient)
    for name, method in inspect.getmembers(SchemaRegistryClient, inspect.isfunction):
        if name.startswith("_") or name == "new_client":
            continue
        theirs = inspect.signature(method).parameters
        ours = inspect.signature(getattr(type(registry), name)).parameters
        positional = [p for p in ours.values() if p.kind != p.KEYWORD_ONLY]
        assert [p.name for p in positional] == list(theirs), name
        for param in positional:
            assert param.default == theirs[param.name].default, (name, param.name)
    registry.close()


def test_sqlite_store_that_is_not_a_database_is_a_clear_error(tmp_path):
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(ValueError, match=r"dir\.db is a directory"):
        open_registry(f"sqlite:///{tmp_path}/dir.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is no database, just some text that is long enough" * 40)
    with pytest.raises(ValueError, match=r"junk\.db is not a .*SQLite database"):
        open_registry(f"sqlite:///{junk}")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match=r"cannot create its directory .*file/sub") as e:
        open_registry(f"sqlite:///{blocker}/sub/r.db")
    assert "\n" not in str(e.value)


def test_open_registry_names_unknown_schemes():
    with pytest.raises(ValueError, match="no registry for URL scheme 'ftp'"):
        open_registry("ftp://example")
    with pytest.raises(ValueError, match="has no scheme"):
        open_registry("registry.db")


def test_sqlite_urls_read_as_sqlalchemy_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    relative = open_registry("sqlite:///.cdc/registry.db")
    relative.register_schema("s", V1)
    relative.close()
    assert (tmp_path / ".cdc" / "registry.db").is_file()
    absolute = open_registry(f"sqlite:///{tmp_path}/abs/registry.db")  # four slashes: absolute
    absolute.register_schema("s", V1)
    absolute.close()
    assert (tmp_path / "abs" / "registry.db").is_file()
    with pytest.raises(ValueError, match="has a host"):
        open_registry("sqlite://host/registry.db")
    # the parts a URL parser would read otherwise: a store's name cut or another file named
    with pytest.raises(ValueError, match="has no // after its scheme"):
        open_registry("sqlite:registry.db")
    with pytest.raises(ValueError, match="'#' would end the file's name there"):
        open_registry("sqlite:///my#store.db")
    escaped = open_registry("SQLITE:///my%23store.db")
    escaped.close()
    assert (tmp_path / "my#store.db").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".cdc", "abs", "my#store.db"]


def test_bad_http_settings_name_the_setting_and_hide_the_password():
    with pytest.raises(ValueError, match="timeout must be a number, not 'abc'") as bad_number:
        open_registry("http://ada:s3cret@127.0.0.1:1?timeout=abc")
    with pytest.raises(ValueError, match=r"Unrecognized properties: bogus\.key") as unknown:
        open_registry("http://ada:s3cret@127.0.0.1:1?bogus.key=1")
    for error in (bad_number, unknown):
        assert "s3cret" not in str(error.value)
        assert "http://ada:***@127.0.0.1:1" in str(error.value)
