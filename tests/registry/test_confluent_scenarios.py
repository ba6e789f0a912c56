"""Confluent behaviour, scenario by scenario, against `registry serve` over a SQLite store.

Each scenario is a list of requests with the status and the body fields expected back:
config merging, schema metadata, reserved fields, aliases, compatibility groups, modes, JSON
Schema compatibility and paging. The server is shared; before each scenario the global config
and mode are reset, and every scenario uses subjects of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Served, http, serve


def rec(name: str, *fields: str, default: bool = False) -> str:
    """An Avro record of string fields (with a default each when ``default``)."""
    spec = [{"name": f, "type": "string", **({"default": "x"} if default else {})} for f in fields]
    return json.dumps({"type": "record", "name": name, "fields": spec})


def obj(closed: bool = False, **props: str) -> str:
    """A JSON Schema object with properties of the given types."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {k: {"type": t} for k, t in props.items()},
    }
    if closed:
        schema["additionalProperties"] = False
    return json.dumps(schema)


def body(schema: str, meta: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"schema": schema, **more}
    if meta is not None:
        out["metadata"] = {"properties": meta}
    return out


#: A step: (method, path, request body, status, expected body fields; "~" holds text the
#: body must contain, "!~" text it must not, "=" the whole body).
Step = tuple[str, str, Any, int, dict[str, Any]]
V = "/subjects/{}/versions"

