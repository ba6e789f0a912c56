"""The embedded registry: Confluent semantics over SQLite, on disk or in memory.

``sqlite:///.cdc/registry.db`` (relative to the working directory;
``sqlite:////abs/path.db`` for an absolute path) is the default store: several processes (Spark
executors on one machine, ``registry serve``) may register at once. Each
write runs in one ``BEGIN IMMEDIATE`` transaction, so two writers never hand
out the same version or lose a registration; readers are not blocked (WAL).

``memory://`` is the same store in memory, for tests: ``memory://name`` is
shared by every registry of that name in the process; plain ``memory://`` is
private to one instance.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlparse

import orjson

from cdc_connectors.registry import compatibility, errors
from cdc_connectors.registry.base import (
    DEFAULT_LEVEL,
    LEVELS,
    SCHEMA_TYPES,
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistry,
    SchemaVersion,
    Version,
)
from cdc_connectors.schema import languages
from cdc_connectors.schema.errors import SchemaError

_DDL = """
CREATE TABLE IF NOT EXISTS schemas (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint TEXT NOT NULL UNIQUE,
    schema_type TEXT NOT NULL,
    schema      TEXT NOT NULL,
    refs        TEXT NOT NULL,
    guid        TEXT NOT NULL
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
"""
_VERSION_ROW = (
    "SELECT s.id, s.schema_type, s.schema, s.refs, s.guid FROM versions v "
    "JOIN schemas s ON s.id = v.schema_id WHERE v.subject = ? AND v.version = ?"
)
_GLOBAL = "global"
_MAX_VERSION = 2**31 - 1


def _scope(subject: str) -> str:
    return f"subject:{subject}"


def _refs_json(references: Sequence[SchemaReference] | None) -> str:
    refs = [{"name": r.name, "subject": r.subject, "version": r.version} for r in references or []]
    return orjson.dumps(refs).decode()


def _refs_from_json(text: str) -> list[SchemaReference]:
    return [SchemaReference(r["name"], r["subject"], r["version"]) for r in orjson.loads(text)]


class EmbeddedRegistry(SchemaRegistry):
    """A schema registry stored in SQLite (a file, or shared memory)."""

    def __init__(self, url: str):
        self.url = url
        parsed = urlparse(url)
        if parsed.scheme == "sqlite":
            if parsed.netloc:
                raise ValueError(
                    f"registry URL {url!r} has a host: use sqlite:///relative/path.db "
                    "or sqlite:////absolute/path.db"
                )
            # As SQLAlchemy reads it: sqlite:///rel.db is relative, sqlite:////abs.db absolute.
            path = unquote(parsed.path)[1:]
            if not path:
                raise ValueError(f"registry URL {url!r} names no file: use sqlite:///path/to.db")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            target, uri = path, False
        elif parsed.scheme == "memory":
            name = (parsed.netloc + parsed.path).strip("/") or f"private-{uuid.uuid4().hex}"
            target, uri = f"file:cdc-registry-{name}?mode=memory&cache=shared", True
        else:
            raise ValueError(f"not an embedded registry URL: {url!r}")
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            target, uri=uri, timeout=60.0, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA busy_timeout = 60000")
        if not uri:
            self._db.execute("PRAGMA journal_mode = WAL")
        with self._write() as db:
            for statement in _DDL.split(";"):
                if statement.strip():
                    db.execute(statement)
        self._by_id: dict[int, Schema] = {}
        self._by_version: dict[tuple[str, int], RegisteredSchema] = {}

    # --- plumbing -------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, serialised against every other writer of the file."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _level(self, subject: str) -> str:
        rows = self._query(
            "SELECT scope, compatibility FROM config WHERE scope IN (?, ?)",
            (_scope(subject), _GLOBAL),
        )
        levels = {str(scope): str(level) for scope, level in rows}
        return levels.get(_scope(subject)) or levels.get(_GLOBAL) or DEFAULT_LEVEL

    def _resolve(self, references: Sequence[SchemaReference] | None) -> list[tuple[str, str]]:
        """(name, schema) of every reference, transitively, dependencies first."""
        resolved: dict[str, str] = {}

        def visit(refs: Sequence[SchemaReference], depth: int) -> None:
            if depth > 32:
                raise errors.invalid_schema("schema references nest deeper than 32 levels")
            for ref in refs:
                if not ref.name or not ref.subject or ref.version is None:
                    raise errors.invalid_schema(f"incomplete schema reference {ref}")
                if ref.name in resolved:
                    continue
                try:
                    target = self.get_version(ref.subject, ref.version)
                except errors.SchemaRegistryError:
                    raise errors.invalid_schema(
                        f"reference {ref.name!r} names subject {ref.subject!r} version "
                        f"{ref.version}, which does not exist"
                    ) from None
                visit(target.schema.references or [], depth + 1)
                resolved[ref.name] = target.schema.schema_str or ""

        visit(references or [], 0)
        return list(resolved.items())

    def _parse(self, schema: Schema) -> languages.ParsedSchema:
        try:
            return languages.parse(
                schema.schema_type or "AVRO",
                schema.schema_str or "",
                self._resolve(schema.references),
            )
        except SchemaError as exc:
            raise errors.invalid_schema(str(exc)) from None

    @staticmethod
    def _fingerprint(schema: Schema) -> str:
        schema_type = schema.schema_type or "AVRO"
        if schema_type not in SCHEMA_TYPES:
            raise errors.unprocessable(
                f"Invalid schema type {schema_type!r}; one of {', '.join(SCHEMA_TYPES)}"
            )
        try:
            text = languages.normalize(schema_type, schema.schema_str or "")
        except SchemaError as exc:
            raise errors.invalid_schema(str(exc)) from None
        key = f"{schema_type}\0{text}\0{_refs_json(schema.references)}"
        return hashlib.sha256(key.encode()).hexdigest()

    def _registered(self, row: tuple[object, ...], subject: str, version: int) -> RegisteredSchema:
        schema_id, schema_type, text, refs, guid = row
        schema = Schema(str(text), str(schema_type), _refs_from_json(str(refs)))
        return RegisteredSchema(
            schema_id=int(str(schema_id)),
            guid=str(guid),
            schema=schema,
            subject=subject,
            version=version,
        )

    def _version_number(self, subject: str, version: Version, deleted: bool) -> int:
        live = "" if deleted else " AND deleted = 0"
        if version in ("latest", -1, "-1"):
            rows = self._query(
                f"SELECT max(version) FROM versions WHERE subject = ?{live}", (subject,)
            )
            if rows[0][0] is None:
                raise errors.subject_not_found(subject)
            return int(str(rows[0][0]))
        try:
            number = int(version)
        except (TypeError, ValueError):
            raise errors.invalid_version(version) from None
        if not 1 <= number <= _MAX_VERSION:
            raise errors.invalid_version(version)
        return number

    # --- schemas and versions ----------------------------------------------------------------

    def register_schema(
        self, subject: str, schema: Schema, normalize: bool = False
    ) -> RegisteredSchema:
        if not subject:
            raise errors.unprocessable("Subject name must not be empty")
        fingerprint = self._fingerprint(schema)
        parsed = self._parse(schema)  # outside the write lock: may compile Protobuf
        schema_type = schema.schema_type or "AVRO"
        with self._write() as db:
            found = db.execute(
                "SELECT id FROM schemas WHERE fingerprint = ?", (fingerprint,)
            ).fetchone()
            if found is not None:
                same = db.execute(
                    "SELECT version FROM versions WHERE subject = ? AND schema_id = ? "
                    "AND deleted = 0 ORDER BY version LIMIT 1",
                    (subject, found[0]),
                ).fetchone()
                if same is not None:
                    return self._row_version(db, subject, int(same[0]))
            existing = db.execute(
                "SELECT s.schema_type, s.schema, s.refs FROM versions v "
                "JOIN schemas s ON s.id = v.schema_id "
                "WHERE v.subject = ? AND v.deleted = 0 ORDER BY v.version",
                (subject,),
            ).fetchall()
            level = self._level(subject)
            if level != "NONE" and existing:
                earlier = [
                    self._parse(Schema(text, kind, _refs_from_json(refs)))
                    for kind, text, refs in existing
                ]
                problems = compatibility.check(level, parsed, earlier)
                if problems:
                    raise errors.incompatible(subject, problems)
            if found is None:
                schema_id = db.execute(
                    "INSERT INTO schemas (fingerprint, schema_type, schema, refs, guid) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (
                        fingerprint,
                        schema_type,
                        schema.schema_str,
                        _refs_json(schema.references),
                        str(uuid.uuid5(uuid.NAMESPACE_OID, fingerprint)),
                    ),
                ).lastrowid
            else:
                schema_id = found[0]
            top = db.execute(
                "SELECT coalesce(max(version), 0) FROM versions WHERE subject = ?", (subject,)
            ).fetchone()[0]
            db.execute(
                "INSERT INTO versions (subject, version, schema_id) VALUES (?, ?, ?)",
                (subject, top + 1, schema_id),
            )
            return self._row_version(db, subject, top + 1)

    def _row_version(self, db: sqlite3.Connection, subject: str, version: int) -> RegisteredSchema:
        row = db.execute(_VERSION_ROW, (subject, version)).fetchone()
        return self._registered(row, subject, version)

    def get_schema(self, schema_id: int) -> Schema:
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        rows = self._query(
            "SELECT schema_type, schema, refs FROM schemas WHERE id = ?", (int(schema_id),)
        )
        if not rows:
            raise errors.schema_not_found(f"Schema {schema_id} not found")
        kind, text, refs = rows[0]
        schema = Schema(str(text), str(kind), _refs_from_json(str(refs)))
        self._by_id[schema_id] = schema
        return schema

    def get_schema_by_guid(self, guid: str) -> Schema:
        rows = self._query("SELECT id FROM schemas WHERE guid = ?", (str(guid),))
        if not rows:
            raise errors.schema_not_found(f"Schema {guid} not found")
        return self.get_schema(int(str(rows[0][0])))

    def get_schema_guid(self, schema_id: int) -> str:
        """The GUID of a schema id (newer Confluent clients may frame records with it)."""
        rows = self._query("SELECT guid FROM schemas WHERE id = ?", (int(schema_id),))
        if not rows:
            raise errors.schema_not_found(f"Schema {schema_id} not found")
        return str(rows[0][0])

    def get_version(
        self, subject: str, version: Version = "latest", deleted: bool = False
    ) -> RegisteredSchema:
        number = self._version_number(subject, version, deleted)
        cached = self._by_version.get((subject, number))
        if cached is not None and not deleted:
            return cached
        live = "" if deleted else " AND v.deleted = 0"
        rows = self._query(_VERSION_ROW + live, (subject, number))
        if not rows:
            if not self._query("SELECT 1 FROM versions WHERE subject = ? LIMIT 1", (subject,)):
                raise errors.subject_not_found(subject)
            raise errors.version_not_found(subject, version)
        registered = self._registered(rows[0], subject, number)
        if not deleted:
            self._by_version[(subject, number)] = registered
        return registered

    def lookup_schema(
        self, subject: str, schema: Schema, deleted: bool = False
    ) -> RegisteredSchema:
        fingerprint = self._fingerprint(schema)
        live = "" if deleted else " AND v.deleted = 0"
        rows = self._query(
            "SELECT v.version FROM versions v JOIN schemas s ON s.id = v.schema_id "
            f"WHERE v.subject = ? AND s.fingerprint = ?{live} ORDER BY v.version LIMIT 1",
            (subject, fingerprint),
        )
        if not rows:
            if not self._query(
                f"SELECT 1 FROM versions v WHERE subject = ?{live} LIMIT 1", (subject,)
            ):
                raise errors.subject_not_found(subject)
            raise errors.schema_not_found()
        return self.get_version(subject, int(str(rows[0][0])), deleted=deleted)

    def get_subjects(self, deleted: bool = False) -> list[str]:
        live = "" if deleted else " WHERE deleted = 0"
        return [
            str(r[0])
            for r in self._query(f"SELECT DISTINCT subject FROM versions{live} ORDER BY subject")
        ]

    def get_versions(self, subject: str, deleted: bool = False) -> list[int]:
        live = "" if deleted else " AND deleted = 0"
        rows = self._query(
            f"SELECT version FROM versions WHERE subject = ?{live} ORDER BY version", (subject,)
        )
        if not rows:
            raise errors.subject_not_found(subject)
        return [int(str(r[0])) for r in rows]

    def get_schema_versions(self, schema_id: int) -> list[SchemaVersion]:
        self.get_schema(schema_id)
        rows = self._query(
            "SELECT subject, version FROM versions WHERE schema_id = ? AND deleted = 0 "
            "ORDER BY subject, version",
            (int(schema_id),),
        )
        return [SchemaVersion(str(s), int(str(v))) for s, v in rows]

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        with self._write() as db:
            rows = db.execute(
                "SELECT version, deleted FROM versions WHERE subject = ? ORDER BY version",
                (subject,),
            ).fetchall()
            if not rows:
                raise errors.subject_not_found(subject)
            if permanent:
                if any(not deleted for _, deleted in rows):
                    raise errors.subject_not_soft_deleted(subject)
                db.execute("DELETE FROM versions WHERE subject = ?", (subject,))
                db.execute("DELETE FROM config WHERE scope = ?", (_scope(subject),))
                versions = [v for v, _ in rows]
            else:
                versions = [v for v, deleted in rows if not deleted]
                if not versions:
                    raise errors.subject_soft_deleted(subject)
                db.execute("UPDATE versions SET deleted = 1 WHERE subject = ?", (subject,))
        for version in versions:
            self._by_version.pop((subject, version), None)
        return versions

    def delete_version(self, subject: str, version: Version, permanent: bool = False) -> int:
        number = self._version_number(subject, version, deleted=permanent)
        with self._write() as db:
            row = db.execute(
                "SELECT deleted FROM versions WHERE subject = ? AND version = ?", (subject, number)
            ).fetchone()
            if row is None:
                if db.execute("SELECT 1 FROM versions WHERE subject = ?", (subject,)).fetchone():
                    raise errors.version_not_found(subject, version)
                raise errors.subject_not_found(subject)
            if permanent:
                if not row[0]:
                    raise errors.version_not_soft_deleted(subject, number)
                db.execute(
                    "DELETE FROM versions WHERE subject = ? AND version = ?", (subject, number)
                )
            else:
                if row[0]:
                    raise errors.version_soft_deleted(subject, number)
                db.execute(
                    "UPDATE versions SET deleted = 1 WHERE subject = ? AND version = ?",
                    (subject, number),
                )
        self._by_version.pop((subject, number), None)
        return number

    # --- compatibility -------------------------------------------------------------------

    def get_compatibility(self, subject: str | None = None, default_to_global: bool = False) -> str:
        if subject is None:
            rows = self._query("SELECT compatibility FROM config WHERE scope = ?", (_GLOBAL,))
            return str(rows[0][0]) if rows else DEFAULT_LEVEL
        rows = self._query("SELECT compatibility FROM config WHERE scope = ?", (_scope(subject),))
        if rows:
            return str(rows[0][0])
        if default_to_global:
            return self.get_compatibility(None)
        raise errors.subject_level_config_not_found(subject)

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        normalized = str(level).upper()
        if normalized not in LEVELS:
            raise errors.invalid_compatibility_level(level)
        with self._write() as db:
            db.execute(
                "INSERT INTO config (scope, compatibility) VALUES (?, ?) "
                "ON CONFLICT(scope) DO UPDATE SET compatibility = excluded.compatibility",
                (_GLOBAL if subject is None else _scope(subject), normalized),
            )
        return normalized

    def delete_compatibility(self, subject: str) -> str:
        with self._write() as db:
            row = db.execute(
                "SELECT compatibility FROM config WHERE scope = ?", (_scope(subject),)
            ).fetchone()
            if row is None:
                raise errors.subject_level_config_not_found(subject)
            db.execute("DELETE FROM config WHERE scope = ?", (_scope(subject),))
        return str(row[0])

    def test_compatibility(
        self, subject: str, schema: Schema, version: Version | None = "latest"
    ) -> list[str]:
        parsed = self._parse(schema)
        level = self._level(subject)
        if version is None:
            versions = self.get_versions(subject)
            earlier = [self._parse(self.get_version(subject, v).schema) for v in versions]
        else:
            earlier = [self._parse(self.get_version(subject, version).schema)]
            level = level.removesuffix("_TRANSITIVE")
        return compatibility.check(level, parsed, earlier)
