"""Subjects holding `/` (or `%`) travel encoded and reach every subject route, as Confluent's."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from cdc_connectors.registry import open_registry

from .conftest import InProcessServer, http
from .test_contract import BREAKING, V1, V2

NAMES = ["a/b", "orders/v1/value", "odd%2Fname/x", "spaced name/ü"]


def _code(call) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(SchemaRegistryError) as e:
        call()
    return int(e.value.error_code)


@pytest.mark.parametrize("subject", NAMES)
def test_confluents_client_reaches_every_route_of_a_subject_with_a_slash(
    app_server: InProcessServer, subject: str
):
    c = SchemaRegistryClient({"url": app_server.url})
    first = c.register_schema_full_response(subject, V1)
    assert first.version == 1
    assert c.get_subjects() == [subject]
    assert c.get_versions(subject) == [1]
    assert c.get_version(subject, 1).schema_id == first.schema_id
    assert c.get_latest_version(subject).version == 1
    assert c.lookup_schema(subject, V1).version == 1
    assert c.get_referenced_by(subject, 1) == []
    assert c.get_subjects_by_schema_id(first.schema_id) == [subject]

    assert c.set_compatibility(subject, "FULL") == {"compatibility": "FULL"}
    assert c.get_compatibility(subject) == "FULL"
    assert c.test_compatibility(subject, V2)
    assert not c.test_compatibility(subject, BREAKING)
    assert not c.test_compatibility_all_versions(subject, BREAKING)
    assert c.delete_config(subject).compatibility_level.value == "FULL"  # type: ignore[union-attr]

    assert c.update_mode(subject, "READONLY") == "READONLY"
    assert c.get_mode(subject) == "READONLY"
    assert _code(lambda: c.register_schema(subject, V2)) == 42205
    assert c.delete_mode(subject) == "READONLY"

    assert c.register_schema_full_response(subject, V2).version == 2
    assert c.delete_version(subject, 2) == 2
    assert c.delete_version(subject, 2, permanent=True) == 2
    assert c.delete_subject(subject) == [1]
    assert c.delete_subject(subject, permanent=True) == [1]
    assert c.get_subjects(deleted=True) == []
    c._rest_client.session.close()


def test_our_http_registry_and_the_sqlite_store_agree_on_such_subjects(
    app_server: InProcessServer,
):
    remote = open_registry(app_server.url)
    remote.register_schema("a/b", V1)
    assert app_server.registry.get_versions("a/b") == [1]
    app_server.registry.register_schema("c/d", V1)
    assert remote.get_subjects() == ["a/b", "c/d"]
    assert remote.get_version("c/d", "latest").subject == "c/d"
    remote.close()


def test_an_unencoded_slash_is_no_subject(app_server: InProcessServer):
    u = app_server.url
    http("POST", f"{u}/subjects/a%2Fb/versions", {"schema": V1.schema_str})
    status, _, body = http("GET", f"{u}/subjects/a/b/versions")
    assert (status, body["error_code"]) == (404, 404)
    assert http("GET", f"{u}/subjects/a%2fb/versions")[2] == [1]  # either case of hex
    assert http("GET", f"{u}/subjects")[2] == ["a/b"]
