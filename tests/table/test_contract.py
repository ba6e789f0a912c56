"""The contract every table format keeps (Delta Lake and Iceberg alike)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.dataset
import pytest

from cdc_connectors.errors import CodecError, ConfigError
from cdc_connectors.table.apply import apply_changes
from cdc_connectors.table.evolve import SchemaChangeError
from cdc_connectors.table.layout import AT, DELETES_BEFORE, DELETES_BEFORE_TYPE, TIME
from cdc_connectors.table.store import ConcurrentWrite, InterleavedWrite, TableSettings, Txn
from tests.table.changes import EPOCH, ORDERS, batch
from tests.table.conftest import read_all, rows

KEYED = TableSettings(["id"])
Store = Callable[[], Any]


def test_creates_updates_snapshots_and_deletes(make_store: Store) -> None:
    store = make_store()
    apply_changes(
        store,
        batch(
            [
                ("snapshot", 1, {"id": 1, "status": "new", "amount": Decimal("1.10")}),
                ("create", 2, {"id": 2, "status": "new", "amount": Decimal("2.00")}),
                ("create", 3, {"id": 3, "status": "new", "amount": None}),
            ]
        ),
        KEYED,
    )
    done = apply_changes(
        make_store(),
        batch(
            [
                ("update", 4, {"id": 1, "status": "paid", "amount": Decimal("1.10")}),
                ("delete", 5, {"id": 2}),
            ]
        ),
        KEYED,
    )
    assert (done.applied, done.stale) == (2, 0)
    assert rows(make_store(), "id", "status", "amount") == [
        {"id": 1, "status": "paid", "amount": Decimal("1.10")},
        {"id": 3, "status": "new", "amount": None},
    ]
    assert read_all(make_store()).schema.field("amount").type == pa.decimal128(10, 2)


def test_the_last_change_of_a_key_wins_by_its_order_not_its_place(make_store: Store) -> None:
    store = make_store()
    apply_changes(
        store,
        batch(
            [
                ("update", 7, {"id": 1, "status": "shipped"}),
                ("create", 5, {"id": 1, "status": "new"}),
                ("update", 6, {"id": 1, "status": "paid"}),
            ]
        ),
        KEYED,
    )
    assert rows(store, "id", "status", "_cdc_offset") == [
        {"id": 1, "status": "shipped", "_cdc_offset": 7}
    ]


def test_an_older_change_arriving_late_changes_nothing(make_store: Store) -> None:
    store = make_store()
    apply_changes(store, batch([("create", 10, {"id": 1, "status": "paid"})]), KEYED)
    apply_changes(store, batch([("delete", 20, {"id": 2})]), KEYED)
    late = apply_changes(
        store,
        batch(
            [("update", 9, {"id": 1, "status": "new"}), ("create", 15, {"id": 2, "status": "x"})]
        ),
        KEYED,
    )
    assert (late.applied, late.stale) == (0, 2)
    assert rows(store, "id", "status") == [{"id": 1, "status": "paid"}]


def test_a_key_deleted_and_created_again_comes_back(make_store: Store) -> None:
    store = make_store()
    apply_changes(
        store, batch([("create", 1, {"id": 1, "status": "a"}), ("delete", 2, {"id": 1})]), KEYED
    )
    assert rows(store) == []
    apply_changes(store, batch([("create", 3, {"id": 1, "status": "b"})]), KEYED)
    assert rows(store, "id", "status") == [{"id": 1, "status": "b"}]


def test_unset_columns_keep_the_value_of_the_key(make_store: Store) -> None:
    store = make_store()
    apply_changes(
        store, batch([("create", 1, {"id": 1, "status": "new", "amount": Decimal("5.00")})]), KEYED
    )
    apply_changes(
        store,
        batch(
            [
                ("update", 2, {"id": 1, "status": "paid"}, ["amount"]),
                ("create", 3, {"id": 2, "status": "new", "amount": Decimal("7.00")}),
                ("update", 4, {"id": 2, "amount": Decimal("8.00")}, ["status"]),
                ("update", 5, {"id": 2}, ["status", "amount"]),
            ]
        ),
        KEYED,
    )
    assert rows(store, "id", "status", "amount") == [
        {"id": 1, "status": "paid", "amount": Decimal("5.00")},
        {"id": 2, "status": "new", "amount": Decimal("8.00")},
    ]


def test_soft_deletes_keep_the_row_flagged(make_store: Store) -> None:
    soft = TableSettings(["id"], deletes="soft")
    store = make_store()
    apply_changes(store, batch([("create", 1, {"id": 1, "status": "new"})]), soft)
    apply_changes(store, batch([("delete", 2, {"id": 1})]), soft)
    (row,) = rows(store, "id", "status", "_cdc_deleted", "_cdc_deleted_at")
    assert (row["id"], row["status"], row["_cdc_deleted"]) == (1, "new", True)
    assert row["_cdc_deleted_at"].timestamp() == 1704067202
    apply_changes(store, batch([("update", 1, {"id": 1, "status": "stale"})]), soft)
    assert rows(store, "status", "_cdc_deleted") == [{"status": "new", "_cdc_deleted": True}]
    apply_changes(store, batch([("create", 3, {"id": 1, "status": "again"})]), soft)
    assert rows(store, "status", "_cdc_deleted", "_cdc_deleted_at") == [
        {"status": "again", "_cdc_deleted": False, "_cdc_deleted_at": None}
    ]


def test_history_keeps_every_version(make_store: Store) -> None:
    history = TableSettings(["id"], mode="history")
    store = make_store()
    apply_changes(
        store,
        batch(
            [("create", 1, {"id": 1, "status": "new"}), ("update", 2, {"id": 1, "status": "paid"})]
        ),
        history,
    )
    apply_changes(
        store,
        batch(
            [
                ("update", 3, {"id": 1, "status": "shipped"}),
                ("create", 4, {"id": 2, "status": "new"}),
            ]
        ),
        history,
    )
    apply_changes(
        store, batch([("delete", 5, {"id": 2}), ("update", 1, {"id": 1, "status": "old"})]), history
    )
    found = rows(store, "id", "status", "_cdc_valid_from", "_cdc_valid_to", "_cdc_is_current")
    seconds = [
        (
            r["id"],
            r["status"],
            int(r["_cdc_valid_from"].timestamp()) - 1704067200,
            None
            if r["_cdc_valid_to"] is None
            else int(r["_cdc_valid_to"].timestamp()) - 1704067200,
            r["_cdc_is_current"],
        )
        for r in found
    ]
    assert sorted(seconds) == [
        (1, "new", 1, 2, False),
        (1, "paid", 2, 3, False),
        (1, "shipped", 3, None, True),
        (2, "new", 4, 5, False),
    ]


def _versions_of(store: Any) -> list[tuple[Any, ...]]:
    """History rows as (id, status, from, to, current), times in seconds after EPOCH."""
    found = rows(store, "id", "status", "_cdc_valid_from", "_cdc_valid_to", "_cdc_is_current")

    def second(at: Any) -> int | None:
        return None if at is None else int(at.timestamp()) - 1704067200

    return sorted(
        (
            r["id"],
            r["status"],
            second(r["_cdc_valid_from"]),
            second(r["_cdc_valid_to"]),
            r["_cdc_is_current"],
        )
        for r in found
    )


def test_history_puts_a_late_change_in_its_place(make_store: Store) -> None:
    """A change older than the key's current version is the past version it was."""
    history = TableSettings(["id"], mode="history")
    store = make_store()
    apply_changes(
        store,
        batch([("create", 10, {"id": 1, "status": "a"}), ("update", 30, {"id": 1, "status": "c"})]),
        history,
    )
    late = apply_changes(store, batch([("update", 20, {"id": 1, "status": "b"})]), history)
    assert (late.applied, late.stale) == (1, 0)
    assert _versions_of(store) == [
        (1, "a", 10, 20, False),
        (1, "b", 20, 30, False),
        (1, "c", 30, None, True),
    ]
    replay = apply_changes(store, batch([("update", 20, {"id": 1, "status": "b"})]), history)
    assert (replay.applied, replay.stale) == (0, 1)
    # a late delete closes the version it followed; a late create before them all comes first
    apply_changes(
        store,
        batch([("delete", 25, {"id": 1}), ("create", 5, {"id": 1, "status": "z"})]),
        history,
    )
    assert _versions_of(store) == [
        (1, "a", 10, 20, False),
        (1, "b", 20, 25, False),
        (1, "c", 30, None, True),
        (1, "z", 5, 10, False),
    ]
    # after a delete already in the table: before it or after it, by its time
    apply_changes(store, batch([("delete", 40, {"id": 1})]), history)
    apply_changes(
        store,
        batch([("update", 35, {"id": 1, "status": "d"}), ("create", 50, {"id": 1, "status": "e"})]),
        history,
    )
    assert _versions_of(store)[2:] == [
        (1, "c", 30, 35, False),
        (1, "d", 35, 40, False),
        (1, "e", 50, None, True),
        (1, "z", 5, 10, False),
    ]


