"""Schemas from the registry, resolved with their references and cached for a process.

A :class:`SchemaStore` wraps any :class:`~cdc_connectors.registry.SchemaRegistry`. What
cannot change is cached: a schema by id or GUID, a subject's version, and what this
process registered (so a schema is registered once per process, not once per record).
``latest`` asks the registry every time: callers that pin a reader schema ask once.

The registry client (confluent-kafka's, slow to import) is imported where a registry is asked, so
that a Spark task of a format without a registry that names this module never pays for it.

A schema the registry does not have is :class:`UnknownSchema`, a
:class:`~cdc_connectors.opencdc.CodecError`: for a decoder that is one bad message, to
route to the dead letters. A registry that does not answer is not: that error propagates.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cdc_connectors.opencdc import CodecError
from cdc_connectors.schema import framing
from cdc_connectors.schema.errors import SchemaError

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import RegisteredSchema, Schema, SchemaReference

    from cdc_connectors.registry.base import SchemaRegistry

__all__ = ["Resolved", "SchemaRejected", "SchemaStore", "UnknownSchema"]

_NOT_FOUND = 404
_CONFLICT = 409
_INVALID = 422
# Reference chains longer than this are a cycle or an attack, not a schema.
_MAX_REFERENCE_DEPTH = 32


class UnknownSchema(CodecError):
    """The registry has no schema for the id, GUID, subject or version a message names."""


class SchemaRejected(CodecError):
    """The registry refused to register a record's schema (incompatible or invalid)."""


class RegistryReadOnly(SchemaRejected):
    """The registry (or the subject) is in read-only mode: it registers nothing."""


_NOT_PERMITTED = 42205


@dataclass(frozen=True, eq=False)
class Resolved:
    """One registered schema with the text of every schema it references."""

    schema_id: int
    schema_type: str
    text: str
    #: ``(name, text)`` of each referenced schema, dependencies first.
    references: tuple[tuple[str, str], ...] = ()
    subject: str | None = None
    version: int | None = None
    guid: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def label(self) -> str:
        """How an error message names this schema: subject and version, or the id."""
        if self.subject is not None and self.version is not None:
            return f"{self.subject!r} version {self.version} (id {self.schema_id})"
        if self.guid is not None:
            return f"schema GUID {self.guid}"
        return f"schema id {self.schema_id}"

    @cached_property
    def avro(self) -> Any:
        """The Avro schema parsed by fastavro, named types of references resolved (decimals
        of any scale, :func:`cdc_connectors.schema.avro_values.parse_schema`)."""
        if self.schema_type != "AVRO":
            raise SchemaError(f"{self.label()} is {self.schema_type}, not Avro")
        return self._parsed(expand=False)

    @cached_property
    def avro_standalone(self) -> Any:
        """The Avro schema as plain JSON with every named type spelled out where used."""
        return self._parsed(expand=True)

    def _parsed(self, *, expand: bool) -> Any:
        from cdc_connectors.schema.avro_values import parse_schema

        try:
            return parse_schema(self.text, [t for _, t in self.references], expand=expand)
        except SchemaError as exc:
            raise SchemaError(f"{self.label()} is {exc}") from None

    @cached_property
    def record_name(self) -> str | None:
        """The full name of an Avro record or enum schema, or a Protobuf message's."""
        if self.schema_type == "AVRO":
            name = self.avro.get("name") if isinstance(self.avro, dict) else None
            return name if isinstance(name, str) else None
        return None


def _plain(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            k: _plain(v)
            for k, v in schema.items()
            if not k.startswith("__fastavro") and k != "__named_schemas"
        }
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


#: Seconds an empty registry's answer holds before it is asked again.
_EMPTY_RECHECK = 10.0
_EMPTY_HINT = ": the registry holds no schema at all; is it the one the messages were written with?"


