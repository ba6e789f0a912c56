"""One node of a checked Connect schema, and what AvroData asks of a node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_connectors.schema.connect.avrodata import FIXED_SIZE
from cdc_connectors.schema.connect.types import SemanticType
from cdc_connectors.schema.errors import SchemaError

__all__ = ["ConnectSchema", "fixed_size", "string_keys"]


@dataclass(frozen=True, slots=True, eq=False)
class ConnectSchema:
    """One node of a checked Connect schema (``parse_connect_schema``)."""

    type: str
    optional: bool
    name: str | None
    version: int | None
    doc: str | None
    parameters: Mapping[str, str]
    semantic: SemanticType | None
    path: str
    fields: tuple[tuple[str, ConnectSchema], ...] = ()
    items: ConnectSchema | None = None
    keys: ConnectSchema | None = None
    values: ConnectSchema | None = None
    has_default: bool = False
    #: The default as ``connect_value`` returns it.
    default: Any = None
    #: Equal for schemas AvroData treats as one (its schema cache): all but ``optional``.
    identity: bytes = field(default=b"", repr=False)
    #: Equal for schemas whose values are alike: the identity without this node's own
    #: ``doc``, ``version`` and parameters that do not shape the Avro type (Debezium's
    #: ``__debezium.source.column.*``). A named type of one shape is defined once.
    shape: bytes = field(default=b"", repr=False)
    #: The names of ``fields``, for checking a struct value's keys.
    field_names: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "field_names", frozenset(name for name, _ in self.fields))


def string_keys(schema: ConnectSchema) -> bool:
    """Whether a map schema becomes an Avro map (else an array of key/value records)."""
    # AvroData (allow.optional.map.keys off) writes an Avro map only for required string keys.
    return schema.keys is not None and schema.keys.type == "string" and not schema.keys.optional


def fixed_size(schema: ConnectSchema) -> int | None:
    """The size of the Avro ``fixed`` a named bytes schema becomes, or None."""
    text = schema.parameters.get(FIXED_SIZE)
    if text is None or schema.name is None or schema.type != "bytes":
        return None
    try:
        return int(text)
    except ValueError:
        raise SchemaError(f"{schema.path}.parameters.{FIXED_SIZE}: not an integer") from None