def test_a_key_of_several_columns(make_store: Store) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("region", pa.string()),
            pa.field("status", pa.string()),
        ]
    )
    keyed = TableSettings(["id", "region"])
    store = make_store()
    apply_changes(
        store,
        batch(
            [
                ("create", 1, {"id": 1, "region": "eu", "status": "a"}),
                ("create", 2, {"id": 1, "region": "us", "status": "b"}),
                ("create", 3, {"id": 2, "region": "eu", "status": "c"}),
            ],
            schema,
        ),
        keyed,
    )
    apply_changes(
        store,
        batch(
            [
                ("update", 4, {"id": 1, "region": "eu", "status": "a2"}),
                ("delete", 5, {"id": 2, "region": "eu"}),
            ],
            schema,
        ),
        keyed,
    )
    assert rows(store, "id", "region", "status") == [
        {"id": 1, "region": "eu", "status": "a2"},
        {"id": 1, "region": "us", "status": "b"},
    ]


def test_a_replayed_batch_changes_nothing(make_store: Store) -> None:
    store = make_store()
    first = batch(
        [("create", 1, {"id": 1, "status": "new"}), ("create", 2, {"id": 2, "status": "new"})]
    )
    assert apply_changes(store, first, KEYED, Txn("query-1", 0)).applied == 2
    apply_changes(store, batch([("delete", 3, {"id": 1})]), KEYED, Txn("query-1", 1))
    again = apply_changes(make_store(), first, KEYED, Txn("query-1", 0))
    assert again.replayed and again.applied == 0
    assert rows(store, "id") == [{"id": 2}]
    other = apply_changes(
        store, batch([("create", 4, {"id": 1, "status": "b"})]), KEYED, Txn("query-2", 0)
    )
    assert other.applied == 1 and not other.replayed


def _killed_on_tombstones(store: Any) -> Any:
    """``store``, its write killed as it is about to commit the tombstones."""
    real = store.replace

    def dies_on_tombstones(part: str, *args: Any, **kwargs: Any) -> None:
        if part == "tombstones":
            raise KeyboardInterrupt("killed")
        real(part, *args, **kwargs)

    store.replace = dies_on_tombstones
    return store


def test_a_batch_killed_between_its_two_commits_completes_when_replayed(make_store: Store) -> None:
    store = make_store()
    apply_changes(store, batch([("create", 1, {"id": 1, "status": "new"})]), KEYED, Txn("q", 0))
    deleting = batch([("delete", 2, {"id": 1})])
    killed = _killed_on_tombstones(make_store())
    with pytest.raises(KeyboardInterrupt):
        apply_changes(killed, deleting, KEYED, Txn("q", 1))
    assert rows(store) == []
    apply_changes(make_store(), deleting, KEYED, Txn("q", 1))
    stale = apply_changes(make_store(), batch([("create", 1, {"id": 1, "status": "old"})]), KEYED)
    assert stale.stale == 1 and rows(store) == []


