"""Settings of the table connector (``cdc-table``), parsed and checked once on the driver.

Spark hands data source options over lower-cased; each is accepted in any case and named in
errors as documented. Every error is one :class:`~cdc_connectors.connectors.messages.
SettingError` line naming the setting.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from cdc_connectors.connectors.messages import SettingError, registry_setting
from cdc_connectors.errors import ConfigError
from cdc_connectors.table.store import TableSettings, TableStore

if TYPE_CHECKING:
    from cdc_connectors.table.iceberg import IcebergStore

__all__ = ["NAME", "Settings"]

NAME = "cdc-table"
FORMATS = ("delta", "iceberg")
_KNOWN = {
    k.lower(): k
    for k in (
        "path",
        "format",
        "keyColumns",
        "mode",
        "deletes",
        "orderBy",
        "collection",
        "table",
        "registry",
        "deadLetters",
        "txnAppId",
        "txnVersion",
        "versionAsOf",
        "timestampAsOf",
        "snapshotId",
    )
}
_CATALOG = "catalog."
#: Options Spark passes to writers along with ours.
_SPARK_OWN = frozenset({"checkpointlocation"})
_READ = ("versionAsOf", "timestampAsOf", "snapshotId")
_WRITE = (
    "keyColumns",
    "mode",
    "deletes",
    "orderBy",
    "collection",
    "deadLetters",
    "txnAppId",
    "txnVersion",
)


_SECRETS = ("password", "secret", "token", "credential")


def _check_secret(key: str, value: str) -> None:
    """No empty secret in a catalog setting: named alone, or as the password of a URI."""
    if any(word in key for word in _SECRETS) and not value.strip():
        raise SettingError(f"{NAME} setting 'catalog.{key}' is empty")
    if "://" in value:
        userinfo = urlsplit(value).netloc.rpartition("@")[0]
        if userinfo and ":" in userinfo and not userinfo.partition(":")[2]:
            raise SettingError(f"{NAME} setting 'catalog.{key}': the URI's password is empty")


def _gist(exc: BaseException) -> str:
    """An error of a table library in one line, without terminal colours."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    line = text.splitlines()[0].strip() if text else ""
    return line[:300] or type(exc).__name__


