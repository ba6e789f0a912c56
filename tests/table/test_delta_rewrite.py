"""Delta's copy-on-write: files rewritten only where a row goes, with statistics readers trust."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from cdc_connectors.table.apply import apply_changes
from cdc_connectors.table.batches import ROW_GROUP
from cdc_connectors.table.delta import DeltaStore
from cdc_connectors.table.delta_rewrite import Statistics, row_groups
from cdc_connectors.table.store import BrokenConstraint, TableSettings
from tests.table.changes import batch
from tests.table.conftest import read_all

KEYED = TableSettings(["id"])


def _files(path: Path) -> dict[str, dict[str, object]]:
    from deltalake import DeltaTable

    actions = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pylist()
    return {action["path"]: action for action in actions}


def _created(ids: range, first: int) -> pa.Table:
    return batch([("create", first + n, {"id": i, "status": f"s{i}"}) for n, i in enumerate(ids)])


def test_a_file_none_of_whose_rows_goes_stays_as_it_is(tmp_path: Path) -> None:
    store = DeltaStore(str(tmp_path / "t"))
    apply_changes(store, _created(range(0, 10), 0), KEYED)
    apply_changes(store, _created(range(100, 110), 100), KEYED)
    before = _files(tmp_path / "t")
    low = next(p for p, a in before.items() if a["min.id"] == 0)
    high = next(p for p, a in before.items() if a["min.id"] == 100)
    apply_changes(store, batch([("update", 200, {"id": 105, "status": "x"})]), KEYED)
    after = _files(tmp_path / "t")
    assert low in after  # untouched: the keys 0..9 are not in the batch
    assert high not in after  # rewritten without 105, whose new row is in a file of its own
    assert sorted(a["num_records"] for a in after.values()) == [1, 9, 10]
    assert {r["status"] for r in read_all(store).to_pylist() if r["id"] == 105} == {"x"}


def test_an_independent_reader_filtering_by_key_finds_every_row(tmp_path: Path) -> None:
    """The statistics written let readers skip files: wrong bounds would lose rows here."""
    from deltalake import DeltaTable, QueryBuilder

    store = DeltaStore(str(tmp_path / "t"))
    apply_changes(store, _created(range(0, 50), 0), KEYED)
    apply_changes(store, _created(range(-20, 20), 100), KEYED)  # new and updated keys
    apply_changes(store, batch([("delete", 200 + i, {"id": i}) for i in range(40, 45)]), KEYED)
    expected = {r["id"]: r["status"] for r in read_all(store).to_pylist()}
    assert sorted(expected) == [i for i in range(-20, 50) if not 40 <= i < 45]
    query = QueryBuilder().register("t", DeltaTable(str(tmp_path / "t")))
    for low, high in ((-20, -20), (-5, 5), (19, 21), (40, 44), (45, 49), (49, 60)):
        found = pa.table(
            query.execute(f"SELECT id, status FROM t WHERE id BETWEEN {low} AND {high}").read_all()
        )
        assert dict(zip(found["id"].to_pylist(), found["status"].to_pylist(), strict=True)) == {
            k: v for k, v in expected.items() if low <= k <= high
        }


def test_statistics_are_those_delta_rs_writes_for_the_same_rows(tmp_path: Path) -> None:
    from deltalake import write_deltalake

    rows = pa.table(
        {
            "id": pa.array([5, -3, None, 2**62], pa.int64()),
            "small": pa.array([1, 2, 3, None], pa.int16()),
            "day": pa.array([dt.date(2024, 1, 2), None, dt.date(1999, 12, 31), None]),
            "key": pa.array(["b", "ä", None, "a" * 32]),
            "long": pa.array(["x" * 40, "y", None, None]),
            "amount": pa.array([Decimal("1.5"), None, None, None], pa.decimal128(10, 2)),
        }
    )
    write_deltalake(str(tmp_path / "theirs"), rows)
    from deltalake import DeltaTable

    actions = pa.table(DeltaTable(str(tmp_path / "theirs")).get_add_actions(flatten=True))
    theirs = actions.to_pylist()[0]
    stats = Statistics(rows.schema, ["key"])
    for part in rows.to_batches(max_chunksize=2):
        stats.add(part)
    ours = json.loads(stats.to_json())
    assert ours["numRecords"] == theirs["num_records"] == 4
    for name in ("id", "small", "day", "key", "long", "amount"):
        assert ours["nullCount"][name] == theirs[f"null_count.{name}"], name
    for name in ("id", "small", "day", "key"):
        want_low, want_high = theirs[f"min.{name}"], theirs[f"max.{name}"]
        if isinstance(want_low, dt.date):
            want_low, want_high = want_low.isoformat(), want_high.isoformat()
        assert (ours["minValues"][name], ours["maxValues"][name]) == (want_low, want_high), name
    # bounds kept only where exact: no long text, no text outside the keys, no decimals
    assert {"long", "amount"}.isdisjoint(ours["minValues"])


def test_text_longer_than_delta_keeps_has_no_bounds() -> None:
    stats = Statistics(pa.schema([("k", pa.string())]), ["k"])
    stats.add(pa.record_batch({"k": ["a", "b" * 33]}))
    assert json.loads(stats.to_json())["minValues"] == {}


def test_a_file_written_before_a_column_was_added_is_rewritten_with_it_null(
    tmp_path: Path,
) -> None:
    store = DeltaStore(str(tmp_path / "t"))
    apply_changes(store, _created(range(0, 3), 0), KEYED)
    wider = pa.schema([("id", pa.int64()), ("status", pa.string()), ("note", pa.string())])
    apply_changes(store, batch([("create", 10, {"id": 9, "note": "n"})], wider), KEYED)
    apply_changes(store, batch([("update", 11, {"id": 1, "status": "u"})]), KEYED)
    found = {r["id"]: (r["status"], r["note"]) for r in read_all(store).to_pylist()}
    assert found == {0: ("s0", None), 1: ("u", None), 2: ("s2", None), 9: (None, "n")}


def test_a_file_is_read_a_row_group_at_a_time(tmp_path: Path) -> None:
    table = pa.table({"id": pa.array(range(ROW_GROUP * 3 + 5), pa.int64())})
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=ROW_GROUP)
    from pyarrow.fs import LocalFileSystem

    schema = pa.schema([("id", pa.int64()), ("added", pa.string())])
    groups = list(row_groups(LocalFileSystem(), str(tmp_path / "f.parquet"), schema))
    assert [g.num_rows for g in groups] == [ROW_GROUP, ROW_GROUP, ROW_GROUP, 5]
    assert all(g.schema == schema and g.column(1).null_count == g.num_rows for g in groups)


@pytest.mark.parametrize("mode", ["upsert", "history"])
def test_a_batch_writes_one_version_of_remove_and_add_actions(tmp_path: Path, mode: str) -> None:
    from deltalake import DeltaTable

    settings = TableSettings(["id"], mode=mode)  # type: ignore[arg-type]
    store = DeltaStore(str(tmp_path / "t"))
    apply_changes(store, _created(range(0, 4), 0), settings)
    version = DeltaTable(str(tmp_path / "t")).version()
    apply_changes(store, batch([("update", 9, {"id": 2, "status": "u"})]), settings)
    table = DeltaTable(str(tmp_path / "t"))
    assert table.version() == version + 1
    assert DeltaTable(str(tmp_path / "t"), version=version).to_pyarrow_table().num_rows == 4
    current = {
        r["id"]: r["status"] for r in read_all(store).to_pylist() if r.get("_cdc_is_current", True)
    }
    assert current == {0: "s0", 1: "s1", 2: "u", 3: "s3"}


def test_a_date_past_what_bounds_hold_leaves_its_column_unbounded(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32())])
    changes = batch([("create", 1, {"id": 1}), ("create", 2, {"id": 2})], schema)
    changes = changes.set_column(1, "day", pa.array([2_932_897, None], pa.date32()))  # 10000-01-01
    store = DeltaStore(str(tmp_path / "t"))
    apply_changes(store, changes, KEYED)
    apply_changes(store, batch([("update", 3, {"id": 2})], schema), KEYED)  # its file again
    assert read_all(store).column("day").cast(pa.int32()).to_pylist() == [2_932_897, None]
    assert all(a["min.id"] is not None for a in _files(tmp_path / "t").values())


def test_a_file_whose_log_path_is_escaped_is_removed_when_rewritten(tmp_path: Path) -> None:
    """Another engine's file name with a space: the log holds it escaped (``%20``)."""
    from deltalake import DeltaTable

    path = tmp_path / "t"
    store = DeltaStore(str(path))
    apply_changes(store, _created(range(3), 0), KEYED)
    log = path / "_delta_log"
    version = DeltaTable(str(path)).version()
    lines = (log / f"{version:020d}.json").read_text().splitlines()
    add = next(json.loads(line)["add"] for line in lines if '"add"' in line)
    (path / add["path"]).rename(path / "part a.parquet")
    renamed = [
        {"remove": {"path": add["path"], "dataChange": False}},
        {"add": {**add, "path": "part%20a.parquet", "dataChange": False}},
    ]
    (log / f"{version + 1:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in renamed))
    apply_changes(store, batch([("update", 10, {"id": 1, "status": "b"})]), KEYED)
    assert sorted((r["id"], r["status"]) for r in read_all(store).to_pylist()) == [
        (0, "s0"),
        (1, "b"),
        (2, "s2"),
    ]


def test_a_table_with_a_change_data_feed_gets_its_changes_there(tmp_path: Path) -> None:
    """A feed needs ``cdc`` files, which delta-rs's MERGE writes: such tables go that way."""
    from deltalake import DeltaTable

    path = str(tmp_path / "t")
    store = DeltaStore(path)
    apply_changes(store, _created(range(4), 0), KEYED)
    DeltaTable(path).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    version = DeltaTable(path).version()
    changes = batch([("update", 10, {"id": 1, "status": "b"}), ("delete", 11, {"id": 2})])
    apply_changes(store, changes, KEYED)
    feed = pa.table(DeltaTable(path).load_cdf(starting_version=version + 1).read_all())
    assert sorted(
        zip(
            feed["id"].to_pylist(),
            feed["status"].to_pylist(),
            feed["_change_type"].to_pylist(),
            strict=True,
        )
    ) == [(1, "b", "update_postimage"), (1, "s1", "update_preimage"), (2, "s2", "delete")]


def test_a_check_constraint_of_the_table_is_kept(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    path = str(tmp_path / "t")
    store = DeltaStore(path)
    apply_changes(store, batch([("create", 1, {"id": 1, "amount": Decimal("1.00")})]), KEYED)
    DeltaTable(path).alter.add_constraint({"amount_positive": "amount > 0"})
    with pytest.raises(BrokenConstraint, match=r"amount_positive.*nothing of the batch"):
        apply_changes(store, batch([("update", 2, {"id": 1, "amount": Decimal("-5.00")})]), KEYED)
    assert read_all(store).column("amount").to_pylist() == [Decimal("1.00")]


@pytest.mark.parametrize("mode", ["upsert", "history"])
def test_a_change_data_feed_takes_deletes_of_keys_the_table_never_held(
    tmp_path: Path, mode: str
) -> None:
    from deltalake import DeltaTable

    settings = TableSettings(["id"], mode=mode)  # type: ignore[arg-type]
    path = str(tmp_path / "t")
    store = DeltaStore(path)
    apply_changes(store, _created(range(2), 0), settings)
    DeltaTable(path).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    changes = batch(
        [
            ("create", 10, {"id": 7, "status": "n"}),
            ("create", 11, {"id": 9, "status": "m"}),
            ("delete", 12, {"id": 9}),
            ("delete", 13, {"id": 1}),
        ]
    )
    apply_changes(store, changes, settings)
    current = [r for r in read_all(store).to_pylist() if r.get("_cdc_is_current", True)]
    assert sorted(r["id"] for r in current) == [0, 7]


@pytest.mark.parametrize(
    "sizes", [[ROW_GROUP - 1, 2], [ROW_GROUP, 0, ROW_GROUP], [3, ROW_GROUP * 2 + 5], [0]]
)
def test_a_file_is_written_in_whole_row_groups_whatever_the_batches_given(
    tmp_path: Path, sizes: list[int]
) -> None:
    import pyarrow.fs as pafs

    from cdc_connectors.table.delta_rewrite import FileWriter

    schema = pa.schema([pa.field("id", pa.int64())])
    written = FileWriter(pafs.LocalFileSystem(), str(tmp_path), schema, ["id"])
    first = 0
    for size in sizes:
        ids = pa.array(range(first, first + size), pa.int64())
        written.write(pa.RecordBatch.from_arrays([ids], schema=schema))
        first += size
    added = written.close(0)
    if first == 0:
        assert added is None and not list(tmp_path.iterdir())
        return
    data = pq.ParquetFile(tmp_path / added.path)
    groups = [data.metadata.row_group(g).num_rows for g in range(data.num_row_groups)]
    assert groups[:-1] == [ROW_GROUP] * (len(groups) - 1) and 0 < groups[-1] <= ROW_GROUP
    assert data.read().column("id").to_pylist() == list(range(first))
    stats = json.loads(added.stats)
    assert (stats["numRecords"], stats["minValues"]["id"], stats["maxValues"]["id"]) == (
        first,
        0,
        first - 1,
    )


def test_reading_a_file_gives_freed_memory_back_every_few_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mimalloc keeps what is freed: a rewrite of a large table would grow the driver by
    what it read, so every RELEASE_EVERY-th row group read returns it first."""
    from cdc_connectors.table import batches

    path = tmp_path / "groups.parquet"
    schema = pa.schema([("id", pa.int64())])
    pq.write_table(pa.table({"id": list(range(12))}, schema), path, row_group_size=2)
    returned = []

    class Pool:
        def release_unused(self) -> None:
            returned.append(True)

    monkeypatch.setattr(pa, "default_memory_pool", Pool)
    monkeypatch.setattr(batches, "_read", iter(range(1, 100)))
    fs = pafs.LocalFileSystem()
    read = [b.column(0).to_pylist() for b in row_groups(fs, str(path), schema)]
    assert read == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    assert len(returned) == 6 // batches.RELEASE_EVERY