def test_new_columns_are_added_and_types_widened(make_store: Store) -> None:
    narrow = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("n", pa.int32()),
            pa.field("f", pa.float32()),
            pa.field("d", pa.decimal128(10, 2)),
        ]
    )
    wide = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("n", pa.int64()),
            pa.field("f", pa.float64()),
            pa.field("d", pa.decimal128(14, 2)),
            pa.field("note", pa.string()),
        ]
    )
    store = make_store()
    apply_changes(
        store,
        batch([("create", 1, {"id": 1, "n": 5, "f": 1.5, "d": Decimal("1.25")})], narrow),
        KEYED,
    )
    apply_changes(
        store,
        batch(
            [
                (
                    "create",
                    2,
                    {"id": 2, "n": 2**40, "f": 1e300, "d": Decimal("123456789012.34"), "note": "x"},
                )
            ],
            wide,
        ),
        KEYED,
    )
    table = read_all(make_store())
    assert [table.schema.field(n).type for n in ("n", "f", "d", "note")] == [
        pa.int64(),
        pa.float64(),
        pa.decimal128(14, 2),
        pa.string(),
    ]
    assert rows(store, "id", "n", "d", "note") == [
        {"id": 1, "n": 5, "d": Decimal("1.25"), "note": None},
        {"id": 2, "n": 2**40, "d": Decimal("123456789012.34"), "note": "x"},
    ]
    # a narrower batch is cast up to the table's types
    apply_changes(
        store,
        batch([("update", 3, {"id": 1, "n": 6, "f": 2.5, "d": Decimal("2.50")})], narrow),
        KEYED,
    )
    assert rows(store, "n")[0] == {"n": 6}


def test_a_change_of_type_that_loses_values_is_refused_whole(make_store: Store) -> None:
    store = make_store()
    apply_changes(store, batch([("create", 1, {"id": 1, "status": "new"})]), KEYED)
    retyped = pa.schema([pa.field("id", pa.int64()), pa.field("status", pa.int64())])
    with pytest.raises(SchemaChangeError, match="column 'status' is string in the table and int64"):
        apply_changes(
            store,
            batch(
                [("update", 2, {"id": 1, "status": 7}), ("create", 3, {"id": 9, "status": 1})],
                retyped,
            ),
            KEYED,
        )
    assert rows(store, "id", "status") == [{"id": 1, "status": "new"}]
    scaled = pa.schema([pa.field("id", pa.int64()), pa.field("amount", pa.decimal128(10, 2))])
    apply_changes(
        store, batch([("update", 4, {"id": 1, "amount": Decimal("1.00")})], scaled), KEYED
    )
    rescaled = pa.schema([pa.field("id", pa.int64()), pa.field("amount", pa.decimal128(12, 3))])
    with pytest.raises(SchemaChangeError, match="'amount'"):
        apply_changes(
            store, batch([("update", 5, {"id": 1, "amount": Decimal("1.001")})], rescaled), KEYED
        )


def test_keys_are_required_and_kept(make_store: Store) -> None:
    with pytest.raises(ConfigError, match="key columns"):
        apply_changes(make_store(), batch([("create", 1, {"id": 1})]), TableSettings(["nope"]))
    apply_changes(make_store(), batch([("create", 1, {"id": 1})]), KEYED)
    with pytest.raises(ConfigError, match=r"key columns are \['id'\], not \['status'\]"):
        apply_changes(
            make_store(),
            batch([("create", 2, {"id": 2, "status": "x"})]),
            TableSettings(["status"]),
        )
    with pytest.raises(ConfigError, match="mode 'upsert'"):
        apply_changes(
            make_store(), batch([("create", 2, {"id": 2})]), TableSettings(["id"], mode="history")
        )
    with pytest.raises(CodecError, match="no value for key column 'id'"):
        apply_changes(make_store(), batch([("create", 2, {"status": "x"})]), KEYED)


def test_nothing_is_written_for_a_batch_of_stale_changes(make_store: Store) -> None:
    store = make_store()
    apply_changes(store, batch([("create", 5, {"id": 1, "status": "a"})]), KEYED)
    before = _versions(store)
    assert apply_changes(store, batch([("update", 4, {"id": 1, "status": "b"})]), KEYED).stale == 1
    assert _versions(store) == before


def _versions(store: Any) -> Any:
    from cdc_connectors.table.delta import DeltaStore

    if isinstance(store, DeltaStore):
        return store._table("rows").version()
    return store._table("rows").current_snapshot().snapshot_id


def _every_state(store: Any) -> list[list[int]]:
    """The ids of every version of the rows a reader can travel to, oldest first."""
    from cdc_connectors.table.delta import DeltaStore

    if isinstance(store, DeltaStore):
        from deltalake import DeltaTable

        uri = store._uri("rows")
        last = DeltaTable(uri).version()
        states = []
        for version in range(last + 1):
            files = DeltaTable(uri, version=version).file_uris()
            ids = (
                pa.dataset.dataset(files, format="parquet").to_table().column("id") if files else []
            )
            states.append(sorted(pa.array(ids).to_pylist()) if files else [])
        return states
    table = store.table()
    return [
        sorted(table.scan(snapshot_id=snap.snapshot_id).to_arrow().column("id").to_pylist())
        for snap in table.snapshots()
    ]


def test_each_write_is_one_version_and_every_version_a_state_of_the_database(
    make_store: Store,
) -> None:
    """Time travel never lands between the two halves of a write (Iceberg's own overwrite
    is a delete snapshot, then an append)."""
    store = make_store()
    apply_changes(store, batch([("create", 1, {"id": 1}), ("create", 2, {"id": 2})]), KEYED)
    apply_changes(store, batch([("update", 3, {"id": 1, "status": "x"})]), KEYED)
    apply_changes(store, batch([("delete", 4, {"id": 2}), ("create", 5, {"id": 3})]), KEYED)
    states = [s for s in _every_state(make_store()) if s]  # (Delta's first: the empty table)
    assert states == [[1, 2], [1, 2], [1, 3]]


def test_orders_schema_is_the_tests_schema() -> None:
    assert ORDERS.names == ["id", "status", "amount"]