class SchemaStore:
    """A registry's schemas, resolved and cached for this process (module docstring)."""

    def __init__(self, registry: SchemaRegistry):
        self.registry = registry
        self._by_id: dict[int, Resolved] = {}
        self._by_guid: dict[str, Resolved] = {}
        self._guid_schemas: dict[int, Schema] = {}
        self._by_version: dict[tuple[str, int], Resolved] = {}
        self._registered: dict[
            tuple[str, str, str, tuple[tuple[str, str, int], ...]], Resolved
        ] = {}
        self._lock = threading.Lock()
        self._holds_schemas: bool | None = False
        self._empty_at: float | None = None

    def by_id(self, schema_id: int) -> Resolved:
        """The schema with ``schema_id``."""
        found = self._by_id.get(schema_id)
        if found is None:
            schema = self._ask(
                lambda: self.registry.get_schema(schema_id), f"schema id {schema_id}"
            )
            found = self._resolve(schema_id, schema)
            with self._lock:
                self._by_id[schema_id] = found
        return found

    def by_frame(self, frame: framing.Frame) -> Resolved:
        """The schema a message's frame names, by id (Confluent's v0) or GUID (v1)."""
        if frame.schema_id is not None:
            return self.by_id(frame.schema_id)
        return self.by_guid(str(frame.guid))

    def by_guid(self, guid: str) -> Resolved:
        """The schema with ``guid`` (Confluent's v1 framing).

        The registry gives the schema but not its id: it gets a stand-in id of its own
        (negative, one per GUID) until :meth:`named` finds its id and version in a subject.
        """
        found = self._by_guid.get(guid)
        if found is None:
            schema = self._ask(
                lambda: self.registry.get_schema_by_guid(guid), f"schema GUID {guid}"
            )
            stand_in = -1 - (UUID(guid).int % (2**31 - 1))
            base = self._resolve(stand_in, schema)
            found = Resolved(
                base.schema_id, base.schema_type, base.text, base.references, guid=guid
            )
            with self._lock:
                self._by_guid[guid] = found
                self._guid_schemas[stand_in] = schema
        return found

    def by_version(self, subject: str, version: int) -> Resolved:
        """Version ``version`` of ``subject``."""
        found = self._by_version.get((subject, version))
        if found is None:
            registered = self._ask(
                lambda: self.registry.get_version(subject, version),
                f"subject {subject!r} version {version}",
            )
            found = self._from_registered(registered, subject)
            with self._lock:
                self._by_version[(subject, version)] = found
        return found

    def latest(self, subject: str) -> Resolved:
        """The latest version of ``subject``, as the registry has it now."""
        registered = self._ask(
            lambda: self.registry.get_latest_version(subject), f"subject {subject!r}"
        )
        found = self._from_registered(registered, subject)
        with self._lock:
            self._by_version.setdefault((subject, found.version or 0), found)
        return found

    def named(self, schema: Resolved, subject: str) -> Resolved:
        """``schema`` labelled with its version under ``subject``, if it has one there."""
        if schema.subject is not None:
            return schema
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        original = self._guid_schemas.get(schema.schema_id)
        if original is not None:
            try:
                registered = self.registry.lookup_schema(subject, original)
            except SchemaRegistryError:
                return schema
            return self._from_registered(registered, subject)
        try:
            versions = self.registry.get_schema_versions(schema.schema_id)
        except SchemaRegistryError:
            return schema
        for found in versions:
            if found.subject == subject:
                return Resolved(
                    schema.schema_id,
                    schema.schema_type,
                    schema.text,
                    schema.references,
                    subject=subject,
                    version=int(found.version or 0),
                )
        return schema

    def register(
        self,
        subject: str,
        text: str,
        schema_type: str = "AVRO",
        references: Sequence[SchemaReference] = (),
    ) -> Resolved:
        """Register ``text`` under ``subject`` once per process; its id and version."""
        key = (
            subject,
            schema_type,
            text,
            tuple((str(r.name), str(r.subject), int(r.version or 0)) for r in references),
        )
        found = self._registered.get(key)
        if found is not None:
            return found
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        schema = Schema(text, schema_type, list(references))
        try:
            registered = self.registry.register_schema_full_response(subject, schema)
        except SchemaRegistryError as exc:
            if exc.http_status_code in (_CONFLICT, _INVALID):
                kind = RegistryReadOnly if exc.error_code == _NOT_PERMITTED else SchemaRejected
                raise kind(
                    f"the registry refused this schema under subject {subject!r}: "
                    f"{exc.error_message}"
                ) from None
            raise
        if registered.version is None or registered.schema_id is None:
            registered = self.registry.lookup_schema(subject, schema)
        found = self._from_registered(registered, subject)
        with self._lock:
            self._registered[key] = found
            self._by_version.setdefault((subject, found.version or 0), found)
            self._holds_schemas = True  # (no hint that it holds none)
        return found

    def _from_registered(self, registered: RegisteredSchema, subject: str) -> Resolved:
        schema_id = int(registered.schema_id or 0)
        base = self._resolve(schema_id, registered.schema)
        return Resolved(
            schema_id,
            base.schema_type,
            base.text,
            base.references,
            subject=registered.subject or subject,
            version=int(registered.version) if registered.version is not None else None,
        )

    def _resolve(self, schema_id: int, schema: Schema) -> Resolved:
        references: dict[str, str] = {}
        self._collect(schema.references or [], references, 0)
        return Resolved(
            schema_id,
            schema.schema_type or "AVRO",
            str(schema.schema_str),
            tuple(references.items()),
        )

    def _collect(self, refs: Sequence[SchemaReference], into: dict[str, str], depth: int) -> None:
        if depth > _MAX_REFERENCE_DEPTH:
            raise SchemaError(f"schema references nest deeper than {_MAX_REFERENCE_DEPTH}")
        for ref in refs:
            if ref.name in into:
                continue
            where = f"reference {ref.name!r} ({ref.subject!r} version {ref.version})"
            registered = self._ask(
                lambda ref=ref: self.registry.get_version(ref.subject, ref.version), where
            )
            self._collect(registered.schema.references or [], into, depth + 1)
            into[str(ref.name)] = str(registered.schema.schema_str)

    def _ask(self, call: Any, what: str) -> Any:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            return call()
        except SchemaRegistryError as exc:
            if exc.http_status_code == _NOT_FOUND:
                raise UnknownSchema(
                    f"{what} is not in the schema registry ({exc.error_message})"
                    + self._empty_hint()
                ) from None
            raise

    def _empty_hint(self) -> str:
        """A hint when the registry holds no schema at all (a new store at a mistyped
        path, say), for a schema it does not find. Asked at most once a
        :data:`_EMPTY_RECHECK` seconds while it is empty, and never again once it holds
        one or cannot say (every bad message of a run asks)."""
        if self._holds_schemas is not False:
            return ""
        now = time.monotonic()
        if self._empty_at is not None and now - self._empty_at < _EMPTY_RECHECK:
            return _EMPTY_HINT
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            holds = bool(self.registry.get_subjects())
        except (SchemaRegistryError, OSError, ValueError):
            self._holds_schemas = None  # it cannot say: no hint, and no more asking
            return ""
        if holds:
            self._holds_schemas = True
            return ""
        self._empty_at = now
        return _EMPTY_HINT
