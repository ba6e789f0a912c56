"""The order of a change: the database log's position, the record's, or its arrival."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from cdc_connectors.opencdc import Record
from cdc_connectors.table.apply import apply_changes
from cdc_connectors.table.layout import STREAM
from cdc_connectors.table.order import ARRIVAL, arrived, log_position, order_of
from cdc_connectors.table.records import ChangeBatch
from cdc_connectors.table.store import TableSettings
from tests.table.conftest import read_all

PG = {"debezium.source.lsn": "24023192"}


def test_a_position_gives_its_stream_and_number() -> None:
    for order_by in ("auto", "position"):
        assert order_of(b"orders/3/17", {}, order_by) == ("orders/3", 17)
        assert order_of(b"in/a.jsonl:12", {}, order_by) == ("in/a.jsonl", 12)
        assert order_of(b"in/a.pb: message 4, byte 96", {}, order_by) == ("in/a.pb", 4)


def test_a_metadata_key_gives_its_integer() -> None:
    assert order_of(b"x", PG, "debezium.source.lsn") == ("", 24023192)
    with pytest.raises(ValueError, match="not an integer"):
        order_of(b"x", {}, "debezium.source.lsn")
    with pytest.raises(ValueError, match="past 64 bits"):
        order_of(b"x", {"n": str(2**63)}, "n")


def test_position_refuses_a_position_without_a_number() -> None:
    with pytest.raises(ValueError, match="has no order"):
        order_of(b'{"lsn": "0/16B3748"}', {}, "position")


def test_auto_orders_by_the_log_then_the_position() -> None:
    late = order_of(b"orders/0/900", PG, "auto")  # produced again, long after
    newer = order_of(b"orders/0/5", {"debezium.source.lsn": "24023256"}, "auto")
    assert late < newer
    assert late == ("lsn 00000000000024023192 orders/0", 900)
    # a snapshot's rows share an LSN: their positions order them
    first, second = (order_of(f"t/0/{n}".encode(), PG, "auto") for n in (1, 2))
    assert first < second
    # an LSN without a numbered position (Conduit's opaque positions)
    assert order_of(b'{"type":2}', PG, "auto") == ("lsn 00000000000024023192", 0)


def test_log_positions_sort_as_the_log() -> None:
    def mysql(file: str, pos: int, row: int = 0) -> str | None:
        return log_position(
            {
                "debezium.source.file": file,
                "debezium.source.pos": str(pos),
                "debezium.source.row": str(row),
            }
        )

    ordered = [mysql("binlog.000007", 998, 0), mysql("binlog.000007", 1001, 0)]
    ordered += [mysql("binlog.000007", 1001, 1), mysql("binlog.000008", 4, 0)]
    assert ordered == sorted(ordered)
    ydb = [
        log_position({"ydb.step": str(step), "ydb.txId": str(tx)})
        for step, tx in ((9, 5), (10, 3), (10, 40))
    ]
    assert ydb == sorted(ydb)
    lsns = [log_position({"debezium.source.lsn": str(n)}) for n in (9, 10, 2**64 - 1)]
    assert lsns == sorted(lsns)
    assert log_position({"cdl.lsn": "163955221008"}) == "lsn 00000000163955221008"
    # not a log position: no digits, a sign, past 20 digits, a MySQL file without position
    for metadata in (
        {"debezium.source.lsn": "0/16B3748"},
        {"debezium.source.lsn": "-4"},
        {"debezium.source.lsn": "1" * 21},
        {"debezium.source.file": "binlog.000007"},
        {"ydb.step": "10"},
        {},
    ):
        assert log_position(metadata) is None


def test_records_without_an_order_arrive_in_turn_after_earlier_writes() -> None:
    assert order_of(b"opaque", {}, "auto", 7) == (ARRIVAL, 7)
    changes = pa.table({STREAM: [ARRIVAL, "t/0", ARRIVAL], "x": [1, 2, 3]})
    first = arrived(changes, 1_000).column(STREAM).to_pylist()
    later = arrived(changes, 2_000).column(STREAM).to_pylist()
    assert first[1] == "t/0" and first[0] == first[2] != ARRIVAL
    assert first[0] < later[0]
    # after every log position and record stream
    assert first[0] > "lsn 99999999999999999999" and first[0] > "zzz/0"


# --- a Kafka tombstone taken as a delete, among changes with log positions ---------------


def _binlog(op: str, offset: int, pos: int | None, topic: str, **after: object) -> Record:
    """A record of MySQL's binlog at ``pos`` (none: a tombstone taken as a delete) read
    at ``offset`` of ``topic``'s partition 0."""
    metadata = {"debezium.source.file": "mysql-bin.000003", "debezium.source.pos": str(pos)}
    return Record.new(
        op,
        position=f"{topic}/0/{offset}".encode(),
        key={"id": 1},
        after=({"id": 1, **after} if op != "delete" else None),
        before=({"id": 1} if op == "delete" and pos is not None else None),
        metadata=metadata if pos is not None else None,
    )


