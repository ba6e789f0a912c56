"""Converted values as Avro's JSON spells them: defaults, and whether Avro takes one."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from cdc_connectors.schema.connect.node import ConnectSchema, string_keys
from cdc_connectors.schema.connect.readers import EPOCH, EPOCH_DAY, WIDE

__all__ = ["avro_json", "valid_default"]


def avro_json(schema: ConnectSchema, value: Any) -> Any:
    """A converted value as Avro's JSON defaults spell it (bytes as ISO-8859-1 text)."""
    if value is None:
        return None
    if schema.semantic is not None:
        return _leaf_json(schema.semantic.avro(schema.parameters), value)
    if schema.type == "struct":
        return {name: avro_json(child, value.get(name)) for name, child in schema.fields}
    if schema.type == "array":
        assert schema.items is not None
        return [avro_json(schema.items, item) for item in value]
    if schema.type == "map":
        assert schema.keys is not None and schema.values is not None
        if string_keys(schema):
            return {key: avro_json(schema.values, item) for key, item in value.items()}
        # AvroData writes these as [key, value] pairs, which Avro then refuses as a default.
        return [
            [avro_json(schema.keys, e["key"]), avro_json(schema.values, e["value"])] for e in value
        ]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


def _leaf_json(avro: Mapping[str, Any], value: Any) -> Any:
    logical = avro.get("logicalType")
    if isinstance(value, Decimal):
        unscaled = int(value.scaleb(avro.get("scale", 0), context=WIDE))
        raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)
        return raw.decode("latin-1")
    if isinstance(value, dt.datetime):
        micros = (value - EPOCH) // dt.timedelta(microseconds=1)
        return micros // 1000 if logical == "timestamp-millis" else micros
    if isinstance(value, dt.date):
        return value.toordinal() - EPOCH_DAY
    if isinstance(value, dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000
        micros += value.microsecond
        return micros // 1000 if logical == "time-millis" else micros
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def valid_default(schema: ConnectSchema, value: Any) -> bool:
    if value is None or schema.semantic is not None:
        return True
    if schema.type == "struct":
        return all(valid_default(child, value.get(name)) for name, child in schema.fields)
    if schema.type == "array":
        assert schema.items is not None
        return all(valid_default(schema.items, item) for item in value)
    if schema.type == "map":
        assert schema.values is not None
        if string_keys(schema):
            return all(valid_default(schema.values, item) for item in value.values())
        return not value
    return True
