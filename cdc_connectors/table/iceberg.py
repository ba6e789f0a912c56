"""Apache Iceberg tables through ``pyiceberg``: its SQL catalog on SQLite by default.

The table is ``namespace.name`` in a catalog: by default pyiceberg's SQL catalog in
``<path>/catalog.db`` with the warehouse at ``<path>``; ``catalog.*`` settings name any
catalog pyiceberg supports (``catalog.type=rest``, ``catalog.uri=...``) instead. The
tombstones of deleted keys are the table ``<name>_cdc_tombstones`` beside it. A replacement
is one OVERWRITE snapshot (:mod:`.iceberg_rewrite`): the data files holding the keys'
current rows rewritten without them (copy-on-write), and the new rows; it carries
``cdc.app-id`` and ``cdc.version``. The
key columns are the table's identifier fields; its settings are kept in the property
``cdc-connectors``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.errors import ConfigError
from cdc_connectors.table.batches import ROW_GROUP
from cdc_connectors.table.evolve import Evolution
from cdc_connectors.table.iceberg_rewrite import overwrite_once, rows_where
from cdc_connectors.table.keys import Going, KeySet
from cdc_connectors.table.layout import DELETES_BEFORE, IS_CURRENT, plain, plain_schema
from cdc_connectors.table.plan import tombstone_schema
from cdc_connectors.table.store import ConcurrentWrite, Part, TableSettings, Txn

__all__ = ["IcebergStore"]

_PROPERTY = "cdc-connectors"
_APP, _VERSION = "cdc.app-id", "cdc.version"
_ROW_GROUP = "write.parquet.row-group-limit"
TOMBSTONES = "_cdc_tombstones"


def default_catalog(path: str) -> dict[str, str]:
    """The embedded catalog of a warehouse at ``path``: SQLite beside the data."""
    absolute = os.path.abspath(path)
    return {
        "type": "sql",
        "uri": f"sqlite:///{os.path.join(absolute, 'catalog.db')}",
        "warehouse": f"file://{absolute}",
    }


class IcebergStore:
    """An Iceberg table ``identifier`` in the catalog of ``properties``."""

    def __init__(
        self,
        path: str,
        identifier: str,
        catalog: Mapping[str, str] | None = None,
        catalog_name: str = "default",
    ):
        self.path, self.identifier, self.catalog_name = path, identifier, catalog_name
        self.where = f"{path} (Iceberg table {identifier})"
        embedded = default_catalog(path)
        self.properties = dict(catalog) if catalog else embedded
        if self.properties.get("type") == "sql":
            # a SQL catalog of the user's keeps its tables' files under ``path`` unless it
            # says where (pyiceberg would refuse the first table late, naming no setting)
            self.properties.setdefault("warehouse", embedded["warehouse"])
        self._embedded = not catalog
        self._catalog: Any = None
        self._read_at: dict[str, Any] = {}  # the table as read, per part

    @property
    def catalog(self) -> Any:
        if self._catalog is None:
            from pyiceberg.catalog import load_catalog

            if self._embedded:  # (the folder of a catalog the user names is theirs to make)
                os.makedirs(
                    os.path.dirname(self.properties["uri"][len("sqlite:///") :]), exist_ok=True
                )
            self._catalog = load_catalog(self.catalog_name, **self.properties)
        return self._catalog

    def _name(self, part: Part) -> str:
        return self.identifier if part == "rows" else self.identifier + TOMBSTONES

    def table(self) -> Any:
        """The pyiceberg table of the rows, or ``None`` while there is none."""
        return self._table("rows")

    def _table(self, part: Part) -> Any:
        from pyiceberg.exceptions import NoSuchTableError

        try:
            return self.catalog.load_table(self._name(part))
        except NoSuchTableError:
            return None

    def schema(self) -> pa.Schema | None:
        table = self._table("rows")
        return None if table is None else plain_schema(table.schema().as_arrow())

    def settings(self) -> TableSettings | None:
        table = self._table("rows")
        if table is None:
            return None
        text = table.properties.get(_PROPERTY)
        if text is None:
            raise ConfigError(
                f"{self.where}: an Iceberg table this destination did not make (it keeps its "
                "keys and order with the table): write to a new table"
            )
        return TableSettings.from_json(text)

    def create(self, schema: pa.Schema, settings: TableSettings) -> None:
        namespace = self.identifier.rsplit(".", 1)[0]
        self.catalog.create_namespace_if_not_exists(namespace)
        for part, columns in (
            ("rows", schema),
            ("tombstones", tombstone_schema(schema, settings.keys)),
        ):
            table = self.catalog.create_table_if_not_exists(
                self._name(part),  # type: ignore[arg-type]
                schema=columns,
                # row groups of 64k rows (pyiceberg's default is a million): a rewrite holds
                # about a row group of the file it reads
                properties={_PROPERTY: settings.to_json(), _ROW_GROUP: str(ROW_GROUP)},
            )
            if not table.schema().identifier_field_ids:
                with table.update_schema() as update:
                    update.set_identifier_fields(*settings.keys)

    def evolve(self, change: Evolution) -> None:
        wide = {f.name: f.type for f in change.widened}
        for part in ("rows", "tombstones"):  # (a key column widens in both)
            table = self._table(part)
            current = plain_schema(table.schema().as_arrow())
            fields = [pa.field(f.name, wide.get(f.name, f.type), f.nullable) for f in current]
            added = [  # (tombstones note deletes too: plan.tombstone_schema; a column one of
                f  # the two has already was added by a write killed between them)
                for f in change.added
                if f.name not in current.names and (part == "rows" or f.name == DELETES_BEFORE)
            ]
            if added or wide.keys() & set(current.names):
                with table.update_schema() as update:
                    update.union_by_name(pa.schema([*fields, *added]))

    def _filter(self, keys: pa.Table, current_only: bool) -> Any:
        from pyiceberg.expressions import And, EqualTo, In

        expression: Any = None
        for name in keys.column_names:
            values = pc.unique(keys.column(name)).to_pylist()
            term = In(name, values)  # type: ignore[call-arg]  # (pydantic's signature)
            expression = term if expression is None else And(expression, term)
        if current_only:
            expression = And(expression, EqualTo(IS_CURRENT, True))  # type: ignore[call-arg, arg-type]
        return expression

    def _read(
        self,
        part: Part,
        keys: pa.Table,
        current_only: bool = False,
        columns: list[str] | None = None,
    ) -> pa.Table:
        """The rows of ``keys`` in ``part`` (the current ones only, if asked; only
        ``columns``, if given)."""
        table = self._table(part)
        self._read_at[part] = table  # its replacement commits on this snapshot, or fails
        if keys.num_rows == 0:
            schema = plain_schema(table.schema().as_arrow())
            if columns is not None:
                schema = pa.schema([schema.field(n) for n in columns])
            return schema.empty_table()
        schema = plain_schema(table.schema().as_arrow())
        names = columns if columns is not None else schema.names
        reads = [*names, IS_CURRENT] if current_only and IS_CURRENT not in names else names
        wanted = KeySet(keys.cast(pa.schema([schema.field(n) for n in keys.column_names])))

        def keep(batch: pa.RecordBatch) -> np.ndarray:
            found = wanted.holds(batch)
            if current_only:
                found &= np.asarray(pc.fill_null(batch.column(IS_CURRENT), False))
            return found

        rows = rows_where(table, self._filter(keys, current_only), keep, reads)
        return rows.select(names)

    def current(self, keys: pa.Table, columns: list[str] | None = None) -> pa.Table:
        schema = self.schema()
        history = schema is not None and IS_CURRENT in schema.names
        return self._read("rows", keys, history, columns)

    def versions(self, keys: pa.Table) -> pa.Table:
        return self._read("rows", keys)

    def tombstones(self, keys: pa.Table) -> pa.Table:
        return self._read("tombstones", keys)

    def version(self, part: Part) -> int | None:
        table = self._table(part)
        snapshot = None if table is None else table.current_snapshot()
        return None if snapshot is None else int(snapshot.snapshot_id)

    def committed(self, part: Part, app_id: str) -> int | None:
        table = self._table(part)
        if table is None:
            return None
        snapshot = table.current_snapshot()
        while snapshot is not None:
            summary = snapshot.summary
            if summary is not None and summary.get(_APP) == app_id:
                return int(summary[_VERSION])
            parent = snapshot.parent_snapshot_id
            snapshot = None if parent is None else table.snapshot_by_id(parent)
        return None

    def replace(
        self,
        part: Part,
        keys: pa.Table,
        rows: pa.Table,
        txn: Txn | None,
        every_version: pa.Table | None = None,
    ) -> None:
        table = self._read_at.pop(part, None) or self._table(part)
        every = every_version if every_version is not None and every_version.num_rows else None
        if keys.num_rows == 0 and rows.num_rows == 0 and every is None:
            return
        schema = table.schema().as_arrow()
        current_only = IS_CURRENT in schema.names
        found = [self._filter(keys, current_only)] if keys.num_rows else []
        if every is not None:
            found.append(self._filter(every, False))
        properties = {_APP: txn.app_id, _VERSION: str(txn.version)} if txn else {}

        plain_columns = plain_schema(schema)
        names = keys.column_names
        typed = pa.schema([plain_columns.field(n) for n in names])
        every_keys = every if every is not None else keys.slice(0, 0)
        goes = Going(
            keys.cast(typed),
            plain(rows).select(names).cast(typed),
            every_keys.select(names).cast(typed),
            current_only,
        )

        from pyiceberg.exceptions import (
            CommitFailedException,
            CommitStateUnknownException,
            ValidationException,
        )

        conflicts = (CommitFailedException, CommitStateUnknownException, ValidationException)
        written = rows.select(schema.names).cast(schema)
        try:
            overwrite_once(table, _any_of(found), goes, goes.columns, written, properties)
        except conflicts as conflict:
            raise ConcurrentWrite(self.where, str(conflict)) from None


def _any_of(filters: list[Any]) -> Any:
    from pyiceberg.expressions import AlwaysFalse, Or

    if not filters:
        return AlwaysFalse()
    found = filters[0]
    for other in filters[1:]:
        found = Or(found, other)
    return found
