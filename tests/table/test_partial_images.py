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


def test_ydb_updates_read_in_reverse_end_with_every_column_s_latest_value(
    make_store: Store,
) -> None:
    """Files of one key's updates read newest first (a stream read out of order): each
    older update gives the row the columns the newer ones did not carry (and no newer one
    gave), so the row ends as in the database, not with the unread columns null."""
    fmt = YdbJsonFormat(options={"key.columns": "id", "mode": "UPDATES"})
    lines = [
        '{"key":[1],"update":{"a":1,"b":"x"},"ts":[1000,1]}',
        '{"key":[1],"update":{"b":"y"},"ts":[2000,3]}',
        '{"key":[1],"update":{"a":3},"ts":[3000,5]}',
    ]
    for number in (3, 2, 1):
        _apply(make_store(), fmt, [lines[number - 1]], f"f{number}.jsonl")
    assert rows(make_store(), "id", "a", "b") == [{"id": 1, "a": 3, "b": "y"}]


def test_a_toast_placeholder_applied_first_takes_the_value_of_the_late_change_that_set_it(
    make_store: Store,
) -> None:
    """The update with the placeholder arrives before the create and the update that set
    the column: the column ends with the newest of those values; an even older change
    arriving after it changes nothing."""
    fmt = DebeziumJsonFormat()
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "docs"}

    def event(op: str, lsn: int, after: dict[str, Any]) -> str:
        change = {**source, "lsn": lsn}
        return json.dumps({"before": None, "after": after, "source": change, "op": op, "ts_ms": 1})

    created = event("c", 10, {"id": 7, "body": "first text", "title": "a"})
    edited = event("u", 20, {"id": 7, "body": "second text", "title": "b"})
    touched = event("u", 30, {"id": 7, "body": PLACEHOLDER, "title": "c"})
    for line in (touched, edited, created):
        _apply(make_store(), fmt, [line], "docs.jsonl", ["id"])
    assert rows(make_store(), "id", "body", "title") == [
        {"id": 7, "body": "second text", "title": "c"}
    ]


def test_a_late_delete_older_than_the_row_keeps_older_values_out(make_store: Store) -> None:
    """A row made by a partial update after a delete (its create never arrived): a change
    from before the delete, arriving late, gives it nothing."""
    from tests.table.changes import batch

    keyed = TableSettings(["id"])
    apply_changes(
        make_store(), batch([("update", 30, {"id": 1, "status": "c"}, ["amount"])]), keyed
    )
    apply_changes(make_store(), batch([("delete", 20, {"id": 1})]), keyed)
    apply_changes(
        make_store(), batch([("create", 10, {"id": 1, "status": "a", "amount": 5})]), keyed
    )
    assert rows(make_store(), "id", "status", "amount") == [
        {"id": 1, "status": "c", "amount": None}
    ]


def test_history_versions_of_a_partial_change_take_the_late_change_s_values(
    make_store: Store,
) -> None:
    """History mode: an update leaving ``amount`` unset arrives first (its version holds
    none), then the create and an update before it: the rebuilt versions each hold the
    amount the row had then, the first version's carried through."""
    from tests.table.changes import batch

    history = TableSettings(["id"], mode="history")
    first = batch([("update", 3, {"id": 1, "status": "c"}, ["amount"])])
    apply_changes(make_store(), first, history)
    apply_changes(
        make_store(),
        batch(
            [
                ("create", 1, {"id": 1, "status": "a", "amount": 5}),
                ("update", 2, {"id": 1, "status": "b"}, ["amount"]),
            ]
        ),
        history,
    )
    found = sorted(
        (r["_cdc_offset"], r["status"], r["amount"], r["_cdc_is_current"])
        for r in rows(make_store())
    )
    assert found == [(1, "a", 5, False), (2, "b", 5, False), (3, "c", 5, True)]


def test_history_a_late_delete_before_a_partial_version_leaves_it_nothing(
    make_store: Store,
) -> None:
    """History mode: create@10, then update@30 leaving ``amount`` unset, then a delete@20
    arriving late: the version @30 follows the delete, so it keeps no amount (as in
    upsert mode, and as the same changes in order give)."""
    from tests.table.changes import batch

    history = TableSettings(["id"], mode="history")
    apply_changes(
        make_store(), batch([("create", 10, {"id": 1, "status": "a", "amount": 5})]), history
    )
    apply_changes(
        make_store(), batch([("update", 30, {"id": 1, "status": "c"}, ["amount"])]), history
    )
    apply_changes(make_store(), batch([("delete", 20, {"id": 1})]), history)
    found = sorted((r["_cdc_offset"], r["amount"]) for r in rows(make_store()))
    assert found == [(10, 5), (30, None)]
