"""Connect ``payload`` values -> the Python values fastavro writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_connectors.schema.connect.convert import convert_value
from cdc_connectors.schema.connect.node import ConnectSchema
from cdc_connectors.schema.connect.parse import parse_connect_schema

__all__ = ["connect_value"]


def connect_value(schema: Mapping[str, Any] | ConnectSchema, value: Any, *, path: str = "") -> Any:
    """A ``payload`` value -> what fastavro writes for ``connect_to_avro(schema)``.

    ``null`` (or a missing field) is the schema's default, else None when optional, as
    Kafka Connect's JsonConverter reads it. Errors name the value's place
    (``after.amount``), prefixed by ``path``.
    """
    return convert_value(parse_connect_schema(schema), value, path)
