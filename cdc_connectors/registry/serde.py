"""Schema-encode and decode OpenCDC records: keys and payloads through the registry.

:class:`RecordEncoder` takes each record's structured key and payload, finds their
schema (the version the record's metadata names, or one inferred by Conduit's rules),
registers it under a subject (:mod:`~cdc_connectors.schema.subjects`; once per process
per schema), names it in the metadata as Conduit does and, when asked, replaces the
structured data with the encoded bytes: plain Avro (Conduit's framing), or Confluent's
wire format, whose prefix names the schema by id (the metadata then names none, so that
no reader takes the framed bytes for bare Avro).

:class:`RecordDecoder` does the reverse for raw data: the schema comes from the
metadata (Conduit) or the Confluent prefix (an id, a GUID); data without either passes
through unchanged, as in Conduit. With a reader schema (``reader="latest"``, the
subject's latest version when the decoder first meets it, or a pinned version
number) every writer version of a subject decodes into that one shape; a writer that
cannot be resolved to it is a :class:`~cdc_connectors.opencdc.CodecError` naming both.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.data import Change
from cdc_connectors.registry.store import Resolved, SchemaStore
from cdc_connectors.schema import avro_values, framing, json_values, jsontext
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.subjects import Part, SubjectContext, strategy

__all__ = ["Framing", "ReaderChoice", "RecordDecoder", "RecordEncoder"]

Framing = Literal["conduit", "confluent"]
#: ``"writer"``: no resolution; ``"latest"``: the subject's latest version when first
#: met; an int: that version of the subject.
ReaderChoice = Literal["writer", "latest"] | int


class RecordEncoder:
    """Register the schemas of records' structured data and encode it (module docstring)."""

    def __init__(
        self,
        store: SchemaStore,
        *,
        subject_strategy: str = "conduit",
        context: str | None = None,
        topic: str | None = None,
        framing: Framing = "conduit",
        encode: bool = True,
    ):
        self.store = store
        self.subject_of: Callable[[SubjectContext], str] = strategy(subject_strategy)
        self.strategy_name = subject_strategy
        self.context = context
        self.topic = topic
        self.framing = framing
        self.encode_data = encode
        # Schemas inferred here: their unions need values tagged with the branch.
        self._inferred: set[int] = set()

    def encode(self, record: Record) -> Record:
        """``record`` with schema metadata set and, if asked, its structured data encoded."""
        metadata = record.metadata.copy()
        key = self._part(record, "key", record.key, metadata)
        before, after = record.payload.before, record.payload.after
        shape = after if isinstance(after, dict) else before
        if isinstance(shape, dict):
            schema = self._schema(record, "payload", shape, metadata)
            before = self._data(before, schema, "payload.before", metadata)
            after = self._data(after, schema, "payload.after", metadata)
            self._metadata_for(metadata, "payload", shape)
        self._metadata_for(metadata, "key", record.key)
        return replace(record, metadata=metadata, key=key, payload=Change(before, after))

    def _part(self, record: Record, part: Part, data: Any, metadata: dict[str, str]) -> Any:
        if not isinstance(data, dict):
            return data
        return self._data(data, self._schema(record, part, data, metadata), part, metadata)

    def _schema(
        self, record: Record, part: Part, data: dict[str, Any], metadata: dict[str, str]
    ) -> Resolved:
        named = framing.conduit_schema(metadata, part)
        if named is not None:
            return self.store.by_version(*named)
        from cdc_connectors.schema.infer import infer_schema_text

        if self.strategy_name in ("record", "topic-record"):
            raise CodecError(
                f"{part}: the {self.strategy_name} strategy names subjects after the record, and "
                "inferred schemas are all named 'record': name a registered version in the "
                "record's metadata, or use the conduit or topic strategy"
            )

        try:
            text = infer_schema_text(data, what=part)
        except SchemaError as exc:
            raise CodecError(f"no Avro schema can be inferred: {exc}") from None
        subject = self.subject_of(
            SubjectContext(
                part,
                topic=self.topic,
                context=self.context,
                collection=record.metadata.collection,
                record_name="record",
            )
        )
        resolved = self.store.register(subject, text)
        self._inferred.add(resolved.schema_id)
        framing.set_conduit_schema(metadata, part, subject, resolved.version or 0)
        return resolved

    def _metadata_for(self, metadata: dict[str, str], part: Part, data: Any) -> None:
        """Confluent-framed bytes name their schema by id: metadata naming a subject and
        version for them would be read as Conduit's framing (bare Avro), so it goes."""
        if self.framing == "confluent" and self.encode_data and isinstance(data, dict):
            framing.clear_conduit_schema(metadata, part)

    def _data(self, data: Any, schema: Resolved, where: str, metadata: dict[str, str]) -> Any:
        if not isinstance(data, dict) or not self.encode_data:
            return data
        try:
            writer, shape = avro_values.parsed(schema), avro_values.standalone(schema)
        except CodecError as exc:
            raise CodecError(f"{where}: {exc.reason}") from None
        try:
            if schema.schema_id in self._inferred:
                data = prepared(data, schema, where)
            branches = avro_values.branches_in(metadata, where)
            metadata.pop(avro_values.branches_key(where), None)  # the bytes say it now
            body = avro_values.encode(writer, data, shape, branches)
        except CodecError as exc:
            raise CodecError(f"{where} {exc.reason} ({schema.label()})") from None
        if self.framing == "confluent":
            return framing.frame(schema.schema_id, body)
        return body


