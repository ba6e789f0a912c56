"""Bad client input is a 4xx with Confluent's error code, over HTTP and from the store alike."""

from __future__ import annotations

import re
import urllib.parse

import orjson
import pytest

from cdc_connectors.registry import Schema, SchemaRegistry, SchemaRegistryError

from .conftest import InProcessServer, http
from .test_contract import V1, V2


def nested_avro(depth: int) -> str:
    """Records in records, ``depth`` deep (built as text: encoders stop far sooner)."""
    opening = "".join(
        f'{{"type": "record", "name": "L{level}", "fields": [{{"name": "next", "type": '
        for level in range(depth - 1)
    )
    innermost = f'{{"type": "record", "name": "L{depth - 1}", "fields": []}}'
    return opening + innermost + "}]}" * (depth - 1)


def nested_json_schema(depth: int) -> str:
    return '{"type": "object", "properties": {"a": ' * depth + '{"type": "string"}' + "}}" * depth


def test_ids_that_are_no_schema_id_are_40403(app_server: InProcessServer):
    u = app_server.url
    http("POST", f"{u}/subjects/s/versions", {"schema": V1.schema_str})
    for raw in ("99999999999999999999999", str(2**63), str(2**31), "-1", "1e3", "٣", "x"):
        path = urllib.parse.quote(raw)
        for suffix in ("", "/schema", "/versions", "/subjects"):
            status, _, body = http("GET", f"{u}/schemas/ids/{path}{suffix}")
            assert (status, body["error_code"]) == (404, 40403), (raw, suffix, body)


def test_store_answers_40403_for_ids_beyond_64_bits(registry: SchemaRegistry):
    for schema_id in (2**64, 2**63, -1):
        with pytest.raises(SchemaRegistryError) as e:
            registry.get_schema(schema_id)
        assert e.value.error_code == 40403


def test_nested_schemas_within_the_limit_are_stored_and_served(app_server: InProcessServer):
    u = app_server.url
    for subject, body in (
        ("avro", {"schema": nested_avro(20)}),
        ("json", {"schema": nested_json_schema(20), "schemaType": "JSON"}),
    ):
        status, _, answer = http("POST", f"{u}/subjects/{subject}/versions", body)
        assert status == 200, answer
        assert http("GET", f"{u}/schemas/ids/{answer['id']}")[0] == 200


@pytest.mark.parametrize("depth", [200, 600, 3000])
def test_deeply_nested_schemas_are_42201_with_a_reason(app_server: InProcessServer, depth: int):
    u = app_server.url
    for body in (
        {"schema": nested_avro(depth)},
        {"schema": nested_json_schema(depth), "schemaType": "JSON"},
    ):
        status, _, answer = http("POST", f"{u}/subjects/deep/versions", body)
        assert (status, answer["error_code"]) == (422, 42201), answer
        assert re.search("nest|depth", answer["message"]), answer
        status, _, answer = http("POST", f"{u}/compatibility/subjects/deep/versions", body)
        assert status < 500, answer
    assert http("GET", f"{u}/")[0] == 200  # the server is still there


def test_deeply_nested_schemas_are_42201_in_the_store(registry: SchemaRegistry):
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("deep", Schema(nested_avro(5000)))
    assert e.value.error_code == 42201


def test_an_avro_default_that_does_not_match_its_type_is_42201(registry: SchemaRegistry):
    bad = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "n", "type": "int", "default": "not a number"}],
    }
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema("r", Schema(orjson.dumps(bad).decode()))
    assert e.value.error_code == 42201 and "default" in e.value.error_message


@pytest.mark.parametrize("version", ["+1", " 1", "1 ", "\u0661", "0", "-2", "2147483648", "1.0"])
def test_versions_other_than_latest_minus_one_or_plain_digits_are_42202(
    app_server: InProcessServer, version: str
):
    u = app_server.url
    http("POST", f"{u}/subjects/s/versions", {"schema": V1.schema_str})
    path = urllib.parse.quote(version, safe="")
    for method, suffix in (
        ("GET", ""),
        ("GET", "/schema"),
        ("GET", "/referencedby"),
        ("DELETE", ""),
    ):
        status, _, body = http(method, f"{u}/subjects/s/versions/{path}{suffix}")
        assert (status, body["error_code"]) == (422, 42202), (method, suffix, body)
    status, _, body = http(
        "POST", f"{u}/compatibility/subjects/s/versions/{path}", {"schema": V2.schema_str}
    )
    assert (status, body["error_code"]) == (422, 42202)


def test_the_store_reads_versions_as_the_server_does(registry: SchemaRegistry):
    registry.register_schema("s", V1)
    assert registry.get_version("s", "-1").version == 1  # type: ignore[arg-type]
    assert registry.get_version("s", -1).version == 1
    assert registry.get_version("s", "1").version == 1  # type: ignore[arg-type]
    for version in ("+1", " 1", "\u0661", "0", 0, 2**31, "latest "):
        with pytest.raises(SchemaRegistryError) as e:
            registry.get_version("s", version)  # type: ignore[arg-type]
        assert e.value.error_code == 42202, version


def test_bad_flags_numbers_and_bodies_are_4xx_with_confluents_body(app_server: InProcessServer):
    u = app_server.url
    http("POST", f"{u}/subjects/s/versions", {"schema": V1.schema_str})
    for method, path, body, status_code, error_code in [
        ("GET", "/subjects?deleted=maybe", None, 400, 400),
        ("GET", "/subjects?offset=ten", None, 400, 400),
        ("GET", "/subjects/s/versions?limit=1.5", None, 400, 400),
        ("DELETE", "/subjects/s?permanent=perhaps", None, 400, 400),
        ("POST", "/subjects/s/versions", {"schema": 5}, 422, 42201),
        ("POST", "/subjects/s/versions", {"schema": V2.schema_str, "schemaType": 5}, 422, 42201),
        ("POST", "/subjects/s/versions", {"schema": V2.schema_str, "references": "x"}, 422, 422),
        ("POST", "/subjects/s/versions", {"schema": V2.schema_str, "id": "7"}, 422, 422),
        ("POST", "/subjects/s/versions", {"schema": V2.schema_str, "references": [{}]}, 422, 422),
        ("PUT", "/config", [1], 422, 422),
        ("PUT", "/config", {"compatibility": 3}, 422, 42203),
        ("PUT", "/mode", {"mode": "SIDEWAYS"}, 422, 42204),
        ("PUT", "/mode", {}, 422, 42204),
        ("PUT", "/mode", b"[", 422, 422),
    ]:
        status, _, answer = http(method, u + path, body)
        assert (status, answer["error_code"]) == (status_code, error_code), (path, answer)
        assert answer["message"]
    # the one flag parser: the spellings it takes
    assert http("GET", f"{u}/subjects?deleted=TRUE")[2] == ["s"]
    assert http("GET", f"{u}/subjects?deleted=0")[2] == ["s"]
