"""Avro bodies <-> OpenCDC structured data, one message at a time, with fastavro.

Structured data holds JSON-like values, so Avro's logical types travel in it as exact
text or numbers: ``decimal`` as :class:`~decimal.Decimal`; ``timestamp-*``,
``local-timestamp-*``, ``date`` and ``time-*`` as ISO 8601 strings (what Conduit's JSON
shows for them); ``uuid`` as its string. Writing takes those strings back (and native
``datetime``, ``date``, ``time`` and ``UUID`` values too), so a record decoded here encodes
to the same bytes.

Decoding resolves the writer's schema to a reader's (Avro schema resolution: added fields
get their defaults, removed ones are dropped, promotions apply). A body that does not
decode, or that has bytes left after the value, is a :class:`CodecError`.
"""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Any
from uuid import UUID

import fastavro
from fastavro.read import SchemaResolutionError

from cdc_connectors.opencdc import CodecError

__all__ = ["decode", "encode", "needs_text", "to_structured"]

_TEMPORAL = {
    "timestamp-millis": dt.datetime.fromisoformat,
    "timestamp-micros": dt.datetime.fromisoformat,
    "timestamp-nanos": dt.datetime.fromisoformat,
    "local-timestamp-millis": dt.datetime.fromisoformat,
    "local-timestamp-micros": dt.datetime.fromisoformat,
    "local-timestamp-nanos": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time-millis": dt.time.fromisoformat,
    "time-micros": dt.time.fromisoformat,
}


def encode(schema: Any, data: Any, shape: Any | None = None) -> bytes:
    """``data`` (structured data) as an Avro body of ``schema`` (parsed by fastavro).

    ``shape`` is the same schema with named types spelled out (``Resolved.avro_standalone``),
    to find the temporal fields whose text to parse; without it, ``schema`` is used.
    """
    buffer = io.BytesIO()
    try:
        value = from_structured(shape if shape is not None else schema, data)
    except CodecError as exc:
        raise CodecError(f"does not fit its Avro schema: {exc.reason}") from None
    try:
        fastavro.schemaless_writer(buffer, schema, value)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
        raise CodecError(f"does not fit its Avro schema: {_reason(exc)}") from None
    return buffer.getvalue()


def decode(
    body: bytes | memoryview, writer: Any, reader: Any | None = None, *, offset: int = 0
) -> Any:
    """The value of an Avro ``body`` written with ``writer``, read as ``reader``."""
    buffer = io.BytesIO(body)
    buffer.seek(offset)
    try:
        value = fastavro.schemaless_reader(buffer, writer, reader)
    except SchemaResolutionError as exc:
        raise CodecError(f"cannot be read with the reader schema: {exc}") from None
    except (EOFError, ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        raise CodecError(f"is not Avro of its schema: {_reason(exc)}") from None
    left = len(body) - buffer.tell()
    if left:
        raise CodecError(f"is not Avro of its schema: {left} bytes are left after the value")
    return value


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "..."


def needs_text(schema: Any) -> bool:
    """Whether values of ``schema`` (plain JSON) may hold temporal or UUID values."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("logicalType") in _TEMPORAL or node.get("logicalType") == "uuid":
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def to_structured(value: Any) -> Any:
    """A decoded Avro value as structured data: temporal values and UUIDs as text."""
    if isinstance(value, dict):
        return {k: to_structured(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_structured(v) for v in value]
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value


def from_structured(schema: Any, value: Any, where: str = "") -> Any:
    """Structured data made writable for ``schema``: ISO strings of temporal types and
    decimal text parsed; a record's keys checked against its fields (fastavro would drop
    the ones the schema lacks without a word)."""
    if isinstance(schema, str):
        return value
    if isinstance(schema, list):
        if not isinstance(value, str | dict) or (isinstance(value, str) and "string" in schema):
            return value  # text stays text where the union has a string branch
        # Text or an object in a union: made writable for the first branch that takes it.
        for branch in schema:
            if isinstance(value, dict) and not _is_record(branch) and _kind(branch) != "map":
                continue
            try:
                prepared = from_structured(branch, value, where)
            except CodecError:
                continue
            if prepared is not value or isinstance(value, dict):
                return prepared
        return value
    if not isinstance(schema, dict):
        return value
    logical = schema.get("logicalType")
    parse = _TEMPORAL.get(logical) if isinstance(logical, str) else None
    if parse is not None and isinstance(value, str):
        try:
            return parse(value)
        except ValueError:
            raise CodecError(
                f"{where or 'value'}: {value!r:.60} is not an ISO 8601 {logical}"
            ) from None
    if logical == "decimal" and isinstance(value, str):
        # Decimals often travel as text (JSON has no exact decimal); parsed exactly.
        try:
            number = Decimal(value)
        except ArithmeticError:
            raise CodecError(f"{where or 'value'}: {value!r:.60} is not a decimal number") from None
        if not number.is_finite():
            raise CodecError(f"{where or 'value'}: {value!r:.60} is not a finite decimal")
        return number
    kind = schema.get("type")
    if _is_record(schema) and isinstance(value, dict):
        fields = {f["name"]: f["type"] for f in schema["fields"]}
        extra = [key for key in value if key not in fields]
        if extra:
            raise CodecError(
                f"{_join(where, extra[0])}: not a field of the Avro record "
                f"{schema.get('name')!r} (fields: {', '.join(fields) or 'none'})"
            )
        return {k: from_structured(fields[k], v, _join(where, k)) for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        return [from_structured(schema["items"], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == "map" and isinstance(value, dict):
        return {k: from_structured(schema["values"], v, _join(where, k)) for k, v in value.items()}
    if isinstance(kind, dict | list):
        return from_structured(kind, value, where)
    return value


def _is_record(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") in ("record", "error")


def _kind(schema: Any) -> Any:
    return schema.get("type") if isinstance(schema, dict) else schema


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