def read_protobuf(data: bytes, frame: framing.Frame, writer: Resolved) -> dict[str, Any]:
    """Structured data from a Protobuf body: the message at the frame's index path."""
    from google.protobuf.message import DecodeError

    from cdc_connectors.schema.protobuf import message_class, to_dict

    try:
        cls = message_class(writer.text, writer.references, frame.indexes or (0,))
    except SchemaError as exc:
        raise CodecError(f"{writer.label()}: {exc}") from None
    try:
        message = cls.FromString(data[frame.offset :])
    except DecodeError as exc:
        raise CodecError(f"is not Protobuf of {writer.label()}: {exc}") from None
    try:
        value = to_dict(message)
    except SchemaError as exc:
        raise CodecError(f"is not Protobuf of {writer.label()}: {exc}") from None
    structured: dict[str, Any] = avro_values.to_structured(value)
    return structured


def read_json(data: bytes, offset: int, writer: Resolved) -> Any:
    """The value of a JSON Schema body: an object as structured data, anything else as its
    raw JSON bytes; :class:`CodecError` when it is not JSON or does not match its schema."""
    body = memoryview(data)[offset:]
    value = json_values.decode(body, compiled_json(writer))
    return value if isinstance(value, dict) else bytes(body)


def compiled_json(schema: Resolved) -> json_values.Validated:
    """The validator of a JSON Schema (compiled once per schema)."""
    return json_values.validator(schema.text, schema.references, schema.label())


def prepared(data: dict[str, Any], schema: Resolved, where: str) -> dict[str, Any]:
    """``data`` tagged for a schema inferred by Conduit's rules (see ``infer.prepare``)."""
    from cdc_connectors.schema.infer import prepare

    try:
        return prepare(data, avro_values.standalone(schema), what=where)
    except SchemaError as exc:
        raise CodecError(f"does not fit its Avro schema: {exc}") from None


