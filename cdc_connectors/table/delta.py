"""Delta Lake tables through ``deltalake`` (delta-rs): no JVM, no jars.

The rows are the Delta table at the path; the tombstones of deleted keys a Delta table of
their own at ``<path>/_cdc_tombstones`` (Delta readers see only the files its log names, so
they never see it). A replacement is one ``MERGE``: the keys' current rows are deleted and
the new rows inserted in one commit, which carries the stream's transaction
(``txn``: application id and version, Delta's own record of idempotent writers). The
settings of the table (keys, mode) are kept in its description.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from cdc_connectors.errors import ConfigError
from cdc_connectors.table.evolve import Evolution
from cdc_connectors.table.keys import among
from cdc_connectors.table.layout import IS_CURRENT, plain_schema
from cdc_connectors.table.plan import tombstone_schema
from cdc_connectors.table.store import ConcurrentWrite, Part, TableSettings, Txn

__all__ = ["DeltaStore"]

TOMBSTONES = "_cdc_tombstones"
_ACTION = "__cdc_action"
_DESCRIPTION = "cdc-connectors table "


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


#: Delta keeps text statistics cut to this many characters: such a bound prunes nothing.
_CUT_TEXT = 32


def _exact_statistics(datatype: pa.DataType) -> bool:
    """Types whose bounds Delta keeps exactly: integers, dates, text (below the cut)."""
    return bool(
        pa.types.is_integer(datatype) or pa.types.is_date(datatype) or pa.types.is_string(datatype)
    )


def touched_files(actions: pa.Table, keys: pa.Table) -> np.ndarray:
    """Which files (rows of the table's add actions, flattened) may hold one of ``keys``:
    those whose statistics range of every key column holds one of its values (a file
    without statistics may hold any)."""
    needed = np.ones(actions.num_rows, dtype=bool)
    for name in keys.column_names:
        low, high = f"min.{name}", f"max.{name}"
        if low not in actions.column_names or high not in actions.column_names:
            continue
        if not _exact_statistics(keys.schema.field(name).type):
            continue  # Delta keeps such bounds cut (times to milliseconds, big decimals)
        values = np.sort(pc.unique(keys.column(name)).to_numpy(zero_copy_only=False))
        lows = actions.column(low).to_numpy(zero_copy_only=False)
        highs = actions.column(high).to_numpy(zero_copy_only=False)
        for row in np.flatnonzero(needed):
            lo, hi = lows[row], highs[row]
            if lo is None or hi is None or (isinstance(hi, str) and len(hi) >= _CUT_TEXT):
                continue
            if isinstance(lo, float) and np.isnan(lo):
                continue
            needed[row] = np.searchsorted(values, lo, "left") < np.searchsorted(values, hi, "right")
    return needed


def _writer_properties() -> Any:
    from deltalake import WriterProperties

    # rows are flushed a row group at a time: a smaller group than delta-rs's default keeps
    # a rewritten file's rows from being held whole while it is written
    return WriterProperties(max_row_group_size=_ROW_GROUP)


_ROW_GROUP = 64 * 1024


def _doomed(keys: pa.Table, schema: pa.Schema, action: str) -> pa.Table:
    """Rows of ``keys`` alone (nulls elsewhere) that a merge matches to delete."""
    names = keys.column_names
    columns = {
        f.name: keys.column(f.name).cast(f.type)
        if f.name in names
        else pa.nulls(keys.num_rows, f.type)
        for f in schema
    }
    doomed = pa.table(columns, schema=schema)
    return doomed.append_column(_ACTION, pa.array([action] * doomed.num_rows, pa.string()))


def _local(uri: str) -> str:
    """A file URI as a path (other URIs as they are, for Arrow's own file systems)."""
    return uri[len("file://") :] if uri.startswith("file://") else uri


class DeltaStore:
    """A Delta table at ``path`` (and its tombstones beside it)."""

    def __init__(self, path: str, storage_options: dict[str, str] | None = None):
        self.path = path
        self.where = path
        self.options = storage_options or None
        self._read_at: dict[str, Any] = {}  # the table as read, per part

    # -- the two tables -------------------------------------------------------------------

    def _uri(self, part: Part) -> str:
        return self.path if part == "rows" else os.path.join(self.path, TOMBSTONES)

    def _table(self, part: Part):  # type: ignore[no-untyped-def]
        from deltalake import DeltaTable

        uri = self._uri(part)
        if not DeltaTable.is_deltatable(uri, storage_options=self.options):
            return None
        return DeltaTable(uri, storage_options=self.options)

    def schema(self) -> pa.Schema | None:
        table = self._table("rows")
        return None if table is None else plain_schema(pa.schema(table.schema().to_arrow()))

    def _dataset(self, table: Any) -> ds.Dataset:
        """The table's files as a plain Arrow dataset (deltalake's own dataset reads through
        a file system handler that, here, aborts the interpreter at exit now and then)."""
        schema = plain_schema(pa.schema(table.schema().to_arrow()))
        return ds.dataset(table.file_uris(), schema=schema, format="parquet")

    def settings(self) -> TableSettings | None:
        table = self._table("rows")
        if table is None:
            return None
        description = table.metadata().description or ""
        if not description.startswith(_DESCRIPTION):
            raise ConfigError(
                f"{self.where}: a Delta table this destination did not make (it keeps its "
                "keys and order with the table): write to a new path"
            )
        return TableSettings.from_json(description[len(_DESCRIPTION) :])

    def create(self, schema: pa.Schema, settings: TableSettings) -> None:
        from deltalake import DeltaTable

        description = _DESCRIPTION + settings.to_json()
        for part, columns in (
            ("rows", schema),
            ("tombstones", tombstone_schema(schema, settings.keys)),
        ):
            DeltaTable.create(
                self._uri(part),  # type: ignore[arg-type]
                columns,
                mode="ignore",
                description=description,
                storage_options=self.options,
            )

    def evolve(self, change: Evolution) -> None:
        from deltalake import Field

        table = self._table("rows")
        assert table is not None
        if change.added:
            table.alter.add_columns([Field.from_arrow(f) for f in change.added])
        if change.widened:  # Delta has no wider type for a column in place: rewritten once
            for part in ("rows", "tombstones"):  # (a key column widens in both)
                self._rewrite(part, {f.name: f.type for f in change.widened})

    def _rewrite(self, part: Part, wide: dict[str, pa.DataType]) -> None:
        """``part`` rewritten with the columns of ``wide`` of their new types."""
        from deltalake import write_deltalake

        table = self._table(part)
        assert table is not None
        dataset = self._dataset(table)
        if not wide.keys() & set(dataset.schema.names):
            return
        schema = pa.schema(
            [pa.field(f.name, wide.get(f.name, f.type), f.nullable) for f in dataset.schema]
        )
        batches = (b.cast(schema) for b in dataset.to_batches())
        write_deltalake(
            table,
            pa.RecordBatchReader.from_batches(schema, batches),
            mode="overwrite",
            schema_mode="overwrite",
            storage_options=self.options,
        )

    # -- reading ---------------------------------------------------------------------------

    def _read(self, part: Part, keys: pa.Table, columns: list[str] | None = None) -> pa.Table:
        """The rows of ``keys`` in ``part`` (only ``columns``, if given): only the files
        whose statistics may hold them are read."""
        table = self._table(part)
        assert table is not None
        self._read_at[part] = table  # its replacement commits on this version, or fails
        schema = plain_schema(pa.schema(table.schema().to_arrow()))
        if keys.num_rows == 0:
            return schema.empty_table()
        actions = pa.table(table.get_add_actions(flatten=True))
        needed = touched_files(actions, keys)
        root = table.table_uri.rstrip("/")
        paths = [
            _local(f"{root}/{unquote(path)}")
            for path in actions.column("path").filter(pa.array(needed)).to_pylist()
        ]
        typed = keys.cast(pa.schema([schema.field(n) for n in keys.column_names]))
        first = typed.column(0).unique()
        kept = []
        # batch by batch: what is held is the rows of the keys, never a whole file
        dataset = ds.dataset(paths, schema=schema, format="parquet")
        if columns is not None:
            schema = pa.schema([schema.field(n) for n in columns])
        # a batch ahead, not sixteen: the rows held stay a few row groups whatever the table
        for batch in dataset.to_batches(columns=columns, batch_readahead=1, fragment_readahead=1):
            near = batch.filter(pc.is_in(batch.column(typed.column_names[0]), value_set=first))
            if near.num_rows:
                kept.append(near)
        rows = pa.Table.from_batches(kept, schema) if kept else schema.empty_table()
        return among(rows, typed) if typed.num_columns > 1 else rows

    def current(self, keys: pa.Table, columns: list[str] | None = None) -> pa.Table:
        rows = self._read("rows", keys, columns)
        if IS_CURRENT in rows.column_names and rows.num_rows:
            rows = rows.filter(pc.fill_null(rows.column(IS_CURRENT), False))
        return rows

    def versions(self, keys: pa.Table) -> pa.Table:
        return self._read("rows", keys)

    def tombstones(self, keys: pa.Table) -> pa.Table:
        return self._read("tombstones", keys)

    def version(self, part: Part) -> int | None:
        table = self._table(part)
        return None if table is None else int(table.version())

    def committed(self, part: Part, app_id: str) -> int | None:
        table = self._table(part)
        return None if table is None else table.transaction_version(app_id)

    # -- writing ---------------------------------------------------------------------------

    def replace(
        self,
        part: Part,
        keys: pa.Table,
        rows: pa.Table,
        txn: Txn | None,
        every_version: pa.Table | None = None,
    ) -> None:
        from deltalake import CommitProperties, Transaction
        from deltalake.exceptions import CommitFailedError

        table = self._read_at.pop(part, None) or self._table(part)
        assert table is not None
        schema = plain_schema(pa.schema(table.schema().to_arrow()))
        names = keys.column_names
        rows = rows.select(schema.names).cast(schema)
        single = IS_CURRENT not in schema.names  # at most one row of a key
        gone = among(keys, rows.select(names), anti=True) if single else keys
        every = every_version if every_version is not None else keys.slice(0, 0)
        source = pa.concat_tables(
            [
                _doomed(gone, schema, "delete"),
                _doomed(every.select(names), schema, "delete all"),
                rows.append_column(_ACTION, pa.array(["write"] * rows.num_rows, pa.string())),
            ]
        )
        action = f"s.{_quoted(_ACTION)}"
        on = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in names)
        if not single:  # history: the current row goes (every one, rebuilt), new versions come
            on += (
                f" AND (({action} = 'delete' AND t.{_quoted(IS_CURRENT)}) "
                f"OR {action} = 'delete all')"
            )
        commit = CommitProperties(
            # planned against the version read: a commit of another writer since then fails
            # this one (never retried on top of it, which would apply a stale plan)
            max_commit_retries=0,
            app_transactions=[Transaction(txn.app_id, txn.version)] if txn else None,
            custom_metadata={
                "cdc-connectors": json.dumps({"keys": keys.num_rows, "rows": rows.num_rows})
            },
        )
        columns = {n: f"s.{_quoted(n)}" for n in schema.names}
        merge = table.merge(
            source,
            on,
            source_alias="s",
            target_alias="t",
            commit_properties=commit,
            writer_properties=_writer_properties(),
        )
        if single:  # a key's row is updated in place, or deleted
            merge = merge.when_matched_update(columns, predicate=f"{action} = 'write'")
        merge = merge.when_matched_delete(predicate=f"{action} IN ('delete', 'delete all')")
        merge = merge.when_not_matched_insert(columns, predicate=f"{action} = 'write'")
        try:
            merge.execute()
        except CommitFailedError as conflict:
            raise ConcurrentWrite(self.where, str(conflict)) from None
