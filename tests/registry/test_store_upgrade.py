"""A store written with an older identity rule is upgraded when it is opened."""

from __future__ import annotations

import hashlib
import sqlite3

from cdc_connectors.registry import Schema, SchemaReference, open_registry
from cdc_connectors.registry.embedded import IDENTITY_RULE

INHERITED = (
    '{"type":"record","name":"Order","namespace":"shop",'
    '"fields":[{"name":"line","type":{"type":"record","name":"Line","fields":[]}}]}'
)
EXPLICIT = (
    '{"type":"record","name":"Order","namespace":"shop",'
    '"fields":[{"name":"line","type":{"type":"record","name":"Line","namespace":"shop",'
    '"fields":[]}}]}'
)


DEP = 'syntax = "proto3";\npackage dep;\nmessage D { string a = 1; }\n'
MAIN = 'syntax = "proto3";\npackage app;\nimport "dep.proto";\nmessage M { dep.D d = 1; }\n'


def _old_fingerprint(text: str) -> str:
    # the rule of stores before IDENTITY_RULE 2: the schema's compact JSON text
    return hashlib.sha256(f"AVRO\0{text}\0[]".encode()).hexdigest()


def test_two_spellings_stored_apart_by_the_old_rule_become_one_schema(tmp_path):
    path = tmp_path / "registry.db"
    url = f"sqlite:///{path}"
    open_registry(url).close()
    db = sqlite3.connect(path)
    for schema_id, text in ((1, INHERITED), (2, EXPLICIT)):
        db.execute(
            "INSERT INTO schemas (id, fingerprint, schema_type, schema, refs, guid) "
            "VALUES (?, ?, 'AVRO', ?, '[]', ?)",
            (schema_id, _old_fingerprint(text), text, f"guid-{schema_id}"),
        )
        db.execute(
            "INSERT INTO versions (subject, version, schema_id) VALUES (?, 1, ?)",
            (f"old-{schema_id}", schema_id),
        )
    # an old fingerprint equal to the new fingerprint of another schema must not collide
    db.execute("PRAGMA user_version = 0")
    db.commit()
    db.close()

    registry = open_registry(url)
    assert registry.register_schema("orders-value", Schema(EXPLICIT)) == 1
    assert registry.register_schema("other-value", Schema(INHERITED)) == 1
    assert registry.get_schema(2).schema_str == EXPLICIT  # still readable by its own id
    registry.close()
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA user_version").fetchone()[0] == IDENTITY_RULE
    check.close()


def test_a_new_store_carries_the_current_rule(tmp_path):
    path = tmp_path / "fresh.db"
    open_registry(f"sqlite:///{path}").close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == IDENTITY_RULE
    db.close()


def test_references_to_version_minus_one_are_pinned_when_a_store_is_upgraded(tmp_path):
    path = tmp_path / "registry.db"
    url = f"sqlite:///{path}"
    registry = open_registry(url)
    registry.register_schema("dep", Schema(DEP, "PROTOBUF"))
    main_id = registry.register_schema(
        "main", Schema(MAIN, "PROTOBUF", [SchemaReference("dep.proto", "dep", 1)])
    )
    registry.close()
    # as a store before rule 3 kept it: the reference as written
    db = sqlite3.connect(path)
    db.execute(
        "UPDATE schemas SET refs = ? WHERE id = ?",
        ('[{"name":"dep.proto","subject":"dep","version":-1}]', main_id),
    )
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()

    registry = open_registry(url)
    assert [r.version for r in registry.get_schema(main_id).references] == [1]
    assert registry.get_referenced_by("dep", 1) == [main_id]
    registry.close()
