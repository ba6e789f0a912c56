"""Where the schema of schema-encoded bytes is named: Confluent's wire format and Conduit's.

**Confluent** (Kafka serializers, Conduit's ``avro.encode``): magic byte ``0`` and the
schema id as 4 big-endian bytes, or magic byte ``1`` and a 16-byte schema GUID; for
Protobuf then the message-index path (a zigzag varint count and the indexes; the first
message of the file as the single byte ``0x00``); then the encoded body. Newer clients
may carry that prefix in the Kafka header ``__key_schema_id`` / ``__value_schema_id``
instead, leaving the value bare. confluent-kafka's ``SchemaId`` does the byte work here.

**Conduit** (its schema support in connectors): the body is plain Avro, no prefix; the
record's metadata names the schema by subject and version
(``opencdc.key.schema.subject`` / ``.version``, ``opencdc.payload.schema.*``).

Bytes that cannot be read (wrong magic byte, truncated id, a bad index path) raise
:class:`FramingError`, a :class:`~cdc_connectors.opencdc.CodecError` that keeps the
original bytes, so a caller sends them to its dead-letter output.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from confluent_kafka.serialization import SerializationError

from cdc_connectors.opencdc import CodecError, keys
from cdc_connectors.schema.subjects import Part

__all__ = [
    "CONDUIT_KEYS",
    "KEY_SCHEMA_ID_HEADER",
    "VALUE_SCHEMA_ID_HEADER",
    "Frame",
    "FramingError",
    "clear_conduit_schema",
    "conduit_schema",
    "frame",
    "read_frame",
    "schema_id_header",
    "set_conduit_schema",
]

KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"

Field = Literal["key", "value"]

_MAGIC_ID = 0
_MAGIC_GUID = 1
_MAX_ID = 2**31 - 1  # Confluent's ids are positive Java ints
# A path deeper than any message nesting protobuf parses is garbage, not a schema.
_MAX_INDEXES = 100


class FramingError(CodecError):
    """The bytes do not start with a schema reference this module can read."""


@dataclass(frozen=True, slots=True)
class Frame:
    """The schema reference of one message and where its body starts."""

    schema_id: int | None
    guid: UUID | None
    #: The Protobuf message-index path; ``None`` for other schema types.
    indexes: tuple[int, ...] | None
    #: Offset of the encoded body in the message bytes.
    offset: int


def frame(schema_id: int, body: bytes, indexes: Sequence[int] | None = None) -> bytes:
    """``body`` in Confluent's wire format (v0: magic byte 0 and the 4-byte id).

    ``indexes`` is the Protobuf message-index path (``[0]`` for the first message of
    the file, written as the single byte ``0x00``); leave it ``None`` for Avro and JSON.
    """
    if not 0 < schema_id <= _MAX_ID:
        raise ValueError(f"schema id {schema_id} is outside 1..{_MAX_ID}")
    if indexes is not None and (not indexes or min(indexes) < 0):
        raise ValueError(f"message-index path {list(indexes)!r} is not a list of indexes >= 0")
    from confluent_kafka.schema_registry.common.serde import SchemaId

    prefix = SchemaId(
        "PROTOBUF" if indexes is not None else "AVRO",
        schema_id,
        message_indexes=list(indexes) if indexes is not None else None,
    ).id_to_bytes()
    return prefix + body


def read_frame(data: bytes, *, protobuf: bool = False, header: bytes | None = None) -> Frame:
    """Read the schema reference at the start of ``data`` (or in ``header``, from Kafka).

    With a ``header`` (the value of ``__value_schema_id`` / ``__key_schema_id``) the
    reference is read from it and the whole of ``data`` is the body.
    """
    if header is None and len(data) >= 5 and data[0] == _MAGIC_ID:
        # The common cases, without the BytesIO that SchemaId needs: Avro, and Protobuf's
        # first message of the file (index path [0], the single byte 0x00).
        if not protobuf:
            return Frame(_checked_id(int.from_bytes(data[1:5], "big"), data), None, None, 5)
        if len(data) >= 6 and data[5] == 0:
            return Frame(_checked_id(int.from_bytes(data[1:5], "big"), data), None, (0,), 6)
    source = header if header is not None else data
    where = "schema id header" if header is not None else "message"
    if not source:
        raise FramingError(f"empty {where}: no schema reference", data=data)
    if source[0] not in (_MAGIC_ID, _MAGIC_GUID):
        raise FramingError(
            f"{where} starts with byte 0x{source[0]:02x}, not the magic byte 0x00 or 0x01 "
            "of Confluent's wire format (is it schema-encoded at all?)",
            data=data,
        )
    # confluent-kafka's registry package is imported here, off the common paths: a Spark
    # task that meets only those never pays for its import.
    from confluent_kafka.schema_registry.common.serde import SchemaId

    reference = SchemaId("PROTOBUF" if protobuf else "AVRO")
    buffer = io.BytesIO(source)
    try:
        reference.from_bytes(buffer)
    except (struct.error, EOFError, ValueError, SerializationError) as exc:
        raise FramingError(f"{where} is truncated or malformed: {exc}", data=data) from None
    indexes = _checked_indexes(reference.message_indexes, data) if protobuf else None
    schema_id = _checked_id(reference.id, data) if reference.id is not None else None
    if header is not None:
        if buffer.tell() != len(source):
            raise FramingError(f"{len(source) - buffer.tell()} stray bytes in {where}", data=data)
        return Frame(schema_id, reference.guid, indexes, 0)
    return Frame(schema_id, reference.guid, indexes, buffer.tell())


def _checked_id(schema_id: int, data: bytes) -> int:
    if not 0 < schema_id <= _MAX_ID:
        raise FramingError(f"schema id {schema_id} is outside 1..{_MAX_ID}", data=data)
    return schema_id


def _checked_indexes(indexes: list[int] | None, data: bytes) -> tuple[int, ...]:
    if not indexes:
        raise FramingError("no Protobuf message-index path", data=data)
    if len(indexes) > _MAX_INDEXES or min(indexes) < 0:
        raise FramingError(f"bad Protobuf message-index path {indexes[:8]!r}", data=data)
    return tuple(indexes)


def schema_id_header(headers: Iterable[tuple[str, bytes | None]], field: Field) -> bytes | None:
    """The value of the Kafka header that carries the schema reference of ``field``."""
    name = KEY_SCHEMA_ID_HEADER if field == "key" else VALUE_SCHEMA_ID_HEADER
    for header, value in headers:
        if header == name:
            return value
    return None


#: The metadata keys of the subject and version Conduit's framing names, per part.
CONDUIT_KEYS: Mapping[Part, tuple[str, str]] = {
    "key": (keys.KEY_SCHEMA_SUBJECT, keys.KEY_SCHEMA_VERSION),
    "payload": (keys.PAYLOAD_SCHEMA_SUBJECT, keys.PAYLOAD_SCHEMA_VERSION),
}


def conduit_schema(metadata: Mapping[str, str], part: Part) -> tuple[str, int] | None:
    """The subject and version Conduit's metadata names for ``part``; ``None`` if unset."""
    subject_key, version_key = CONDUIT_KEYS[part]
    subject, version = metadata.get(subject_key), metadata.get(version_key)
    if subject is None and version is None:
        return None
    if not subject or version is None:
        missing = version_key if subject else subject_key
        raise CodecError(f"metadata {missing!r} is missing or empty, so the schema is unknown")
    if not (version.isascii() and version.isdigit()) or not 0 < int(version) < 2**31:
        raise CodecError(f"metadata {version_key!r} is {version!r}, not a schema version")
    return subject, int(version)


def set_conduit_schema(
    metadata: MutableMapping[str, str], part: Part, subject: str, version: int
) -> None:
    """Name ``part``'s schema in ``metadata`` as Conduit does."""
    subject_key, version_key = CONDUIT_KEYS[part]
    metadata[subject_key] = subject
    metadata[version_key] = str(version)


def clear_conduit_schema(metadata: MutableMapping[str, str], part: Part) -> None:
    """Remove the subject and version Conduit's metadata names for ``part``."""
    for key in CONDUIT_KEYS[part]:
        metadata.pop(key, None)
