"""Rows in Confluent's Protobuf wire format: ``protobuf``, what Kafka's Protobuf serializers write.

As ``avro`` (see :mod:`cdc_connectors.formats.avro`): one message per row, key and value
each Confluent-framed (magic byte, schema id, message-index path, body), a delete as a
tombstone. Protobuf schemas are not inferred: writing takes the ``.proto`` files of the
``key.schema`` / ``value.schema`` options (registered under the strategy's subjects), or
else the latest version the subject already has. ``key.message`` / ``value.message``
pick a message of the file by its full name (the first one by default); its index path
goes in the header. Reading compiles the writer's schema, with its references, at run
time and decodes the message the header names: no generated code is needed.

| option | meaning |
|---|---|
| ``topic`` | the topic the subjects are named after (default: the record's collection) |
| ``subject.strategy`` | ``topic`` (default), ``record`` or ``topic-record`` |
| ``key.schema`` / ``value.schema`` | a ``.proto`` file (it may import well-known types) |
| ``key.message`` / ``value.message`` | the message's full name, e.g. ``shop.v1.Order`` |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from google.protobuf.message import Message as ProtoMessage

from cdc_connectors.formats.avro import OPTIONS_WITHOUT_READER, SchemaRowFormat
from cdc_connectors.formats.base import FormatOptionError
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.registry.serde import RecordDecoder
from cdc_connectors.registry.store import Resolved, UnknownSchema
from cdc_connectors.schema import avro_values, framing
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.protobuf import from_dict, message_class, message_indexes
from cdc_connectors.schema.subjects import Part

# no reader schema: Protobuf readers take any writer version by field numbers
_OPTIONS = OPTIONS_WITHOUT_READER


class ProtobufFormat(SchemaRowFormat):
    """Rows as Confluent-framed Protobuf (module docstring)."""

    name = "protobuf"
    schema_type = "PROTOBUF"
    options: ClassVar[Mapping[str, str]] = {
        **_OPTIONS,
        "key.schema": "a .proto file for keys (else the subject's latest version)",
        "value.schema": "a .proto file for rows (else the subject's latest version)",
        "key.message": "full name of the key message in its file (default: the first)",
        "value.message": "full name of the row message in its file (default: the first)",
    }

    def configure(self) -> None:
        super().configure()
        self.message_names = {
            "key": self.settings.get("key.message") or None,
            "payload": self.settings.get("value.message") or None,
        }
        for part in ("key", "payload"):
            text = self.schema_files[part]
            if text is not None:
                try:
                    self._message(text, (), part)
                except (SchemaError, CodecError) as exc:
                    option = "key.schema" if part == "key" else "value.schema"
                    raise FormatOptionError(
                        f"format {self.name!r} option {option!r}: {exc}"
                    ) from None

    def _message(
        self, text: str, references: tuple[tuple[str, str], ...], part: Part
    ) -> tuple[type[ProtoMessage], list[int]]:
        """The message class of ``part`` in a schema file and its index path."""
        first = message_class(text, references)
        wanted = self.message_names[part]
        if wanted is None:
            return first, [0]
        found = _find(first.DESCRIPTOR.file, wanted)
        if found is None:
            option = "key.message" if part == "key" else "value.message"
            raise CodecError(f"{option}: the schema has no message {wanted!r}")
        indexes = message_indexes(found)
        return message_class(text, references, indexes), indexes

    def _schema_for(self, record: Record, part: Part, data: dict[str, Any]) -> Resolved:
        return self.schema_of(record.metadata.collection, part)

    def schema_of(self, collection: str | None, part: Part) -> Resolved:
        """The schema ``part`` of a record of ``collection`` is written with: the option's
        file, registered under the strategy's subject, else the subject's latest version."""
        return self.message_for(collection, part)[2]()

    def message_for(
        self, collection: str | None, part: Part
    ) -> tuple[type[ProtoMessage], list[int], Callable[[], Resolved]]:
        """The message class ``part`` of a record of ``collection`` is written as, its index
        path, and its schema (:meth:`schema_of`), registered only when that is called."""
        text = self.schema_files[part]
        name = self.message_names[part]
        if text is not None:
            cls, indexes = self._message(text, (), part)
            subject = self.subject_for(collection, part, name or cls.DESCRIPTOR.full_name)
            return cls, indexes, lambda: self.store.register(subject, text, "PROTOBUF")
        subject = self.subject_for(collection, part, name)
        try:
            found = self.store.latest(subject)
        except UnknownSchema:
            option = "key.schema" if part == "key" else "value.schema"
            raise CodecError(
                f"subject {subject!r} has no schema and Protobuf schemas are not inferred: "
                f"register one or give --opt {option}=FILE.proto"
            ) from None
        self._check_type(found, "key" if part == "key" else "payload.after")
        cls, indexes = self.message_of(found, part)
        return cls, indexes, lambda: found

    def message_of(self, schema: Resolved, part: Part) -> tuple[type[ProtoMessage], list[int]]:
        """The message class ``part`` is written as with ``schema``, and its index path."""
        return self._message(schema.text, schema.references, part)

    def encode_row(
        self,
        schema: Resolved,
        data: dict[str, Any],
        part: Part,
        branches: avro_values.Branches | None = None,
    ) -> bytes:
        cls, indexes = self.message_of(schema, part)
        try:
            body = from_dict(data, cls).SerializeToString()
        except SchemaError as exc:
            raise CodecError(f"does not fit its Protobuf schema: {exc}") from None
        return framing.frame(schema.schema_id, body, indexes)

    def reframe(self, schema: Resolved, body: bytes, where: str, part: Part) -> bytes:
        cls, indexes = self._message(schema.text, schema.references, part)
        try:
            cls.FromString(body)
        except Exception as exc:  # upb raises DecodeError; checked, not trusted
            raise CodecError(f"{where} is not Protobuf of {schema.label()}: {exc}") from None
        return framing.frame(schema.schema_id, body, indexes)

    def decode_row(
        self, data: bytes, part: Part, header: bytes | None, branches: avro_values.Branches
    ) -> dict[str, Any]:
        if self._decoder is None:
            self._decoder = RecordDecoder(self.store)
        value: dict[str, Any] = self._decoder.decode_value(data, part, header=header)
        return value


def _find(file: Any, full_name: str) -> Any:
    """The message called ``full_name`` in ``file``, nested ones included, or ``None``."""
    stack = list(file.message_types_by_name.values())
    while stack:
        descriptor = stack.pop()
        if descriptor.full_name == full_name:
            return descriptor
        stack.extend(descriptor.nested_types)
    return None
