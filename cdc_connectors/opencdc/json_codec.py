"""OpenCDC JSON, as Conduit writes and reads it.

- Keys ``position``, ``operation``, ``metadata``, ``key``, ``payload`` with
  ``before`` and ``after``.
- ``position`` is standard padded base64. ``operation`` is ``create``,
  ``update``, ``delete`` or ``snapshot``; reading also takes ``Operation(N)``
  and integers. ``metadata`` values must be strings.
- Raw data is a base64 string (or, with ``raw_as_string``, the bytes as a
  UTF-8 string); structured data is an object; absent data is ``null``. On
  read, a string is raw data, an object structured data, ``null`` none.
- Inside structured data, bytes are written as base64 strings and
  ``Decimal`` values as exact JSON numbers.
"""

from __future__ import annotations

import binascii
from base64 import b64encode
from collections.abc import Iterator
from decimal import Decimal
from typing import IO, Any

import orjson

from cdc_connectors.opencdc.data import Change, Data
from cdc_connectors.opencdc.errors import CodecError
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.opencdc.record import Record


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return b64encode(value).decode("ascii")
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise TypeError(f"{value} has no JSON form")
        return orjson.Fragment(str(value))
    raise TypeError(f"type {type(value).__name__} has no JSON form")


def _b64decode(text: str, what: str) -> bytes:
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise CodecError(f"{what} is not valid base64: {exc}") from None


def _data_to_obj(data: Data, raw_as_string: bool, what: str) -> Any:
    if data is None or isinstance(data, dict):
        return data
    if raw_as_string:
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"{what} is not UTF-8, cannot write it as a string: {exc}") from None
    return b64encode(data).decode("ascii")


def _data_from_obj(obj: Any, raw_as_string: bool, what: str) -> Data:
    if obj is None or isinstance(obj, dict):
        return obj
    if isinstance(obj, str):
        return obj.encode("utf-8") if raw_as_string else _b64decode(obj, what)
    raise CodecError(f"{what} must be a base64 string, an object or null, not {type(obj).__name__}")


def record_to_obj(record: Record, *, raw_as_string: bool = False) -> dict[str, Any]:
    """The JSON object of a record (bytes inside structured data left for the encoder)."""
    payload = record.payload
    return {
        "position": b64encode(record.position).decode("ascii"),
        "operation": str(record.operation),
        "metadata": record.metadata,
        "key": _data_to_obj(record.key, raw_as_string, "key"),
        "payload": {
            "before": _data_to_obj(payload.before, raw_as_string, "payload.before"),
            "after": _data_to_obj(payload.after, raw_as_string, "payload.after"),
        },
    }


def record_to_json(record: Record, *, raw_as_string: bool = False) -> bytes:
    """Serialize a record to OpenCDC JSON (UTF-8 bytes, no trailing newline)."""
    try:
        return orjson.dumps(record_to_obj(record, raw_as_string=raw_as_string), default=_default)
    except TypeError as exc:
        raise CodecError(f"record cannot be written as JSON: {exc}") from None


def record_from_obj(obj: Any, *, raw_as_string: bool = False) -> Record:
    """A record from a parsed OpenCDC JSON object."""
    if not isinstance(obj, dict):
        raise CodecError(f"an OpenCDC record must be a JSON object, not {type(obj).__name__}")
    position = obj.get("position")
    if position is None:
        position_bytes = b""
    elif isinstance(position, str):
        position_bytes = _b64decode(position, "position")
    else:
        raise CodecError(f"position must be a base64 string, not {type(position).__name__}")

    metadata = obj.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise CodecError(f"metadata must be an object, not {type(metadata).__name__}")
    for name, value in metadata.items():
        if not isinstance(value, str):
            raise CodecError(
                f"metadata {name!r} must be a string, not {type(value).__name__} ({value!r})"
            )

    payload = obj.get("payload")
    if payload is None:
        payload = {}
    elif not isinstance(payload, dict):
        raise CodecError(f"payload must be an object, not {type(payload).__name__}")

    return Record(
        position_bytes,
        Operation.parse(obj.get("operation")),
        Metadata(metadata),
        _data_from_obj(obj.get("key"), raw_as_string, "key"),
        Change(
            _data_from_obj(payload.get("before"), raw_as_string, "payload.before"),
            _data_from_obj(payload.get("after"), raw_as_string, "payload.after"),
        ),
    )


def record_from_json(data: bytes | str, *, raw_as_string: bool = False) -> Record:
    """Parse one OpenCDC JSON document; raise :class:`CodecError` on bad input."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"invalid JSON: {exc}") from None
    return record_from_obj(obj, raw_as_string=raw_as_string)


def read_json_lines(
    stream: IO[bytes], *, raw_as_string: bool = False, source: str = "<stream>"
) -> Iterator[Record]:
    """Records of a stream of OpenCDC JSON lines (blank lines skipped).

    Raises :class:`CodecError` at the first bad line, naming ``source`` and the
    line number, with the line's bytes attached.
    """
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            yield record_from_json(line, raw_as_string=raw_as_string)
        except CodecError as exc:
            raise exc.at(f"{source}:{number}", line.rstrip(b"\r\n")) from None


def write_json_lines(
    stream: IO[bytes], records: Iterator[Record] | list[Record], *, raw_as_string: bool = False
) -> int:
    """Write records as OpenCDC JSON lines; return how many were written."""
    count = 0
    for record in records:
        stream.write(record_to_json(record, raw_as_string=raw_as_string) + b"\n")
        count += 1
    return count


def data_to_bytes(data: Data) -> bytes | None:
    """The bytes of a key or payload: raw data as is, structured data as JSON."""
    if data is None or isinstance(data, bytes):
        return data
    if not isinstance(data, dict):
        return bytes(data)
    try:
        return orjson.dumps(data, default=_default)
    except TypeError as exc:
        raise CodecError(f"structured data cannot be written as JSON: {exc}") from None
