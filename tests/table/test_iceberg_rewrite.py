"""Iceberg's copy-on-write: files read in batches by field id, left where no row goes."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cdc_connectors.table.apply import apply_changes
from cdc_connectors.table.iceberg import IcebergStore
from cdc_connectors.table.store import TableSettings
from tests.table.changes import batch
from tests.table.conftest import read_all

KEYED = TableSettings(["id"])


def _store(tmp_path: Path) -> IcebergStore:
    return IcebergStore(str(tmp_path / "warehouse"), "shop.orders")


def _files(store: IcebergStore) -> set[str]:
    return {task.file.file_path for task in store.table().scan().plan_files()}


def _created(ids: range, first: int) -> pa.Table:
    return batch([("create", first + n, {"id": i, "status": f"s{i}"}) for n, i in enumerate(ids)])


def test_a_data_file_none_of_whose_rows_goes_stays(tmp_path: Path) -> None:
    store = _store(tmp_path)
    apply_changes(store, _created(range(0, 10), 0), KEYED)
    (low,) = _files(store)
    apply_changes(store, _created(range(100, 110), 100), KEYED)
    apply_changes(store, batch([("update", 200, {"id": 105, "status": "x"})]), KEYED)
    assert low in _files(store)
    assert {r["id"]: r["status"] for r in read_all(store).to_pylist()}[105] == "x"


def test_files_written_before_a_column_was_added_or_widened_are_rewritten(tmp_path: Path) -> None:
    store = _store(tmp_path)
    narrow = pa.schema([("id", pa.int64()), ("status", pa.string()), ("n", pa.int32())])
    apply_changes(store, batch([("create", 1, {"id": 1, "status": "a", "n": 7})], narrow), KEYED)
    wide = pa.schema(
        [("id", pa.int64()), ("status", pa.string()), ("n", pa.int64()), ("note", pa.string())]
    )
    apply_changes(store, batch([("create", 2, {"id": 2, "n": 2**40, "note": "x"})], wide), KEYED)
    apply_changes(store, batch([("create", 3, {"id": 3, "status": "c", "n": 1})], narrow), KEYED)
    apply_changes(store, batch([("update", 4, {"id": 3, "status": "d", "n": 5})], narrow), KEYED)
    found = {r["id"]: (r["status"], r["n"], r["note"]) for r in read_all(store).to_pylist()}
    assert found == {1: ("a", 7, None), 2: (None, 2**40, "x"), 3: ("d", 5, None)}


def test_a_file_without_field_ids_is_read_by_its_names(tmp_path: Path) -> None:
    """A file another tool added (``add_files``: no field ids, a name mapping) is read by
    pyiceberg's own reader, whole."""
    store = _store(tmp_path)
    apply_changes(store, _created(range(0, 3), 0), KEYED)
    table = store.table()
    schema = table.schema().as_arrow()
    added = pa.table(
        {
            "id": pa.array([10, 11], pa.int64()),
            "status": ["s10", "s11"],
            "amount": pa.nulls(2, pa.decimal128(10, 2)),
            "_cdc_stream": ["other", "other"],
            "_cdc_offset": pa.array([1, 2], pa.int64()),
        }
    ).cast(pa.schema([f.remove_metadata() for f in schema]))  # (no field ids)
    path = tmp_path / "added.parquet"
    pq.write_table(added, path)
    table.add_files([str(path)])
    apply_changes(store, batch([("update", 50, {"id": 11, "status": "u"})], stream="other"), KEYED)
    found = {r["id"]: r["status"] for r in read_all(store).to_pylist()}
    assert found == {0: "s0", 1: "s1", 2: "s2", 10: "s10", 11: "u"}


def test_tables_are_made_with_row_groups_a_rewrite_reads_one_by_one(tmp_path: Path) -> None:
    store = _store(tmp_path)
    apply_changes(store, _created(range(3), 0), KEYED)
    assert store.table().properties["write.parquet.row-group-limit"] == str(64 * 1024)


def test_a_sql_catalog_of_the_users_keeps_the_tables_files_under_path(tmp_path: Path) -> None:
    """Without ``catalog.warehouse`` pyiceberg would refuse the first table late ("No
    default path is set"), naming no setting; a folder of the catalog's is not made."""
    catalog = {"type": "sql", "uri": f"sqlite:///{tmp_path / 'catalog.db'}"}
    store = IcebergStore(str(tmp_path / "warehouse"), "shop.orders", catalog)
    apply_changes(store, _created(range(0, 3), 0), KEYED)
    assert all(f.startswith(f"file://{tmp_path / 'warehouse'}/") for f in _files(store))
    assert sorted(r["id"] for r in read_all(store).to_pylist()) == [0, 1, 2]
    elsewhere = {"type": "sql", "uri": f"sqlite:///{tmp_path / 'nowhere' / 'catalog.db'}"}
    with contextlib.suppress(Exception):  # (sqlite cannot open it: no folder was made)
        _ = IcebergStore(str(tmp_path / "w2"), "shop.orders", elsewhere).catalog
    assert not (tmp_path / "nowhere").exists()
