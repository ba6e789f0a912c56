"""What a table format gives the applier: one protocol, a writer per format.

A store holds the table's rows and, beside them, the tombstones of deleted keys (a small
table of keys and the order of their deletes). It replaces the current rows of a set of
keys in one transaction that carries an application id and a version (the stream's query
and batch), and says the last version of an application it committed, so a batch replayed
after a kill changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal, Protocol

import pyarrow as pa

from cdc_connectors.errors import CdcError
from cdc_connectors.table.evolve import Evolution
from cdc_connectors.table.plan import Deletes, Mode

__all__ = [
    "BrokenConstraint",
    "ConcurrentWrite",
    "InterleavedWrite",
    "Part",
    "TableSettings",
    "TableStore",
    "Txn",
]

#: The two tables of a store: the rows, and the tombstones of deleted keys.
Part = Literal["rows", "tombstones"]


class ConcurrentWrite(CdcError):
    """Another writer changed the table between this batch's read and its commit: nothing
    of the batch was written (it was planned against what it read)."""

    def __init__(self, where: str, detail: str):
        super().__init__(
            f"{where}: another writer changed the table while this batch was applied; "
            f"nothing of the batch was written (run it again): {' '.join(detail.split())}"
        )


class BrokenConstraint(CdcError):
    """A batch's rows break a ``CHECK`` constraint or an invariant of the table: nothing of
    the batch was written."""

    def __init__(self, where: str, constraints: list[str], detail: str):
        named = ", ".join(constraints) or "its column invariants"
        super().__init__(
            f"{where}: the batch's rows break a constraint of the table ({named}); nothing of "
            f"the batch was written: {' '.join(detail.split())[:300]}"
        )


class InterleavedWrite(CdcError):
    """Another writer's rows came between a batch's rows and its tombstones: planned
    without the batch's deletes, they may have brought back a row it deleted."""

    def __init__(self, where: str):
        super().__init__(
            f"{where}: other writers wrote rows between this batch's rows and its "
            "tombstones twice, without seeing its deletes: the batch is written; run it "
            "again, which changes only what they undid"
        )


@dataclass(frozen=True)
class Txn:
    """A transaction's identity: the application (a streaming query) and its version (the
    micro-batch)."""

    app_id: str
    version: int


@dataclass(frozen=True)
class TableSettings:
    """How a table is kept: its key columns, mode, deletes and the order of its changes
    (:mod:`.order`); stored with the table so that every later writer keeps it alike.
    ``typed``: whether its first writer typed its columns by registered schemas (``None``:
    a table made before that was kept), which later writers are given registries by."""

    keys: list[str]
    mode: Mode = "upsert"
    deletes: Deletes = "hard"
    order: str = "auto"
    typed: bool | None = None

    def to_json(self) -> str:
        kept: dict[str, object] = {
            "keys": self.keys,
            "mode": self.mode,
            "deletes": self.deletes,
            "order": self.order,
        }
        if self.typed is not None:
            kept["typed"] = self.typed
        return json.dumps(kept)

    @classmethod
    def from_json(cls, text: str) -> TableSettings:
        data = json.loads(text)
        typed = data.get("typed")
        return cls(
            list(data["keys"]),
            data.get("mode", "upsert"),
            data.get("deletes", "hard"),
            data.get("order", "position"),  # (tables made before the setting was kept)
            typed if isinstance(typed, bool) else None,
        )


class TableStore(Protocol):
    """A table in one format (Delta Lake, Iceberg)."""

    #: Where the table is, for messages (a path, a catalog identifier).
    where: str

    def schema(self) -> pa.Schema | None:
        """The table's columns (its rows', then its bookkeeping), or ``None`` while the
        table does not exist."""
        ...

    def settings(self) -> TableSettings | None:
        """The settings the table was created with."""
        ...

    def create(self, schema: pa.Schema, settings: TableSettings) -> None:
        """Create the table (and its tombstones) with ``schema``; nothing when another
        writer created it meanwhile."""
        ...

    def evolve(self, change: Evolution) -> None:
        """Add and widen columns."""
        ...

    def current(self, keys: pa.Table, columns: list[str] | None = None) -> pa.Table:
        """The table's current rows of ``keys`` (in history mode, the current versions):
        only ``columns``, if given."""
        ...

    def versions(self, keys: pa.Table) -> pa.Table:
        """Every row of ``keys``, current or not (history mode's versions)."""
        ...

    def tombstones(self, keys: pa.Table) -> pa.Table:
        """The tombstones of ``keys``."""
        ...

    def version(self, part: Part) -> int | None:
        """The version ``part`` is at now (``None`` while it does not exist)."""
        ...

    def committed(self, part: Part, app_id: str) -> int | None:
        """The last version of ``app_id`` committed to ``part``."""
        ...

    def replace(
        self,
        part: Part,
        keys: pa.Table,
        rows: pa.Table,
        txn: Txn | None,
        every_version: pa.Table | None = None,
    ) -> None:
        """In one transaction of ``part``: the current rows of ``keys`` go, and every row
        of ``every_version``'s keys; ``rows`` come."""
        ...
