"""How a stream (file, stdin) holds messages of a format, for ``convert`` and file connectors.

- **lines**: text formats, one message value per line (blank lines skipped).
- **length-delimited**: ``opencdc-proto``, varint length + message.
- **kv lines**: ``{"key": ..., "value": ...}`` per line, used with ``--kv`` and
  always for binary formats that are not length-delimited. Key and value are
  JSON documents for text formats (a key that is not JSON is written as a
  string) and standard base64 strings for binary formats; ``null`` for none.
"""

from __future__ import annotations

import binascii
from base64 import b64encode
from collections.abc import Iterator
from typing import IO, Any

import orjson

from cdc_connectors.formats.base import Format, Message
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc.proto_codec import delimit, iter_delimited


def framing_of(fmt: type[Format], kv: bool) -> str:
    """``"kv"``, ``"delimited"`` or ``"lines"`` for a format and the ``--kv`` flag."""
    if kv or (fmt.binary and not fmt.delimited):
        return "kv"
    return "delimited" if fmt.delimited else "lines"


def _kv_field(obj: Any, name: str, binary: bool) -> bytes | None:
    value = obj.get(name)
    if value is None:
        return None
    if binary:
        if not isinstance(value, str):
            raise CodecError(f"{name!r} must be a base64 string or null")
        try:
            return binascii.a2b_base64(value, strict_mode=True)
        except binascii.Error as exc:
            raise CodecError(f"{name!r} is not valid base64: {exc}") from None
    return orjson.dumps(value)


def read_messages(
    stream: IO[bytes], fmt: type[Format], *, kv: bool = False, source: str = "<stdin>"
) -> Iterator[Message | CodecError]:
    """Messages of a stream, each with its place; a framing error is yielded, not raised."""
    framing = framing_of(fmt, kv)
    if framing == "delimited":
        index = 0
        try:
            for offset, payload in iter_delimited(stream):
                index += 1
                yield Message(payload, where=f"{source}: message {index}, byte {offset}")
        except CodecError as exc:
            yield exc.at(source)
        return
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        content = line.rstrip(b"\r\n")
        if framing == "lines":
            yield Message(content, where=where)
            continue
        try:
            obj = orjson.loads(content)
            if not isinstance(obj, dict):
                raise CodecError('a --kv line must be an object {"key": ..., "value": ...}')
            yield Message(
                _kv_field(obj, "value", fmt.binary),
                key=_kv_field(obj, "key", fmt.binary),
                where=where,
            )
        except orjson.JSONDecodeError as exc:
            yield CodecError(f"invalid JSON in --kv line: {exc}", where=where, data=content)
        except CodecError as exc:
            yield exc.at(where, content)


def _kv_value(data: bytes | None, binary: bool) -> Any:
    if data is None:
        return None
    if binary:
        return b64encode(data).decode("ascii")
    try:
        return orjson.Fragment(orjson.dumps(orjson.loads(data)))
    except orjson.JSONDecodeError:
        pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CodecError(
            "a --kv line of a text format cannot hold bytes that are neither JSON nor UTF-8"
        ) from None


class MessageWriter:
    """Writes messages of a format to a stream with that format's framing."""

    def __init__(self, stream: IO[bytes], fmt: type[Format], *, kv: bool = False):
        self.stream = stream
        self.fmt = fmt
        self.framing = framing_of(fmt, kv)

    def write(self, message: Message) -> None:
        """Write one message; :class:`CodecError`, writing nothing, if the framing cannot."""
        value = message.value or b""
        if self.framing == "delimited":
            self.stream.write(delimit(value))
        elif self.framing == "lines":
            self.stream.write(value + b"\n")
        else:
            line = {
                "key": _kv_value(message.key, self.fmt.binary),
                "value": _kv_value(message.value, self.fmt.binary),
            }
            self.stream.write(orjson.dumps(line) + b"\n")
