"""The schema registry interface, with Confluent's semantics.

Schemas, references and registrations are confluent-kafka's own types
(``Schema``, ``SchemaReference``, ``RegisteredSchema``), and errors are its
``SchemaRegistryError`` with Confluent's codes, so an embedded store and a
remote Confluent-compatible registry are used alike.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from confluent_kafka.schema_registry import RegisteredSchema, Schema, SchemaReference
from confluent_kafka.schema_registry.common.schema_registry_client import SchemaVersion

from cdc_connectors.registry.compatibility import DEFAULT_LEVEL, LEVELS
from cdc_connectors.schema.languages import SCHEMA_TYPES

__all__ = [
    "DEFAULT_LEVEL",
    "LEVELS",
    "SCHEMA_TYPES",
    "RegisteredSchema",
    "Schema",
    "SchemaReference",
    "SchemaRegistry",
    "SchemaVersion",
]

Version = int | str  # a number, or "latest"


class SchemaRegistry(ABC):
    """A Confluent-compatible schema registry.

    Ids are global and shared by identical schemas across subjects; versions
    count per subject from 1; registering a schema a subject already has
    returns its id and version; compatibility (``BACKWARD`` by default) is
    enforced on register. Lookups by id and by (subject, version) are cached.

    Instances hold connections and are not picklable: Spark executors open
    their own from the URL (:func:`cdc_connectors.registry.registry_for`).
    """

    url: str

    def __getstate__(self) -> Any:
        raise TypeError(
            f"{type(self).__name__} cannot be pickled: pass the registry URL ({self.url!r}) "
            "and open it where it is used, with cdc_connectors.registry.registry_for(url)"
        )

    def register(
        self,
        subject: str,
        schema_str: str,
        schema_type: str = "AVRO",
        references: Sequence[SchemaReference] = (),
    ) -> RegisteredSchema:
        """Register ``schema_str`` under ``subject``; the id and version it has there."""
        return self.register_schema(subject, Schema(schema_str, schema_type, list(references)))

    @abstractmethod
    def register_schema(
        self, subject: str, schema: Schema, normalize: bool = False
    ) -> RegisteredSchema:
        """Register a schema (idempotent for the same schema); raises 409 if incompatible."""

    @abstractmethod
    def get_schema(self, schema_id: int) -> Schema:
        """The schema with this id (40403 if none)."""

    @abstractmethod
    def get_schema_by_guid(self, guid: str) -> Schema:
        """The schema with this GUID (newer clients frame records with it); 40403 if none."""

    @abstractmethod
    def get_version(
        self, subject: str, version: Version = "latest", deleted: bool = False
    ) -> RegisteredSchema:
        """A subject's version, or its latest (40401 / 40402 if none)."""

    def get_latest_version(self, subject: str) -> RegisteredSchema:
        """The latest version of a subject."""
        return self.get_version(subject, "latest")

    @abstractmethod
    def lookup_schema(
        self, subject: str, schema: Schema, deleted: bool = False
    ) -> RegisteredSchema:
        """The registration of ``schema`` under ``subject`` (40401 / 40403 if none)."""

    @abstractmethod
    def get_subjects(self, deleted: bool = False) -> list[str]:
        """Every subject with a version (soft-deleted ones too with ``deleted``)."""

    @abstractmethod
    def get_versions(self, subject: str, deleted: bool = False) -> list[int]:
        """The versions of a subject (40401 if none)."""

    @abstractmethod
    def get_schema_versions(self, schema_id: int) -> list[SchemaVersion]:
        """The (subject, version) pairs registered with this id (40403 if unknown)."""

    @abstractmethod
    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete a subject, or permanently delete a soft-deleted one; its versions."""

    @abstractmethod
    def delete_version(self, subject: str, version: Version, permanent: bool = False) -> int:
        """Soft-delete a version, or permanently delete a soft-deleted one."""

    @abstractmethod
    def get_compatibility(self, subject: str | None = None, default_to_global: bool = False) -> str:
        """The global level, or a subject's (40408 if unset and not ``default_to_global``)."""

    @abstractmethod
    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        """Set the global level or a subject's (42203 if not a level)."""

    @abstractmethod
    def delete_compatibility(self, subject: str) -> str:
        """Remove a subject's level (it follows the global one again); the removed level."""

    @abstractmethod
    def test_compatibility(
        self, subject: str, schema: Schema, version: Version | None = "latest"
    ) -> list[str]:
        """Why ``schema`` would be refused against a version (all versions with ``None``)."""

    def is_compatible(
        self, subject: str, schema: Schema, version: Version | None = "latest"
    ) -> bool:
        """True when :meth:`test_compatibility` finds no problem."""
        return not self.test_compatibility(subject, schema, version)

    def get_schema_types(self) -> list[str]:
        """The schema types the registry knows."""
        return list(SCHEMA_TYPES)

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release connections."""

    def __enter__(self) -> SchemaRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
