"""Debezium change events as JSON: ``debezium-json``, what Kafka Connect's JsonConverter writes.

A message is one Debezium change event: the Kafka key (the row's primary key) and value
(the envelope), each with or without JsonConverter's ``{"schema": ..., "payload": ...}``
wrapper (``schemas.enable`` true or false on the Debezium side). Reading maps it as
Conduit's ``unwrap.debezium`` does:

| Debezium | OpenCDC |
|---|---|
| ``op`` ``c`` / ``u`` / ``d`` / ``r`` | ``create`` / ``update`` / ``delete`` / ``snapshot`` |
| ``op`` ``t`` (truncate), ``m`` (message) | error record; ``truncate=skip`` / ``message=skip`` |
| any other ``op``, no ``op`` | error record |
| ``before`` / ``after`` (``{}`` = absent) | ``payload.before`` / ``payload.after`` |
| ``before`` / ``after`` as JSON text (MongoDB) | the document it holds, an object |
| Kafka key: its ``payload`` (or the object) | ``key``, structured; not a JSON object: raw |
| no Kafka key, option ``key.fields=a,b`` | ``key`` = those columns of the row |
| ``source.ts_ms`` (``ts_us``/``ts_ns``: finer) | ``opencdc.createdAt`` (ns) |
| ``ts_ms`` (``ts_us``/``ts_ns``: finer) | ``opencdc.readAt`` (ns); none: time of reading |
| ``source`` ``db``.``schema``.``table`` | ``opencdc.collection`` (the parts present) |
| ``source.<field>`` | ``debezium.source.<field>`` |
| ``transaction.<field>`` | ``debezium.transaction.<field>`` |
| other ``payload`` fields (vendor fields) | ``debezium.<field>`` |
| columns = ``__debezium_unavailable_value`` | kept; ``debezium.unavailable.columns`` lists them |
| value ``null`` (tombstone) | skipped, ``tombstone``; ``tombstones=delete``: key-only delete |
| ``{"ts_ms": ...}``, no ``op`` (heartbeat) | skipped, ``heartbeat`` |
| ``{"status": "BEGIN"/"END", "id": ...}`` | skipped, ``transaction boundary`` |
| ``ddl`` / ``tableChanges``, no ``op`` (schema change) | error record saying so |

Metadata values are strings: a string field is copied as is, any other value is its
compact JSON text with sorted keys (``1234``, ``true``, ``{"a":1}``); ``null`` fields are
left out. Collection: the ``db``, ``schema`` and ``table`` fields of ``source`` that are
set, dot-joined (PostgreSQL ``db.schema.table``, MySQL ``db.table``); MongoDB's
``collection`` stands in for ``table``; a ``source`` without them falls back to its
``opencdc.collection`` (what Conduit's own Debezium output carries).

MongoDB's connector writes ``before`` and ``after`` as the document's (Extended) JSON text,
``io.debezium.data.Json`` strings: the image is the object that text holds, parsed as any
message is (numbers exact), with MongoDB's type wrappers as they are (``{"$oid": ...}``,
``{"$numberDecimal": "12.50"}``, ``{"$date": ...}``). Its ``updateDescription`` (and the
older connectors' ``patch`` / ``filter``) go to metadata as any vendor field does.

A schema change event (what a MySQL, SQL Server or Oracle connector writes to its schema
change topic: ``ddl``, ``tableChanges``, no ``op``) changes no row: an error record naming
it, so a read of a topic that mixes them in loses none silently.

With a ``schema`` block, ``before``/``after`` are typed by the row struct's Kafka Connect
schema (:mod:`cdc_connectors.schema.connect`): decimals exact, dates and timestamps as ISO
8601 text, bytes as bytes. A value the schema contradicts is an error naming the field.
With ``--registry``, the row schema (as Confluent's AvroConverter spells it) is registered
once per process under ``subject.strategy`` and named by ``opencdc.payload.schema.*``
(the key's by ``opencdc.key.schema.*``).

Writing is Conduit's reverse mapping: ``op`` from the operation, ``before``/``after``,
``source`` rebuilt from ``debezium.source.*`` (integers, objects and arrays read back as
JSON, everything else as text; a record without them gets its whole metadata, as Conduit
writes it), ``transaction`` from ``debezium.transaction.*``, ``ts_ms`` from
``opencdc.readAt``. ``schemas.enable=true`` adds the Connect ``schema`` block, built from
the record's registered Avro schema when its metadata names one, else from the values.

Other Debezium-shaped formats subclass :class:`DebeziumJsonFormat` and describe what they
write as data, an :class:`Envelope` (metadata prefix, operations, how the collection is
named, positions, renamed metadata): a dialect described by its envelope alone gets the lean
and the columnar decoders. What data cannot say (Lindorm's HBase rows, YDB's changefeed
modes, CDL's extra keys) overrides the small hooks
(:meth:`~DebeziumJsonFormat.records_from_envelope`, :meth:`~DebeziumJsonFormat.key_of`,
:meth:`~DebeziumJsonFormat.extra_metadata`), and those dialects take the per-message way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import orjson

from cdc_connectors.formats.base import FormatOptionError, Message, SkipMessage
from cdc_connectors.formats.debezium.encode import EnvelopeWriter
from cdc_connectors.formats.debezium.envelope import ENVELOPE_FIELDS, Envelope
from cdc_connectors.formats.debezium.hbase_rows import (
    hbase_key,
    hbase_schema,
    is_hbase_row,
    mark_deleted_columns,
)
from cdc_connectors.formats.debezium.kafka_keys import KafkaKeys
from cdc_connectors.formats.debezium.reading import (
    check_images,
    event_times,
    is_heartbeat,
    json_document,
    load_json,
    parse_kafka_key,
    put_text,
    put_value,
    typed_row,
    unavailable_columns,
    unwrap,
)
from cdc_connectors.formats.debezium.row_schemas import RowSchema
from cdc_connectors.opencdc import CodecError, Record, keys
from cdc_connectors.opencdc.data import Change, Data
from cdc_connectors.opencdc.json_codec import KV_LINE_HINT
from cdc_connectors.opencdc.jsonkinds import json_kind
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.schema.subjects import strategy

__all__ = ["DebeziumJsonFormat"]

_SCHEMA_CHANGE_FIELDS = ("ddl", "tableChanges")
_VERSION_KEY, _OPENCDC_VERSION = keys.VERSION, keys.OPENCDC_VERSION
_COLLECTION_KEY, _CREATED_AT_KEY, _READ_AT_KEY = keys.COLLECTION, keys.CREATED_AT, keys.READ_AT
# What decode does that decode_many's lean path does its own way (hooks it calls as is).
_LEAN_STEPS = ("decode", "records_from_envelope", "_operation", "_tombstone", "_lean_records")
# Every decoding hook: a dialect that overrides none is described by its envelope alone.
_HOOKS = (*_LEAN_STEPS, "collection_of", "key_of", "extra_metadata")


#: The reading options every Debezium event format has.
READING_OPTIONS: Mapping[str, str] = {
    "tombstones": "skip (default): count and skip null values; delete: a key-only delete",
    "truncate": "error (default) or skip: what a truncate event (op 't') becomes",
    "message": "error (default) or skip: what a logical decoding message (op 'm') becomes",
    "key.fields": "comma-separated columns that make the key when a message has no key",
}


class DebeziumJsonFormat(EnvelopeWriter, KafkaKeys):
    """Debezium change events as JSON (module docstring): reading here, writing in
    :class:`~cdc_connectors.formats.debezium.encode.EnvelopeWriter`, records' keys in
    :class:`~cdc_connectors.formats.debezium.kafka_keys.KafkaKeys`, the row schemas of
    ``schema`` blocks in :class:`~cdc_connectors.formats.debezium.row_schemas.RowSchemas`."""

    name = "debezium-json"
    carries_schemas = True
    #: What the dialect writes (:class:`Envelope`); dialects set their own.
    envelope: ClassVar[Envelope] = Envelope()
    options: ClassVar[Mapping[str, str]] = {
        **READING_OPTIONS,
        "schemas.enable": "writing: wrap key and value in {schema, payload} (default: false)",
        "subject.strategy": "conduit (default: <collection>.payload / .key), topic, record or "
        "topic-record; the topic is the collection",
    }

    def configure(self) -> None:
        self.tombstones = self._choice("tombstones", ("skip", "delete"))
        self.truncate = self._choice("truncate", ("error", "skip"))
        self.message = self._choice("message", ("error", "skip"))
        self.schemas_enable = self.flag("schemas.enable")
        self.strategy_name = self.settings.get("subject.strategy", "conduit")
        try:
            self.subject_of = strategy(self.strategy_name)
        except ValueError as exc:
            raise FormatOptionError(
                f"format {self.name!r} option 'subject.strategy': {exc}"
            ) from None
        fields = self.settings.get("key.fields")
        self.key_fields = ()
        if fields is not None:
            self.key_fields = tuple(f.strip() for f in fields.split(","))
            if not all(self.key_fields):
                raise FormatOptionError(
                    f"format {self.name!r} option 'key.fields': {fields!r} has an empty "
                    "column name (name columns separated by commas)"
                )
        self.collection: str | None = None
        if "collection" in self.options:
            self.collection = self.settings.get("collection")
            if self.collection is not None and not self.collection.strip():
                raise FormatOptionError(f"format {self.name!r} option 'collection' is empty")
        #: ``op`` letters and images (``before``, ``after``) this configuration refuses, each
        #: with its reason (a dialect's mode sets them; every decoder checks them).
        self.refused_ops: dict[str, str] = {}
        self.refused_images: dict[str, str] = {}
        #: Whether rows are HBase rows (``None``: told by each row's shape), where the
        #: envelope says rows may be (:attr:`Envelope.hbase_rows`).
        self.hbase: bool | None = None
        self._reset_caches()

    def _choice(self, option: str, allowed: tuple[str, ...]) -> str:
        value = self.settings.get(option, allowed[0]).strip().lower()
        if value not in allowed:
            raise FormatOptionError(
                f"format {self.name!r} option {option!r}: {self.settings[option]!r} is not one "
                f"of {', '.join(allowed)}"
            )
        return value

    @property
    def prefix(self) -> str:
        """The metadata prefix of the dialect (its envelope's)."""
        return self.envelope.prefix

    @classmethod
    def described_by_envelope(cls) -> bool:
        """Whether the dialect is its :class:`Envelope` alone (no decoding hook overridden):
        then the lean and the columnar decoders serve it."""
        return all(getattr(cls, name) is getattr(DebeziumJsonFormat, name) for name in _HOOKS)

    def _reset_caches(self) -> None:
        # the caches of RowSchemas and EnvelopeWriter
        self._store = None
        self._rows = {}
        self._envelopes = {}
        self._connect_blocks = {}

    def __getstate__(self) -> dict[str, Any]:
        # Registries are opened where used, and parsed schemas hold functions: rebuilt there.
        state = dict(self.__dict__)
        for name in ("_store", "_rows", "_envelopes", "_connect_blocks"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_caches()

    # --- hooks for Debezium-shaped formats ---------------------------------------------------

    def collection_of(self, source: Mapping[str, Any]) -> str | None:
        """The collection a ``source`` block names, as its envelope says
        (:attr:`Envelope.collection_parts`, :attr:`Envelope.table_fields`); the option
        ``collection`` when the dialect has one and it is set."""
        if self.collection:
            return self.collection
        envelope = self.envelope
        for part in (*envelope.collection_parts, *envelope.table_fields):
            value = source.get(part)
            if value is not None and not isinstance(value, str):
                raise CodecError(f"source.{part}: expected a string, got {json_kind(value)}")
        table = next((source[f] for f in envelope.table_fields if source.get(f)), None)
        if table is not None:
            parts = [source.get(part) for part in envelope.collection_parts]
            return ".".join(p for p in (*parts, table) if p)
        if not envelope.collection_fallback:
            return None
        fallback = source.get("opencdc.collection")
        return fallback if isinstance(fallback, str) and fallback else None

    def collection_of_value(self, value: bytes | None) -> tuple[bool, str | None]:
        """Whether a message value is a change event (a JSON object whose payload has a
        ``source`` object), and the collection its record gets from it
        (:meth:`collection_of`), without decoding the rest: what a typed read of one
        collection tells messages apart by."""
        if value is None:
            return False, None
        try:
            envelope = orjson.loads(value)
        except orjson.JSONDecodeError:
            return False, None
        if not isinstance(envelope, Mapping):
            return False, None
        try:
            _, payload = unwrap(envelope, "value")
            source = payload.get("source") if isinstance(payload, Mapping) else None
            if not isinstance(source, Mapping):
                return False, None
            return True, self.collection_of(source)
        except CodecError:
            return False, None

    def key_of(self, payload: Mapping[str, Any], key: Any) -> Any:
        """The key a change event carries besides the Kafka key (CDL's ``unique``); ``key``
        (the Kafka key's payload, already unwrapped) by default."""
        return key

    def extra_metadata(self, payload: Mapping[str, Any], metadata: Metadata) -> None:
        """Add format-specific metadata; by default every payload field that has no place
        of its own goes to ``<prefix>.<field>``."""
        key_field = self.envelope.key_field
        for field, value in payload.items():
            if field not in ENVELOPE_FIELDS and field != key_field:
                put_value(metadata, f"{self.prefix}.{field}", value)

    # --- reading -----------------------------------------------------------------------------

    def decode(self, message: Message) -> list[Record]:
        key = parse_kafka_key(message.key)
        if message.value is None:
            records = self._tombstone(key)
        else:
            envelope = load_json(message.value, "value")
            if envelope is None:
                records = self._tombstone(key)
            else:
                records = self.records_from_envelope(envelope, key, message)
        if self.envelope.position_is_place:
            position = message.where.encode("utf-8")
            for record in records:
                record.position = position
        return records

    def records_from_envelope(
        self, envelope: Mapping[str, Any], key: Any, message: Message
    ) -> list[Record]:
        """The records of one parsed change event.

        ``envelope`` is the value JSON (with or without the ``schema``/``payload`` wrapper),
        ``key`` the key JSON (likewise), raw key bytes, or ``None``. Raises
        :class:`CodecError` or :class:`SkipMessage` as :meth:`decode` does.
        """
        if not isinstance(envelope, Mapping):
            raise CodecError(f"value: a change event is a JSON object, not {json_kind(envelope)}")
        schema, payload = unwrap(envelope, "value")
        if payload is None:
            return self._tombstone(key)
        if not isinstance(payload, Mapping):
            raise CodecError(f"value payload: expected an object, got {json_kind(payload)}")
        self._check_refusals(payload)
        dialect = self.envelope
        if dialect.empty_schema_is_none and isinstance(schema, Mapping) and not schema:
            schema = None
        if dialect.hbase_rows:
            op = payload.get("op")
            if "op" in payload and (not isinstance(op, str) or op not in dialect.operations):
                raise CodecError(f"unknown op {op!r}: {dialect.operations_said}")
            if self.hbase if self.hbase is not None else is_hbase_row(payload):
                schema, key = hbase_schema(payload), hbase_key(payload)
        operation = self._operation(payload, schema)
        source = payload.get("source")
        if source is None:
            source = {}
        elif not isinstance(source, Mapping):
            raise CodecError(f"source: expected an object, got {json_kind(source)}")
        collection = self.collection_of(source)
        rows = self.envelope_rows(schema)
        before = self._image(payload, "before", rows[0])
        after = self._image(payload, "after", rows[1])
        if self.envelope.images_required:
            check_images(operation, before, after, key)

        metadata = Metadata()
        renamed = self.envelope.renamed
        for field, value in source.items():
            name = f"{self.prefix}.source.{field}"
            put_value(metadata, renamed.get(name, name), value)
        transaction = payload.get("transaction")
        if isinstance(transaction, Mapping):
            for field, value in transaction.items():
                put_value(metadata, f"{self.prefix}.transaction.{field}", value)
        elif transaction is not None:
            raise CodecError(f"transaction: expected an object, got {json_kind(transaction)}")
        self.extra_metadata(payload, metadata)
        unavailable = unavailable_columns(after)
        if unavailable:
            metadata[f"{self.prefix}.unavailable.columns"] = ",".join(unavailable)

        structured_key = self._key(self.key_of(payload, key), before, after, operation)
        created_at, read_at = event_times(source, payload, self.envelope.step_time)
        if self.registry_url:
            row = rows[1] or rows[0]
            if row is not None and (before is not None or after is not None):
                self.name_schema(metadata, "payload", row, collection)
            if structured_key[1] is not None:
                self.name_schema(metadata, "key", structured_key[1], collection)
        if dialect.deleted_columns and operation is Operation.UPDATE:
            after, deleted = mark_deleted_columns(before, after)
            if deleted:
                metadata[f"{self.prefix}.deleted.columns"] = ",".join(deleted)
        return [
            Record.new(
                operation,
                key=structured_key[0],
                before=before,
                after=after,
                metadata=metadata,
                collection=collection,
                created_at=created_at,
                read_at=read_at,
            )
        ]

    def decode_many(
        self, messages: Sequence[Message]
    ) -> Iterator[tuple[int, list[Record] | CodecError | SkipMessage]]:
        """:meth:`decode` over a batch: the common case (a change event with an ``op``) the
        lean way, anything else (and anything the lean way doubts) through :meth:`decode`."""
        # The lean path repeats decode's steps: only where a subclass changed none of them.
        lean = not self.registry_url and all(
            getattr(type(self), name) is getattr(DebeziumJsonFormat, name) for name in _LEAN_STEPS
        )
        for index, message in enumerate(messages):
            if lean:
                try:
                    found = self._lean_records(message)
                except (CodecError, SkipMessage, TypeError, ValueError):
                    found = None  # decode says what is wrong, exactly
                if found is not None:
                    yield index, found
                    continue
            try:
                yield index, self.decode(message)
            except (CodecError, SkipMessage) as exc:
                yield index, exc

    def _lean_records(self, message: Message) -> list[Record] | None:
        """:meth:`decode`'s common case, a change event with an ``op``, with metadata gathered
        in a plain dict and checked once; ``None`` (or an error) for anything else, which
        :meth:`decode` then handles. Not for the registry path."""
        dialect = self.envelope
        if message.value is None or (
            dialect.hbase_rows or dialect.deleted_columns or dialect.empty_schema_is_none
        ):
            return None  # decode's steps hold those rules
        envelope = load_json(message.value, "value")
        if not isinstance(envelope, dict):
            return None
        schema, payload = unwrap(envelope, "value")
        if not isinstance(payload, dict):
            return None
        op = payload.get("op")
        operation = self.envelope.operations.get(op) if isinstance(op, str) else None
        source = payload.get("source")
        transaction = payload.get("transaction")
        if (
            operation is None
            or not isinstance(source, dict | None)
            or not isinstance(transaction, dict | None)
        ):
            return None
        source = source or {}
        if self.refused_ops or self.refused_images:
            self._check_refusals(payload)
        key = parse_kafka_key(message.key)
        collection = self.collection_of(source)
        rows = self.envelope_rows(schema)
        before = self._image(payload, "before", rows[0])
        after = self._image(payload, "after", rows[1])
        if self.envelope.images_required:
            check_images(operation, before, after, key)

        pairs: dict[str, str] = {}
        prefix, renamed = self.prefix, self.envelope.renamed
        for field, value in source.items():
            name = f"{prefix}.source.{field}"
            put_text(pairs, renamed.get(name, name), value)
        for field, value in (transaction or {}).items():
            put_text(pairs, f"{prefix}.transaction.{field}", value)
        extra = Metadata()
        self.extra_metadata(payload, extra)
        pairs.update(extra)
        unavailable = unavailable_columns(after)
        if unavailable:
            pairs[f"{prefix}.unavailable.columns"] = ",".join(unavailable)

        structured_key = self._key(self.key_of(payload, key), before, after, operation)[0]
        created_at, read_at = event_times(source, payload, self.envelope.step_time)
        # What Record.new sets, in its order.
        pairs.setdefault(_VERSION_KEY, _OPENCDC_VERSION)
        for name, standard in ((_COLLECTION_KEY, collection), (_CREATED_AT_KEY, created_at)):
            if standard is None:
                pairs.pop(name, None)
            else:
                pairs[name] = str(standard)
        pairs[_READ_AT_KEY] = str(read_at)
        position = message.where.encode("utf-8") if self.envelope.position_is_place else b""
        return [Record(position, operation, Metadata(pairs), structured_key, Change(before, after))]

    def _check_refusals(self, payload: Mapping[str, Any]) -> None:
        """:class:`CodecError` for an ``op`` or an image (a non-empty one) this
        configuration refuses (:attr:`refused_ops`, :attr:`refused_images`)."""
        op = payload.get("op")
        reason = self.refused_ops.get(op) if isinstance(op, str) else None
        if reason is not None:
            raise CodecError(reason)
        for image, reason in self.refused_images.items():
            if payload.get(image):
                raise CodecError(reason)

    def _operation(self, payload: Mapping[str, Any], schema: Any) -> Operation:
        if "op" not in payload:
            if is_heartbeat(payload, schema):
                raise SkipMessage("heartbeat")
            if payload.get("status") in ("BEGIN", "END") and "id" in payload:
                raise SkipMessage("transaction boundary")
            if set(payload) == {"key", "value"}:
                raise CodecError(KV_LINE_HINT)
            if any(field in payload for field in _SCHEMA_CHANGE_FIELDS):
                ddl = payload.get("ddl")
                said = f": {ddl!r:.80}" if isinstance(ddl, str) and ddl else ""
                raise CodecError(
                    f"a schema change event{said}, which changes no row and has no OpenCDC "
                    "operation (read the table's topics, not the schema change topic)"
                )
            fields = ", ".join(sorted(map(str, payload))[:8]) or "none"
            raise CodecError(f"no 'op' field: not a Debezium change event (fields: {fields})")
        op = payload["op"]
        envelope = self.envelope
        found = envelope.operations.get(op) if isinstance(op, str) else None
        if found is not None:
            return found
        if isinstance(op, str) and op in envelope.no_operation:
            option, what = envelope.no_operation[op]
            if getattr(self, option, "error") == "skip":
                raise SkipMessage(option)
            hint = (
                f" (option {option}=skip counts and skips them)" if option in self.options else ""
            )
            raise CodecError(f"op {op!r} is a {what}, which has no OpenCDC operation{hint}")
        raise CodecError(f"unknown op {op!r}: {envelope.operations_said}")

    def _tombstone(self, key: Any) -> list[Record]:
        if self.tombstones != "delete" or key is None:
            raise SkipMessage("tombstone")
        structured, _ = self._kafka_key(key)
        if structured is None:
            raise SkipMessage("tombstone")
        return [Record.new(Operation.DELETE, key=structured, read_at=time.time_ns())]

    def _image(self, payload: Mapping[str, Any], name: str, row: RowSchema | None) -> Data:
        value = payload.get(name)
        if value is None or (isinstance(value, Mapping) and not value):
            return None  # {} is Arcion's "absent"
        if isinstance(value, str) and row is None:
            value = json_document(value, name)  # MongoDB: the document as JSON text
            if not value:
                return None
        if not isinstance(value, Mapping):
            raise CodecError(f"{name}: expected an object or null, got {json_kind(value)}")
        if row is None:
            return dict(value)
        return typed_row(row.connect, value, name)
