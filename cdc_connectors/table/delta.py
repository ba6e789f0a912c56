"""Delta Lake tables through ``deltalake`` (delta-rs): no JVM, no jars.

The rows are the Delta table at the path; the tombstones of deleted keys a Delta table of
their own at ``<path>/_cdc_tombstones`` (Delta readers see only the files its log names, so
they never see it). A replacement is one commit (:mod:`.delta_rewrite`): the data files
holding the keys' current rows are written again without them and the new rows added (a
``MERGE`` where the table asks its writers for more: :mod:`.delta_merge`), with the
stream's transaction (``txn``: application id and version, Delta's own record of
idempotent writers). The settings of the table (keys, mode) are kept in its description.
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
import pyarrow.fs as pafs

from cdc_connectors.errors import ConfigError
from cdc_connectors.table.batches import ROW_GROUP
from cdc_connectors.table.delta_merge import merge, needs_merge
from cdc_connectors.table.delta_rewrite import rewrite, row_groups
from cdc_connectors.table.evolve import Evolution
from cdc_connectors.table.keys import Going, KeySet
from cdc_connectors.table.layout import DELETES_BEFORE, IS_CURRENT, plain_schema
from cdc_connectors.table.plan import tombstone_schema
from cdc_connectors.table.store import BrokenConstraint, ConcurrentWrite, Part, TableSettings, Txn

__all__ = ["DeltaStore"]

TOMBSTONES = "_cdc_tombstones"
_DESCRIPTION = "cdc-connectors table "


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


class DeltaStore:
    """A Delta table at ``path`` (and its tombstones beside it)."""

    def __init__(self, path: str, storage_options: dict[str, str] | None = None):
        self.path = path
        self.where = path
        self.options = storage_options or None
        self._read_at: dict[str, Any] = {}  # the table as read, per part
        #: the keys it holds of those read (and whether current), per part
        self._held: dict[str, pa.Table] = {}

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

        for kind in ("rows", "tombstones"):  # (tombstones note deletes too: tombstone_schema)
            table = self._table(kind)
            assert table is not None
            held = set(pa.schema(table.schema().to_arrow()).names)
            added = [
                f
                for f in change.added
                if f.name not in held and (kind == "rows" or f.name == DELETES_BEFORE)
            ]  # (a column one of the two has already: added by a write killed between them)
            if added:
                table.alter.add_columns([Field.from_arrow(f) for f in added])
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
            self._held[part] = keys
            return schema.empty_table()
        actions = pa.table(table.get_add_actions(flatten=True))
        needed = touched_files(actions, keys)
        fs, root = pafs.FileSystem.from_uri(table.table_uri)
        wanted = KeySet(keys.cast(pa.schema([schema.field(n) for n in keys.column_names])))
        if columns is not None:
            schema = pa.schema([schema.field(n) for n in columns])
        kept = []
        # a row group at a time: what is held is the rows of the keys, never a whole file
        for path in actions.column("path").filter(pa.array(needed)).to_pylist():
            for batch in row_groups(fs, f"{root.rstrip('/')}/{unquote(path)}", schema):
                found = batch.filter(pa.array(wanted.holds(batch)))
                if found.num_rows:
                    kept.append(found)
        rows = pa.Table.from_batches(kept, schema) if kept else schema.empty_table()
        flags = [IS_CURRENT] if IS_CURRENT in rows.column_names else []
        self._held[part] = rows.select([*keys.column_names, *flags])
        return rows

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
        typed = pa.schema([schema.field(n) for n in names])
        rows = rows.select(schema.names).cast(schema)
        history = IS_CURRENT in schema.names  # else at most one row of a key
        every = (every_version if every_version is not None else keys.slice(0, 0)).select(names)
        every = every.cast(typed)
        goes = Going(keys.cast(typed), rows.select(names), every, history)
        actions = pa.table(table.get_add_actions(flatten=True))
        files = actions.filter(pa.array(touched_files(actions, goes.keys())))
        commit = CommitProperties(
            # planned against the version read: a commit of another writer since then fails
            # this one (never retried on top of it, which would apply a stale plan)
            max_commit_retries=0,
            app_transactions=[Transaction(txn.app_id, txn.version)] if txn else None,
            custom_metadata={
                "cdc-connectors": json.dumps({"keys": keys.num_rows, "rows": rows.num_rows})
            },
        )
        from deltalake.exceptions import DeltaError

        try:
            if needs_merge(table):
                held = self._held.pop(part, None)
                merge(table, schema, keys.cast(typed), rows, every, commit, ROW_GROUP, held)
            else:
                rewrite(table, schema, names, goes, goes.columns, files, rows, commit, actions)
        except CommitFailedError as conflict:
            raise ConcurrentWrite(self.where, str(conflict)) from None
        except DeltaError as error:
            if "failed validation check" not in str(error):
                raise
            prefix = "delta.constraints."
            configuration = table.metadata().configuration or {}
            named = [k.removeprefix(prefix) for k in configuration if k.startswith(prefix)]
            raise BrokenConstraint(self.where, named, str(error)) from None