def _choice(options: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    value = options.get(name.lower(), default).strip().lower()
    if value not in choices:
        raise SettingError(
            f"{NAME} setting {name!r} must be one of {', '.join(choices)}, not {value!r}"
        )
    return value


def _integer(options: Mapping[str, str], name: str) -> int | None:
    value = options.get(name.lower())
    if value is None:
        return None
    if not value.strip().lstrip("-").isdigit():
        raise SettingError(f"{NAME} setting {name!r} must be an integer, not {value!r}")
    return int(value)


def _check_places(options: Mapping[str, str], path: str, fmt: str) -> None:
    """:class:`SettingError` for places that cannot hold the table or its dead letters."""
    for name, place in (("path", path), ("deadLetters", options.get("deadletters"))):
        if place and os.path.exists(place) and not os.path.isdir(place):
            raise SettingError(f"{NAME} setting {name!r}: {place!r} is a file, not a directory")
    delta_here = os.path.isdir(os.path.join(path, "_delta_log"))
    if fmt == "iceberg" and delta_here:
        raise SettingError(f"{NAME} setting 'path': {path!r} holds a Delta table (format delta)")
    if fmt == "delta" and os.path.exists(os.path.join(path, "catalog.db")) and not delta_here:
        raise SettingError(
            f"{NAME} setting 'path': {path!r} is an Iceberg warehouse (format iceberg)"
        )


#: What a Delta table's folder holds besides its data files: the log and our own folders.
_OWN = ("_delta_log", "_cdc_tombstones", "_cdc_dead_letters", "_cdc_schemas")
#: How an Iceberg table's tombstone table is named: the table's name, then this.
_TOMBSTONES = "_cdc_tombstones"


def _writable(existing: str, path: str) -> bool:
    """Whether a folder can be made at ``path`` (in ``existing``, its nearest folder that
    exists) or a file in it, tried and undone: permissions alone do not say so for root, a
    read-only mount or ``/proc``."""
    try:
        if existing == path:
            handle, probe = tempfile.mkstemp(dir=path, prefix=".cdc-probe-")
            os.close(handle)
            os.unlink(probe)
        else:
            first = path
            while os.path.dirname(first) != existing:
                first = os.path.dirname(first)
            os.mkdir(first)
            os.rmdir(first)
    except FileExistsError:
        return True  # made meanwhile by another writer
    except OSError:
        return False
    return True


def _read_settings(
    options: Mapping[str, str], fmt: str
) -> tuple[int | None, str | None, int | None]:
    """``versionAsOf`` (Delta), ``timestampAsOf`` and ``snapshotId`` (Iceberg), checked."""
    version = _integer(options, "versionAsOf")
    snapshot = _integer(options, "snapshotId")
    if version is not None and (fmt != "delta" or version < 0):
        raise SettingError(
            f"{NAME} setting 'versionAsOf' is a Delta version (0 or more); Iceberg: snapshotId"
        )
    if snapshot is not None and fmt != "iceberg":
        raise SettingError(
            f"{NAME} setting 'snapshotId' is for format iceberg (Delta: versionAsOf)"
        )
    timestamp = options.get("timestampasof")
    if timestamp is not None and (version is not None or snapshot is not None):
        other = "versionAsOf" if version is not None else "snapshotId"
        raise SettingError(f"{NAME} settings 'timestampAsOf' and {other!r}: give one of them")
    if timestamp is not None:
        try:
            dt.datetime.fromisoformat(timestamp)
        except ValueError:
            raise SettingError(
                f"{NAME} setting 'timestampAsOf' must be an ISO 8601 time, not {timestamp!r}"
            ) from None
    return version, timestamp, snapshot


@dataclass(frozen=True)
class Settings:
    """The connector's settings, checked (picklable: tasks get them)."""

    path: str
    format: str
    key_columns: tuple[str, ...]
    mode: str
    deletes: str
    order_by: str
    collection: str | None
    table: str
    catalog: tuple[tuple[str, str], ...]
    registry: str | None
    dead_letters: str
    txn_app_id: str | None
    txn_version: int | None
    version_as_of: int | None
    timestamp_as_of: str | None
    snapshot_id: int | None
    given: frozenset[str]

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Settings:
        lowered = {
            str(k).lower(): str(v) for k, v in options.items() if str(k).lower() not in _SPARK_OWN
        }
        for key in map(str, options):
            lower = key.lower()
            if lower not in _KNOWN and lower not in _SPARK_OWN and not lower.startswith(_CATALOG):
                raise SettingError.unknown(NAME, key, _KNOWN, "catalog.<property>")
        path = lowered.get("path", "").strip()
        if not path:
            raise SettingError(
                f"{NAME} setting 'path' is required (the Delta table's directory, or the "
                "Iceberg warehouse)"
            )
        fmt = _choice(lowered, "format", FORMATS, "delta")
        _check_places(lowered, path, fmt)
        keys = tuple(k.strip() for k in lowered.get("keycolumns", "").split(",") if k.strip())
        if "keycolumns" in lowered and not keys:
            raise SettingError(f"{NAME} setting 'keyColumns' must name columns (id,region)")
        folded = [k.lower() for k in keys]  # (Delta takes names whatever their case)
        twice = sorted({k for k in keys if folded.count(k.lower()) > 1})
        if twice:
            raise SettingError(
                f"{NAME} setting 'keyColumns' names {', '.join(map(repr, twice))} twice"
            )
        order_by = lowered.get("orderby", "auto").strip()
        if not order_by:
            raise SettingError(f"{NAME} setting 'orderBy' must be auto, position or a metadata key")
        catalog = tuple(
            sorted((k[len(_CATALOG) :], v) for k, v in lowered.items() if k.startswith(_CATALOG))
        )
        if catalog and fmt != "iceberg":
            raise SettingError(f"{NAME} settings 'catalog.*' are for format iceberg")
        for key, value in catalog:
            _check_secret(key, value)
        table = lowered.get("table", "").strip()
        if fmt == "iceberg" and not table:
            table = "cdc." + (os.path.basename(os.path.normpath(path)) or "changes")
        parts = table.split(".")
        if table and fmt == "iceberg" and (len(parts) < 2 or not all(p.strip() for p in parts)):
            raise SettingError(
                f"{NAME} setting 'table' must be namespace.name (no part empty), not {table!r}"
            )
        if table and fmt == "delta":
            raise SettingError(f"{NAME} setting 'table' is for format iceberg (Delta: 'path')")
        app = lowered.get("txnappid")
        version = _integer(lowered, "txnVersion")
        if (app is None) != (version is None):
            raise SettingError(f"{NAME} settings 'txnAppId' and 'txnVersion' go together")
        registry = registry_setting(NAME, lowered.get("registry"))
        version_as_of, timestamp_as_of, snapshot_id = _read_settings(lowered, fmt)
        mode = _choice(lowered, "mode", ("upsert", "history"), "upsert")
        deletes = _choice(lowered, "deletes", ("hard", "soft"), "hard")
        if mode == "history" and deletes == "soft":
            raise SettingError(
                f"{NAME} setting 'deletes': soft is for mode upsert (history closes a deleted "
                "row's version and keeps it)"
            )
        return cls(
            path=path,
            format=fmt,
            key_columns=keys,
            mode=mode,
            deletes=deletes,
            order_by=order_by,
            collection=lowered.get("collection", "").strip() or None,
            table=table,
            catalog=catalog,
            registry=registry,
            dead_letters=lowered.get("deadletters") or os.path.join(path, "_cdc_dead_letters"),
            txn_app_id=app,
            txn_version=version,
            version_as_of=version_as_of,
            timestamp_as_of=timestamp_as_of,
            snapshot_id=snapshot_id,
            given=frozenset(_KNOWN[k] for k in lowered if k in _KNOWN),
        )

    def refuse(self, names: tuple[str, ...], doing: str) -> None:
        """A setting of ``names`` given while ``doing`` (reading, writing) is refused."""
        for name in names:
            if name in self.given:
                raise SettingError(f"{NAME} setting {name!r} is not for {doing}")

    def refuse_reading_settings(self) -> None:
        self.refuse(_READ, "writing")

    def refuse_writing_settings(self) -> None:
        self.refuse(_WRITE, "reading")

    def keyed(self) -> Settings:
        """These settings with the key columns the table keeps, when none are given (a
        table made with ``keyColumns`` is written alike by a writer that names none)."""
        if self.key_columns or self.fresh_warehouse():
            return self
        try:
            held = self.store().settings()
        except Exception:  # no table, or one the write refuses with its reason
            return self
        if held is None or not held.keys:
            return self
        return dataclasses.replace(self, key_columns=tuple(held.keys))

    def table_settings(self, inferred: list[str] | None, typed: bool = False) -> TableSettings:
        """How the table is kept: the key columns given, else those the records name;
        ``typed`` where the changes' columns are of registered schemas' types (a table
        made of them keeps that it is)."""
        keys = list(self.key_columns) or list(inferred or [])
        return TableSettings(
            keys,
            self.mode,  # type: ignore[arg-type]
            self.deletes,  # type: ignore[arg-type]
            self.order_by,
            typed=typed,
        )

    def store(self) -> TableStore:
        """The table these settings name."""
        if self.format == "delta":
            from cdc_connectors.table.delta import DeltaStore

            return DeltaStore(os.path.abspath(self.path))
        return self.iceberg()

    def fresh_warehouse(self) -> bool:
        """Whether the table is an Iceberg one of the default catalog whose file does not
        exist yet (at a local path)."""
        if self.format != "iceberg" or self.catalog or "://" in self.path:
            return False
        return not os.path.exists(os.path.join(self.path, "catalog.db"))

    def _check_place(self) -> None:
        """A local ``path``: one this process can write (where it does not exist yet, its
        nearest folder that does); for Delta, no folder holding other files than a table."""
        if "://" in self.path or (self.format == "iceberg" and self.catalog):
            return
        path = os.path.abspath(self.path)
        existing = path
        while not os.path.exists(existing):
            existing = os.path.dirname(existing)
        if not os.access(existing, os.W_OK | os.X_OK) or not _writable(existing, path):
            raise SettingError(f"{NAME} setting 'path': {existing!r} cannot be written")
        if self.format == "delta" and existing == path:
            others = sorted(
                name for name in os.listdir(path) if name not in _OWN and not name.startswith(".")
            )
            if others and not os.path.isdir(os.path.join(path, "_delta_log")):
                raise SettingError(
                    f"{NAME} setting 'path': {self.path!r} holds files and no Delta table "
                    f"({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}): a table "
                    "is written to a folder of its own"
                )

    def _refuse_internal(self) -> None:
        """:class:`SettingError` for a table of another table's own (its tombstones, log,
        dead letters or schemas): written to, it would break that table."""
        if self.format == "delta":
            parts = os.path.normpath(os.path.abspath(self.path)).split(os.sep)
            inside = next((part for part in parts if part in _OWN), None)
            if inside is not None:
                owner = os.sep.join(parts[: parts.index(inside)]) or os.sep
                raise SettingError(
                    f"{NAME} setting 'path': {self.path!r} is inside {inside}, a folder of "
                    f"the table at {owner!r}: a table is written to a folder of its own"
                )
        elif self.table.endswith(_TOMBSTONES):
            raise SettingError(
                f"{NAME} setting 'table': {self.table!r} is the tombstone table of "
                f"{self.table[: -len(_TOMBSTONES)]!r}: name a table of its own"
            )

    def iceberg(self) -> IcebergStore:
        """The Iceberg table these settings name."""
        from cdc_connectors.table.iceberg import IcebergStore

        return IcebergStore(self.path, self.table, dict(self.catalog) or None)

    def check_table(self) -> None:
        """:class:`SettingError` naming the setting when the table cannot be opened (its
        catalog, its name, a path that holds something else or cannot be written), or was
        made with other keys, mode or deletes than these (or by another writer)."""
        self.refuse_reading_settings()
        self._refuse_internal()
        self._check_place()
        if self.fresh_warehouse():
            return  # nothing to open: opening the catalog would make its file now
        store = self.store()
        if self.format == "iceberg":
            try:
                _opened = self.iceberg().catalog
            except Exception as exc:
                setting = "catalog" if self.catalog else "path"
                raise SettingError(
                    f"{NAME} setting {setting!r}: the Iceberg catalog does not open: {_gist(exc)}"
                ) from None
        try:
            held = store.settings()
        except ConfigError as exc:
            raise SettingError(f"{NAME} setting 'path': {exc}") from None
        except Exception as exc:
            setting = "table" if self.format == "iceberg" else "path"
            raise SettingError(
                f"{NAME} setting {setting!r}: the table {store.where} does not open: {_gist(exc)}"
            ) from None
        if held is None:
            return
        if self.key_columns and held.keys != list(self.key_columns):
            raise SettingError(
                f"{NAME} setting 'keyColumns': the table at {self.path!r} has key columns "
                f"{','.join(held.keys)}, not {','.join(self.key_columns)}"
            )
        for name, mine, theirs in (
            ("mode", self.mode, held.mode),
            ("deletes", self.deletes, held.deletes),
            ("orderBy", self.order_by, held.order),
        ):
            if mine != theirs:
                raise SettingError(
                    f"{NAME} setting {name!r}: the table at {self.path!r} was made with "
                    f"{name} {theirs}, not {mine}"
                )