class RecordDecoder:
    """Decode records' schema-encoded raw data to structured data (module docstring)."""

    def __init__(
        self,
        store: SchemaStore,
        *,
        reader: ReaderChoice = "writer",
        subject_strategy: str | None = None,
        topic: str | None = None,
    ):
        self.store = store
        self.reader = reader
        # For Confluent-framed data the subject is not in the record: a strategy names it.
        self.subject_of = strategy(subject_strategy) if subject_strategy else None
        self.topic = topic
        self._readers: dict[str, Resolved] = {}
        self._checked: dict[tuple[int, int], str | None] = {}
        self._lock = threading.Lock()

    def decode(self, record: Record) -> Record:
        """``record`` with its schema-encoded key and payload as structured data."""
        found: dict[str, avro_values.Branches] = {}
        key = self._decode(record, "key", record.key, "key", found)
        before = self._decode(record, "payload", record.payload.before, "payload.before", found)
        after = self._decode(record, "payload", record.payload.after, "payload.after", found)
        if key is record.key and before is record.payload.before and after is record.payload.after:
            return record
        metadata = record.metadata
        if found:
            metadata = metadata.copy()
            for where, branches in found.items():
                metadata[avro_values.branches_key(where)] = jsontext.dumps(branches)
        return replace(record, metadata=metadata, key=key, payload=Change(before, after))

    def decode_value(
        self,
        data: bytes,
        part: Part = "payload",
        *,
        header: bytes | None = None,
        branches: avro_values.Branches | None = None,
    ) -> Any:
        """Structured data from Confluent-framed bytes (or a bare body with ``header``).

        ``branches``, when given, receives the union branches of values whose branch JSON
        does not show (``avro_values.union_branches``)."""
        frame = framing.read_frame(data, header=header)
        writer = self._by_frame(frame, data)
        if writer.schema_type == "PROTOBUF":
            return read_protobuf(
                data, framing.read_frame(data, protobuf=True, header=header), writer
            )
        if writer.schema_type == "JSON":
            return read_json(data, frame.offset, writer)
        reader = self.reader_of(writer, part)
        value, found = self._read(data, frame.offset, writer, reader, part)
        if branches is not None:
            branches.update(found)
        return value

    def _decode(
        self,
        record: Record,
        part: Part,
        data: Any,
        where: str,
        found: dict[str, avro_values.Branches],
    ) -> Any:
        if not isinstance(data, bytes):
            return data
        try:
            named = framing.conduit_schema(record.metadata, part)
            if named is not None:
                writer = self.store.by_version(*named)
                offset = 0
            elif data[:1] in (b"\x00", b"\x01"):
                frame = framing.read_frame(data)
                writer, offset = self._by_frame(frame, data), frame.offset
                if writer.schema_type == "PROTOBUF":
                    return read_protobuf(data, framing.read_frame(data, protobuf=True), writer)
            else:
                return data
            if writer.schema_type == "JSON":
                return read_json(data, offset, writer)
            reader = self.reader_of(writer, part, record)
            value, branches = self._read(data, offset, writer, reader, where)
            if branches:
                found[where] = branches
            return value
        except CodecError as exc:
            raise type(exc)(f"{where}: {exc.reason}", data=data) from None

    def _by_frame(self, frame: framing.Frame, data: bytes) -> Resolved:
        return self.store.by_frame(frame)

    def reader_of(
        self, writer: Resolved, part: Part, record: Record | None = None
    ) -> Resolved | None:
        """The reader schema data of ``writer`` is read as (``None``: the writer's own), by
        the subject the writer was registered under or the strategy names; asked once per
        subject for this decoder."""
        if self.reader == "writer":
            return None
        subject = writer.subject
        if subject is None and self.subject_of is not None:
            subject = self.subject_of(
                SubjectContext(
                    part,
                    topic=self.topic,
                    collection=record.metadata.collection if record is not None else None,
                    record_name=_record_name(writer),
                )
            )
        if subject is None:
            raise CodecError(
                f"{writer.label()} names no subject, so no reader schema can be chosen: "
                "set a subject name strategy"
            )
        found = self._readers.get(subject)
        if found is None:
            if self.reader == "latest":
                found = self.store.latest(subject)
            else:
                found = self.store.by_version(subject, int(self.reader))
            with self._lock:
                found = self._readers.setdefault(subject, found)
        return found

    def _read(
        self, data: bytes, offset: int, writer: Resolved, reader: Resolved | None, where: str
    ) -> tuple[Any, avro_values.Branches]:
        """The structured value, and the union branches JSON would not show."""
        if writer.schema_type != "AVRO":
            raise CodecError(f"{writer.label()} is {writer.schema_type}; this decoder reads Avro")
        if reader is not None and reader.schema_id != writer.schema_id:
            problem = self.resolvable(writer, reader)
            if problem is not None:
                writer = self.store.named(writer, reader.subject or "")
                raise CodecError(
                    f"written with {writer.label()}, which cannot be read as "
                    f"{reader.label()}: {problem}"
                )
        shape = avro_values.standalone(reader or writer)
        named = avro_values.has_ambiguous_unions(shape)
        parsed = avro_values.parsed(writer)
        if reader is not None and reader.schema_id != writer.schema_id:
            value = avro_values.decode(
                data, parsed, avro_values.parsed(reader), offset=offset, named_types=named
            )
        else:
            value = avro_values.decode(data, parsed, offset=offset, named_types=named)
        if not isinstance(value, dict):
            raise CodecError(f"{writer.label()} is not a record schema; data must be a record")
        branches: avro_values.Branches = {}
        if named:
            value, branches = avro_values.union_branches(shape, value)
        return avro_values.to_structured(value), branches

    def resolvable(self, writer: Resolved, reader: Resolved) -> str | None:
        """Why data of ``writer`` cannot be read as ``reader``; ``None`` when it can."""
        pair = (writer.schema_id, reader.schema_id)
        if pair not in self._checked:
            problem = resolution_problem(writer, reader)
            with self._lock:
                self._checked[pair] = problem
        return self._checked[pair]


def _record_name(schema: Resolved) -> str | None:
    """The full name of an Avro record or enum schema (``Resolved.record_name``, for any
    schema fastavro reads through :func:`avro_values.parsed`)."""
    if schema.schema_type != "AVRO":
        return schema.record_name
    parsed = avro_values.parsed(schema)
    name = parsed.get("name") if isinstance(parsed, dict) else None
    return name if isinstance(name, str) else None


def resolution_problem(writer: Resolved, reader: Resolved) -> str | None:
    """Why data written with ``writer`` cannot be read as ``reader`` (Avro); ``None`` if it can."""
    from cdc_connectors.schema.avro import incompatibilities, parse

    problems = incompatibilities(
        parse(reader.text, [t for _, t in reader.references]),
        parse(writer.text, [t for _, t in writer.references]),
    )
    return "; ".join(problems) if problems else None
