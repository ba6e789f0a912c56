"""The parts of reading one Debezium change event: its JSON and JsonConverter's wrapper, the
Kafka key, the images (typed, checked, MongoDB's JSON text), the times and metadata values."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

import orjson

from cdc_connectors.formats.debezium.envelope import UNAVAILABLE_VALUE
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc.data import Data
from cdc_connectors.opencdc.json_codec import json_default, json_error, load_exact
from cdc_connectors.opencdc.jsonkinds import json_kind
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.schema import avro_values
from cdc_connectors.schema.connect import ConnectSchema, connect_value
from cdc_connectors.schema.errors import SchemaError

__all__ = [
    "INTEGER",
    "check_images",
    "event_times",
    "is_heartbeat",
    "is_json_text",
    "json_document",
    "load_json",
    "parse_kafka_key",
    "put_text",
    "put_value",
    "typed_row",
    "unavailable_columns",
    "unwrap",
]

#: A 64-bit integer's text, as JSON writes it.
INTEGER = re.compile(r"-?(0|[1-9][0-9]{0,18})")
_UNAVAILABLE_BYTES = UNAVAILABLE_VALUE.encode()
# Finest first: Debezium 2.x adds ts_us / ts_ns next to ts_ms for the same instant.
_TIME_FIELDS = (("ts_ns", 1), ("ts_us", 1_000), ("ts_ms", 1_000_000))
_HEARTBEAT_SCHEMA = "io.debezium.connector.common.Heartbeat"
#: The Connect name of JSON text: MongoDB's before / after images are documents as such text.
_JSON_TEXT = "io.debezium.data.Json"
_DIGITS = re.compile(r"[0-9]+")
_NANOS_PER_MILLI = 1_000_000
_SORTED = orjson.OPT_SORT_KEYS


def load_json(data: bytes, what: str) -> Any:
    """``data`` parsed as the OpenCDC JSON codec reads it: numbers exact or refused."""
    try:
        return load_exact(data)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"{what} is not valid JSON: {json_error(exc, data)}") from None


def parse_kafka_key(key: bytes | None) -> Any:
    """The Kafka key as JSON, or its raw bytes when it is no JSON object."""
    if key is None:
        return None
    try:
        orjson.loads(key)
    except orjson.JSONDecodeError:
        return key
    parsed = load_json(key, "key")
    return parsed if isinstance(parsed, Mapping) else key


def unwrap(document: Mapping[str, Any], what: str) -> tuple[Any, Any]:
    """(schema block, payload) of JsonConverter's wrapper, or (None, the document)."""
    if "payload" in document and ("schema" in document or len(document) == 1):
        return document.get("schema"), document["payload"]
    if "schema" in document and "op" not in document:
        raise CodecError(f"{what}: a 'schema' block without a 'payload'")
    return None, document


def is_json_text(block: Any) -> bool:
    """Whether an image's schema is JSON text (MongoDB's documents), not a row struct."""
    return (
        isinstance(block, Mapping)
        and block.get("type") == "string"
        and block.get("name") == _JSON_TEXT
    )


def json_document(text: str, name: str) -> Any:
    """The object a JSON-text image holds (MongoDB), or why it holds none."""
    try:
        document = load_json(text.encode("utf-8", "surrogatepass"), name)
    except (CodecError, UnicodeEncodeError) as exc:
        reason = exc.reason if isinstance(exc, CodecError) else str(exc)
        raise CodecError(f"{name}: a string image is a document's JSON text; {reason}") from None
    if not isinstance(document, Mapping):
        raise CodecError(
            f"{name}: a string image is a document's JSON text, and this one holds "
            f"{json_kind(document)}, not an object"
        )
    return document


def is_heartbeat(payload: Mapping[str, Any], schema: Any) -> bool:
    """Whether a payload without ``op`` is a heartbeat: by its schema's name, or its fields."""
    if isinstance(schema, Mapping) and schema.get("name") == _HEARTBEAT_SCHEMA:
        return True
    return set(payload) == {"ts_ms"}


