"""Confluent compatibility levels, applied to parsed schemas of any language.

``BACKWARD``: the new schema reads data written with the latest one.
``FORWARD``: the latest schema reads data written with the new one.
``FULL``: both. ``*_TRANSITIVE``: against every earlier version, not only the
latest. ``NONE``: no check. JSON Schema is not checked (always compatible).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cdc_connectors.schema import avro as avro_schema
from cdc_connectors.schema import json_schema, protobuf
from cdc_connectors.schema.errors import SchemaError

LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
DEFAULT_LEVEL = "BACKWARD"
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")


@dataclass(frozen=True)
class ParsedSchema:
    """A schema parsed in its language, ready for compatibility checks."""

    schema_type: str
    parsed: Any

    def incompatibilities(self, writer: ParsedSchema) -> list[str]:
        """Why this schema cannot read data written with ``writer``."""
        if self.schema_type != writer.schema_type:
            return [f"schema type changed from {writer.schema_type} to {self.schema_type}"]
        if self.schema_type == "AVRO":
            return avro_schema.incompatibilities(self.parsed, writer.parsed)
        if self.schema_type == "PROTOBUF":
            return protobuf.incompatibilities(self.parsed, writer.parsed)
        return []


def normalize(schema_type: str, schema_str: str) -> str:
    """The text that identifies a schema: equal texts share one id."""
    if schema_type == "AVRO":
        return avro_schema.normalize(schema_str)
    if schema_type == "JSON":
        return json_schema.normalize(schema_str)
    if schema_type == "PROTOBUF":
        return protobuf.normalize(schema_str)
    raise SchemaError(f"unknown schema type {schema_type!r} (types: {', '.join(SCHEMA_TYPES)})")


def parse(
    schema_type: str, schema_str: str, references: Sequence[tuple[str, str]] = ()
) -> ParsedSchema:
    """Parse a schema; ``references`` are (name, schema text), dependencies first."""
    return _parse(schema_type, schema_str, tuple(references))


@functools.lru_cache(maxsize=512)
def _parse(
    schema_type: str, schema_str: str, references: tuple[tuple[str, str], ...]
) -> ParsedSchema:
    if schema_type == "AVRO":
        return ParsedSchema("AVRO", avro_schema.parse(schema_str, [s for _, s in references]))
    if schema_type == "PROTOBUF":
        return ParsedSchema("PROTOBUF", protobuf.compile_schema(schema_str, dict(references)))
    if schema_type == "JSON":
        return ParsedSchema("JSON", json_schema.parse(schema_str))
    raise SchemaError(f"unknown schema type {schema_type!r} (types: {', '.join(SCHEMA_TYPES)})")


def check(level: str, new: ParsedSchema, existing: Sequence[ParsedSchema]) -> list[str]:
    """Why ``new`` may not follow ``existing`` (oldest first) under ``level``; empty if it may."""
    if level not in LEVELS:
        raise ValueError(f"unknown compatibility level {level!r}")
    if level == "NONE" or not existing:
        return []
    against = existing if level.endswith("_TRANSITIVE") else existing[-1:]
    problems: list[str] = []
    for old in against:
        if level.startswith(("BACKWARD", "FULL")):
            problems += new.incompatibilities(old)
        if level.startswith(("FORWARD", "FULL")):
            problems += old.incompatibilities(new)
    return problems
