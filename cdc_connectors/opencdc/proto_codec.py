"""OpenCDC protobuf: records <-> ``opencdc.v1.Record`` messages, single and length-delimited.

Structured data travels as ``google.protobuf.Struct``, which holds every number
as a double: integers above 2**53 lose precision (a limit of the wire format,
shared with Conduit). On read, integral doubles within +-2**53 come back as
``int``, so a record read from protobuf writes the same JSON as Conduit does.
Bytes inside structured data are written as base64 strings, ``Decimal`` as
doubles.

A length-delimited stream is a sequence of (varint length, message) pairs, as
protobuf's ``writeDelimitedTo`` writes them.
"""

from __future__ import annotations

import math
from base64 import b64encode
from collections.abc import Iterator
from decimal import Decimal
from typing import IO, Any

from google.protobuf import struct_pb2
from google.protobuf.message import DecodeError

from cdc_connectors.opencdc.data import Change, Data
from cdc_connectors.opencdc.errors import CodecError
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2
from cdc_connectors.opencdc.record import Record

_EXACT = 2**53


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
        return {k: _from_value(v) for k, v in value.struct_value.fields.items()}
    if kind == "list_value":
        return [_from_value(v) for v in value.list_value.values]
    if kind == "number_value":
        number = value.number_value
        if math.isfinite(number) and number.is_integer() and -_EXACT <= number <= _EXACT:
            return int(number)
        return number
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    return None


def _data_to_proto(data: Data, target: opencdc_pb2.Data) -> None:
    if isinstance(data, dict):
        target.structured_data.SetInParent()  # an empty struct is still structured data
        target.structured_data.update(_plain(data))
    else:
        target.raw_data = bytes(data or b"")


def _data_from_proto(msg: opencdc_pb2.Data) -> Data:
    kind = msg.WhichOneof("data")
    if kind == "raw_data":
        return msg.raw_data
    if kind == "structured_data":
        return {k: _from_value(v) for k, v in msg.structured_data.fields.items()}
    return None


def record_to_proto(record: Record) -> opencdc_pb2.Record:
    """The generated ``opencdc.v1.Record`` message of a record."""
    msg = opencdc_pb2.Record(position=record.position, operation=record.operation.value)
    msg.metadata.update(record.metadata)
    if record.key is not None:
        _data_to_proto(record.key, msg.key)
    payload = record.payload
    if payload.before is not None:
        _data_to_proto(payload.before, msg.payload.before)
    if payload.after is not None:
        _data_to_proto(payload.after, msg.payload.after)
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
        Metadata(msg.metadata),
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


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def delimit(message: bytes) -> bytes:
    """``message`` prefixed with its length as a varint."""
    return _varint(len(message)) + message


def iter_delimited(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(byte offset, message) for each length-delimited message of ``stream``.

    Raises :class:`CodecError` naming the message number and byte offset when
    the stream ends inside a length prefix or a message.
    """
    offset = 0
    index = 0
    while True:
        start = offset
        length = 0
        shift = 0
        while True:
            byte = stream.read(1)
            if not byte:
                if offset == start:
                    return
                raise CodecError(
                    "stream ends inside a length prefix", where=f"message {index + 1}, byte {start}"
                )
            offset += 1
            length |= (byte[0] & 0x7F) << shift
            if not byte[0] & 0x80:
                break
            shift += 7
            if shift > 63:
                raise CodecError("length prefix is not a valid varint", where=f"byte {start}")
        message = stream.read(length)
        offset += len(message)
        index += 1
        if len(message) < length:
            raise CodecError(
                f"truncated message: expected {length} bytes, got {len(message)}",
                where=f"message {index}, byte {start}",
                data=message,
            )
        yield start, message


def read_delimited_records(stream: IO[bytes]) -> Iterator[Record]:
    """Records of a length-delimited stream; raises :class:`CodecError` with the place."""
    for index, (offset, message) in enumerate(iter_delimited(stream), start=1):
        try:
            yield record_from_proto_bytes(message)
        except CodecError as exc:
            raise exc.at(f"message {index}, byte {offset}", message) from None


def write_delimited_records(stream: IO[bytes], records: Iterator[Record] | list[Record]) -> int:
    """Write records length-delimited; return how many were written."""
    count = 0
    for record in records:
        stream.write(delimit(record_to_proto_bytes(record)))
        count += 1
    return count
