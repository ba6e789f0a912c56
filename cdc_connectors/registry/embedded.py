"""The embedded registry: Confluent's semantics over SQLite, on disk or in memory.

``sqlite:///.cdc/registry.db`` (relative to the working directory; ``sqlite:////abs/path.db``
for an absolute path) is the default store: several processes (Spark executors on one machine,
``registry serve``) may use it at once. Each write runs in one ``BEGIN IMMEDIATE`` transaction,
so two writers never hand out the same version or lose a registration; readers are not blocked
(WAL). Every answer is read from the file, so each process sees at once what any other
committed; only what cannot change (a schema by its id or GUID) is cached. A file this
process cannot write (nor its directory) is opened read-only: it answers every question,
and a change is refused (500, 50001) naming the store as read-only.

``memory://`` is the same store in memory, for tests: ``memory://name`` is shared by every
registry of that name in the process (one connection, its transactions serialised, so threads
using several clients of one name lose nothing, as with a file), until the last of them is
closed; plain ``memory://`` is private to one instance. Neither URL takes query parameters:
one is refused (ValueError naming it) rather than ignored.

As Confluent's registry: a reference to version ``-1`` (latest) is stored pinned to the
version it resolved to, and a schema id no subject version uses any more (live or
soft-deleted) is no schema (40403). A schema's metadata is kept with it and is part of its
identity; config fields beyond the level (aliases, reserved fields, compatibility groups,
default and override metadata) are :mod:`cdc_connectors.registry.settings`'s.

The class is a ``confluent_kafka.schema_registry.SchemaRegistryClient`` that never talks HTTP,
so confluent-kafka's serializers and deserializers take it as they take the client.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import unquote, urlparse

import orjson
from confluent_kafka.schema_registry.common.schema_registry_client import (
    ConfigCompatibilityLevel,
    Metadata,
    _SchemaCache,
)

from cdc_connectors.registry import compatibility, errors, settings
from cdc_connectors.registry.base import (
    DEFAULT_LEVEL,
    DEFAULT_MODE,
    LATEST,
    LEVELS,
    MAX_ID,
    MODES,
    SCHEMA_TYPES,
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistry,
    SchemaVersion,
    ServerConfig,
    Version,
    version_number,
    with_schema,
)
from cdc_connectors.registry.redact import redact_url
from cdc_connectors.schema import languages, protobuf
from cdc_connectors.schema.errors import SchemaError

#: Which rule made the fingerprints of a store (``PRAGMA user_version``): 2 is the
#: canonical form of ``languages.normalize`` with references resolved; 3 also pins
#: references to version -1 to the version they resolved to.
IDENTITY_RULE = 3

_DDL = """
CREATE TABLE IF NOT EXISTS schemas (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint TEXT NOT NULL UNIQUE,
    schema_type TEXT NOT NULL,
    schema      TEXT NOT NULL,
    refs        TEXT NOT NULL,
    guid        TEXT NOT NULL,
    metadata    TEXT
);
CREATE TABLE IF NOT EXISTS versions (
    subject   TEXT NOT NULL,
    version   INTEGER NOT NULL,
    schema_id INTEGER NOT NULL REFERENCES schemas(id),
    deleted   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (subject, version)
);
CREATE INDEX IF NOT EXISTS versions_by_schema ON versions(schema_id);
CREATE TABLE IF NOT EXISTS config (
    scope         TEXT PRIMARY KEY,
    compatibility TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS modes (
    scope TEXT PRIMARY KEY,
    mode  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS config_fields (
    scope  TEXT PRIMARY KEY,
    fields TEXT NOT NULL
);
"""
_ROW = (
    "SELECT v.version, s.id, s.schema_type, s.schema, s.refs, s.guid, v.deleted, v.subject, "
    "s.metadata FROM versions v "
    "JOIN schemas s ON s.id = v.schema_id"
)
# (subject, version) of a reference, and the versions whose schema holds it
_REFERRERS = (
    "SELECT DISTINCT v.subject, v.schema_id FROM versions v JOIN schemas s ON s.id = v.schema_id, "
    "json_each(s.refs) r WHERE json_extract(r.value, '$.subject') = ? "
    "AND json_extract(r.value, '$.version') = ?"
)
_GLOBAL = "global"
_READONLY = ("READONLY", "READONLY_OVERRIDE")

T = TypeVar("T")
Row = tuple[Any, ...]


def _scope(subject: str | None) -> str:
    return _GLOBAL if subject is None else f"subject:{subject}"


def _refs_json(references: Sequence[SchemaReference] | None) -> str:
    refs = [{"name": r.name, "subject": r.subject, "version": r.version} for r in references or []]
    return orjson.dumps(refs).decode()


def _refs_from_json(text: str) -> list[SchemaReference]:
    return [SchemaReference(r["name"], r["subject"], r["version"]) for r in orjson.loads(text)]


def _is_latest(ref: SchemaReference) -> bool:
    """True for a reference to the latest version (``-1`` or ``latest``)."""
    try:
        return version_number(ref.version) == LATEST
    except errors.SchemaRegistryError:
        return False


def _page(items: list[T], offset: int = 0, limit: int = -1) -> list[T]:
    """Confluent's paging: skip ``offset``, then at most ``limit`` (all when 0 or less)."""
    items = items[max(offset, 0) :]
    return items if limit <= 0 else items[:limit]


def _schema_call(fn: Callable[..., T], *args: Any) -> T:
    """Run a schema-language function; whatever it refuses is 42201, never a server fault."""
    try:
        return fn(*args)
    except SchemaError as exc:
        raise errors.invalid_schema(str(exc)) from None
    except RecursionError:
        raise errors.invalid_schema("the schema nests too deeply to be processed") from None


# A memory://name store in this process: (process id, name). After a fork the child's
# stores are its own: a connection is never used in two processes.
_Key = tuple[int, str]


@dataclass
class _Named:
    """The store of a ``memory://name``: one connection and one lock for all its clients.

    Every client of the name uses this connection under this lock, so their transactions
    are serialised as a file store's are (SQLite's shared-cache mode would answer "table
    is locked" to concurrent writers instead of waiting). The store lives while a client
    of the name is open.
    """

    db: sqlite3.Connection
    lock: Any  # threading.RLock
    users: int = 0


_NAMED: dict[_Key, _Named] = {}
_NAMED_LOCK = threading.Lock()


def _memory() -> sqlite3.Connection:
    return sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)


def _attach(key: _Key) -> _Named:
    """The named store of ``key``, created on first use, with one more client."""
    with _NAMED_LOCK:
        named = _NAMED.get(key)
        if named is None:
            named = _NAMED[key] = _Named(_memory(), threading.RLock())
        named.users += 1
        return named


def _detach(key: _Key) -> None:
    """One client of the named store of ``key`` fewer; the last one takes the store away."""
    with _NAMED_LOCK:
        named = _NAMED[key]
        named.users -= 1
        if named.users == 0:
            del _NAMED[key]
            with named.lock:
                named.db.close()


def _closed_connection() -> sqlite3.Connection:
    """A connection already closed: what a closed client holds, so using it raises."""
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.close()
    return db


@dataclass
class _Opened:
    """What :func:`_open` opened: the connection, the lock that serialises its use, the key
    of a ``memory://name`` store, how messages name the store and whether it is read-only."""

    db: sqlite3.Connection
    lock: Any  # threading.RLock
    key: _Key | None
    label: str
    read_only: bool = False


#: What SQLite keeps beside a store's file (its journal), by the suffix of its name.
JOURNALS = ("-wal", "-shm", "-journal")


def store_place(url: str) -> Path | None:
    """What an embedded URL names, checked without opening anything: ``None`` for a
    ``memory://`` store, else the path of a SQLite file that may be opened (it may not
    exist yet). ValueError naming the store (one line, no secret) for a URL that
    cannot be one (a :class:`RegistryURLError`) or a path that cannot be a store."""
    parsed = urlparse(url)
    names = sorted({unquote(item.partition("=")[0]) for item in parsed.query.split("&") if item})
    if names and parsed.scheme in ("memory", "sqlite"):
        raise errors.RegistryURLError(
            f"registry URL {redact_url(url)!r}: unknown query parameter"
            f"{'s' if len(names) > 1 else ''} {', '.join(names)} (the embedded store takes none)"
        )
    if parsed.scheme == "memory":
        return None
    if parsed.scheme != "sqlite":
        raise errors.RegistryURLError(f"not an embedded registry URL: {redact_url(url)!r}")
    if parsed.netloc or not url[: len("sqlite://")].lower() == "sqlite://":
        raise errors.RegistryURLError(
            f"registry URL {redact_url(url)!r} "
            f"{'has a host' if parsed.netloc else 'has no // after its scheme'}: use "
            "sqlite:///relative/path.db or sqlite:////absolute/path.db"
        )
    if "#" in url:
        raise errors.RegistryURLError(
            f"registry URL {redact_url(url)!r}: '#' would end the file's name there; "
            "write it as %23"
        )
    # As SQLAlchemy reads it: sqlite:///rel.db is relative, sqlite:////abs.db absolute.
    path = Path(unquote(parsed.path)[1:])
    if not str(path) or str(path) == ".":
        raise errors.RegistryURLError(
            f"registry URL {redact_url(url)!r} names no file: use sqlite:///path/to.db"
        )
    label = f"registry store {path}"
    if unquote(parsed.path).endswith("/"):  # Path() drops the slash: a file would be made
        raise ValueError(f"{label}/ names a directory, not a SQLite database file")
    try:
        is_dir, exists = path.is_dir(), path.exists()
    except OSError as exc:  # a directory on the way that cannot be searched
        raise ValueError(f"{label} cannot be reached ({exc.strerror or exc})") from None
    if is_dir:
        raise ValueError(f"{label} is a directory, not a SQLite database file")
    if exists and not os.access(path, os.R_OK):
        raise ValueError(f"{label} cannot be read (permission denied)")
    return path


def _open(url: str) -> _Opened:
    """Open the store of an embedded URL; ValueError naming the store (one line, no
    secret) when the URL cannot be one or the store cannot be opened.

    A file this process cannot write (nor its directory, where SQLite keeps its
    write-ahead log) is opened read-only: reading works, a change is refused naming
    the store as read-only.
    """
    path = store_place(url)
    if path is None:
        parsed = urlparse(url)
        name = (parsed.netloc + parsed.path).strip("/")
        label = f"registry store {redact_url(url)}"
        if not name:
            return _Opened(_memory(), threading.RLock(), None, label)
        key = (os.getpid(), name)
        named = _attach(key)
        return _Opened(named.db, named.lock, key, label)
    label = f"registry store {path}"
    if path.exists():
        folder = path.parent
        if not (os.access(path, os.W_OK) and os.access(folder, os.W_OK | os.X_OK)):
            return _Opened(_open_read_only(path, label), threading.RLock(), None, label, True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"{label}: cannot create its directory {path.parent} ({exc.strerror or exc})"
        ) from None
    try:
        db = sqlite3.connect(str(path), timeout=60.0, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise ValueError(f"{label} cannot be opened: {exc}") from None
    try:
        db.execute("PRAGMA busy_timeout = 60000")
        _write_ahead(db)
    except sqlite3.DatabaseError as exc:
        db.close()
        if _primary_code(exc) == sqlite3.SQLITE_BUSY:
            raise ValueError(
                f"{label} stayed locked by another process for {_BUSY_SECONDS:.0f} s ({exc})"
            ) from None
        if _is_read_only(exc):
            raise ValueError(
                f"{label} is read-only ({exc}): make it and its directory writable, "
                "or remove the file to start a new store"
            ) from None
        raise ValueError(f"{label} is not a SQLite database ({exc})") from None
    return _Opened(db, threading.RLock(), None, label)


_BUSY_SECONDS = 60.0


def _write_ahead(db: sqlite3.Connection) -> None:
    """The store in write-ahead-log mode. Several processes opening a new store at once
    (a pipeline's Spark workers) race for the lock that switching the mode takes, and
    SQLite answers the losers "database is locked" at once, without its busy handler:
    they try again until the winner has switched it, for :data:`_BUSY_SECONDS` at most."""
    deadline = time.monotonic() + _BUSY_SECONDS
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if _primary_code(exc) != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def _primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of an error (its extended code without the variant)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _is_read_only(exc: sqlite3.Error) -> bool:
    """True for SQLite's "attempt to write a readonly database" (any of its variants)."""
    return _primary_code(exc) == sqlite3.SQLITE_READONLY


def _open_read_only(path: Path, label: str) -> sqlite3.Connection:
    """A read-only connection to the store at ``path``, which this process cannot write.

    A store in WAL mode needs its shared-memory file beside it: when that does not exist
    and the directory cannot be written, and no write-ahead log waits to be checkpointed
    (no writer has it open), the file is read as immutable.
    """
    uri = path.absolute().as_uri()

    def connect(query: str) -> sqlite3.Connection:
        db = sqlite3.connect(
            f"{uri}?{query}",
            uri=True,
            timeout=60.0,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            db.execute("PRAGMA busy_timeout = 60000")
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    try:
        try:
            return connect("mode=ro")
        except sqlite3.OperationalError as exc:
            wal = Path(f"{path}-wal")
            if _primary_code(exc) not in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN):
                raise
            if wal.exists() and wal.stat().st_size > 0:
                raise ValueError(
                    f"{label} is read-only and its write-ahead log {wal} holds changes "
                    "that only a writer can apply: open it once with write access"
                ) from None
            return connect("mode=ro&immutable=1")
    except (sqlite3.OperationalError, OSError) as exc:
        raise ValueError(f"{label} (read-only) cannot be opened ({exc})") from None
    except sqlite3.Error as exc:
        raise ValueError(f"{label} (read-only) is not a SQLite database ({exc})") from None


def _config_level(config: ServerConfig) -> str | None:
    """The level a config sets, given as ``compatibility`` or ``compatibility_level``."""
    given = [
        str(getattr(level, "value", level))
        for level in (config.compatibility, config.compatibility_level)
        if level is not None
    ]
    if len({level.upper() for level in given}) > 1:
        raise errors.invalid_compatibility_level(
            f"compatibility {given[0]} and compatibility_level {given[1]} differ"
        )
    return given[0] if given else None


def _add_metadata_column(db: sqlite3.Connection) -> None:
    """Give a store written before schema metadata was kept its column for it."""
    columns = {str(r[1]) for r in db.execute("PRAGMA table_info(schemas)")}
    if "metadata" not in columns:
        db.execute("ALTER TABLE schemas ADD COLUMN metadata TEXT")


def _metadata_json(metadata: dict[str, Any] | None) -> str | None:
    return None if metadata is None else orjson.dumps(metadata).decode()


def _metadata_from_json(text: object) -> dict[str, Any] | None:
    return None if text is None else settings.metadata_dict(orjson.loads(str(text)))


def _schema_of(schema_type: object, text: object, refs: object, metadata: object = None) -> Schema:
    """A stored schema as confluent-kafka's type, its metadata with it."""
    meta = _metadata_from_json(metadata)
    return Schema(
        str(text),
        str(schema_type),
        _refs_from_json(str(refs)),
        metadata=None if meta is None else Metadata.from_dict(meta),
    )


def requested_metadata(schema: Schema) -> dict[str, Any] | None:
    """The metadata a schema carries, in canonical form (``None`` for none)."""
    metadata = getattr(schema, "metadata", None)
    if metadata is None:
        return None
    return settings.metadata_dict(metadata.to_dict() if hasattr(metadata, "to_dict") else metadata)


def _server_config(document: dict[str, Any]) -> ServerConfig:
    """A REST config document as confluent-kafka's ``ServerConfig`` (what it can hold)."""
    level = document.get("compatibilityLevel")

    def metadata(key: str) -> Metadata | None:
        value = document.get(key)
        return None if value is None else Metadata.from_dict(value)

    return ServerConfig(
        compatibility_level=None if level is None else ConfigCompatibilityLevel(level),
        compatibility_group=document.get("compatibilityGroup"),
        default_metadata=metadata("defaultMetadata"),
        override_metadata=metadata("overrideMetadata"),
    )


@dataclass(frozen=True)
class _Setting:
    """A setting held globally and per subject (compatibility level, mode) in one table."""

    table: str
    column: str
    default: str

    def own(self, db: sqlite3.Connection, subject: str | None) -> str | None:
        """The value set for ``subject`` itself (None: the global one), or ``None``."""
        row = db.execute(
            f"SELECT {self.column} FROM {self.table} WHERE scope = ?", (_scope(subject),)
        ).fetchone()
        return None if row is None else str(row[0])

    def effective(self, db: sqlite3.Connection, subject: str | None) -> str:
        """The value that applies to ``subject``: its own, else the global one, else the default."""
        rows = db.execute(
            f"SELECT scope, {self.column} FROM {self.table} WHERE scope IN (?, ?)",
            (_scope(subject), _GLOBAL),
        ).fetchall()
        values = {str(scope): str(value) for scope, value in rows}
        return values.get(_scope(subject)) or values.get(_GLOBAL) or self.default

    def put(self, db: sqlite3.Connection, subject: str | None, value: str) -> None:
        db.execute(
            f"INSERT INTO {self.table} (scope, {self.column}) VALUES (?, ?) "
            f"ON CONFLICT(scope) DO UPDATE SET {self.column} = excluded.{self.column}",
            (_scope(subject), value),
        )

    def remove(self, db: sqlite3.Connection, subject: str | None) -> None:
        db.execute(f"DELETE FROM {self.table} WHERE scope = ?", (_scope(subject),))


_LEVEL = _Setting("config", "compatibility", DEFAULT_LEVEL)
_MODE = _Setting("modes", "mode", DEFAULT_MODE)


class EmbeddedRegistry(SchemaRegistry):
    """A schema registry stored in SQLite (a file, or shared memory)."""

    def __init__(self, url: str, **conf: Any):
        # The HTTP client's constructor is not called: nothing here talks HTTP.
        self.url = url
        self._conf = {"url": url, **conf}
        # read by confluent-kafka's serdes configured with use.schema.id
        self._cache = _SchemaCache()  # type: ignore[no-untyped-call]
        opened = _open(url)
        self._db, self._lock, self._named = opened.db, opened.lock, opened.key
        self._label, self._read_only = opened.label, opened.read_only
        self._closed = False
        self._row_sql, self._has_fields = _ROW, True
        try:
            if self._read_only:
                self._check_tables()
            else:
                with self._lock, self._transaction("BEGIN IMMEDIATE") as db:
                    for statement in _DDL.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    _add_metadata_column(db)
                    self._upgrade_identities(db)
        except sqlite3.DatabaseError as exc:
            self.close()
            if _is_read_only(exc):
                raise ValueError(
                    f"{self._label} is read-only ({exc}): make it and its directory writable"
                ) from None
            raise ValueError(f"{self._label} is not a usable SQLite database ({exc})") from None
        except BaseException:
            self.close()
            raise
        # What cannot change: a schema by its id, its GUID, its serialized Protobuf form.
        self._by_id: dict[int, tuple[Schema, str]] = {}
        self._by_guid: dict[str, int] = {}
        self._serialized: dict[int, str] = {}

    # --- plumbing -------------------------------------------------------------------------

    def _upgrade_identities(self, db: sqlite3.Connection) -> None:
        """Recompute the fingerprints of a store written with an older identity rule.

        The store's ``user_version`` says which rule made its fingerprints. Schemas
        that the current rule finds equal keep the lowest id as the one new
        registrations get; the others stay readable by their own ids.
        """
        if db.execute("PRAGMA user_version").fetchone()[0] >= IDENTITY_RULE:
            return
        rows = db.execute(
            "SELECT id, schema_type, schema, refs, fingerprint, metadata FROM schemas ORDER BY id"
        ).fetchall()
        # out of the way first: an old fingerprint may equal another schema's new one
        db.execute("UPDATE schemas SET fingerprint = 'upgrading:' || id")
        taken: set[str] = set()
        for schema_id, schema_type, text, refs, old, metadata in rows:
            schema = Schema(str(text), str(schema_type), _refs_from_json(str(refs)))
            try:
                content, _, pinned = self._identify(db, schema)
                fingerprint = content + settings.metadata_hash(_metadata_from_json(metadata))
            except errors.SchemaRegistryError:
                fingerprint = str(old)  # no longer valid: it keeps the fingerprint it had
            else:
                # references to version -1 were stored as such before rule 3
                refs = _refs_json(pinned.references)
            if fingerprint in taken:
                fingerprint = f"{fingerprint}:{schema_id}"
            taken.add(fingerprint)
            db.execute(
                "UPDATE schemas SET fingerprint = ?, refs = ? WHERE id = ?",
                (fingerprint, str(refs), schema_id),
            )
        db.execute(f"PRAGMA user_version = {IDENTITY_RULE}")

    def _check_tables(self) -> None:
        """A store opened read-only cannot be set up: it must hold a registry already."""
        with self._lock:
            rows = self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = {str(r[0]) for r in rows.fetchall()}
        missing = sorted({"schemas", "versions"} - tables)
        if missing:
            raise ValueError(
                f"{self._label} is read-only and holds no registry (no {' or '.join(missing)} "
                "table): point --registry at a registry store, or make this one writable"
            )
        # a store written before schema metadata and config fields were kept has neither
        self._has_fields = "config_fields" in tables
        with self._lock:
            columns = {str(r[1]) for r in self._db.execute("PRAGMA table_info(schemas)")}
        if "metadata" not in columns:
            self._row_sql = _ROW.replace("s.metadata", "NULL")

    def _backend_error(self, exc: sqlite3.Error) -> errors.SchemaRegistryError:
        """Confluent's server fault (500, 50001) for a store that failed a request."""
        if _is_read_only(exc):
            why = " (opened read-only: the file or its directory cannot be written)"
            return errors.SchemaRegistryError(
                500,
                50001,
                f"{self._label} is read-only"
                f"{why if self._read_only else ''}, so it cannot take this change ({exc})",
            )
        return errors.SchemaRegistryError(500, 50001, f"{self._label} failed: {exc}")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the store's lock; a store that fails (locked, read-only, I/O, corrupt) is
        :meth:`_backend_error`. A closed client's ProgrammingError and the like pass."""
        with self._lock:
            try:
                yield
            except sqlite3.DatabaseError as exc:
                if type(exc) not in (sqlite3.OperationalError, sqlite3.DatabaseError):
                    raise
                raise self._backend_error(exc) from None

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        """One transaction on the connection, the lock held by the caller; SQLite's errors
        as they are."""
        self._db.execute(begin)
        try:
            yield self._db
        except BaseException:
            if self._db.in_transaction:  # SQLite may have rolled it back already
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, serialised against every other writer of the file."""
        with self._locked(), self._transaction("BEGIN IMMEDIATE") as db:
            yield db

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: several queries see one committed state of the file."""
        with self._locked():
            self._db.execute("BEGIN")
            try:
                yield self._db
            finally:
                if self._db.in_transaction:
                    self._db.execute("COMMIT")

    def close(self) -> None:
        """Close this client; a ``memory://name`` store stays for its other clients."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            db, self._db = self._db, _closed_connection()
            if self._named is None:
                db.close()
        if self._named is not None:
            _detach(self._named)

    def config(self) -> dict[str, Any]:
        return self._conf

    def clear_latest_caches(self) -> None:
        """Nothing to clear: the latest version is read from the store every time."""

    def clear_caches(self) -> None:
        self._by_id.clear()
        self._by_guid.clear()
        self._serialized.clear()

    @staticmethod
    def _registered(row: Row) -> RegisteredSchema:
        version, schema_id, schema_type, text, refs, guid, _, subject, metadata = row
        return RegisteredSchema(
            schema_id=int(schema_id),
            guid=str(guid),
            schema=_schema_of(schema_type, text, refs, metadata),
            subject=str(subject),
            version=int(version),
        )

    @staticmethod
    def _has_subject(db: sqlite3.Connection, subject: str, deleted: bool) -> bool:
        live = "" if deleted else " AND deleted = 0"
        sql = f"SELECT 1 FROM versions WHERE subject = ?{live} LIMIT 1"
        return db.execute(sql, (subject,)).fetchone() is not None

    def _row(self, db: sqlite3.Connection, subject: str, version: Version, deleted: bool) -> Row:
        """The row of a subject's version (40401 / 40402 as Confluent answers)."""
        number = version_number(version)
        live = "" if deleted else " AND v.deleted = 0"
        if number == LATEST:
            sql = f"{self._row_sql} WHERE v.subject = ?{live} ORDER BY v.version DESC LIMIT 1"
            row = db.execute(sql, (subject,)).fetchone()
        else:
            sql = f"{self._row_sql} WHERE v.subject = ? AND v.version = ?{live}"
            row = db.execute(sql, (subject, number)).fetchone()
        if row is None:
            if not self._has_subject(db, subject, deleted):
                raise errors.subject_not_found(subject)
            raise errors.version_not_found(number)
        return tuple(row)

    def _level(self, db: sqlite3.Connection, subject: str | None) -> str:
        return _LEVEL.effective(db, subject)

    def _mode(self, db: sqlite3.Connection, subject: str | None) -> str:
        return _MODE.effective(db, subject)

    def _writable(self, db: sqlite3.Connection, subject: str | None) -> str:
        """The mode of ``subject`` (None: the global one); 42205 when it is read-only."""
        mode = self._mode(db, subject)
        if mode in _READONLY:
            if subject is None:
                raise errors.not_permitted("The registry is in read-only mode")
            raise errors.not_permitted(f"Subject {subject} is in read-only mode")
        return mode

    def _own_fields(self, db: sqlite3.Connection, subject: str | None) -> dict[str, Any]:
        """The config fields set for ``subject`` itself (None: the global ones)."""
        if not self._has_fields:
            return {}
        row = db.execute(
            "SELECT fields FROM config_fields WHERE scope = ?", (_scope(subject),)
        ).fetchone()
        return {} if row is None else dict(orjson.loads(str(row[0])))

    def _put_fields(
        self, db: sqlite3.Connection, subject: str | None, fields: dict[str, Any]
    ) -> None:
        if not fields:
            db.execute("DELETE FROM config_fields WHERE scope = ?", (_scope(subject),))
            return
        db.execute(
            "INSERT INTO config_fields (scope, fields) VALUES (?, ?) "
            "ON CONFLICT(scope) DO UPDATE SET fields = excluded.fields",
            (_scope(subject), orjson.dumps(fields).decode()),
        )

    def _config_fields(self, db: sqlite3.Connection, subject: str | None) -> dict[str, Any]:
        """The config fields that apply to ``subject``: its own over the global ones."""
        global_fields = self._own_fields(db, None)
        if subject is None:
            return global_fields
        return settings.merged_config(global_fields, self._own_fields(db, subject))

    def _aliased(self, db: sqlite3.Connection, subject: str) -> str:
        """The subject ``subject`` stands for: its config's alias, else itself (an alias of
        an alias is not followed, as Confluent's)."""
        alias = self._own_fields(db, subject).get("alias")
        return alias if isinstance(alias, str) and alias else subject

    # --- references, parsing and identity ------------------------------------------------

    def _resolve(
        self, db: sqlite3.Connection, references: Sequence[SchemaReference] | None
    ) -> list[tuple[str, str]]:
        """(name, schema text) of every reference, transitively, dependencies first.

        The one resolver of the registry: parsing, identity and the serialized Protobuf form
        all see references through it. Soft-deleted versions still resolve, as Confluent's.
        """
        resolved: dict[str, str] = {}

        def visit(refs: Sequence[SchemaReference], depth: int) -> None:
            if depth > 32:
                raise errors.invalid_schema("schema references nest deeper than 32 levels")
            for ref in refs:
                if ref.name in resolved:
                    continue
                row = self._reference_row(db, ref, pin=False)
                visit(_refs_from_json(str(row[4])), depth + 1)
                resolved[str(ref.name)] = str(row[3])

        visit(references or [], 0)
        return list(resolved.items())

    def _reference_row(self, db: sqlite3.Connection, ref: SchemaReference, pin: bool) -> Row:
        """The version a reference names, soft-deleted ones too.

        To ``pin`` a reference to ``-1`` is to find the latest live version, as Confluent's
        registry does for a new schema; a stored one may still name ``-1`` (written before
        references were pinned) and resolves to the latest version, live or not.
        """
        if not ref.name or not ref.subject or ref.version is None:
            raise errors.invalid_schema(f"incomplete schema reference {ref}")
        try:
            return self._row(db, str(ref.subject), ref.version, deleted=not pin)
        except errors.SchemaRegistryError:
            raise errors.invalid_schema(
                f"reference {ref.name!r} names subject {ref.subject!r} version "
                f"{ref.version}, which does not exist"
            ) from None

    def _pinned(self, db: sqlite3.Connection, schema: Schema) -> Schema:
        """``schema`` with every reference to version ``-1`` pinned to the latest live version.

        As Confluent's registry does on registration and lookup: the stored reference names
        a concrete version, so that version is listed as referenced (``referencedby``),
        cannot be deleted from under its referrer (42206), and a newer version of the
        referenced subject does not change what the referrer means.
        """
        references = list(schema.references or [])
        if not any(_is_latest(r) for r in references):
            return schema
        pinned = [
            SchemaReference(r.name, r.subject, int(self._reference_row(db, r, pin=True)[0]))
            if _is_latest(r)
            else r
            for r in references
        ]
        return Schema(schema.schema_str, schema.schema_type, pinned)

    @staticmethod
    def _checked_type(schema: Schema) -> str:
        schema_type = schema.schema_type or "AVRO"
        if schema_type not in SCHEMA_TYPES:  # case-sensitive, as Confluent's
            raise errors.invalid_schema(
                f"unknown schema type {schema_type!r} (types: {', '.join(SCHEMA_TYPES)})"
            )
        if not isinstance(schema.schema_str, str) or not schema.schema_str.strip():
            raise errors.invalid_schema("Empty schema")
        return schema_type

    def _identify(
        self, db: sqlite3.Connection, schema: Schema
    ) -> tuple[str, list[tuple[str, str]], Schema]:
        """The fingerprint of a schema (equal ones share an id), its resolved references, and
        the schema as stored: references to the latest version pinned to its number."""
        schema_type = self._checked_type(schema)
        schema = self._pinned(db, schema)
        resolved = self._resolve(db, schema.references)
        text = _schema_call(languages.normalize, schema_type, schema.schema_str, resolved)
        key = f"{schema_type}\0{text}\0{_refs_json(schema.references)}"
        return hashlib.sha256(key.encode()).hexdigest(), resolved, schema

    @staticmethod
    def _parse(schema: Schema, resolved: list[tuple[str, str]]) -> languages.ParsedSchema:
        schema_type = schema.schema_type or "AVRO"
        parsed: languages.ParsedSchema = _schema_call(
            languages.parse, schema_type, schema.schema_str or "", resolved
        )
        return parsed

    def _parse_row(self, db: sqlite3.Connection, row: Row) -> languages.ParsedSchema:
        schema = Schema(str(row[3]), str(row[2]), _refs_from_json(str(row[4])))
        return self._parse(schema, self._resolve(db, schema.references))

    @staticmethod
    def _check(
        level: str, new: languages.ParsedSchema, old: list[languages.ParsedSchema]
    ) -> list[str]:
        return _schema_call(compatibility.check, level, new, old)

    def _formatted(self, schema_id: int, schema: Schema, fmt: str | None) -> Schema:
        """``schema`` in the format asked for: ``serialized`` gives Protobuf's descriptor."""
        if fmt != "serialized" or schema.schema_type != "PROTOBUF":
            return schema
        text = self._serialized.get(schema_id)
        if text is None:
            if protobuf.parse_serialized(schema.schema_str or "") is not None:
                text = schema.schema_str or ""
            else:
                with self._read() as db:
                    resolved = self._resolve(db, schema.references)
                compiled = _schema_call(
                    protobuf.compile_schema, schema.schema_str or "", dict(resolved)
                )
                text = protobuf.serialized(compiled)
            self._serialized[schema_id] = text
        return Schema(text, schema.schema_type, schema.references, metadata=schema.metadata)

    def _in_format(self, registered: RegisteredSchema, fmt: str | None) -> RegisteredSchema:
        schema = self._formatted(int(registered.schema_id or 0), registered.schema, fmt)
        if schema is registered.schema:
            return registered
        return with_schema(registered, schema)

    # --- registering ---------------------------------------------------------------------

    def register_schema(
        self, subject_name: str, schema: Schema, normalize_schemas: bool = False
    ) -> int:
        registered = self.register_schema_full_response(subject_name, schema, normalize_schemas)
        return int(registered.schema_id or 0)

    def register_schema_full_response(
        self,
        subject_name: str,
        schema: Schema,
        normalize_schemas: bool = False,
        *,
        schema_id: int | None = None,
        version: int | None = None,
    ) -> RegisteredSchema:
        """Register ``schema`` under ``subject_name`` (idempotent); 409 if incompatible.

        ``schema_id`` and ``version`` keep the ones a schema had elsewhere; they are taken
        only in ``IMPORT`` mode (42205 otherwise), as Confluent's.
        """
        subject = subject_name
        if not isinstance(subject, str) or not subject:
            raise errors.SchemaRegistryError(422, 42208, "The specified subject is not valid.")
        if schema_id is not None and not 0 <= schema_id <= MAX_ID:
            raise errors.invalid_schema(f"schema id {schema_id} is out of range")
        if version is not None and version_number(version) == LATEST:
            version = None
        with self._read() as db:
            content, resolved, schema = self._identify(db, schema)
        parsed = self._parse(schema, resolved)  # outside the write lock: may compile Protobuf
        with self._write() as db:
            subject = self._aliased(db, subject)
            mode = self._writable(db, subject)
            if schema_id is not None and mode != "IMPORT":
                raise errors.not_permitted(f"Subject {subject} is not in import mode")
            if schema_id is None and mode != "READWRITE":
                raise errors.not_permitted(f"Subject {subject} is not in read-write mode")
            config = self._config_fields(db, subject)
            metadata = self._new_metadata(db, subject, requested_metadata(schema), config)
            fingerprint = content + settings.metadata_hash(metadata)
            row = db.execute(
                "SELECT id FROM schemas WHERE fingerprint = ?", (fingerprint,)
            ).fetchone()
            found = None if row is None else int(row[0])
            if schema_id is not None:
                found = self._check_imported_id(db, schema_id, fingerprint, found)
            existing, number = self._existing(db, subject, found, version, mode)
            if existing is not None:
                return existing
            if mode != "IMPORT":
                self._check_compatible(db, subject, parsed, metadata, config)
            if found is None:
                found = self._insert_schema(db, schema, schema_id, fingerprint, metadata)
            db.execute(
                "INSERT INTO versions (subject, version, schema_id) VALUES (?, ?, ?)",
                (subject, number, found),
            )
            return self._registered(self._row(db, subject, number, deleted=False))

    def _new_metadata(
        self,
        db: sqlite3.Connection,
        subject: str,
        requested: dict[str, Any] | None,
        config: dict[str, Any],
    ) -> dict[str, Any] | None:
        """The metadata a schema registered under ``subject`` gets (:mod:`settings`)."""
        latest = self._latest_live(db, subject)
        previous = None if latest is None else _metadata_from_json(latest[8])
        return settings.effective_metadata(requested, previous, config)

    def _latest_live(self, db: sqlite3.Connection, subject: str) -> Row | None:
        row = db.execute(
            f"{self._row_sql} WHERE v.subject = ? AND v.deleted = 0 "
            "ORDER BY v.version DESC LIMIT 1",
            (subject,),
        ).fetchone()
        return None if row is None else tuple(row)

    def _existing(
        self,
        db: sqlite3.Connection,
        subject: str,
        found: int | None,
        version: int | None,
        mode: str,
    ) -> tuple[RegisteredSchema | None, int]:
        """The version already holding a registration (the schema ``found`` under the
        subject, or an imported version that exists), else ``None`` and the new number."""
        if found is not None and version is None:
            same = db.execute(
                f"{self._row_sql} WHERE v.subject = ? AND v.schema_id = ? AND v.deleted = 0 "
                "ORDER BY v.version LIMIT 1",
                (subject, found),
            ).fetchone()
            if same is not None:
                return self._registered(tuple(same)), 0
        top = int(
            db.execute(
                "SELECT coalesce(max(version), 0) FROM versions WHERE subject = ?", (subject,)
            ).fetchone()[0]
        )
        if version is None or version == top + 1:
            return None, top + 1
        if mode != "IMPORT":
            raise errors.invalid_schema("Version is not one more than previous version")
        return self._imported_version(db, subject, version), version

    def _check_imported_id(
        self, db: sqlite3.Connection, schema_id: int, fingerprint: str, found: int | None
    ) -> int | None:
        """The id an imported schema keeps: refused when another schema has ``schema_id``, or
        the schema is registered under another id already. As Confluent's, an id no version
        uses any more is free: the schema it held (this one or another) lets it go."""
        taken = db.execute("SELECT fingerprint FROM schemas WHERE id = ?", (schema_id,)).fetchone()
        if taken is not None and taken[0] != fingerprint and not self._release(db, schema_id):
            raise errors.not_permitted(
                f"Overwrite new schema with id {schema_id} is not permitted."
            )
        if found is not None and found != schema_id:
            if not self._release(db, found):
                raise errors.not_permitted(
                    f"The schema is registered with id {found}; it cannot take id {schema_id}"
                )
            return None
        return found

    def _release(self, db: sqlite3.Connection, schema_id: int) -> bool:
        """Remove a schema no version uses (live or soft-deleted); False if one does."""
        if db.execute("SELECT 1 FROM versions WHERE schema_id = ?", (schema_id,)).fetchone():
            return False
        guid = self._by_id.pop(schema_id, (None, None))[1]
        self._by_guid.pop(str(guid), None)
        self._serialized.pop(schema_id, None)
        db.execute("DELETE FROM schemas WHERE id = ?", (schema_id,))
        return True

    def _imported_version(
        self, db: sqlite3.Connection, subject: str, version: int
    ) -> RegisteredSchema | None:
        """An imported version that exists already, as it is (Confluent's answer, whatever
        schema the import names); ``None`` when it does not exist yet."""
        existing = db.execute(
            f"{self._row_sql} WHERE v.subject = ? AND v.version = ?", (subject, version)
        ).fetchone()
        return None if existing is None else self._registered(tuple(existing))

    def _check_compatible(
        self,
        db: sqlite3.Connection,
        subject: str,
        parsed: languages.ParsedSchema,
        metadata: dict[str, Any] | None,
        config: dict[str, Any],
    ) -> None:
        """Refuse (409) a schema incompatible with the subject's versions at its level (those
        of its compatibility group), or breaking its reserved fields."""
        earlier = db.execute(
            f"{self._row_sql} WHERE v.subject = ? AND v.deleted = 0 ORDER BY v.version", (subject,)
        ).fetchall()
        problems = self._problems(
            db, self._level(db, subject), parsed, metadata, config, [tuple(r) for r in earlier]
        )
        if problems:
            raise errors.incompatible(subject, problems)

    def _problems(
        self,
        db: sqlite3.Connection,
        level: str,
        parsed: languages.ParsedSchema,
        metadata: dict[str, Any] | None,
        config: dict[str, Any],
        earlier: list[Row],
        *,
        latest_only: bool = False,
    ) -> list[str]:
        """Why a schema with ``metadata`` cannot follow the ``earlier`` versions (the latest
        of them in its compatibility group with ``latest_only``)."""
        problems: list[str] = []
        if config.get("validateFields"):
            previous = _metadata_from_json(earlier[-1][8]) if earlier else None
            problems += settings.reserved_problems(parsed, metadata, previous)
        group = config.get("compatibilityGroup")
        rows = [r for r in earlier if settings.in_group(group, metadata, _metadata_from_json(r[8]))]
        if latest_only:
            rows = rows[-1:]
        if level != "NONE" and rows:
            problems += self._check(level, parsed, [self._parse_row(db, r) for r in rows])
        return problems

    def _insert_schema(
        self,
        db: sqlite3.Connection,
        schema: Schema,
        schema_id: int | None,
        fingerprint: str,
        metadata: dict[str, Any] | None,
    ) -> int:
        """Store a new schema (its references still there: they may have been removed
        since they were resolved); its id."""
        for ref in schema.references or []:
            self._reference_row(db, ref, pin=False)
        cursor = db.execute(
            "INSERT INTO schemas (id, fingerprint, schema_type, schema, refs, guid, metadata) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                schema_id,
                fingerprint,
                schema.schema_type or "AVRO",
                schema.schema_str,
                _refs_json(schema.references),
                str(uuid.uuid5(uuid.NAMESPACE_OID, fingerprint)),
                _metadata_json(metadata),
            ),
        )
        return int(cursor.lastrowid or 0)

    # --- reading -------------------------------------------------------------------------

    def _schema_row(self, schema_id: int) -> tuple[Schema, str]:
        """A schema by id and its GUID; 40403 once no subject version uses the id.

        Once read, a schema is cached by id for the life of this instance, as
        confluent-kafka's client caches it: a process that has read it may keep serving it
        after every version using it is permanently deleted by another process (this one
        forgets what it deletes itself).
        """
        if isinstance(schema_id, bool) or not isinstance(schema_id, int):
            raise errors.schema_not_found(schema_id)
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        if not 0 <= schema_id <= MAX_ID:
            raise errors.schema_not_found(schema_id)
        with self._locked():
            # as Confluent's: an id no version uses (live or soft-deleted) is no schema
            metadata = "s.metadata" if "s.metadata" in self._row_sql else "NULL"
            row = self._db.execute(
                f"SELECT s.schema_type, s.schema, s.refs, s.guid, {metadata} FROM schemas s "
                "WHERE s.id = ? AND EXISTS (SELECT 1 FROM versions WHERE schema_id = ?)",
                (schema_id, schema_id),
            ).fetchone()
        if row is None:
            raise errors.schema_not_found(schema_id)
        kind, text, refs, guid, meta = row
        found = (_schema_of(kind, text, refs, meta), str(guid))
        self._by_id[schema_id] = found
        self._by_guid[str(guid)] = schema_id
        return found

    def get_schema(
        self,
        schema_id: int,
        subject_name: str | None = None,
        fmt: str | None = None,
        reference_format: str | None = None,
    ) -> Schema:
        return self._formatted(schema_id, self._schema_row(schema_id)[0], fmt)

    def get_schema_guid(self, schema_id: int) -> str:
        """The GUID of a schema id (newer Confluent clients may frame records with it)."""
        return self._schema_row(schema_id)[1]

    def get_schema_by_guid(self, guid: str, fmt: str | None = None) -> Schema:
        schema_id = self._by_guid.get(guid)
        if schema_id is None:
            with self._locked():
                row = self._db.execute(
                    "SELECT id FROM schemas WHERE guid = ?", (str(guid),)
                ).fetchone()
            if row is None:
                raise errors.schema_not_found(guid)
            schema_id = int(row[0])
        return self.get_schema(schema_id, fmt=fmt)

    def get_schema_types(self) -> list[str]:
        return list(SCHEMA_TYPES)

    def get_max_schema_id(self) -> int:
        with self._locked():
            row = self._db.execute("SELECT coalesce(max(id), 0) FROM schemas").fetchone()
        return int(row[0])

    def get_version(
        self,
        subject_name: str,
        version: int | Literal["latest"] = "latest",
        deleted: bool = False,
        fmt: str | None = None,
    ) -> RegisteredSchema:
        with self._read() as db:
            subject = self._aliased(db, subject_name)
            registered = self._registered(self._row(db, subject, version, deleted))
        return self._in_format(registered, fmt)

    def get_latest_version(self, subject_name: str, fmt: str | None = None) -> RegisteredSchema:
        return self.get_version(subject_name, "latest", fmt=fmt)

    def get_latest_with_metadata(
        self,
        subject_name: str,
        metadata: dict[str, str],
        deleted: bool = False,
        fmt: str | None = None,
    ) -> RegisteredSchema:
        """The latest version when ``metadata`` is empty: this store keeps no schema metadata."""
        if metadata:
            raise errors.schema_not_found()
        return self.get_version(subject_name, "latest", deleted=deleted, fmt=fmt)

    def lookup_schema(
        self,
        subject_name: str,
        schema: Schema,
        normalize_schemas: bool = False,
        fmt: str | None = None,
        deleted: bool = False,
    ) -> RegisteredSchema:
        """The version of ``subject_name`` holding ``schema``; a schema without metadata
        matches the first version with its content, whatever that version's metadata."""
        with self._read() as db:
            subject = self._aliased(db, subject_name)
            if not self._has_subject(db, subject, deleted):
                raise errors.subject_not_found(subject)
            content, _, _ = self._identify(db, schema)
            live = "" if deleted else " AND v.deleted = 0"
            requested = requested_metadata(schema)
            if requested is None:
                match = "(s.fingerprint = ? OR s.fingerprint LIKE ?)"
                params: tuple[str, ...] = (content, content + "+m%")
            else:
                config = self._config_fields(db, subject)
                metadata = settings.effective_metadata(requested, None, config)
                match, params = "s.fingerprint = ?", (content + settings.metadata_hash(metadata),)
            row = db.execute(
                f"{self._row_sql} WHERE v.subject = ? AND {match}{live} ORDER BY v.version LIMIT 1",
                (subject, *params),
            ).fetchone()
            if row is None:
                raise errors.schema_not_found()
            registered = self._registered(tuple(row))
        return self._in_format(registered, fmt)

    def get_subjects(
        self,
        subject_prefix: str | None = None,
        deleted: bool = False,
        deleted_only: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[str]:
        where = " WHERE deleted = 1" if deleted_only else "" if deleted else " WHERE deleted = 0"
        with self._locked():
            rows = self._db.execute(
                f"SELECT DISTINCT subject FROM versions{where} ORDER BY subject"
            ).fetchall()
        subjects = [str(r[0]) for r in rows if str(r[0]).startswith(subject_prefix or "")]
        return _page(subjects, offset, limit)

    def get_versions(
        self,
        subject_name: str,
        deleted: bool = False,
        deleted_only: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[int]:
        where = " AND deleted = 1" if deleted_only else "" if deleted else " AND deleted = 0"
        with self._read() as db:
            subject_name = self._aliased(db, subject_name)
            if not self._has_subject(db, subject_name, deleted or deleted_only):
                raise errors.subject_not_found(subject_name)
            rows = db.execute(
                f"SELECT version FROM versions WHERE subject = ?{where} ORDER BY version",
                (subject_name,),
            ).fetchall()
        return _page([int(r[0]) for r in rows], offset, limit)

    def _id_versions(
        self, schema_id: int, subject_name: str | None, deleted: bool
    ) -> list[SchemaVersion]:
        self._schema_row(schema_id)
        live = "" if deleted else " AND deleted = 0"
        with self._locked():
            rows = self._db.execute(
                f"SELECT subject, version FROM versions WHERE schema_id = ?{live} "
                "ORDER BY subject, version",
                (schema_id,),
            ).fetchall()
        return [
            SchemaVersion(str(s), int(v))
            for s, v in rows
            if subject_name is None or s == subject_name
        ]

    def get_schema_versions(
        self,
        schema_id: int,
        subject_name: str | None = None,
        deleted: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[SchemaVersion]:
        return _page(self._id_versions(schema_id, subject_name, deleted), offset, limit)

    def get_subjects_by_schema_id(
        self,
        schema_id: int,
        subject_name: str | None = None,
        deleted: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[str]:
        subjects = sorted(
            {str(v.subject) for v in self._id_versions(schema_id, subject_name, deleted)}
        )
        return _page(subjects, offset, limit)

    def get_schemas(
        self,
        subject_prefix: str = "",
        deleted: bool = False,
        latest_only: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[RegisteredSchema]:
        live = "" if deleted else " WHERE v.deleted = 0"
        with self._locked():
            sql = f"{self._row_sql}{live} ORDER BY v.subject, v.version"
            rows = self._db.execute(sql).fetchall()
        found: list[RegisteredSchema] = []
        for row in rows:
            if not str(row[7]).startswith(subject_prefix):
                continue
            registered = self._registered(tuple(row))
            if latest_only and found and found[-1].subject == registered.subject:
                found[-1] = registered
            else:
                found.append(registered)
        return _page(found, offset, limit)

    def get_referenced_by(
        self,
        subject_name: str,
        version: int | Literal["latest"] = "latest",
        offset: int = 0,
        limit: int = -1,
        *,
        deleted: bool = False,
    ) -> list[int]:
        """Ids of the schemas whose references name this version (live ones unless ``deleted``)."""
        with self._read() as db:
            row = self._row(db, subject_name, version, deleted=True)
            referrers = self._referrers(db, subject_name, int(row[0]), deleted)
        return _page(sorted({schema_id for _, schema_id in referrers}), offset, limit)

    @staticmethod
    def _referrers(
        db: sqlite3.Connection, subject: str, version: int, deleted: bool
    ) -> list[tuple[str, int]]:
        live = "" if deleted else " AND v.deleted = 0"
        rows = db.execute(_REFERRERS + live, (subject, version)).fetchall()
        return [(str(s), int(i)) for s, i in rows]

    # --- deleting ------------------------------------------------------------------------

    def _forget(self, db: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> None:
        """Drop from the caches the schemas of the versions about to be removed for good."""
        for (schema_id,) in db.execute(f"SELECT schema_id FROM versions WHERE {where}", params):
            guid = self._by_id.pop(int(schema_id), (None, None))[1]
            self._by_guid.pop(str(guid), None)
            self._serialized.pop(int(schema_id), None)

    def delete_subject(self, subject_name: str, permanent: bool = False) -> list[int]:
        subject = subject_name
        with self._write() as db:
            rows = db.execute(
                "SELECT version, deleted FROM versions WHERE subject = ? ORDER BY version",
                (subject,),
            ).fetchall()
            if not rows:
                raise errors.subject_not_found(subject)
            if not permanent and all(deleted for _, deleted in rows):
                raise errors.subject_soft_deleted(subject)
            self._writable(db, subject)
            versions = [int(v) for v, deleted in rows if permanent or not deleted]
            for number in versions:
                # as Confluent's: only live referrers hold a subject (a soft-deleted one
                # does not keep it from being removed for good)
                others = {s for s, _ in self._referrers(db, subject, number, False)} - {subject}
                if others:
                    raise errors.reference_exists(subject, number)
            if permanent:
                if any(not deleted for _, deleted in rows):
                    raise errors.subject_not_soft_deleted(subject)
                self._forget(db, "subject = ?", (subject,))
                db.execute("DELETE FROM versions WHERE subject = ?", (subject,))
                _LEVEL.remove(db, subject)
                _MODE.remove(db, subject)
            else:
                db.execute("UPDATE versions SET deleted = 1 WHERE subject = ?", (subject,))
        return versions

    def delete_version(
        self, subject_name: str, version: int | Literal["latest"], permanent: bool = False
    ) -> int:
        subject = subject_name
        with self._write() as db:
            row = self._row(db, subject, version, deleted=True)
            number, is_deleted = int(row[0]), bool(row[6])
            if is_deleted and not permanent:
                raise errors.version_soft_deleted(subject, number)
            self._writable(db, subject)
            if self._referrers(db, subject, number, permanent):
                raise errors.reference_exists(subject, number)
            if permanent:
                if not is_deleted:
                    raise errors.version_not_soft_deleted(subject, number)
                self._forget(db, "subject = ? AND version = ?", (subject, number))
                db.execute(
                    "DELETE FROM versions WHERE subject = ? AND version = ?", (subject, number)
                )
            else:
                db.execute(
                    "UPDATE versions SET deleted = 1 WHERE subject = ? AND version = ?",
                    (subject, number),
                )
        return number

    # --- compatibility -------------------------------------------------------------------

    def get_compatibility(
        self, subject_name: str | None = None, *, default_to_global: bool = False
    ) -> str:
        """The global level, or a subject's (40408 if unset and not ``default_to_global``)."""
        with self._read() as db:
            if subject_name is None or default_to_global:
                return self._level(db, subject_name)
            level = _LEVEL.own(db, subject_name)
        if level is None:
            raise errors.subject_level_config_not_found(subject_name)
        return level

    def set_compatibility(self, subject_name: str | None = None, level: str | None = None) -> str:
        """Set a level; 42205 while the subject (or, for the global level, the registry) is
        read-only, as Confluent's."""
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise errors.invalid_compatibility_level(level)
        normalized = level.upper()
        with self._write() as db:
            self._writable(db, subject_name)
            _LEVEL.put(db, subject_name, normalized)
        return normalized

    def get_config(
        self, subject_name: str | None = None, *, default_to_global: bool = False
    ) -> ServerConfig:
        document = self.config_document(subject_name, default_to_global=default_to_global)
        return _server_config(document)

    def config_document(
        self, subject_name: str | None = None, *, default_to_global: bool = False
    ) -> dict[str, Any]:
        """The config as Confluent's REST API answers it: ``compatibilityLevel`` and the other
        fields set; a subject's own (40408 if it has none) or, with ``default_to_global``,
        its own merged over the global one."""
        with self._read() as db:
            if subject_name is None or default_to_global:
                level: str | None = self._level(db, subject_name)
                fields = self._config_fields(db, subject_name)
            else:
                level, fields = _LEVEL.own(db, subject_name), self._own_fields(db, subject_name)
                if level is None and not fields:
                    raise errors.subject_level_config_not_found(subject_name)
        return {**({} if level is None else {"compatibilityLevel": level}), **fields}

    def update_config(
        self, subject_name: str | None, level: str | None, changes: dict[str, Any]
    ) -> dict[str, Any]:
        """Set the level (when given) and the fields ``changes`` names (``None`` removes one,
        :func:`settings.config_changes`); the scope's config as ``PUT /config`` answers it.
        42205 while the subject (or, for the global config, the registry) is read-only."""
        if level is not None and level.upper() not in LEVELS:
            raise errors.invalid_compatibility_level(level)
        changes = settings.config_changes(changes)
        with self._write() as db:
            self._writable(db, subject_name)
            if level is not None:
                _LEVEL.put(db, subject_name, level.upper())
            fields = settings.updated_config(self._own_fields(db, subject_name), changes)
            if changes:
                self._put_fields(db, subject_name, fields)
            current = self._level(db, subject_name)
        return {"compatibility": current, **fields}

    def set_config(
        self, subject_name: str | None = None, config: ServerConfig | None = None
    ) -> ServerConfig:
        """Set the compatibility level (``compatibility`` or ``compatibility_level``: 42203
        when they differ), the compatibility group and the default and override metadata;
        a config setting none of them answers the current config. Rule sets are refused."""
        if config is None:
            raise ValueError("config must be set")
        if config.default_rule_set is not None or config.override_rule_set is not None:
            raise errors.unprocessable("this registry keeps no rule sets")
        changes: dict[str, Any] = {}
        if config.compatibility_group is not None:
            changes["compatibilityGroup"] = config.compatibility_group
        for key, value in (
            ("defaultMetadata", config.default_metadata),
            ("overrideMetadata", config.override_metadata),
        ):
            if value is not None:
                changes[key] = settings.metadata_dict(value.to_dict(), key)
        self.update_config(subject_name, _config_level(config), changes)
        return self.get_config(subject_name, default_to_global=True)

    def delete_config(self, subject_name: str | None = None) -> ServerConfig:
        """Remove a subject's config (40401 if none), or reset the global one; the removed
        level. 42205 while the subject (or, for the global config, the registry) is read-only.
        """
        with self._write() as db:
            removed = _LEVEL.own(db, subject_name)
            fields = self._own_fields(db, subject_name)
            if removed is None and not fields and subject_name is not None:
                raise errors.subject_not_found(subject_name)
            self._writable(db, subject_name)
            _LEVEL.remove(db, subject_name)
            self._put_fields(db, subject_name, {})
        level = removed or DEFAULT_LEVEL
        return ServerConfig(compatibility_level=ConfigCompatibilityLevel(level))

    def compatibility_problems(
        self,
        subject_name: str,
        schema: Schema,
        version: Version | None = "latest",
        normalize: bool = False,
    ) -> list[str]:
        number = None if version is None else version_number(version)
        with self._read() as db:
            subject = self._aliased(db, subject_name)
            self._checked_type(schema)
            schema = self._pinned(db, schema)
            parsed = self._parse(schema, self._resolve(db, schema.references))
            config = self._config_fields(db, subject)
            metadata = self._new_metadata(db, subject, requested_metadata(schema), config)
            if number is None or number == LATEST:
                rows = db.execute(
                    f"{self._row_sql} WHERE v.subject = ? AND v.deleted = 0 ORDER BY v.version",
                    (subject,),
                ).fetchall()
            else:
                rows = db.execute(
                    f"{self._row_sql} WHERE v.subject = ? AND v.version = ? AND v.deleted = 0",
                    (subject, number),
                ).fetchall()
                if not rows:
                    raise errors.version_not_found(number)
            return self._problems(
                db,
                self._level(db, subject),
                parsed,
                metadata,
                config,
                [tuple(r) for r in rows],
                latest_only=number == LATEST,
            )

    def test_compatibility(
        self,
        subject_name: str,
        schema: Schema,
        version: int | str = "latest",
        normalize: bool = False,
        verbose: bool = False,
    ) -> bool:
        return not self.compatibility_problems(subject_name, schema, version, normalize)

    def test_compatibility_all_versions(
        self, subject_name: str, schema: Schema, normalize: bool = False, verbose: bool = False
    ) -> bool:
        return not self.compatibility_problems(subject_name, schema, None, normalize)

    # --- modes ---------------------------------------------------------------------------

    def get_mode(self, subject_name: str | None, *, default_to_global: bool = False) -> str:
        """A subject's mode (40409 if unset and not ``default_to_global``), or the global one."""
        with self._read() as db:
            if subject_name is None or default_to_global:
                return self._mode(db, subject_name)
            mode = _MODE.own(db, subject_name)
        if mode is None:
            raise errors.subject_level_mode_not_found(subject_name)
        return mode

    def get_global_mode(self) -> str:
        return self.get_mode(None)

    def update_mode(self, subject_name: str | None, mode: str, force: bool = False) -> str:
        """Set a mode; switching to IMPORT needs no live subject in scope, or ``force``.

        As Confluent's: without ``force``, entering IMPORT mode refuses (42205) while live
        subjects exist in scope, and permanently removes soft-deleted ones (42206 if a
        schema still references them), so imported ids and versions cannot collide.
        """
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        normalized = mode.upper()
        with self._write() as db:
            if normalized == "IMPORT" and self._mode(db, subject_name) != "IMPORT" and not force:
                where, params = (
                    ("", ()) if subject_name is None else (" WHERE subject = ?", (subject_name,))
                )
                joiner = " AND" if where else " WHERE"
                live = db.execute(
                    f"SELECT 1 FROM versions{where}{joiner} deleted = 0 LIMIT 1", params
                ).fetchone()
                if live is not None:
                    raise errors.not_permitted("Cannot import since found existing subjects")
                for subject, number in db.execute(
                    f"SELECT subject, version FROM versions{where}", params
                ).fetchall():
                    if self._referrers(db, str(subject), int(number), True):
                        raise errors.reference_exists(str(subject), int(number))
                self._forget(db, where.removeprefix(" WHERE ") or "1", params)
                db.execute(f"DELETE FROM versions{where}", params)
            _MODE.put(db, subject_name, normalized)
        return normalized

    def update_global_mode(self, mode: str, force: bool = False) -> str:
        return self.update_mode(None, mode, force)

    def delete_mode(self, subject_name: str | None) -> str:
        """Remove a subject's mode (40401 if none), or reset the global one; the removed one."""
        with self._write() as db:
            removed = _MODE.own(db, subject_name)
            if removed is None and subject_name is not None:
                raise errors.subject_not_found(subject_name)
            _MODE.remove(db, subject_name)
        return removed or DEFAULT_MODE

    # --- the rest of confluent-kafka's client ---------------------------------------------

    def get_contexts(self, offset: int = 0, limit: int = -1) -> list[str]:
        return _page(["."], offset, limit)

    def get_associations_by_resource_name(
        self,
        resource_name: str,
        resource_namespace: str,
        resource_type: str | None = None,
        association_types: list[str] | None = None,
        offset: int = 0,
        limit: int = -1,
    ) -> list[Any]:
        """None: the embedded store keeps no associations."""
        return []

    def create_association(self, request: Any) -> Any:
        raise errors.unprocessable("The embedded registry does not keep associations")

    def delete_associations(
        self,
        resource_id: str,
        resource_type: str | None = None,
        association_types: list[str] | None = None,
        cascade_lifecycle: bool = False,
    ) -> None:
        raise errors.unprocessable("The embedded registry does not keep associations")
