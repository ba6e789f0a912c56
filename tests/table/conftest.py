"""Each table test runs on every table format: Delta Lake and Iceberg."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cdc_connectors.table.delta import DeltaStore
from cdc_connectors.table.iceberg import IcebergStore
from cdc_connectors.table.layout import plain

FORMATS = ("delta", "iceberg")


def open_store(fmt: str, path: Path) -> Any:
    if fmt == "delta":
        return DeltaStore(str(path / "orders"))
    return IcebergStore(str(path / "warehouse"), "shop.orders")


@pytest.fixture(params=FORMATS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Any]:
    """A function giving a new store object on the same table (as a new writer would)."""
    return lambda: open_store(request.param, tmp_path)


def read_all(store: Any) -> pa.Table:
    """Every row of the store's table, by an independent reader of its format."""
    if isinstance(store, DeltaStore):
        from deltalake import DeltaTable, QueryBuilder

        found = (
            QueryBuilder()
            .register("orders", DeltaTable(store.path))
            .execute("SELECT * FROM orders")
        )
        table = pa.table(found.read_all())
    else:
        from pyiceberg.catalog import load_catalog

        table = (
            load_catalog("default", **store.properties)
            .load_table(store.identifier)
            .scan()
            .to_arrow()
        )
    table = plain(table)
    names = [n for n in table.column_names if n != "id"]
    return table.take(
        pc.sort_indices(
            table,
            [
                ("id", "ascending"),
                *(
                    (n, "ascending")
                    for n in names
                    if not pa.types.is_nested(table.schema.field(n).type)
                ),
            ],
        )
    )


def rows(store: Any, *columns: str) -> list[dict[str, Any]]:
    """The table's rows (only ``columns``, if given), ordered by id."""
    table = read_all(store)
    return table.select(list(columns) if columns else table.column_names).to_pylist()
