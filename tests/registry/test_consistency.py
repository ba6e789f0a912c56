"""Two processes on one store see each other's commits at once: nothing answers from stale state.

A `registry serve` process and an `sqlite:///` client in this process share one file; each
reads what the other just changed, including deletes, re-registrations under a reused version
number, compatibility levels and modes.
"""

from __future__ import annotations

from cdc_connectors.registry import SchemaRegistryError, open_registry

from .conftest import Served, http
from .test_contract import BREAKING, V1, V2


def test_server_and_sqlite_client_see_each_others_changes_at_once(served: Served):
    u = served.url
    remote = open_registry(u)
    direct = open_registry(served.store)

    # the server registers; the direct client (its answers warmed first) sees it
    assert http("GET", f"{u}/subjects")[2] == []
    with_error = http("GET", f"{u}/subjects/s/versions/latest")[2]
    assert with_error["error_code"] == 40401
    first = remote.register_schema("s", V1)
    assert direct.get_latest_version("s").schema_id == first
    assert http("GET", f"{u}/subjects/s/versions/latest")[2]["id"] == first
    assert http("GET", f"{u}/subjects/s/versions/1")[2]["id"] == first

    # the direct client deletes for good and registers another schema as version 1 again
    direct.delete_subject("s")
    assert http("GET", f"{u}/subjects/s/versions/latest")[2]["error_code"] == 40401
    assert http("GET", f"{u}/subjects")[2] == []
    direct.delete_subject("s", permanent=True)
    direct.set_compatibility("s", "NONE")
    second = direct.register_schema_full_response("s", BREAKING)
    assert second.version == 1 and second.schema_id != first
    assert http("GET", f"{u}/subjects/s/versions/latest")[2]["id"] == second.schema_id
    assert http("GET", f"{u}/subjects/s/versions/1")[2]["id"] == second.schema_id
    assert remote.get_version("s", 1).schema_id == second.schema_id
    assert remote.get_latest_version("s").schema_id == second.schema_id
    assert remote.lookup_schema("s", BREAKING).version == 1
    assert remote.register_schema("s", BREAKING) == second.schema_id

    # compatibility levels, both ways
    assert http("GET", f"{u}/config/s")[2] == {"compatibilityLevel": "NONE"}
    assert remote.register_schema_full_response("s", V1).version == 2  # NONE allows it
    remote.set_compatibility(level="FULL")
    assert direct.get_compatibility() == "FULL"
    direct.delete_config("s")
    assert remote.get_compatibility("s", default_to_global=True) == "FULL"
    try:
        remote.register_schema("s", V2)  # FULL: V2 adds an optional field, V1 <-> BREAKING no
    except SchemaRegistryError as exc:
        raise AssertionError(exc) from None
    assert direct.get_versions("s") == [1, 2, 3]

    # deletes on the server side reach the direct client
    assert remote.delete_version("s", 3) == 3
    assert direct.get_versions("s") == [1, 2]
    assert direct.get_latest_version("s").version == 2

    # modes, both ways
    direct.update_mode("s", "READONLY")
    status, _, answer = http("POST", f"{u}/subjects/s/versions", {"schema": V2.schema_str})
    assert (status, answer["error_code"]) == (422, 42205)
    remote.delete_mode("s")
    assert direct.get_mode("s", default_to_global=True) == "READWRITE"
    assert direct.register_schema_full_response("s", V2).version == 4
    direct.close()
