"""How a stream (file, stdin) holds the messages of a format, for ``convert`` and file connectors.

- **lines**: text formats, one message value per line (blank lines skipped).
- **length-delimited**: ``opencdc-proto``, a varint length then the message,
  as protobuf's ``writeDelimitedTo`` writes them (protobuf's own varint
  helpers read and write the prefix).
- **kv lines**: ``{"key": ..., "value": ...}`` per line, used with ``--kv`` and
  always for binary formats that are not length-delimited. Key and value are
  JSON documents for text formats (a key that is not JSON is written as a
  string) and standard base64 strings for binary formats; ``null`` for none.
  A line is an object with a ``value`` member (``"value": null`` is a
  tombstone) and optionally ``key``; any other member, a missing ``value`` or
  a member given twice makes the line an error. Members reach the format as
  written (their raw text), so nothing in them is re-encoded on the way.

A broken length-delimited stream (a prefix that is not a varint, a length
beyond protobuf's 2 GiB message limit or beyond the end of the stream) cannot
be read past: the error names the message number and byte offset of the
broken message and keeps every byte from that offset to the end of the
stream. Memory use follows the bytes actually present, never the length a
prefix claims.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import orjson
from google.protobuf.internal.decoder import _DecodeVarint
from google.protobuf.internal.encoder import _VarintBytes
from google.protobuf.message import DecodeError

from cdc_connectors.formats.base import Format, Message
from cdc_connectors.json_values import is_json
from cdc_connectors.json_values import parses as _parses
from cdc_connectors.opencdc import CodecError, Record, record_from_proto_bytes
from cdc_connectors.opencdc import record_to_proto_bytes as _to_proto
from cdc_connectors.opencdc.json_codec import base64_json, json_error

Layout = Literal["lines", "kv", "delimited"]


class ByteReader(Protocol):
    """What is read from: a binary file, ``sys.stdin.buffer``, ``io.BytesIO``."""

    def read(self, size: int = -1, /) -> bytes: ...
    def __iter__(self) -> Iterator[bytes]: ...


class ByteWriter(Protocol):
    """What is written to: a binary file, ``sys.stdout.buffer``, ``io.BytesIO``."""

    def write(self, data: bytes | memoryview, /) -> int: ...
    def flush(self) -> None: ...


#: Protobuf refuses messages of 2 GiB and more; a longer length prefix is broken.
MAX_MESSAGE_SIZE = 2**31 - 1
_CHUNK = 1 << 16  # bytes read at a time
_STEP = 1 << 24  # at most this much more is read towards a message's claimed length
_MAX_VARINT = 10  # bytes of a 64-bit varint


def layout_of(fmt: type[Format], kv: bool) -> Layout:
    """``"kv"``, ``"delimited"`` or ``"lines"`` for a format and the ``--kv`` flag."""
    if kv or (fmt.binary and not fmt.delimited):
        return "kv"
    return "delimited" if fmt.delimited else "lines"


def delimit(message: bytes) -> bytes:
    """``message`` prefixed with its length as a varint."""
    prefix: bytes = _VarintBytes(len(message))
    return prefix + message


def iter_delimited(stream: ByteReader) -> Iterator[tuple[int, bytes]]:
    """(byte offset, message) for each length-delimited message of ``stream``.

    Raises :class:`CodecError` with ``where`` = ``message N, byte B`` (the
    broken message and the offset of its length prefix) and ``data`` = every
    byte from there to the end of the stream.
    """
    buf = bytearray()
    base = 0  # stream offset of buf[0]
    pos = 0
    index = 0
    eof = False

    def broken(reason: str, start: int) -> CodecError:
        tail = bytes(buf[start:]) + (b"" if eof else stream.read())
        return CodecError(reason, where=f"message {index}, byte {base + start}", data=tail)

    while True:
        if len(buf) - pos < _MAX_VARINT and not eof:
            del buf[:pos]
            base += pos
            pos = 0
            chunk = stream.read(_CHUNK)
            eof = not chunk
            buf += chunk
        if pos == len(buf):
            return
        start = pos
        index += 1
        try:
            length, body = _DecodeVarint(buf, pos)
        except IndexError:
            raise broken("the stream ends inside a length prefix", start) from None
        except DecodeError:
            raise broken("the length prefix is not a varint (more than 10 bytes)", start) from None
        if body - start == _MAX_VARINT and buf[start + _MAX_VARINT - 1] > 1:
            raise broken("the length prefix is not a varint (more than 64 bits)", start)
        if length > MAX_MESSAGE_SIZE:
            raise broken(
                f"the length prefix says {length} bytes, beyond protobuf's 2 GiB message limit",
                start,
            )
        end = body + length
        while len(buf) < end and not eof:
            chunk = stream.read(min(max(end - len(buf), _CHUNK), _STEP))
            eof = not chunk
            buf += chunk
        if len(buf) < end:
            raise broken(
                f"truncated message: the length prefix says {length} bytes, "
                f"the stream holds {len(buf) - body}",
                start,
            )
        yield base + start, bytes(buf[body:end])
        pos = end


def read_delimited_records(stream: ByteReader, *, source: str = "<stream>") -> Iterator[Record]:
    """Records of a length-delimited ``opencdc.v1.Record`` stream.

    Raises :class:`CodecError` at the first bad message, naming ``source``, the
    message number and its byte offset, with the message's bytes attached (for a
    broken length prefix: every byte from its offset to the end of the stream).
    """
    messages = iter_delimited(stream)
    index = 0
    while True:
        try:
            offset, message = next(messages)
        except StopIteration:
            return
        except CodecError as exc:
            raise CodecError(exc.reason, where=f"{source}: {exc.where}", data=exc.data) from None
        index += 1
        try:
            record = record_from_proto_bytes(message)
        except CodecError as exc:
            raise exc.at(f"{source}: message {index}, byte {offset}", message) from None
        yield record


def write_delimited_records(stream: ByteWriter, records: Iterable[Record]) -> int:
    """Write records length-delimited; return how many were written."""
    count = 0
    for record in records:
        stream.write(delimit(_to_proto(record)))
        count += 1
    return count


#: The members a --kv line may have.
KV_MEMBERS = ("key", "value")
_KV_SHAPE = 'a --kv line must be an object {"key": ..., "value": ...}'
# Where the usual kv line {"key":K,"value":V} (any spacing, either order) splits: the
# first member ends before one of the ``,"second":`` found, the second runs to the closing
# brace. Each candidate is checked by parsing both halves: only the true split leaves two
# whole JSON values.
_FIRST = {name: re.compile(rb'\s*\{\s*"%s"\s*:' % name.encode()) for name in KV_MEMBERS}
_THEN = {name: re.compile(rb',\s*"%s"\s*:' % name.encode()) for name in KV_MEMBERS}
# the tokens that give a JSON document its structure (scalars lie between them)
_STRUCTURE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')
_CANDIDATES = 8  # splits tried before walking the line's structure instead
_QUOTE, _COLON, _CLOSE, _ENDS, _OPENERS, _CLOSERS = 0x22, 0x3A, 0x7D, b",}", b"{[", b"}]"


def _usual_kv_members(line: bytes) -> dict[str, bytes] | None:
    """The raw texts of the members of a line laid out as ``{"key":K,"value":V}``,
    ``{"value":V,"key":K}`` or ``{"value":V}``, or ``None`` for any other line."""
    body = line.rstrip()
    if not body.endswith(b"}"):
        return None
    body = body[:-1]
    for first, second in (KV_MEMBERS, KV_MEMBERS[::-1]):
        start = _FIRST[first].match(body)
        if start is None:
            continue
        if first == "value":
            whole = body[start.end() :].strip()
            if is_json(whole):
                return {"value": whole}
        for tried, then in enumerate(_THEN[second].finditer(body, start.end())):
            if tried == _CANDIDATES:
                return None
            text = body[start.end() : then.start()].strip()
            if _parses(text):
                rest = body[then.end() :].strip()
                return {first: text, second: rest} if is_json(rest) else None
        return None
    return None


def _kv_members(line: bytes) -> dict[str, bytes]:
    """The raw text of each member of a --kv line, as written: big integers, number
    spellings and everything else reach the format unchanged.

    :class:`CodecError` for a line that is not a JSON object, names a member other
    than ``key`` and ``value``, names one twice or has no ``value``.
    """
    members = _usual_kv_members(line)
    if members is not None:
        return members
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"invalid JSON in --kv line: {json_error(exc, line)}") from None
    if not isinstance(obj, dict):
        raise CodecError(f"{_KV_SHAPE}, not {_json_kind(obj)}")
    unknown = [name for name in obj if name not in KV_MEMBERS]
    if unknown:
        raise CodecError(f"{_KV_SHAPE}: it has a member {unknown[0]!r}")
    if "value" not in obj:
        raise CodecError(f'{_KV_SHAPE}: it has no "value" member (a tombstone is "value": null)')
    # valid JSON whose members are known: walk its structure to the raw text of each
    members = {}
    depth = 0
    name: str | None = None
    start = 0
    for token in _STRUCTURE.finditer(line):
        char = line[token.start()]
        if char == _QUOTE:
            if depth == 1 and name is None:
                name = orjson.loads(token.group())
            continue
        if depth == 1 and char == _COLON:
            start = token.end()
        elif depth == 1 and char in _ENDS:
            if name is not None:
                if name in members:
                    raise CodecError(f"{_KV_SHAPE}: it has two {name!r} members")
                members[name] = line[start : token.start()].strip()
            name = None
            depth -= char == _CLOSE
        elif char in _OPENERS:
            depth += 1
        elif char in _CLOSERS:
            depth -= 1
    return members


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {str: "a string", bool: "a boolean", list: "an array"}.get(type(value), "a number")


def _kv_field(members: dict[str, bytes], name: str, binary: bool) -> bytes | None:
    text = members.get(name, b"null")
    if text == b"null":
        return None
    if not binary:
        return text
    value = orjson.loads(text)
    if not isinstance(value, str):
        raise CodecError(f"{name!r} must be a base64 string or null")
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except binascii.Error as exc:
        raise CodecError(f"{name!r} is not valid base64: {exc}") from None


COMPACT_KEY, COMPACT_VALUE = b'{"key":', b',"value":'


def kv_pair(content: bytes, binary: bool) -> tuple[bytes | None, bytes | None]:
    """The key and value of a --kv line (raw JSON texts, or bytes of base64 members; ``None``
    for ``null`` or none); :class:`CodecError` for a line that is no kv line.

    The line as writers write it, ``{"key":K,"value":V}`` without blanks, is split at the
    first ``,"value":``: when the text before it is one JSON value, that is the key (a
    proper prefix of a JSON value never is one), and when the rest is one too, the line is
    whole, as the general way (:func:`_kv_members`) finds when that split is its first
    candidate. Any other line is split the general way."""
    if not binary and content.startswith(COMPACT_KEY) and content.endswith(b"}"):
        # only where the general way's first candidate is this split: after too many
        # candidates it parses the whole line, which may judge it otherwise
        first = _THEN["value"].search(content, len(COMPACT_KEY))
        if first is not None and first.group() == COMPACT_VALUE:
            split = first.start()
            key = content[len(COMPACT_KEY) : split].strip()
            value = content[split + len(COMPACT_VALUE) : -1].strip()
            if _parses(key) and is_json(value):
                return (None if value == b"null" else value), (None if key == b"null" else key)
    members = _kv_members(content)
    return _kv_field(members, "value", binary), _kv_field(members, "key", binary)


@dataclass
class Chunk:
    """Some messages of a stream as three lists, in order: keys, values and places."""

    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    places: list[str] = field(default_factory=list)

    def add(self, value: bytes | None, key: bytes | None, place: str) -> None:
        self.keys.append(key)
        self.values.append(value)
        self.places.append(place)


#: A UTF-8 byte order mark, which Windows tools write at the start of a text file.
BOM = b"\xef\xbb\xbf"


def text_lines(stream: ByteReader) -> Iterator[bytes]:
    """The lines of a text stream, a byte order mark at its start left out (JSON's RFC
    lets a reader ignore one; no JSON text starts with it)."""
    lines = iter(stream)
    for first in lines:
        yield first[len(BOM) :] if first.startswith(BOM) else first
        break
    yield from lines


def read_messages(
    stream: ByteReader, fmt: type[Format], *, kv: bool = False, source: str = "<stdin>"
) -> Iterator[Message | CodecError]:
    """Messages of a stream, each with its place; a broken message is yielded, not raised.

    A broken length-delimited stream ends with one :class:`CodecError` whose
    ``where`` is ``source: message N, byte B`` and whose ``data`` is the rest
    of the stream from that byte on.
    """
    layout = layout_of(fmt, kv)
    if layout == "delimited":
        index = 0
        try:
            for offset, payload in iter_delimited(stream):
                index += 1
                yield Message(payload, where=f"{source}: message {index}, byte {offset}")
        except CodecError as exc:
            yield CodecError(exc.reason, where=f"{source}: {exc.where}", data=exc.data)
        return
    for number, line in enumerate(text_lines(stream), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        content = line.rstrip(b"\r\n")
        if layout == "lines":
            yield Message(content, where=where)
            continue
        try:
            value, key = kv_pair(content, fmt.binary)
        except CodecError as exc:
            yield exc.at(where, content)
        else:
            yield Message(value, key=key, where=where)


#: The bytes of messages one chunk of :func:`read_chunks` holds at most: what a batch
#: writes (JSON escapes make text up to six times longer) stays within one Arrow column's
#: 2 GiB.
CHUNK_BYTES = 64 << 20


def read_chunks(
    stream: ByteReader,
    fmt: type[Format],
    *,
    kv: bool = False,
    source: str = "<stdin>",
    size: int = 10_000,
    max_bytes: int = CHUNK_BYTES,
) -> Iterator[Chunk | CodecError]:
    """What :func:`read_messages` reads, in chunks of at most ``size`` messages and
    ``max_bytes`` bytes, and no object per message (a bulk reader's way in); a broken
    message is yielded as it is met."""
    chunk = Chunk()
    held = 0
    if layout_of(fmt, kv) != "kv":
        for item in read_messages(stream, fmt, kv=kv, source=source):
            if isinstance(item, CodecError):
                yield item
                continue
            chunk.add(item.value, item.key, item.where)
            held += len(item.value or b"") + len(item.key or b"")
            if len(chunk.values) >= size or held >= max_bytes:
                yield chunk
                chunk = Chunk()
                held = 0
    else:
        binary = fmt.binary
        keys, values, places = chunk.keys, chunk.values, chunk.places
        for number, line in enumerate(text_lines(stream), start=1):
            if not line.strip():
                continue
            content = line.rstrip(b"\r\n")
            try:
                value, key = kv_pair(content, binary)
            except CodecError as exc:
                yield exc.at(f"{source}:{number}", content)
                continue
            keys.append(key)
            values.append(value)
            places.append(f"{source}:{number}")
            held += len(value or b"") + len(key or b"")
            if len(values) >= size or held >= max_bytes:
                yield chunk
                chunk = Chunk()
                keys, values, places = chunk.keys, chunk.values, chunk.places
                held = 0
    if chunk.values:
        yield chunk


def json_as_is(text: bytes) -> bool:
    """Whether a text member of a ``--kv`` line is written exactly as ``text``: JSON with
    no line break and nothing to strip (:func:`_kv_value`)."""
    return b"\n" not in text and b"\r" not in text and text.strip() == text and is_json(text)


def _kv_value(data: bytes | None, binary: bool) -> Any:
    if data is None:
        return None
    if binary:
        return base64_json(data)
    if _parses(data):
        # as written (a re-dump would turn integers beyond 64 bits into doubles); line breaks
        # in valid JSON are whitespace between tokens, so blanks keep the line one line
        return orjson.Fragment(data.replace(b"\n", b" ").replace(b"\r", b" ").strip())
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CodecError(
            "a --kv line of a text format cannot hold bytes that are neither JSON nor UTF-8"
        ) from None


class MessageWriter:
    """Writes messages of a format to a stream in that format's layout."""

    def __init__(self, stream: ByteWriter, fmt: type[Format], *, kv: bool = False):
        self.stream = stream
        self.fmt = fmt
        self.layout = layout_of(fmt, kv)

    def render(self, message: Message) -> bytes:
        """The bytes of one message in this layout; :class:`CodecError` if it cannot hold it."""
        value = message.value or b""
        if self.layout == "delimited":
            return delimit(value)
        if self.layout == "lines":
            return value + b"\n"
        line = {
            "key": _kv_value(message.key, self.fmt.binary),
            "value": _kv_value(message.value, self.fmt.binary),
        }
        return orjson.dumps(line) + b"\n"

    def write(self, message: Message) -> None:
        """Write one message; :class:`CodecError`, writing nothing, if the layout cannot."""
        self.stream.write(self.render(message))

    def write_all(self, messages: Iterable[Message]) -> None:
        """Write several messages, all or (on :class:`CodecError`) none."""
        self.stream.write(b"".join([self.render(m) for m in messages]))
