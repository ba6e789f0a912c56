"""Avro schemas: parse (with named types from references), normal form, compatibility.

Compatibility is the ``avro`` package's reader/writer checker, the same rules
as the Java implementation Confluent's registry uses.
"""

from __future__ import annotations

from collections.abc import Sequence

import avro.errors
import avro.name
import avro.schema
import orjson
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from cdc_connectors.schema.errors import SchemaError


def normalize(schema_str: str) -> str:
    """The schema as compact JSON (whitespace-insensitive identity of a schema)."""
    try:
        return orjson.dumps(orjson.loads(schema_str)).decode()
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"Avro schema is not valid JSON: {exc}") from None


def parse(schema_str: str, references: Sequence[str] = ()) -> avro.schema.Schema:
    """Parse an Avro schema; ``references`` are the schemas defining the named types it uses."""
    names = avro.name.Names()
    try:
        for ref in references:
            avro.schema.make_avsc_object(orjson.loads(ref), names)
        return avro.schema.make_avsc_object(orjson.loads(schema_str), names)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"Avro schema is not valid JSON: {exc}") from None
    except (avro.errors.AvroException, TypeError, KeyError, ValueError) as exc:
        raise SchemaError(f"invalid Avro schema: {exc}") from None


def incompatibilities(reader: avro.schema.Schema, writer: avro.schema.Schema) -> list[str]:
    """Why ``reader`` cannot read data written with ``writer``; empty when it can."""
    checker = ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
    result = checker.get_compatibility(reader, writer)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    where = ", ".join(sorted(result.locations))
    return [f"{message} (at {where})" for message in sorted(result.messages)] or [
        f"incompatible (at {where})"
    ]