def test_a_writer_whose_table_changed_since_it_read_fails_without_writing(
    make_store: Store,
) -> None:
    apply_changes(make_store(), batch([("create", 1, {"id": 1, "status": "new"})]), KEYED)
    racing = make_store()
    real = racing.replace

    def another_writer_first(part: str, *args: Any, **kwargs: Any) -> None:
        if part == "rows":  # another writer commits between this one's read and its commit
            apply_changes(make_store(), batch([("update", 9, {"id": 1, "status": "late"})]), KEYED)
        real(part, *args, **kwargs)

    racing.replace = another_writer_first
    with pytest.raises(ConcurrentWrite, match="another writer changed the table"):
        apply_changes(racing, batch([("update", 5, {"id": 1, "status": "older"})]), KEYED)
    assert rows(make_store(), "id", "status", "_cdc_offset") == [
        {"id": 1, "status": "late", "_cdc_offset": 9}
    ]


def test_numbers_of_another_type_that_fit_the_column_are_cast_to_it(make_store: Store) -> None:
    doubles = pa.schema([pa.field("id", pa.int64()), pa.field("price", pa.float64())])
    integers = pa.schema([pa.field("id", pa.int64()), pa.field("price", pa.int64())])
    store = make_store()
    apply_changes(store, batch([("create", 1, {"id": 1, "price": 10.5})], doubles), KEYED)
    apply_changes(store, batch([("update", 2, {"id": 1, "price": 12})], integers), KEYED)
    assert rows(store, "price") == [{"price": 12.0}]
    with pytest.raises(SchemaChangeError, match="'price'"):  # 2**53 + 1 is no double
        apply_changes(store, batch([("update", 3, {"id": 1, "price": 2**53 + 1})], integers), KEYED)
    assert rows(store, "price") == [{"price": 12.0}]
    cents = pa.schema([pa.field("id", pa.int64()), pa.field("d", pa.decimal128(4, 2))])
    tenths = pa.schema([pa.field("id", pa.int64()), pa.field("d", pa.decimal128(3, 1))])
    apply_changes(store, batch([("update", 4, {"id": 1, "d": Decimal("10.25")})], cents), KEYED)
    apply_changes(store, batch([("update", 5, {"id": 1, "d": Decimal("10.5")})], tenths), KEYED)
    assert rows(store, "d") == [{"d": Decimal("10.50")}]


def test_integers_that_fit_a_decimal_key_column_are_cast_to_it(make_store: Store) -> None:
    decimal_key = pa.schema([pa.field("id", pa.decimal128(2, 1)), pa.field("status", pa.string())])
    integer_key = pa.schema([pa.field("id", pa.int64()), pa.field("status", pa.string())])
    store = make_store()
    apply_changes(
        store, batch([("create", 1, {"id": Decimal("2.5"), "status": "a"})], decimal_key), KEYED
    )
    apply_changes(store, batch([("create", 2, {"id": 3, "status": "b"})], integer_key), KEYED)
    assert rows(store, "id", "status") == [
        {"id": Decimal("2.5"), "status": "a"},
        {"id": Decimal("3.0"), "status": "b"},
    ]


def test_a_key_column_widens_in_the_rows_and_the_tombstones(make_store: Store) -> None:
    narrow = pa.schema([pa.field("id", pa.int32()), pa.field("status", pa.string())])
    wide = pa.schema([pa.field("id", pa.int64()), pa.field("status", pa.string())])
    store = make_store()
    apply_changes(
        store,
        batch([("create", 1, {"id": 1, "status": "a"}), ("delete", 2, {"id": 1})], narrow),
        KEYED,
    )
    apply_changes(
        store,
        batch(
            [
                ("create", 3, {"id": 2**40, "status": "b"}),
                ("create", 1, {"id": 1, "status": "old"}),
            ],
            wide,
        ),
        KEYED,
    )
    assert rows(make_store(), "id", "status") == [{"id": 2**40, "status": "b"}]
    assert read_all(make_store()).schema.field("id").type == pa.int64()


def test_time_keys_are_compared_exactly(make_store: Store) -> None:
    import datetime as dt

    timed = pa.schema([pa.field("id", pa.timestamp("us")), pa.field("status", pa.string())])
    key = dt.datetime(2024, 1, 1, 0, 0, 0, 500)  # below a millisecond: Delta's bounds cut it
    store = make_store()
    apply_changes(store, batch([("create", 10, {"id": key, "status": "new"})], timed), KEYED)
    late = apply_changes(store, batch([("update", 5, {"id": key, "status": "old"})], timed), KEYED)
    assert late.stale == 1
    assert rows(make_store(), "status") == [{"status": "new"}]


def test_names_and_keys_no_format_keeps_are_refused_before_anything_is_written(
    make_store: Store,
) -> None:
    dotted = pa.schema([pa.field("id", pa.int64()), pa.field("a.b", pa.string())])
    with pytest.raises(SchemaChangeError, match=r"'a\.b'"):
        apply_changes(make_store(), batch([("create", 1, {"id": 1, "a.b": "x"})], dotted), KEYED)
    assert make_store().schema() is None  # no table made
    floats = pa.schema([pa.field("id", pa.float64())])
    with pytest.raises(ConfigError, match="key column 'id' is double"):
        apply_changes(make_store(), batch([("create", 1, {"id": 1.5})], floats), KEYED)
    assert make_store().schema() is None
    apply_changes(make_store(), batch([("create", 1, {"id": 1, "status": "a"})]), KEYED)
    cased = pa.schema([pa.field("id", pa.int64()), pa.field("STATUS", pa.string())])
    with pytest.raises(SchemaChangeError, match="'STATUS' differs from column 'status'"):
        apply_changes(make_store(), batch([("update", 2, {"id": 1, "STATUS": "b"})], cased), KEYED)


def _logged(*changes: tuple[str, int, dict[str, Any], str, int]) -> pa.Table:
    """Changes ``(op, lsn, row, file, line)`` ordered as ``orderBy: auto`` orders records
    read from files with a log position: each happened ``lsn`` seconds after EPOCH."""
    parts = []
    for op, lsn, row, where, line in changes:
        part = batch([(op, line, row)], stream=f"lsn {lsn:020d} {where}")
        at = part.schema.get_field_index("_cdc_at")
        parts.append(part.set_column(at, "_cdc_at", batch([(op, lsn, row)]).column("_cdc_at")))
    return pa.concat_tables(parts)


