"""Debezium change events as Avro: ``debezium-avro``, what Confluent's AvroConverter writes.

The Kafka key (the row's primary key record) and value (the envelope record
``{before, after, source, op, ts_ms, ts_us, ts_ns, transaction}``) are Avro in Confluent's
wire format (magic byte, schema id, body; or the id in a ``__key_schema_id`` / ``__value_schema_id``
header). Reading needs the registry (``--registry``): each message's writer schema is
fetched by id, the body decoded to structured data and mapped exactly as
``debezium-json`` maps its JSON (:class:`DebeziumJsonFormat`, same options and table):

| Debezium Avro | OpenCDC |
|---|---|
| ``op`` ``c`` / ``u`` / ``d`` / ``r`` | ``create`` / ``update`` / ``delete`` / ``snapshot`` |
| ``before`` / ``after`` | ``payload.before`` / ``payload.after`` (Avro values as structured data) |
| key record | ``key``; a key that is not Confluent-framed stays raw bytes |
| ``source.*``, ``transaction.*`` | ``debezium.source.*``, ``debezium.transaction.*`` |
| ``source.ts_ms`` / ``ts_ms`` (``ts_us``, ``ts_ns``: finer) | ``opencdc.createdAt`` / ``readAt`` |
| ``source`` ``db``.``schema``.``table`` | ``opencdc.collection`` |
| ``after``'s record type | ``opencdc.payload.schema.*``: ``<collection>.payload`` |
| key's record type | ``opencdc.key.schema.*``: ``<collection>.key`` |
| value ``null`` | skipped, ``tombstone`` (``tombstones=delete``: a key-only delete) |

Row and key schemas are registered once per distinct writer schema (Conduit's subjects),
so a destination that writes Avro or a Kafka Connect schema reuses them as they are.

Writing builds the envelope schema from the record's row schema: the registered one
when ``opencdc.payload.schema.*`` names it, else one inferred by Conduit's rules
(:mod:`cdc_connectors.schema.infer`, from ``after``, else ``before``):

| envelope field | Avro type | from |
|---|---|---|
| ``before`` / ``after`` | ``["null", Row]`` | ``payload.before`` / ``payload.after`` |
| ``source`` | record of ``["null","string"]`` (1) | ``debezium.source.*`` (2) |
| ``op`` | ``string`` | operation: ``c``, ``u``, ``d``, ``r`` |
| ``ts_ms``, ``ts_us``, ``ts_ns`` | ``["null","long"]`` | ``opencdc.readAt`` (ms, µs, ns) |
| ``transaction`` (when set) | ``["null", record]`` (1) | ``debezium.transaction.*`` |

(1) A field whose metadata text is a 64-bit integer is ``["null","long"]``, as Debezium
types ``ts_ms``, ``lsn``, ``txId``, ``total_order``; read back, both give the same
metadata text. (2) Without ``db``/``schema``/``table`` or ``ts_*`` fields,
``table`` is the collection and ``ts_ms``, ``ts_us``, ``ts_ns`` are ``opencdc.createdAt``,
so reading it back gives the same collection and ``createdAt`` (every digit: Debezium 2.6
and later write the three times, and the reader takes the finest).

Named as Debezium names them: ``<collection>.Envelope``, ``.Source``, ``.Value`` (an
inferred row), ``.Key`` (an inferred key); a collection's parts that are no Avro name
are spelled with ``_``. The envelope is registered under ``subject.strategy``
(``topic``: ``<topic>-value`` with option ``topic``, else the collection; ``record``,
``topic-record``), the key likewise (``-key``), so Flink's ``debezium-avro-confluent``
or any Confluent deserializer reads them. A raw key is written as it is, unless the
metadata names its schema (Conduit's framing). Other ``debezium.*`` metadata is not written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

import orjson

from cdc_connectors.formats.avro import named_avro_record
from cdc_connectors.formats.base import FormatOptionError, Message
from cdc_connectors.formats.debezium.encode import envelope_times
from cdc_connectors.formats.debezium.envelope import TIME_FIELDS
from cdc_connectors.formats.debezium.json_format import READING_OPTIONS, DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.registry.store import Resolved
from cdc_connectors.schema import avro_values, framing
from cdc_connectors.schema.avro import named_once
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.infer import infer_schema, prepare
from cdc_connectors.schema.subjects import Part, SubjectContext, strategy

__all__ = ["DebeziumAvroFormat"]

_LETTERS = {
    Operation.CREATE: "c",
    Operation.UPDATE: "u",
    Operation.DELETE: "d",
    Operation.SNAPSHOT: "r",
}
_STRATEGIES = ("topic", "record", "topic-record")
_CONDUIT = strategy("conduit")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INVALID = re.compile(r"[^A-Za-z0-9_]")
_INTEGER = re.compile(r"-?(0|[1-9][0-9]{0,18})")
_MIN_LONG, _MAX_LONG = -(2**63), 2**63 - 1
_NULL_LONG: list[Any] = ["null", "long"]
_NULL_STRING: list[Any] = ["null", "string"]
_MAX_CACHED = 1024


class DebeziumAvroFormat(DebeziumJsonFormat):
    """Debezium change events as Confluent-framed Avro (module docstring)."""

    name = "debezium-avro"
    carries_schemas = False  # a schema id: the registry holds the schema
    binary = True
    options: ClassVar[Mapping[str, str]] = {
        **READING_OPTIONS,
        "topic": "writing: the topic the subjects are named after (default: the collection)",
        "subject.strategy": "writing: topic (default), record or topic-record",
    }

    def configure(self) -> None:
        if not self.registry_url:
            raise FormatOptionError(
                f"format {self.name!r} needs a schema registry (--registry; "
                "schema-registry.url in a pipeline file)"
            )
        name = self.settings.get("subject.strategy", "topic")
        if name not in _STRATEGIES:
            raise FormatOptionError(
                f"format {self.name!r} option 'subject.strategy': {name!r} is not one of "
                f"{', '.join(_STRATEGIES)}"
            )
        super().configure()
        self.strategy_name = name
        self.subject_of = strategy(name)
        self.topic = self.settings.get("topic") or None

    def _reset_caches(self) -> None:
        super()._reset_caches()
        # writer schema id -> (row schema, key schema) registered for reading: (subject, version)
        self._named: dict[tuple[int, str], tuple[str, int] | None] = {}
        # (subject, version) named by metadata -> its record schema (for the columns)
        self._records: dict[tuple[str, int], tuple[Resolved, str, str] | None] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_named", None)
        state.pop("_records", None)
        return state

    # --- reading -----------------------------------------------------------------------------

    def decode(self, message: Message) -> list[Record]:
        key, key_writer = self._decode_key(message)
        if message.value is None:
            return self._tombstone(key)
        header = framing.schema_id_header(message.headers, "value")
        envelope, writer = self._decode_part(message.value, header, "value")
        if not isinstance(envelope, dict):
            raise CodecError(f"value: a change event is an Avro record, not {envelope!r:.40}")
        # Wrapped, so that no field of the envelope or key is taken for JsonConverter's wrapper.
        kafka_key = {"payload": key} if isinstance(key, dict) else key
        records = self.records_from_envelope({"payload": envelope}, kafka_key, message)
        for record in records:
            self._name_schemas(record, writer, key_writer)
        return records

    def _decode_key(self, message: Message) -> tuple[Any, Resolved | None]:
        if message.key is None:
            return None, None
        header = framing.schema_id_header(message.headers, "key")
        if header is None and message.key[:1] not in (b"\x00", b"\x01"):
            return message.key, None  # a raw key: the converter for keys need not be Avro
        key, writer = self._decode_part(message.key, header, "key")
        if not isinstance(key, dict):
            return message.key, None
        return key, writer

    def _decode_part(self, data: bytes, header: bytes | None, where: str) -> tuple[Any, Resolved]:
        try:
            frame = framing.read_frame(data, header=header)
            writer = self.store.by_frame(frame)
            if writer.schema_type != "AVRO":
                raise CodecError(f"{writer.label()} is {writer.schema_type}, not Avro")
            value = avro_values.decode(data, avro_values.parsed(writer), offset=frame.offset)
        except SchemaError as exc:
            raise CodecError(f"{where}: {exc}", data=data) from None
        except CodecError as exc:
            raise type(exc)(f"{where}: {exc.reason}", data=data) from None
        return avro_values.to_structured(value), writer

    def _tombstone(self, key: Any) -> list[Record]:
        if isinstance(key, dict):
            key = {"payload": key}
        return super()._tombstone(key)

    def _name_schemas(self, record: Record, writer: Resolved, key_writer: Resolved | None) -> None:
        """Register the row (``after``'s record type) and key schemas under Conduit's
        subjects, once per writer schema, and name them in the record's metadata."""
        collection = record.metadata.collection
        parts: list[tuple[Part, Resolved | None]] = [("payload", writer), ("key", key_writer)]
        for part, schema in parts:
            images = (record.payload.before, record.payload.after)
            if schema is None or (part == "payload" and images == (None, None)):
                continue
            found = self.registered_row(part, schema, collection)
            if found is not None:
                framing.set_conduit_schema(record.metadata, part, *found)

    def registered_row(
        self, part: Part, writer: Resolved, collection: str | None
    ) -> tuple[str, int] | None:
        """The subject and version the row (``payload``: ``after``'s record type) or key
        schema of ``writer`` is registered under for ``collection`` (Conduit's subjects),
        registered once; ``None`` when it is no record."""
        cache = (writer.schema_id, f"{part}:{collection}")
        if cache in self._named:
            return self._named[cache]
        shape = avro_values.standalone(writer)
        row = _row_of(shape) if part == "payload" else shape
        found = None
        if isinstance(row, dict) and row.get("type") in ("record", "error"):
            subject = _CONDUIT(SubjectContext(part, collection=collection))
            text = orjson.dumps(named_once(row)).decode()
            registered = self.store.register(subject, text)
            found = (subject, registered.version or 0)
        if len(self._named) >= _MAX_CACHED:
            self._named.clear()
        self._named[cache] = found
        return found

    # --- writing -----------------------------------------------------------------------------

    def encode(self, record: Record) -> Message:
        letter = _LETTERS.get(record.operation)
        if letter is None:
            raise CodecError(f"operation {record.operation} has no Debezium op")
        before = self._readable(record, record.payload.before, "payload.before")
        after = self._readable(record, record.payload.after, "payload.after")
        collection = record.metadata.collection
        space = _namespace(collection)
        row, inferred = self._row_avro(record, before, after, space)
        try:
            if inferred:
                before = None if before is None else prepare(before, row, what="payload.before")
                after = None if after is None else prepare(after, row, what="payload.after")
        except SchemaError as exc:
            raise CodecError(f"does not fit its Avro schema: {exc}") from None
        envelope, source, transaction = self.envelope_schema(record.metadata, row)
        value: dict[str, Any] = {
            "before": before,
            "after": after,
            "source": source,
            "op": letter,
            **envelope_times(record.metadata.read_at),
        }
        if transaction is not None:
            value["transaction"] = transaction
        envelope_name = envelope["name"]
        schema = self._register(record, "payload", orjson.dumps(envelope).decode(), envelope_name)
        try:
            body = avro_values.encode(
                avro_values.parsed(schema), value, avro_values.standalone(schema)
            )
        except CodecError as exc:
            raise CodecError(f"{exc.reason} ({schema.label()})") from None
        return Message(
            value=framing.frame(schema.schema_id, body), key=self._encode_key(record, space)
        )

    def envelope_schema(
        self, metadata: Metadata, row: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
        """The envelope record schema of a record with ``metadata`` whose row schema is
        ``row``, and the values of its ``source`` and ``transaction`` (``None``: no such
        field) records; :class:`CodecError` for a metadata name that is no Avro name."""
        space = _namespace(metadata.collection)
        source = self._source(metadata)
        transaction = _typed_fields(metadata, f"{self.prefix}.transaction.")
        fields: list[dict[str, Any]] = [
            {"name": "before", "type": ["null", row], "default": None},
            {"name": "after", "type": ["null", _full_name(row)], "default": None},
            {"name": "source", "type": _record_schema(_qualified(space, "Source"), source[0])},
            {"name": "op", "type": "string"},
            *({"name": name, "type": _NULL_LONG, "default": None} for name in TIME_FIELDS),
        ]
        if transaction[0]:
            block = _record_schema(_qualified(space, "Transaction"), transaction[0])
            fields.append({"name": "transaction", "type": ["null", block], "default": None})
        envelope = {"type": "record", "name": _qualified(space, "Envelope"), "fields": fields}
        return envelope, source[1], transaction[1] if transaction[0] else None

    def named_record(self, named: tuple[str, int]) -> tuple[Resolved, str, str] | None:
        """The row or key schema of ``named`` (subject, version), its text and its record's
        full name, asked once per run (as :meth:`AvroFormat.named_record
        <cdc_connectors.formats.avro.AvroFormat.named_record>`)."""
        if named not in self._records:
            self._records[named] = named_avro_record(self.store, named)
        return self._records[named]

    def subject_for(self, collection: str | None, part: Part, record_name: str | None) -> str:
        """The strategy's subject of ``part`` for a record of ``collection`` (the ``topic``
        option, when set, in its place), as :meth:`encode` registers under it."""
        try:
            return self.subject_of(
                SubjectContext(part, topic=self.topic or collection, record_name=record_name)
            )
        except ValueError as exc:
            raise CodecError(f"no {part} subject: {exc}: set --opt topic=NAME") from None

    def _row_avro(
        self, record: Record, before: Any, after: Any, space: str | None
    ) -> tuple[dict[str, Any], bool]:
        """The row's Avro schema as JSON, and whether it was inferred (values need tagging)."""
        named = framing.conduit_schema(record.metadata, "payload")
        if named is not None:
            resolved = self.store.by_version(*named)
            row = named_once(avro_values.standalone(resolved))
            if not isinstance(row, dict) or row.get("type") not in ("record", "error"):
                raise CodecError(f"{resolved.label()} is not an Avro record, so it is no row")
            return row, False
        shape = after if isinstance(after, dict) else before
        if not isinstance(shape, dict):
            raise CodecError(
                "payload: a Debezium envelope needs a before or after image as structured data"
            )
        try:
            return infer_schema(shape, _qualified(space, "Value"), what="payload"), True
        except SchemaError as exc:
            raise CodecError(f"no Avro schema can be inferred: {exc}") from None

    def _source(self, metadata: Metadata) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        fields, values = _typed_fields(metadata, f"{self.prefix}.source.")
        names = set(values)
        collection = metadata.collection
        if collection and not names & {"db", "schema", "table", "collection"}:
            fields.append({"name": "table", "type": _NULL_STRING, "default": None})
            values["table"] = collection
        if not names & set(TIME_FIELDS) and metadata.created_at is not None:
            for name, value in envelope_times(metadata.created_at).items():
                fields.append({"name": name, "type": _NULL_LONG, "default": None})
                values[name] = value
        return fields, values

    def _encode_key(self, record: Record, space: str | None) -> bytes | None:
        key = record.key
        if isinstance(key, bytes):  # Conduit's framing: decoded with the schema it names
            key = self._readable(record, key, "key", part="key", raw_as_is=True)
        if key is None or isinstance(key, bytes):
            return key
        if not isinstance(key, dict):
            raise CodecError(f"key: expected structured data or bytes, not {type(key).__name__}")
        named = framing.conduit_schema(record.metadata, "key")
        if named is not None:
            resolved = self.store.by_version(*named)
            text = orjson.dumps(named_once(avro_values.standalone(resolved))).decode()
            data = key
        else:
            try:
                inferred = infer_schema(key, _qualified(space, "Key"), what="key")
                data = prepare(key, inferred, what="key")
            except SchemaError as exc:
                raise CodecError(f"key: no Avro schema fits it: {exc}") from None
            text = orjson.dumps(inferred).decode()
        schema = self._register(record, "key", text, _full_name(orjson.loads(text)))
        try:
            body = avro_values.encode(
                avro_values.parsed(schema), data, avro_values.standalone(schema)
            )
        except CodecError as exc:
            raise CodecError(f"key {exc.reason} ({schema.label()})") from None
        return framing.frame(schema.schema_id, body)

    def _register(self, record: Record, part: Part, text: str, record_name: str) -> Resolved:
        subject = self.subject_for(record.metadata.collection, part, record_name)
        return self.store.register(subject, text)


# --- helpers --------------------------------------------------------------------------------


def _row_of(envelope: Any) -> Any:
    """The non-null branch of the envelope's ``after`` field (expanded schema JSON)."""
    if not isinstance(envelope, dict):
        return None
    for field in envelope.get("fields", []):
        if field.get("name") == "after":
            kind = field.get("type")
            members = kind if isinstance(kind, list) else [kind]
            rows = [m for m in members if m != "null"]
            return rows[0] if len(rows) == 1 else None
    return None


def _namespace(collection: str | None) -> str | None:
    """A collection as an Avro namespace: each dot-separated part made an Avro name."""
    if not collection:
        return None
    parts = []
    for part in collection.split("."):
        part = _INVALID.sub("_", part) or "_"
        parts.append(part if _NAME.fullmatch(part) else f"_{part}")
    return ".".join(parts)


def _qualified(space: str | None, name: str) -> str:
    return f"{space}.{name}" if space else name


def _full_name(schema: Any) -> str:
    name = str(schema.get("name", "")) if isinstance(schema, dict) else ""
    space = schema.get("namespace") if isinstance(schema, dict) else None
    return f"{space}.{name}" if space and "." not in name else name


def _typed_fields(
    metadata: Mapping[str, str], prefix: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Optional record fields of the metadata keys under ``prefix``: integers (as Debezium
    types ``ts_ms``, ``lsn``, ``txId``) as ``long``, the rest as ``string``; and values."""
    fields: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    for key, text in metadata.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix) :]
        if not _NAME.fullmatch(name):
            raise CodecError(f"metadata {key!r}: {name!r} is no Avro field name")
        if _INTEGER.fullmatch(text) and _MIN_LONG <= int(text) <= _MAX_LONG:
            fields.append({"name": name, "type": _NULL_LONG, "default": None})
            values[name] = int(text)
        else:
            fields.append({"name": name, "type": _NULL_STRING, "default": None})
            values[name] = text
    return fields, values


def _record_schema(name: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": fields}