def typed_row(schema: ConnectSchema, value: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A row typed by its struct schema; a column the schema does not declare is an error,
    not dropped."""
    declared = {name for name, _ in schema.fields}
    extra = [name for name in value if name not in declared]
    if extra:
        raise CodecError(
            f"the schema does not match the values: {where}.{extra[0]} is not a field of "
            f"the schema (fields: {', '.join(sorted(declared)) or 'none'})"
        )
    try:
        converted = connect_value(schema, value, path=where)
    except SchemaError as exc:
        raise CodecError(f"the schema does not match the values: {exc}") from None
    typed: dict[str, Any] = avro_values.to_structured(converted)
    return typed


def check_images(operation: Operation, before: Data, after: Data, key: Any) -> None:
    """A create, update or snapshot writes a row: without ``after`` it says nothing; a delete
    needs its ``before`` image or a key to say which row."""
    if operation is Operation.DELETE:
        if before is None and key is None:
            raise CodecError("a delete with neither a before image nor a key names no row")
    elif after is None:
        raise CodecError(f"a {operation} without an after image carries no row")


def unavailable_columns(image: Data) -> list[str]:
    """The columns of an image that hold Debezium's placeholder for an unchanged value."""
    if not isinstance(image, dict):
        return []
    return [name for name, value in image.items() if _unavailable(value)]


def _unavailable(value: Any) -> bool:
    if value in (UNAVAILABLE_VALUE, _UNAVAILABLE_BYTES):
        return True
    # arrays of a TOASTed array column hold the placeholder as their one element
    return isinstance(value, list) and bool(value) and all(map(_unavailable, value))


def _nanos(block: Mapping[str, Any], what: str) -> int | None:
    for field, factor in _TIME_FIELDS:
        value = block.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise CodecError(f"{what}.{field}: expected an integer, got {json_kind(value)}")
        nanos = value * factor
        if not -(2**63) <= nanos < 2**63:
            raise CodecError(f"{what}.{field}: {value} is beyond the nanoseconds 64 bits hold")
        return nanos
    return None


def event_times(
    source: Mapping[str, Any], payload: Mapping[str, Any], step_time: str | None = None
) -> tuple[int | None, int]:
    """``opencdc.createdAt`` and ``.readAt`` in nanoseconds; 0 is a time like any other.
    ``step_time``: :attr:`~cdc_connectors.formats.debezium.envelope.Envelope.step_time`."""
    created_at = _nanos(source, "source")
    if created_at is None:
        created_at = _conduit_time(source, "opencdc.createdAt")
    if created_at is None and step_time is not None:
        created_at = _step_nanos(source.get(step_time))
    read_at = _nanos(payload, "payload")
    return created_at, time.time_ns() if read_at is None else read_at


def _step_nanos(value: Any) -> int | None:
    """A step of milliseconds (an integer, or its digits) in nanoseconds; ``None`` for
    anything else, or one beyond what 64 bits of nanoseconds hold."""
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    nanos = value * _NANOS_PER_MILLI
    return nanos if nanos < 2**63 else None


def _conduit_time(source: Mapping[str, Any], name: str) -> int | None:
    """A time Conduit's Debezium output carries in ``source`` (its record's metadata)."""
    value = source.get(name)
    if isinstance(value, str) and INTEGER.fullmatch(value):
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def put_text(pairs: dict[str, str], name: str, value: Any) -> None:
    """:func:`put_value` into a plain dict, checked later as a whole."""
    if value is None:
        return
    if isinstance(value, str):
        pairs[name] = value
    else:
        pairs[name] = orjson.dumps(value, default=json_default, option=_SORTED).decode()


def put_value(metadata: Metadata, name: str, value: Any) -> None:
    """A metadata value: a string as it is, anything else its compact JSON with sorted keys;
    ``None`` left out."""
    if value is None:
        return
    if isinstance(value, str):
        metadata[name] = value
        return
    try:
        metadata[name] = orjson.dumps(value, default=json_default, option=_SORTED).decode()
    except TypeError as exc:
        raise CodecError(f"{name}: {exc}") from None