HISTORY = TableSettings(["id"], mode="history")


def test_history_a_write_killed_between_its_commits_leaves_no_version_twice(
    make_store: Store,
) -> None:
    changes = _logged(
        ("create", 10, {"id": 1, "status": "new"}, "a.json", 1),
        ("update", 20, {"id": 1, "status": "paid"}, "a.json", 2),
        ("delete", 30, {"id": 1}, "a.json", 3),
        ("create", 40, {"id": 2, "status": "new"}, "a.json", 4),
    )
    killed = _killed_on_tombstones(make_store())
    with pytest.raises(KeyboardInterrupt):
        apply_changes(killed, changes, HISTORY)  # a batch write: no transaction id
    again = apply_changes(make_store(), changes, HISTORY)
    assert again.applied == 1  # the delete, whose tombstone the killed write left out
    expected = [
        (1, "new", 10, 20, False),
        (1, "paid", 20, 30, False),
        (2, "new", 40, None, True),
    ]
    assert _versions_of(make_store()) == expected
    # the tombstone the killed write left out is there: an older create stays in the past
    late = apply_changes(
        make_store(), _logged(("create", 5, {"id": 1, "status": "x"}, "b.json", 1)), HISTORY
    )
    assert late.applied == 1
    with_late = sorted([(1, "x", 5, 10, False), *expected])
    assert _versions_of(make_store()) == with_late
    assert apply_changes(make_store(), changes, HISTORY).applied == 0
    assert _versions_of(make_store()) == with_late


def test_two_changes_of_a_key_at_one_log_position_both_apply(make_store: Store) -> None:
    """A log position does not tell changes apart (MySQL's compressed binlog events give
    their rows the payload's position; PostgreSQL's multi-row inserts share an LSN): the
    record's position does."""
    at_once = _logged(
        ("create", 10, {"id": 1, "status": "new"}, "a.json", 1),
        ("update", 10, {"id": 1, "status": "paid"}, "a.json", 2),
    )
    store = make_store()
    apply_changes(store, at_once.slice(0, 1), KEYED)
    apply_changes(make_store(), at_once.slice(1, 1), KEYED)
    assert rows(store, "id", "status") == [{"id": 1, "status": "paid"}]


def test_history_an_old_delete_replayed_after_the_key_came_back_changes_no_version(
    make_store: Store,
) -> None:
    store = make_store()
    delete = _logged(("delete", 20, {"id": 1}, "a.json", 2))
    apply_changes(store, _logged(("create", 10, {"id": 1, "status": "new"}, "a.json", 1)), HISTORY)
    apply_changes(store, delete, HISTORY)
    apply_changes(store, _logged(("create", 30, {"id": 1, "status": "back"}, "a.json", 3)), HISTORY)
    before = _versions_of(store)
    apply_changes(make_store(), delete, HISTORY)
    assert (
        _versions_of(make_store())
        == before
        == [
            (1, "back", 30, None, True),
            (1, "new", 10, 20, False),
        ]
    )


@pytest.mark.parametrize("txn", [None, Txn("query", 7)], ids=["batch", "micro-batch"])
def test_a_row_another_writer_brings_back_between_a_batchs_commits_is_removed(
    make_store: Store, txn: Txn | None
) -> None:
    """Writer B deletes a key; writer A, with an older create of it, runs whole between B's
    rows and B's tombstones and brings the row back: B applies its deletes again."""
    apply_changes(make_store(), batch([("create", 10, {"id": 1, "status": "new"})]), KEYED)
    deleting = batch([("delete", 100, {"id": 1})])
    stale = batch([("create", 50, {"id": 1, "status": "stale"})])
    writer_b = make_store()
    real = writer_b.replace
    others = [stale, batch([("create", 60, {"id": 2, "status": "other"})])]

    def others_in_between(part: str, *args: Any, **kwargs: Any) -> None:
        if part == "tombstones" and others:
            apply_changes(make_store(), others.pop(0), KEYED)  # writer A, whole
        real(part, *args, **kwargs)

    writer_b.replace = others_in_between
    with pytest.raises(InterleavedWrite, match="twice"):  # and between the repair's too
        apply_changes(writer_b, deleting, KEYED, txn)
    assert rows(make_store(), "id") == [{"id": 2}]
    writer_b = make_store()
    real = writer_b.replace
    others[:] = [stale]
    writer_b.replace = others_in_between
    apply_changes(writer_b, deleting, KEYED, txn)
    assert rows(make_store(), "id") == [{"id": 2}]
    assert apply_changes(make_store(), stale, KEYED).stale == 1


def test_history_a_batch_that_deletes_and_creates_again_replayed_changes_nothing(
    make_store: Store,
) -> None:
    changes = batch(
        [
            ("create", 120, {"id": 2, "status": "b1"}),
            ("delete", 130, {"id": 2}),
            ("create", 140, {"id": 2, "status": "b2"}),
        ]
    )
    first = apply_changes(make_store(), changes, HISTORY)
    versions = _versions_of(make_store())
    assert first.applied == 3 and [v[1:] for v in versions] == [
        ("b1", 120, 130, False),
        ("b2", 140, None, True),
    ]
    for _ in range(2):
        again = apply_changes(make_store(), changes, HISTORY)
        assert (again.applied, again.stale) == (0, 3)
        assert _versions_of(make_store()) == versions
    # a delete where the key is gone already, before it came back, closes nothing: the
    # version after it notes it (a create between the two, arriving late, ends at it)
    gone = apply_changes(make_store(), batch([("delete", 135, {"id": 2})]), HISTORY)
    assert (gone.applied, _versions_of(make_store())) == (1, versions)
    again = apply_changes(make_store(), batch([("delete", 135, {"id": 2})]), HISTORY)
    assert (again.applied, again.stale) == (0, 1)
    late = apply_changes(make_store(), batch([("create", 132, {"id": 2, "status": "x"})]), HISTORY)
    assert late.applied == 1
    assert [v[1:] for v in _versions_of(make_store())] == [
        ("b1", 120, 130, False),
        ("b2", 140, None, True),
        ("x", 132, 135, False),
    ]