def _apply(store: Any, *records: Record) -> None:
    changes = ChangeBatch(order_by="auto")
    for one in records:
        changes.add(one)
    assert not changes.refused
    apply_changes(store, changes.table(), TableSettings(["id"]))


def _ids(store: Any) -> dict[int, Any]:
    return {r["id"]: r.get("status") for r in read_all(store).to_pylist()}


@pytest.mark.parametrize("topic", ["orders", "aaa"])  # after "binlog", and before it
def test_a_key_created_again_after_a_tombstone_comes_back(make_store: Any, topic: str) -> None:
    store = make_store()
    _apply(
        store,
        _binlog("create", 1, 100, topic, status="a"),
        _binlog("delete", 2, 200, topic),
        _binlog("delete", 3, None, topic),  # the tombstone after the delete
        _binlog("create", 4, 300, topic, status="b"),
    )
    assert _ids(store) == {1: "b"}


@pytest.mark.parametrize("topic", ["orders", "aaa"])
def test_a_tombstone_alone_in_its_batch_orders_by_its_place_in_the_stream(
    make_store: Any, topic: str
) -> None:
    store = make_store()
    _apply(store, _binlog("create", 1, 100, topic, status="a"), _binlog("delete", 2, 200, topic))
    _apply(store, _binlog("delete", 3, None, topic))
    _apply(store, _binlog("create", 4, 300, topic, status="b"))
    assert _ids(store) == {1: "b"}
    _apply(store, _binlog("delete", 3, None, topic))  # replayed: older than the create
    assert _ids(store) == {1: "b"}
    _apply(store, _binlog("delete", 5, None, topic))  # a later one deletes
    assert _ids(store) == {}


@pytest.mark.parametrize("topic", ["orders", "aaa"])
def test_a_key_first_seen_in_a_tombstone_comes_back_when_created(
    make_store: Any, topic: str
) -> None:
    store = make_store()
    _apply(store, _binlog("delete", 3, None, topic))
    _apply(store, _binlog("create", 4, 300, topic, status="b"))
    assert _ids(store) == {1: "b"}


def test_a_tombstone_first_in_its_batch_is_before_the_change_after_it(make_store: Any) -> None:
    store = make_store()
    _apply(store, _binlog("create", 1, 100, "orders", status="a"))
    _apply(
        store,
        _binlog("delete", 3, None, "orders"),
        _binlog("create", 4, 300, "orders", status="b"),
    )
    assert _ids(store) == {1: "b"}


def test_a_key_first_seen_in_a_tombstone_gets_its_log_order_back(make_store: Any) -> None:
    """A change with a log position keeps it after meeting a tombstone without one: an
    older event produced again stays older, a newer one of another partition is newer."""
    store = make_store()
    _apply(store, _binlog("delete", 3, None, "orders"))
    _apply(store, _binlog("create", 4, 300, "orders", status="b"))
    _apply(store, _binlog("update", 5, 400, "orders", status="c"))
    _apply(store, _binlog("update", 9, 350, "orders", status="old"))  # produced again
    assert _ids(store) == {1: "c"}
    newer = _binlog("update", 0, 500, "orders", status="d")
    newer.position = b"orders/1/0"
    _apply(store, newer)
    assert _ids(store) == {1: "d"}


def test_history_a_tombstone_delivered_again_changes_no_version(make_store: Any) -> None:
    settings = TableSettings(["id"], mode="history")

    def apply(*records: Record) -> None:
        changes = ChangeBatch(order_by="auto")
        for one in records:
            changes.add(one)
        apply_changes(store, changes.table(), settings)

    def versions() -> list[tuple[Any, ...]]:
        found = read_all(store).to_pylist()
        return sorted((r["status"], r["_cdc_valid_from"], r["_cdc_valid_to"]) for r in found)

    store = make_store()
    apply(
        _binlog("create", 1, 100, "orders", status="a"),
        _binlog("delete", 2, 200, "orders"),
        _binlog("delete", 3, None, "orders"),
    )
    apply(_binlog("create", 4, 300, "orders", status="b"))
    apply(_binlog("update", 6, 400, "orders", status="c"))
    before = versions()
    apply(_binlog("delete", 3, None, "orders"))  # the tombstone at offset 3 again
    assert versions() == before
