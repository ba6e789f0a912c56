"""OpenCDC protobuf: records <-> ``opencdc.v1.Record`` messages.

Structured data travels as ``google.protobuf.Struct``, which holds every number
as a double (a limit of the wire format, shared with Conduit). Numbers that a
double would change are refused with a :class:`CodecError` rather than
rounded: integers beyond +-2**53, ``Decimal`` values with more digits than a
double keeps. On read, integral doubles within +-2**53 come back as ``int``,
so a record read from protobuf writes the same JSON as Conduit does. Bytes
inside structured data are written as base64 strings, ``Decimal`` as doubles.
Length-delimited streams of records are in :mod:`cdc_connectors.convert.streams`.
"""

from __future__ import annotations

import math
from base64 import b64encode
from decimal import Decimal
from typing import Any

from google.protobuf import struct_pb2
from google.protobuf.message import DecodeError

from cdc_connectors.errors import CodecError
from cdc_connectors.opencdc import structured
from cdc_connectors.opencdc.data import Change, Data
from cdc_connectors.opencdc.metadata import Metadata, checked_metadata
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2
from cdc_connectors.opencdc.record import Record, checked_position

_EXACT = 2**53

#: Message nesting the protobuf runtime (upb) parses back; a record counts as
#: one level, ``payload`` one, ``Data`` one, and in structured data every
#: object three (Struct, map entry, Value) and every list two (ListValue, Value).
MAX_MESSAGE_DEPTH = 101
_DICT_COST, _LIST_COST = 3, 2
_KEY_BUDGET = MAX_MESSAGE_DEPTH - 2  # Record, Data
_PAYLOAD_BUDGET = MAX_MESSAGE_DEPTH - 3  # Record, Change, Data


def _plain(value: Any) -> Any:
    """A value Struct can hold: bytes -> base64 str, Decimal -> float, recursively."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return b64encode(value).decode("ascii")
    if isinstance(value, Decimal):
        return float(value)
    if value is None or isinstance(value, str | bool | int | float):
        return value
    raise CodecError(f"type {type(value).__name__} cannot be held in a protobuf Struct")


def _from_value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return _from_struct(value.struct_value)
    if kind == "list_value":
        return [_from_value(v) for v in value.list_value.values]
    if kind == "number_value":
        number = value.number_value
        integral = math.isfinite(number) and number.is_integer() and -_EXACT <= number <= _EXACT
        if integral and not (number == 0 and math.copysign(1.0, number) < 0):  # -0.0 stays
            return int(number)
        return number
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    return None


def _from_struct(struct: struct_pb2.Struct) -> dict[str, Any]:
    fields = struct.fields
    return {k: _from_value(fields[k]) for k in sorted(fields)}


def _data_to_proto(data: Data, target: opencdc_pb2.Data, what: str, budget: int) -> None:
    if isinstance(data, dict):
        structured.check(
            data,
            what,
            budget=budget,
            dict_cost=_DICT_COST,
            list_cost=_LIST_COST,
            limit_reason=f"protobuf reads {MAX_MESSAGE_DEPTH} nested messages: "
            "3 per object level, 2 per list level",
            doubles=True,
        )
        target.structured_data.SetInParent()  # an empty struct is still structured data
        try:
            target.structured_data.update(_plain(data))
        except UnicodeEncodeError:
            structured.check_text(data, what)
            raise
    elif isinstance(data, bytes | bytearray | memoryview):
        target.raw_data = bytes(data)
    else:
        raise CodecError(f"{what} must be bytes, a dict or None, not {type(data).__name__}")


def _data_from_proto(msg: opencdc_pb2.Data) -> Data:
    kind = msg.WhichOneof("data")
    if kind == "raw_data":
        return msg.raw_data
    if kind == "structured_data":
        return _from_struct(msg.structured_data)
    return None


def record_to_proto(record: Record) -> opencdc_pb2.Record:
    """The generated ``opencdc.v1.Record`` message of a record; :class:`CodecError` if it
    would not parse back."""
    operation = Operation.parse(record.operation)
    msg = opencdc_pb2.Record(position=checked_position(record.position), operation=operation.value)
    metadata = checked_metadata(record.metadata)
    try:
        msg.metadata.update(metadata)
    except (TypeError, UnicodeEncodeError):  # changed behind Metadata's back: name the key
        checked_metadata(dict(metadata))
        raise
    if record.key is not None:
        _data_to_proto(record.key, msg.key, "key", _KEY_BUDGET)
    payload = record.payload
    if payload.before is not None:
        _data_to_proto(payload.before, msg.payload.before, "payload.before", _PAYLOAD_BUDGET)
    if payload.after is not None:
        _data_to_proto(payload.after, msg.payload.after, "payload.after", _PAYLOAD_BUDGET)
    return msg


def record_from_proto(msg: opencdc_pb2.Record) -> Record:
    """A record from a generated ``opencdc.v1.Record`` message."""
    try:
        operation = Operation(msg.operation)
    except ValueError:
        raise CodecError(f"unknown operation number {msg.operation}") from None
    has_payload = msg.HasField("payload")
    return Record(
        msg.position,
        operation,
        Metadata(sorted(msg.metadata.items())),
        _data_from_proto(msg.key) if msg.HasField("key") else None,
        Change(
            _data_from_proto(msg.payload.before)
            if has_payload and msg.payload.HasField("before")
            else None,
            _data_from_proto(msg.payload.after)
            if has_payload and msg.payload.HasField("after")
            else None,
        ),
    )


def record_to_proto_bytes(record: Record) -> bytes:
    """Serialize a record as one ``opencdc.v1.Record`` message."""
    data: bytes = record_to_proto(record).SerializeToString(deterministic=True)
    return data


def record_from_proto_bytes(data: bytes) -> Record:
    """Parse one ``opencdc.v1.Record`` message; raise :class:`CodecError` on bad input."""
    msg = opencdc_pb2.Record()
    try:
        msg.ParseFromString(data)
    except DecodeError as exc:
        raise CodecError(f"invalid opencdc.v1.Record protobuf: {exc}") from None
    return record_from_proto(msg)
