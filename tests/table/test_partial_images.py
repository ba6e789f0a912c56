"""Partial images from real formats keep the table's values: YDB's updates mode (changed
columns only) and Debezium's placeholder for a TOAST column it did not read."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.ydb import YdbJsonFormat
from cdc_connectors.table.apply import apply_changes
from cdc_connectors.table.records import PLACEHOLDER, ChangeBatch
from cdc_connectors.table.store import TableSettings
from tests.table.conftest import rows

Store = Callable[[], Any]


def _apply(store: Any, fmt: Any, lines: list[str], source: str, keys: Any = None) -> None:
    batch = ChangeBatch(keys)
    for number, line in enumerate(lines, 1):
        for record in fmt.decode(Message(line.encode(), where=f"{source}:{number}")):
            record.position = f"{source}:{number}".encode()
            batch.add(record)
    assert not batch.refused
    apply_changes(store, batch.table(), TableSettings(batch.key_columns or []))


def test_ydb_updates_mode_keeps_the_columns_it_does_not_carry(make_store: Store) -> None:
    fmt = YdbJsonFormat(options={"key.columns": "id", "mode": "UPDATES"})
    first = '{"key":[1],"update":{"customer":"Ann","status":"new"},"ts":[1,1]}'
    then = '{"key":[1],"update":{"status":"paid"},"ts":[2,2]}'
    _apply(make_store(), fmt, [first], "a.jsonl")
    _apply(make_store(), fmt, [then], "b.jsonl")
    assert rows(make_store(), "id", "customer", "status") == [
        {"id": 1, "customer": "Ann", "status": "paid"}
    ]


def test_a_toast_column_debezium_did_not_read_keeps_its_value(make_store: Store) -> None:
    fmt = DebeziumJsonFormat()
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "docs"}

    def event(op: str, after: dict[str, Any]) -> str:
        return json.dumps({"before": None, "after": after, "source": source, "op": op, "ts_ms": 1})

    created = event("c", {"id": 7, "body": "a long text", "title": "first"})
    updated = event("u", {"id": 7, "body": PLACEHOLDER, "title": "second"})
    _apply(make_store(), fmt, [created], "docs.jsonl", ["id"])
    store = make_store()
    batch = ChangeBatch(["id"])
    record = fmt.decode(Message(updated.encode(), where="docs.jsonl:2"))[0]
    record.position = b"docs.jsonl:2"
    batch.add(record)
    apply_changes(store, batch.table(), TableSettings(["id"]))
    assert rows(make_store(), "id", "body", "title") == [
        {"id": 7, "body": "a long text", "title": "second"}
    ]


def test_a_toast_array_column_debezium_did_not_read_keeps_its_value(make_store: Store) -> None:
    """For an array column it did not read, Debezium writes an array of its placeholder."""
    fmt = DebeziumJsonFormat()
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "docs"}

    def event(op: str, after: dict[str, Any]) -> str:
        return json.dumps({"before": None, "after": after, "source": source, "op": op, "ts_ms": 1})

    created = event("c", {"id": 7, "tags": ["a", None, "c"], "title": "first"})
    updated = event("u", {"id": 7, "tags": [PLACEHOLDER], "title": "second"})
    _apply(make_store(), fmt, [created], "docs.jsonl", ["id"])
    _apply(make_store(), fmt, [updated], "docs2.jsonl", ["id"])
    assert rows(make_store(), "id", "tags", "title") == [
        {"id": 7, "tags": '["a",null,"c"]', "title": "second"}  # (arrays as JSON text)
    ]