SCENARIOS: dict[str, list[Step]] = {
    # --- config merging ---------------------------------------------------------------------
    "subject config fields are returned": [
        ("PUT", "/config/cm1", {"compatibility": "FULL", "validateFields": True}, 200, {}),
        ("GET", "/config/cm1", None, 200, {"compatibilityLevel": "FULL", "validateFields": True}),
    ],
    "defaultToGlobal merges the subject's fields over the global ones": [
        ("PUT", "/config", {"compatibilityGroup": "gen"}, 200, {}),
        ("PUT", "/config/cm2", {"compatibility": "NONE"}, 200, {}),
        ("GET", "/config/cm2", None, 200, {"=": {"compatibilityLevel": "NONE"}}),
        (
            "GET",
            "/config/cm2?defaultToGlobal=true",
            None,
            200,
            {"compatibilityLevel": "NONE", "compatibilityGroup": "gen"},
        ),
    ],
    "a field not named stays, null removes one": [
        ("PUT", "/config/cm3", {"compatibility": "FORWARD", "compatibilityGroup": "g"}, 200, {}),
        ("PUT", "/config/cm3", {"validateFields": True}, 200, {"compatibilityGroup": "g"}),
        ("PUT", "/config/cm3", {"compatibilityGroup": None}, 200, {"!~": "compatibilityGroup"}),
        (
            "GET",
            "/config/cm3",
            None,
            200,
            {"compatibilityLevel": "FORWARD", "validateFields": True},
        ),
    ],
    "deleting a subject config removes every field": [
        ("PUT", "/config/cm4", {"alias": "elsewhere"}, 200, {}),
        ("DELETE", "/config/cm4", None, 200, {}),
        ("GET", "/config/cm4", None, 404, {"error_code": 40408}),
    ],
    "without a config of its own a subject answers 40408, or the global one": [
        ("PUT", "/config", {"compatibility": "FULL_TRANSITIVE"}, 200, {}),
        ("GET", "/config/cm6", None, 404, {"error_code": 40408}),
        (
            "GET",
            "/config/cm6?defaultToGlobal=true",
            None,
            200,
            {"compatibilityLevel": "FULL_TRANSITIVE"},
        ),
    ],
    "an unknown level is 42203": [
        ("PUT", "/config/cm5", {"compatibility": "SIDEWAYS"}, 422, {"error_code": 42203}),
    ],
    # --- metadata -----------------------------------------------------------------------------
    "metadata is served with the version and the id": [
        ("POST", V.format("md1"), body(rec("M1", "a"), {"owner": "ops"}), 200, {}),
        (
            "GET",
            V.format("md1") + "/latest",
            None,
            200,
            {"metadata": {"properties": {"owner": "ops"}}},
        ),
        ("GET", "/schemas/ids/1", None, 200, {"~": "ops"}),
    ],
    "a version without metadata inherits the previous one's": [
        ("POST", V.format("md2"), body(rec("M2", "a"), {"owner": "ops"}), 200, {"version": 1}),
        ("POST", V.format("md2"), body(rec("M2", "a", "b", default=True)), 200, {"version": 2}),
        ("GET", V.format("md2") + "/2", None, 200, {"metadata": {"properties": {"owner": "ops"}}}),
    ],
    "the global default metadata reaches every subject": [
        ("PUT", "/config", {"defaultMetadata": {"properties": {"site": "lab"}}}, 200, {}),
        ("POST", V.format("md3"), body(rec("M3", "a")), 200, {}),
        ("GET", V.format("md3") + "/1", None, 200, {"metadata": {"properties": {"site": "lab"}}}),
    ],
    "the override wins over the registered metadata": [
        ("PUT", "/config/md4", {"overrideMetadata": {"properties": {"owner": "gov"}}}, 200, {}),
        ("POST", V.format("md4"), body(rec("M4", "a"), {"owner": "dev", "x": "1"}), 200, {}),
        (
            "GET",
            V.format("md4") + "/1",
            None,
            200,
            {"metadata": {"properties": {"owner": "gov", "x": "1"}}},
        ),
    ],
    "the same schema with other metadata is a new version": [
        ("PUT", "/config/md5", {"compatibility": "NONE"}, 200, {}),
        ("POST", V.format("md5"), body(rec("M5", "a"), {"k": "1"}), 200, {"version": 1}),
        ("POST", V.format("md5"), body(rec("M5", "a"), {"k": "2"}), 200, {"version": 2}),
        ("POST", V.format("md5"), body(rec("M5", "a"), {"k": "1"}), 200, {"version": 1}),
    ],
    # --- reserved fields ------------------------------------------------------------------------
    "a reserved field in the schema is refused": [
        ("PUT", "/config/rf1", {"compatibility": "NONE", "validateFields": True}, 200, {}),
        (
            "POST",
            V.format("rf1"),
            body(rec("R1", "a", "tax"), {"confluent:reserved": "tax"}),
            409,
            {"error_code": 409, "~": "conflicts with the reserved field tax"},
        ),
    ],
    "a reserved field dropped by the next version is refused": [
        ("PUT", "/config/rf2", {"compatibility": "NONE", "validateFields": True}, 200, {}),
        ("POST", V.format("rf2"), body(rec("R2", "a"), {"confluent:reserved": "tax,fee"}), 200, {}),
        (
            "POST",
            V.format("rf2"),
            body(rec("R2", "a", "b"), {"confluent:reserved": "fee"}),
            409,
            {"~": "reserved field tax removed"},
        ),
        (
            "POST",
            V.format("rf2"),
            body(rec("R2", "a", "b"), {"confluent:reserved": "fee,tax,x"}),
            200,
            {},
        ),
    ],
    "reserved fields are free without validateFields": [
        ("POST", V.format("rf3"), body(rec("R3", "tax"), {"confluent:reserved": "tax"}), 200, {}),
    ],
    # --- aliases --------------------------------------------------------------------------------
    "registering through an alias lands in the aliased subject": [
        ("POST", V.format("al1-real"), body(rec("A1", "a")), 200, {}),
        ("PUT", "/config/al1", {"alias": "al1-real"}, 200, {}),
        (
            "POST",
            V.format("al1"),
            body(rec("A1", "a", "b", default=True)),
            200,
            {"subject": "al1-real", "version": 2},
        ),
        ("GET", V.format("al1-real"), None, 200, {"=": [1, 2]}),
        ("GET", V.format("al1") + "/1", None, 200, {"subject": "al1-real"}),
    ],
    "a lookup through an alias answers the aliased subject": [
        ("POST", V.format("al2-real"), body(rec("A2", "a")), 200, {}),
        ("PUT", "/config/al2", {"alias": "al2-real"}, 200, {}),
        ("POST", "/subjects/al2", body(rec("A2", "a")), 200, {"subject": "al2-real", "version": 1}),
    ],
    "an alias of an alias is not followed": [
        ("POST", V.format("al3-c"), body(rec("A3", "a")), 200, {}),
        ("PUT", "/config/al3-b", {"alias": "al3-c"}, 200, {}),
        ("PUT", "/config/al3-a", {"alias": "al3-b"}, 200, {}),
        ("GET", V.format("al3-a"), None, 404, {"error_code": 40401}),
    ],
    # --- compatibility groups -------------------------------------------------------------------
    "another group skips the compatibility check": [
        (
            "PUT",
            "/config/cg1",
            {"compatibility": "BACKWARD", "compatibilityGroup": "major"},
            200,
            {"~": "major"},
        ),
        ("POST", V.format("cg1"), body(rec("G1", "a"), {"major": "1"}), 200, {}),
        ("POST", V.format("cg1"), body(rec("G1", "z"), {"major": "2"}), 200, {"version": 2}),
    ],
    "the same group is checked": [
        (
            "PUT",
            "/config/cg2",
            {"compatibility": "BACKWARD", "compatibilityGroup": "major"},
            200,
            {},
        ),
        ("POST", V.format("cg2"), body(rec("G2", "a"), {"major": "1"}), 200, {}),
        ("POST", V.format("cg2"), body(rec("G2", "z"), {"major": "1"}), 409, {"error_code": 409}),
    ],
    # --- modes ----------------------------------------------------------------------------------
    "a read-only subject refuses registrations": [
        ("PUT", "/mode/mo1", {"mode": "READONLY"}, 200, {"mode": "READONLY"}),
        ("POST", V.format("mo1"), body(rec("O1", "a")), 422, {"error_code": 42205}),
        ("DELETE", "/mode/mo1", None, 200, {}),
        ("POST", V.format("mo1"), body(rec("O1", "a")), 200, {}),
    ],
    "import needs an id and read-write refuses one": [
        ("POST", V.format("mo2"), body('"string"', id=900), 422, {"error_code": 42205}),
        ("PUT", "/mode/mo2", {"mode": "IMPORT"}, 200, {}),
        ("POST", V.format("mo2"), body('"string"'), 422, {"error_code": 42205}),
        (
            "POST",
            V.format("mo2"),
            body('"string"', id=900, version=4),
            200,
            {"id": 900, "version": 4},
        ),
        ("GET", "/schemas/ids/900", None, 200, {"schema": '"string"'}),
    ],
    "an imported id is free again once its subject is gone": [
        ("PUT", "/mode/mo3", {"mode": "IMPORT"}, 200, {}),
        ("PUT", "/mode/mo3b", {"mode": "IMPORT"}, 200, {}),
        ("POST", V.format("mo3"), body('"bytes"', id=910, version=1), 200, {}),
        ("DELETE", "/subjects/mo3", None, 200, {}),
        ("DELETE", "/subjects/mo3?permanent=true", None, 200, {}),
        ("POST", V.format("mo3b"), body('"bytes"', id=911, version=1), 200, {"id": 911}),
        ("POST", V.format("mo3b"), body('"long"', id=912, version=1), 200, {"id": 911}),
    ],
    # --- compatibility --------------------------------------------------------------------------
    "an incompatible Avro schema is 409 with code 409": [
        ("POST", V.format("co1"), body(rec("C1", "a")), 200, {}),
        ("POST", V.format("co1"), body(rec("C1", "a", "b")), 409, {"error_code": 409}),
    ],
    "a verbose check says why": [
        ("POST", V.format("co2"), body(rec("C2", "a")), 200, {}),
        (
            "POST",
            "/compatibility/subjects/co2/versions/latest?verbose=true",
            body(rec("C2", "a", "b")),
            200,
            {"is_compatible": False, "~": "messages"},
        ),
    ],
    "a JSON Schema property changing type is incompatible": [
        ("POST", V.format("js1"), body(obj(n="string"), schemaType="JSON"), 200, {}),
        (
            "POST",
            V.format("js1"),
            body(obj(n="integer"), schemaType="JSON"),
            409,
            {"error_code": 409},
        ),
    ],
    "a JSON Schema closed model may gain an optional property": [
        ("POST", V.format("js2"), body(obj(True, n="string"), schemaType="JSON"), 200, {}),
        (
            "POST",
            V.format("js2"),
            body(obj(True, n="string", m="number"), schemaType="JSON"),
            200,
            {"version": 2},
        ),
    ],
    "a JSON Schema open model may not gain a property": [
        ("POST", V.format("js3"), body(obj(n="string"), schemaType="JSON"), 200, {}),
        (
            "POST",
            "/compatibility/subjects/js3/versions/latest",
            body(obj(n="string", m="number"), schemaType="JSON"),
            200,
            {"is_compatible": False},
        ),
    ],
    # --- paging ---------------------------------------------------------------------------------
    "subjects page by offset and limit": [
        ("POST", V.format("pg-a"), body('"string"'), 200, {}),
        ("POST", V.format("pg-b"), body('"string"'), 200, {}),
        ("POST", V.format("pg-c"), body('"string"'), 200, {}),
        ("GET", "/subjects?subjectPrefix=pg-&offset=1&limit=1", None, 200, {"=": ["pg-b"]}),
        ("GET", "/subjects?subjectPrefix=pg-&limit=0", None, 200, {"=": ["pg-a", "pg-b", "pg-c"]}),
    ],
    "versions page by offset": [
        ("PUT", "/config/pg-v", {"compatibility": "NONE"}, 200, {}),
        ("POST", V.format("pg-v"), body('"string"'), 200, {}),
        ("POST", V.format("pg-v"), body('"int"'), 200, {}),
        ("GET", V.format("pg-v") + "?offset=1", None, 200, {"=": [2]}),
    ],
    "a lookup of an unknown or empty schema is 40403": [
        ("POST", V.format("lk1"), body(rec("L1", "a")), 200, {}),
        ("POST", "/subjects/lk1", body(rec("L1", "b")), 404, {"error_code": 40403}),
        ("POST", "/subjects/lk1", body(""), 404, {"error_code": 40403}),
    ],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    store: Path = tmp_path_factory.mktemp("scenarios") / "registry.db"
    served = serve(f"sqlite:///{store}")
    yield served
    served.stop()


def _check(step: Step, status: int, answer: Any) -> None:
    method, path, _, want_status, fields = step
    where = f"{method} {path}: {answer}"
    assert status == want_status, where
    text = json.dumps(answer)
    for key, want in fields.items():
        if key == "~":
            assert want in text, where
        elif key == "!~":
            assert want not in text, where
        elif key == "=":
            assert answer == want, where
        else:
            assert answer.get(key) == want, where


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(server: Served, name: str) -> None:
    http("PUT", f"{server.url}/mode", {"mode": "READWRITE"})
    http("DELETE", f"{server.url}/config")
    for step in SCENARIOS[name]:
        method, path, request, _, _ = step
        status, _, answer = http(method, server.url + path, request)
        _check(step, status, answer)