def test_history_deletes_that_closed_nothing_close_older_versions_arriving_late(
    make_store: Store,
) -> None:
    """Two deletes of a key the table never held, then older changes: each is closed by the
    delete after it (the table's tombstone notes the first delete, which closed nothing)."""
    deletes = batch([("delete", 80, {"id": 1}), ("delete", 100, {"id": 1})])
    assert apply_changes(make_store(), deletes, HISTORY).applied == 2
    assert _versions_of(make_store()) == []
    late = batch([("create", 60, {"id": 1, "status": "a"})])
    assert apply_changes(make_store(), late, HISTORY).applied == 1
    assert _versions_of(make_store()) == [(1, "a", 60, 80, False)]
    between = batch([("create", 90, {"id": 1, "status": "b"})])
    assert apply_changes(make_store(), between, HISTORY).applied == 1
    expected = [(1, "a", 60, 80, False), (1, "b", 90, 100, False)]
    assert _versions_of(make_store()) == expected
    for replayed in (deletes, late, between):
        assert apply_changes(make_store(), replayed, HISTORY).applied == 0
    assert _versions_of(make_store()) == expected
    back = batch([("create", 120, {"id": 1, "status": "c"})])
    assert apply_changes(make_store(), back, HISTORY).applied == 1
    assert _versions_of(make_store()) == [*expected, (1, "c", 120, None, True)]


def test_history_a_delete_that_closed_a_version_notes_nothing(make_store: Store) -> None:
    """Deletes that close a version are known by their gap: a key deleted and created
    again, batch after batch, stays on the planner's way and the table gets no notes."""
    for change in (
        ("create", 10, {"id": 1, "status": "a"}),
        ("delete", 20, {"id": 1}),
        ("create", 30, {"id": 1, "status": "b"}),
        ("delete", 40, {"id": 1}),
        ("delete", 40, {"id": 1}),  # (replayed: Kafka's tombstone after the delete event)
    ):
        apply_changes(make_store(), batch([change]), HISTORY)
    assert DELETES_BEFORE not in make_store().schema().names
    assert _versions_of(make_store()) == [(1, "a", 10, 20, False), (1, "b", 30, 40, False)]


def test_history_a_late_delete_before_a_gap_leaves_that_gap_s_delete_closing_later_versions(
    make_store: Store,
) -> None:
    """c10 a, d15, c18 b, d20, c30 c applied c10, c30, d20, d15, c18: d15 arriving late
    closes a at 15; d20, which closed it, is kept by its time and closes b."""
    history = {
        "c10": ("create", 10, {"id": 1, "status": "a"}),
        "d15": ("delete", 15, {"id": 1}),
        "c18": ("create", 18, {"id": 1, "status": "b"}),
        "d20": ("delete", 20, {"id": 1}),
        "c30": ("create", 30, {"id": 1, "status": "c"}),
    }
    for name in ("c10", "c30", "d20", "d15", "c18"):
        apply_changes(make_store(), batch([history[name]]), HISTORY)
    assert _versions_of(make_store()) == [
        (1, "a", 10, 15, False),
        (1, "b", 18, 20, False),
        (1, "c", 30, None, True),
    ]


def test_history_notes_reach_tombstones_a_killed_evolution_left_without_them(
    make_store: Store,
) -> None:
    """The column added to the rows, and the write killed before the tombstones got it:
    the next batch that notes a delete adds it there too, and loses no note."""
    from cdc_connectors.table.evolve import Evolution

    apply_changes(make_store(), batch([("create", 1, {"id": 2, "status": "x"})]), HISTORY)
    store = make_store()
    table_of = store._table

    def killed_at_the_tombstones(part: str) -> Any:
        if part == "tombstones":
            raise KeyboardInterrupt("killed")
        return table_of(part)

    store._table = killed_at_the_tombstones
    with pytest.raises(KeyboardInterrupt):
        store.evolve(Evolution([pa.field(DELETES_BEFORE, DELETES_BEFORE_TYPE)], []))
    assert DELETES_BEFORE in make_store().schema().names
    deletes = batch([("delete", 80, {"id": 1}), ("delete", 100, {"id": 1})])
    assert apply_changes(make_store(), deletes, HISTORY).applied == 2
    late = batch([("create", 60, {"id": 1, "status": "a"})])
    assert apply_changes(make_store(), late, HISTORY).applied == 1
    assert [v for v in _versions_of(make_store()) if v[0] == 1] == [(1, "a", 60, 80, False)]


def test_history_deletes_of_one_transaction_close_what_arrives_between_them_later(
    make_store: Store,
) -> None:
    """u10 s0 @0, then one transaction @10 (d20, u40 s3, d50), then d60 @20, applied as
    [d20, d50], [u10, d60], [u40]: s3 is closed by d50 at its own time, not by d60."""

    def timed(*changes: tuple[Any, ...]) -> pa.Table:
        table = batch([c[:3] for c in changes])
        times = pa.array([EPOCH + dt.timedelta(seconds=c[3]) for c in changes], TIME)
        return table.set_column(table.schema.get_field_index(AT), AT, times)

    u10 = ("update", 10, {"id": 1, "status": "s0"}, 0)
    d20, d50, d60 = (("delete", o, {"id": 1}, t) for o, t in ((20, 10), (50, 10), (60, 20)))
    u40 = ("update", 40, {"id": 1, "status": "s3"}, 10)
    for arriving in ((d20, d50), (u10, d60), (u40,)):
        apply_changes(make_store(), timed(*arriving), HISTORY)
    assert _versions_of(make_store()) == [(1, "s0", 0, 10, False), (1, "s3", 10, 10, False)]


def test_history_a_delete_and_create_again_at_one_time_replayed_changes_nothing(
    make_store: Store,
) -> None:
    """A key's update in one transaction (a primary key changed): its delete and its
    create again have one time, so no gap tells the delete in the versions."""
    changes = batch(
        [
            ("create", 120, {"id": 2, "status": "b1"}),
            ("delete", 130, {"id": 2}),
            ("create", 140, {"id": 2, "status": "b2"}),
        ]
    )
    times = pa.array([EPOCH + dt.timedelta(seconds=s) for s in (120, 130, 130)], TIME)
    changes = changes.set_column(changes.schema.get_field_index(AT), AT, times)
    assert apply_changes(make_store(), changes, HISTORY).applied == 3
    versions = _versions_of(make_store())
    again = apply_changes(make_store(), changes, HISTORY)
    assert (again.applied, again.stale, _versions_of(make_store())) == (0, 3, versions)


