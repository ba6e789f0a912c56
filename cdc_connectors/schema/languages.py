"""Schema languages by registry type name: one table, one entry per language.

Each entry knows how to give a schema's identity text (equal texts share one
registry id), how to parse it with its references, and why a reader schema
cannot read a writer's data. Adding a language is one entry in ``LANGUAGES``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_connectors.schema import avro as avro_schema
from cdc_connectors.schema import json_schema, json_schema_compat, protobuf, protobuf_compat
from cdc_connectors.schema.errors import SchemaError


@dataclass(frozen=True)
class Language:
    """How the registry handles one schema type."""

    # (schema text, [(reference name, reference text), ...] dependencies first) -> identity
    normalize: Callable[[str, Sequence[tuple[str, str]]], str]
    # (schema text, [(reference name, reference text), ...] dependencies first) -> parsed
    parse: Callable[[str, Sequence[tuple[str, str]]], Any]
    # (reader, writer, (reader's name, writer's name)) -> problems, the names as the
    # messages call the two schemas; None: the language has no compatibility rules here
    incompatibilities: Callable[[Any, Any, tuple[str, str]], list[str]] | None


LANGUAGES: dict[str, Language] = {
    "AVRO": Language(
        lambda text, refs: avro_schema.normalize(text, [s for _, s in refs]),
        lambda text, refs: avro_schema.parse(text, [s for _, s in refs]),
        lambda reader, writer, names: avro_schema.incompatibilities(reader, writer),
    ),
    "PROTOBUF": Language(
        lambda text, refs: protobuf.normalize(text),
        lambda text, refs: protobuf.compile_schema(text, dict(refs)),
        lambda reader, writer, names: protobuf_compat.incompatibilities(reader, writer),
    ),
    "JSON": Language(
        lambda text, refs: json_schema.normalize(text),
        lambda text, refs: json_schema_compat.Resolved(
            json_schema.parse(text), {name: json_schema.parse(ref) for name, ref in refs}
        ),
        json_schema_compat.incompatibilities,
    ),
}
SCHEMA_TYPES = tuple(LANGUAGES)


def language(schema_type: str) -> Language:
    """The entry of ``schema_type`` (case-sensitive, as Confluent's); SchemaError if none."""
    try:
        return LANGUAGES[schema_type]
    except (KeyError, TypeError):
        raise SchemaError(
            f"unknown schema type {schema_type!r:.80} (types: {', '.join(SCHEMA_TYPES)})"
        ) from None


@dataclass(frozen=True)
class ParsedSchema:
    """A schema parsed in its language, ready for compatibility checks."""

    schema_type: str
    parsed: Any

    def incompatibilities(
        self, writer: ParsedSchema, names: tuple[str, str] = ("new", "old")
    ) -> list[str]:
        """Why this schema cannot read data written with ``writer``; ``names`` call this
        schema and the writer's in the messages (JSON Schema's, as Confluent's)."""
        if self.schema_type != writer.schema_type:
            return [f"schema type changed from {writer.schema_type} to {self.schema_type}"]
        check = language(self.schema_type).incompatibilities
        return check(self.parsed, writer.parsed, names) if check else []


def normalize(schema_type: str, schema_str: str, references: Sequence[tuple[str, str]] = ()) -> str:
    """The text that identifies a schema: equal texts share one id.

    ``references`` are (name, schema text), dependencies first, as for ``parse``:
    named types of referenced Avro schemas resolve through them.
    """
    entry = language(schema_type)
    refs = _checked(schema_str, references)
    try:
        return entry.normalize(schema_str, refs)
    except RecursionError:
        raise SchemaError(f"{schema_type} schema nests too deeply") from None


def parse(
    schema_type: str, schema_str: str, references: Sequence[tuple[str, str]] = ()
) -> ParsedSchema:
    """Parse a schema; ``references`` are (name, schema text), dependencies first."""
    language(schema_type)
    refs = _checked(schema_str, references)
    try:
        return _parse(schema_type, schema_str, refs)
    except RecursionError:
        raise SchemaError(f"{schema_type} schema nests too deeply") from None


def _checked(schema_str: object, references: object) -> tuple[tuple[str, str], ...]:
    """The references as a hashable tuple; SchemaError for anything but text where text belongs."""
    if not isinstance(schema_str, str):
        raise SchemaError(f"a schema must be a string, not {type(schema_str).__name__}")
    if isinstance(references, str | bytes) or not isinstance(references, Sequence):
        raise SchemaError("references must be a sequence of (name, schema text) pairs")
    refs = []
    for ref in references:
        if not (
            isinstance(ref, Sequence)
            and not isinstance(ref, str)
            and len(ref) == 2
            and isinstance(ref[0], str)
            and isinstance(ref[1], str)
        ):
            raise SchemaError(f"a reference must be a (name, schema text) pair, not {ref!r:.80}")
        refs.append((ref[0], ref[1]))
    return tuple(refs)


@functools.lru_cache(maxsize=512)
def _parse(
    schema_type: str, schema_str: str, references: tuple[tuple[str, str], ...]
) -> ParsedSchema:
    return ParsedSchema(schema_type, language(schema_type).parse(schema_str, references))
