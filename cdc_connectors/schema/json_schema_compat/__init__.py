"""JSON Schema compatibility, as Confluent's schema diff (its ``JsonSchemaDiff``) decides it.

The writer's schema is compared with the reader's kind by kind; every change found is
named as Confluent names it (``TYPE_CHANGED``, ``PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL``,
...) at a JSON path (``#/properties/email``), and changes outside ``COMPATIBLE_CHANGES``
make the pair incompatible. In short, a reader may accept more than the writer produced:

- objects: a property may be added to a closed content model (``additionalProperties:
  false``) or one whose extra properties it matches (partially open: a schema in
  ``additionalProperties``, ``patternProperties`` or ``unevaluatedProperties``), and removed
  from an open one; ``required`` may lose names, or gain ones that have a default;
- bounds may widen (``maximum`` up, ``minLength`` down, ``multipleOf`` to a divisor, ...),
  never narrow or appear; ``integer`` may become ``number``, not the reverse;
- ``enum`` may gain values; a ``const`` may not change; ``oneOf``/``anyOf`` may gain
  branches, ``allOf`` lose them; a schema may become a union one of whose branches reads it;
- arrays follow the objects' rules for tuples (``items`` arrays with ``additionalItems``,
  or 2020-12 ``prefixItems`` with ``items``).

``$ref`` is followed within the document and to referenced schemas by name; a pair of
schemas met again inside itself (a recursive schema) is compared once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_connectors.schema.json_schema_compat.context import COMPATIBLE_CHANGES, Difference
from cdc_connectors.schema.json_schema_compat.model import Loader
from cdc_connectors.schema.json_schema_compat.walker import differences as _differences

__all__ = ["COMPATIBLE_CHANGES", "Difference", "Resolved", "differences", "incompatibilities"]


class Resolved:
    """A parsed JSON Schema with the schemas it references, by reference name."""

    def __init__(self, schema: Any, references: Mapping[str, Any] | None = None):
        self.schema = schema
        self.references = dict(references or {})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resolved) and (self.schema, self.references) == (
            other.schema,
            other.references,
        )

    __hash__ = None  # type: ignore[assignment]


def differences(writer: Any, reader: Any) -> list[Difference]:
    """Every change from ``writer`` to ``reader`` (parsed schemas, or ``Resolved``)."""
    return _differences(_loaded(writer), _loaded(reader))


def incompatibilities(
    reader: Any, writer: Any, names: tuple[str, str] = ("new", "old")
) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader``; empty when it can.

    ``names`` name the reader's and the writer's schema in the messages, as Confluent's
    (``new`` and ``old`` when the new schema reads the old one's data).
    """
    return [d.message(*names) for d in differences(writer, reader) if not d.compatible]


def _loaded(schema: Any) -> Any:
    if isinstance(schema, Resolved):
        return Loader(schema.schema, schema.references).root()
    return Loader(schema).root()