def test_history_keeps_two_changes_at_one_log_position(make_store: Store) -> None:
    store = make_store()
    apply_changes(
        store,
        _logged(
            ("create", 10, {"id": 1, "status": "new"}, "a.json", 1),
            ("update", 10, {"id": 1, "status": "paid"}, "a.json", 2),
        ),
        HISTORY,
    )
    assert [(v[1], v[4]) for v in _versions_of(store)] == [("new", False), ("paid", True)]


def _data_files(store: Any) -> int:
    from cdc_connectors.table.delta import DeltaStore

    if isinstance(store, DeltaStore):
        from deltalake import DeltaTable

        return len(DeltaTable(store._uri("rows")).file_uris())
    return len(list(store.table().scan().plan_files()))


def test_small_files_fold_together_as_batches_go(
    make_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's batches each add a small file: once the table holds FOLD_AT of them, a
    batch folds FOLD_MOST into one in its own commit; every version holds the rows of the
    database then, and no row is lost or doubled by a fold."""
    from cdc_connectors.table import folding

    monkeypatch.setattr(folding, "FOLD_AT", 4)
    monkeypatch.setattr(folding, "FOLD_MOST", 4)
    database: dict[int, str] = {}
    counts = []
    for number in range(14):
        changes = [("create", 2 * number + 1, {"id": 100 + number, "status": f"s{number}"})]
        if number % 3 == 2:  # and now and then an update of an older key, and a delete
            changes.append(("update", 2 * number + 2, {"id": 100, "status": f"u{number}"}))
        if number == 9:
            changes.append(("delete", 2 * number + 2, {"id": 101}))
        apply_changes(make_store(), batch(changes), KEYED, Txn("stream", number))
        for change in changes:
            if change[0] == "delete":
                database.pop(change[2]["id"])
            else:
                database[change[2]["id"]] = change[2]["status"]
        found = {r["id"]: r["status"] for r in rows(make_store(), "id", "status")}
        assert found == database, number
        counts.append(_data_files(make_store()))
    assert max(counts) <= 4 + 2, counts  # without folding: a file a batch
    assert counts[-1] < 14 // 2, counts
    states = _every_state(make_store())
    assert [len(set(s)) for s in states] == [len(s) for s in states]  # no row twice
    assert states[-1] == sorted(database)


def test_a_fold_moves_rows_and_says_so_to_delta_streaming_readers(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remove and add actions of a fold carry dataChange false (as OPTIMIZE's do): a
    Delta streaming reader reads the rows once; the batch's own new rows are a change."""
    import json

    from cdc_connectors.table import folding
    from cdc_connectors.table.delta import DeltaStore

    monkeypatch.setattr(folding, "FOLD_AT", 3)
    store = DeltaStore(str(tmp_path / "orders"))
    for number in range(4):
        apply_changes(store, batch([("create", number + 1, {"id": number})]), KEYED)
    log = sorted((tmp_path / "orders" / "_delta_log").glob("*.json"))[-1]  # the last batch's
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    removes = [a["remove"] for a in actions if "remove" in a]
    adds = [a["add"] for a in actions if "add" in a]
    assert len(removes) == 3 and not any(r["dataChange"] for r in removes)
    assert sorted(a["dataChange"] for a in adds) == [False, True]
    moved = next(a for a in adds if not a["dataChange"])
    assert json.loads(moved["stats"])["numRecords"] == 3


def test_files_a_batch_may_touch_but_does_not_rewrite_fold_too(
    make_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long text keys (no statistics a file can be skipped by) and batches of more keys
    than Iceberg's scan filters files by (200) make every file one a batch may touch: the
    files it does not rewrite still fold, into one file."""
    import uuid

    from cdc_connectors.table import folding

    monkeypatch.setattr(folding, "FOLD_AT", 3)
    monkeypatch.setattr(folding, "FOLD_MOST", 3)
    schema = pa.schema([pa.field("id", pa.string()), pa.field("status", pa.string())])
    held: set[str] = set()
    counts = []
    for number in range(6):
        keys = [str(uuid.UUID(int=number * 1000 + k)) for k in range(250)]
        changes = [("create", number * 1000 + k, {"id": key}) for k, key in enumerate(keys)]
        apply_changes(make_store(), batch(changes, schema), KEYED, Txn("stream", number))
        held.update(keys)
        counts.append(_data_files(make_store()))
    assert counts == [1, 2, 3, 2, 3, 2], counts  # three small files: one
    found = [r["id"] for r in rows(make_store(), "id")]
    assert sorted(found) == sorted(held)


def test_nested_names_a_format_spells_otherwise_keep_their_values_when_files_are_rewritten(
    make_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Iceberg's writer spells a nested field ``a-b`` as ``a_x2Db`` in its files: a file
    rewritten (an update beside the row) or folded keeps the field's values."""
    from cdc_connectors.table import folding

    monkeypatch.setattr(folding, "FOLD_AT", 3)
    monkeypatch.setattr(folding, "FOLD_MOST", 3)
    inner = pa.struct([pa.field("a-b", pa.string()), pa.field("ok", pa.string())])
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("s", inner),
            pa.field("l", pa.list_(pa.struct([pa.field("c d", pa.int64())]))),
        ]
    )

    def row(key: int) -> dict[str, Any]:
        return {"id": key, "s": {"a-b": f"v{key}", "ok": f"k{key}"}, "l": [{"c d": key}]}

    first = [("create", 1, row(0)), ("create", 2, row(1))]
    apply_changes(make_store(), batch(first, schema), KEYED, Txn("s", 0))
    for number in range(1, 5):  # an update beside row 1, then new rows till a fold
        changes = [("create", 10 + number, row(10 + number))]
        if number == 1:
            changes.append(("update", 3, row(0)))
        apply_changes(make_store(), batch(changes, schema), KEYED, Txn("s", number))
    found = rows(make_store(), "id", "s", "l")
    assert found == [row(r["id"]) for r in found]
    assert [r["id"] for r in found] == [0, 1, 11, 12, 13, 14]


