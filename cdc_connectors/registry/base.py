"""The schema registry interface: confluent-kafka's ``SchemaRegistryClient``, for every URL.

:class:`SchemaRegistry` is a subclass of ``confluent_kafka.schema_registry.SchemaRegistryClient``
with the same method names and signatures, so confluent-kafka's own serializers and
deserializers accept any registry of ours: the embedded store (``sqlite:///``, ``memory://``)
implements every method itself, the HTTP registry is the client. Schemas, references and
registrations are confluent-kafka's types; errors are its ``SchemaRegistryError`` with
Confluent's codes.

A few methods go beyond the client, for what Confluent's REST API offers and the client does
not (they keep Confluent's names where the REST API has one): :meth:`compatibility_problems`
(the reasons behind ``test_compatibility``), :meth:`get_schemas` (``GET /schemas``),
:meth:`get_max_schema_id` (``fetchMaxId``) and keyword-only ``default_to_global``, ``schema_id``
and ``version`` arguments.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

from confluent_kafka.schema_registry import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.common.schema_registry_client import (
    SchemaVersion,
    ServerConfig,
)

from cdc_connectors.registry import errors
from cdc_connectors.registry.compatibility import DEFAULT_LEVEL, LEVELS
from cdc_connectors.registry.redact import redact_url
from cdc_connectors.schema.languages import SCHEMA_TYPES

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_MODE",
    "LEVELS",
    "MODES",
    "SCHEMA_TYPES",
    "RegisteredSchema",
    "Schema",
    "SchemaReference",
    "SchemaRegistry",
    "SchemaVersion",
    "ServerConfig",
    "Version",
]

Version = int | str  # a number, "latest" or -1

# Confluent's modes; FORWARD (a Confluent Cloud global-only mode) is not offered.
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
DEFAULT_MODE = "READWRITE"


class SchemaRegistry(SchemaRegistryClient, ABC):
    """A Confluent-compatible schema registry with confluent-kafka's client interface.

    Ids are global and shared by identical schemas across subjects; versions count per
    subject from 1; registering a schema a subject already has returns its id; compatibility
    (``BACKWARD`` by default) is enforced on register. Only what cannot change is cached (a
    schema by its id or GUID): every other answer reflects what any process has committed.

    Instances hold connections and are not picklable: Spark executors open their own from
    the URL (:func:`cdc_connectors.registry.registry_for`).
    """

    url: str

    def __getstate__(self) -> Any:
        raise TypeError(
            f"{type(self).__name__} cannot be pickled: pass the registry URL "
            f"({redact_url(self.url)!r}) and open it where it is used, "
            "with cdc_connectors.registry.registry_for(url)"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({redact_url(self.url)!r})"

    # confluent-kafka's methods, with the keyword-only arguments Confluent's REST API takes

    @abstractmethod
    def register_schema_full_response(
        self,
        subject_name: str,
        schema: Schema,
        normalize_schemas: bool = False,
        *,
        schema_id: int | None = None,
        version: int | None = None,
    ) -> RegisteredSchema:
        """Register ``schema`` (idempotent); an explicit id and version only in IMPORT mode."""

    @abstractmethod
    def get_referenced_by(
        self,
        subject_name: str,
        version: int | Literal["latest"] = "latest",
        offset: int = 0,
        limit: int = -1,
        *,
        deleted: bool = False,
    ) -> list[int]:
        """Ids of the schemas referencing this version (soft-deleted too with ``deleted``)."""

    @abstractmethod
    def delete_version(
        self, subject_name: str, version: int | Literal["latest"], permanent: bool = False
    ) -> int:
        """Soft-delete a version (or ``latest``), or permanently delete a soft-deleted one."""

    @abstractmethod
    def get_compatibility(
        self, subject_name: str | None = None, *, default_to_global: bool = False
    ) -> str:
        """The global level, or a subject's (40408 if unset and not ``default_to_global``)."""

    @abstractmethod
    def get_config(
        self, subject_name: str | None = None, *, default_to_global: bool = False
    ) -> ServerConfig:
        """The global config, or a subject's (40408 if unset and not ``default_to_global``)."""

    @abstractmethod
    def config_document(
        self, subject_name: str | None = None, *, default_to_global: bool = False
    ) -> dict[str, Any]:
        """The config as ``GET /config`` answers it: ``compatibilityLevel`` and the other
        fields set (``alias``, ``validateFields``, ``compatibilityGroup``, ...)."""

    @abstractmethod
    def update_config(
        self, subject_name: str | None, level: str | None, changes: dict[str, Any]
    ) -> dict[str, Any]:
        """Set the level (when given) and the config fields ``changes`` names (``None``
        removes one); the config as ``PUT /config`` answers it."""

    @abstractmethod
    def get_mode(self, subject_name: str | None, *, default_to_global: bool = False) -> str:
        """A subject's mode (40409 if unset and not ``default_to_global``); None: the global one."""

    @abstractmethod
    def update_mode(self, subject_name: str | None, mode: str, force: bool = False) -> str:
        """Set a subject's mode (None: the global one); IMPORT needs an empty scope or ``force``."""

    @abstractmethod
    def delete_mode(self, subject_name: str | None) -> str:
        """Remove a subject's mode (40401 if none; None resets the global one); the old mode."""

    # beyond confluent-kafka's client

    @abstractmethod
    def compatibility_problems(
        self,
        subject_name: str,
        schema: Schema,
        version: Version | None = "latest",
        normalize: bool = False,
    ) -> list[str]:
        """Why ``schema`` would be refused against a version (every version with ``None``).

        Confluent's rules: a version of a missing subject is 40402; ``latest`` or every
        version of a subject without versions is no problem.
        """

    @abstractmethod
    def get_schemas(
        self,
        subject_prefix: str = "",
        deleted: bool = False,
        latest_only: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[RegisteredSchema]:
        """Every version of the subjects starting with ``subject_prefix`` (``GET /schemas``)."""

    @abstractmethod
    def get_max_schema_id(self) -> int:
        """The highest schema id in use (0 when there is none)."""

    def __enter__(self) -> SchemaRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


MAX_VERSION = 2**31 - 1
#: Confluent's schema ids are 32-bit: larger ones are no id (40403).
MAX_ID = 2**31 - 1
LATEST = -1


def version_number(version: object) -> int:
    """A version as Confluent reads it: ``latest`` or ``-1`` (-1), or a number in [1, 2^31-1].

    Text must be ``latest``, ``-1`` or plain ASCII digits (no sign, no spaces); anything else
    is 42202.
    """
    if isinstance(version, bool):
        raise errors.invalid_version(version)
    if isinstance(version, int):
        number = version
    elif version in ("latest", "-1"):
        return LATEST
    elif isinstance(version, str) and version.isascii() and version.isdigit() and len(version) < 12:
        number = int(version)
    else:
        raise errors.invalid_version(version)
    if number != LATEST and not 1 <= number <= MAX_VERSION:
        raise errors.invalid_version(version)
    return number


def with_schema(
    registered: RegisteredSchema, schema: Schema, subject: str | None = None
) -> RegisteredSchema:
    """``registered`` with another ``schema`` (and ``subject``): the type is frozen."""
    return RegisteredSchema(
        schema_id=registered.schema_id,
        guid=registered.guid,
        schema=schema,
        subject=subject or registered.subject,
        version=registered.version,
    )