def test_a_delta_file_folded_again_and_again_keeps_whole_row_groups(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    from cdc_connectors.table import folding
    from cdc_connectors.table.delta import DeltaStore

    monkeypatch.setattr(folding, "FOLD_AT", 3)
    monkeypatch.setattr(folding, "FOLD_MOST", 3)
    store = DeltaStore(str(tmp_path / "orders"))
    for number in range(30):
        changes = [("create", 5 * number + k, {"id": 5 * number + k}) for k in range(5)]
        apply_changes(store, batch(changes), KEYED, Txn("s", number))
    groups = [pq.ParquetFile(f).metadata.num_row_groups for f in DeltaTable(store.path).file_uris()]
    assert max(groups) == 1, groups  # not a row group a fold of a few rows


def test_iceberg_files_older_than_a_nested_field_are_still_read_a_batch_at_a_time(
    tmp_path: Any,
) -> None:
    """A nested field another engine added since a file was written is null in it: the file
    is still read by field id, a batch at a time, not whole by pyiceberg's reader."""
    from unittest import mock

    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.types import LongType

    from cdc_connectors.table.iceberg import IcebergStore

    schema = pa.schema(
        [pa.field("id", pa.int64()), pa.field("s", pa.struct([pa.field("a", pa.string())]))]
    )
    store = IcebergStore(str(tmp_path / "warehouse"), "shop.orders")
    first = [("create", 1, {"id": 0, "s": {"a": "x"}}), ("create", 2, {"id": 1, "s": {"a": "y"}})]
    apply_changes(store, batch(first, schema), KEYED)
    with store.table().update_schema() as update:
        update.add_column(("s", "b"), LongType())
    wider = pa.schema(
        [schema.field("id"), pa.field("s", pa.struct([("a", pa.string()), ("b", pa.int64())]))]
    )
    whole = mock.patch.object(ArrowScan, "to_table", side_effect=AssertionError("read whole"))
    with whole:
        apply_changes(
            IcebergStore(str(tmp_path / "warehouse"), "shop.orders"),
            batch([("update", 3, {"id": 0, "s": {"a": "w", "b": 9}})], wider),
            KEYED,
        )
    assert rows(store, "id", "s") == [
        {"id": 0, "s": {"a": "w", "b": 9}},
        {"id": 1, "s": {"a": "y", "b": None}},
    ]


def test_history_deletes_at_one_time_are_told_apart_by_their_order(make_store: Store) -> None:
    """a @0, then d20 b30 d40 of one transaction @5, then c @9: b was valid for no time.
    Applied as a, d20, d40, c, b (the order the time alone got wrong: d40 was taken for
    the delete that closed a, and lost), each of them a batch."""

    def timed(*changes: tuple[Any, ...]) -> pa.Table:
        table = batch([c[:3] for c in changes])
        times = pa.array([EPOCH + dt.timedelta(seconds=c[3]) for c in changes], TIME)
        return table.set_column(table.schema.get_field_index(AT), AT, times)

    a = ("create", 10, {"id": 1, "status": "a"}, 0)
    d20, d40 = ("delete", 20, {"id": 1}, 5), ("delete", 40, {"id": 1}, 5)
    b = ("create", 30, {"id": 1, "status": "b"}, 5)
    c = ("create", 50, {"id": 1, "status": "c"}, 9)
    for change in (a, d20, d40, c, b):
        apply_changes(make_store(), timed(change), HISTORY)
    expected = [(1, "a", 0, 5, False), (1, "b", 5, 5, False), (1, "c", 9, None, True)]
    assert _versions_of(make_store()) == expected
    closed = {
        r["status"]: r["_cdc_closed_by"] for r in rows(make_store(), "status", "_cdc_closed_by")
    }
    assert closed == {
        "a": {"stream": "orders/0", "offset": 20},
        "b": {"stream": "orders/0", "offset": 40},
        "c": None,
    }


def test_history_a_table_made_before_deletes_noted_their_order_gains_the_note(
    make_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A history table made without ``_cdc_closed_by`` gains it with its next batch: the
    versions closed before keep none (told by their time, as before), later deletes note
    their order, and an old delete delivered again changes nothing."""
    import cdc_connectors.table.apply as applying
    from cdc_connectors.table.plan import bookkeeping_fields

    def without_note(*args: Any) -> list[pa.Field]:
        return [f for f in bookkeeping_fields(*args) if f.name != "_cdc_closed_by"]

    def timed(*changes: tuple[Any, ...]) -> pa.Table:
        table = batch([c[:3] for c in changes])
        times = pa.array([EPOCH + dt.timedelta(seconds=c[3]) for c in changes], TIME)
        return table.set_column(table.schema.get_field_index(AT), AT, times)

    a, d20 = ("create", 10, {"id": 1, "status": "a"}, 0), ("delete", 20, {"id": 1}, 5)
    b, d40 = ("create", 30, {"id": 1, "status": "b"}, 6), ("delete", 40, {"id": 1}, 7)
    c = ("create", 50, {"id": 1, "status": "c"}, 9)
    with monkeypatch.context() as old:
        old.setattr(applying, "bookkeeping_fields", without_note)
        old.setattr(applying, "CLOSED_BY", "_cdc_stream")  # (not added: the earlier release)
        apply_changes(make_store(), timed(a, d20), HISTORY)
    assert "_cdc_closed_by" not in read_all(make_store()).schema.names
    for changes in ([b], [d40], [d20], [c], [d40]):
        apply_changes(make_store(), timed(*changes), HISTORY)
    expected = [(1, "a", 0, 5, False), (1, "b", 6, 7, False), (1, "c", 9, None, True)]
    assert _versions_of(make_store()) == expected
    closed = {
        r["status"]: r["_cdc_closed_by"] for r in rows(make_store(), "status", "_cdc_closed_by")
    }
    assert closed == {"a": None, "b": {"stream": "orders/0", "offset": 40}, "c": None}
