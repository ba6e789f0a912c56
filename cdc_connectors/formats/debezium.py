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

import base64
import dataclasses
import datetime as dt
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

import orjson

from cdc_connectors.formats.base import Format, FormatOptionError, Message, SkipMessage
from cdc_connectors.formats.hbase_rows import (
    hbase_key,
    hbase_schema,
    is_hbase_row,
    mark_deleted_columns,
)
from cdc_connectors.formats.jsonkinds import json_kind
from cdc_connectors.opencdc import CodecError, Record, keys, structured
from cdc_connectors.opencdc.data import Change, Data
from cdc_connectors.opencdc.json_codec import (
    KV_LINE_HINT,
    MAX_DEPTH,
    json_default,
    json_error,
    load_exact,
)
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.schema import avro_values, framing
from cdc_connectors.schema.connect import (
    AVRO_LOGICAL_CONNECT,
    ConnectSchema,
    connect_to_avro,
    connect_value,
    parse_connect_schema,
)
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.subjects import Part, SubjectContext, strategy

__all__ = [
    "UNAVAILABLE_VALUE",
    "DebeziumJsonFormat",
    "Envelope",
    "avro_to_connect",
    "json_kind",
    "parse_kafka_key",
    "unwrap",
]

#: What Debezium's PostgreSQL connector writes for an unchanged TOASTed column.
UNAVAILABLE_VALUE = "__debezium_unavailable_value"
_UNAVAILABLE_BYTES = UNAVAILABLE_VALUE.encode()

_OPERATIONS = {
    "c": Operation.CREATE,
    "u": Operation.UPDATE,
    "d": Operation.DELETE,
    "r": Operation.SNAPSHOT,
}
_LETTERS = {operation: letter for letter, operation in _OPERATIONS.items()}
_NO_OPERATION = {"t": ("truncate", "truncate"), "m": ("message", "logical decoding message")}
# Envelope fields with a place of their own; any other payload field goes to metadata.
_ENVELOPE = frozenset(("before", "after", "source", "op", "transaction", "ts_ms", "ts_us", "ts_ns"))
# Finest first: Debezium 2.x adds ts_us / ts_ns next to ts_ms for the same instant.
_TIME_FIELDS = (("ts_ns", 1), ("ts_us", 1_000), ("ts_ms", 1_000_000))
_HEARTBEAT_SCHEMA = "io.debezium.connector.common.Heartbeat"
#: The Connect name of JSON text: MongoDB's before / after images are documents as such text.
_JSON_TEXT = "io.debezium.data.Json"
_SCHEMA_CHANGE_FIELDS = ("ddl", "tableChanges")
_INTEGER = re.compile(r"-?(0|[1-9][0-9]{0,18})")
_DIGITS = re.compile(r"[0-9]+")
_NANOS_PER_MILLI = 1_000_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_RAW_DATA_KEY = "opencdc.rawData"  # Conduit's name for raw data that is no JSON object
_SORTED = orjson.OPT_SORT_KEYS
_MAX_CACHED = 1024  # distinct schema blocks kept parsed
_VERSION_KEY, _OPENCDC_VERSION = keys.VERSION, keys.OPENCDC_VERSION
_COLLECTION_KEY, _CREATED_AT_KEY, _READ_AT_KEY = keys.COLLECTION, keys.CREATED_AT, keys.READ_AT
# What decode does that decode_many's lean path does its own way (hooks it calls as is).
_LEAN_STEPS = ("decode", "records_from_envelope", "_operation", "_tombstone", "_lean_records")
# Every decoding hook: a dialect that overrides none is described by its envelope alone.
_HOOKS = (*_LEAN_STEPS, "collection_of", "key_of", "extra_metadata")


@dataclass(frozen=True, slots=True)
class _RowSchema:
    """One row struct of a ``schema`` block, parsed once, with its Avro form for the registry."""

    connect: ConnectSchema
    avro_text: str | None
    record_name: str | None
    problem: str | None  # why it has no Avro form (an unusable name), for the registry path


@dataclass(frozen=True)
class Envelope:
    """What a Debezium-shaped dialect writes, as data. The per-message, lean and columnar
    decoders all read it, so a dialect described by its envelope alone (no hook of
    :class:`DebeziumJsonFormat` overridden: :meth:`DebeziumJsonFormat.described_by_envelope`)
    gets every fast path."""

    #: The metadata prefix: ``<prefix>.source.<field>``, ``<prefix>.transaction.<field>``.
    prefix: str = "debezium"
    #: ``op`` letter -> operation: the dialect's own set.
    operations: Mapping[str, Operation] = dataclasses.field(
        default_factory=lambda: dict(_OPERATIONS)
    )
    #: ``op`` letters that change no row: letter -> (the option that skips them, what it is).
    no_operation: Mapping[str, tuple[str, str]] = dataclasses.field(
        default_factory=lambda: dict(_NO_OPERATION)
    )
    #: How an unknown ``op`` is explained.
    operations_said: str = "Debezium's are c, u, d, r (and t, m)"
    #: ``source`` fields dot-joined before the table (those that are set), and the fields
    #: that name the table (the first one set); without a table, ``source``'s own
    #: ``opencdc.collection`` when ``collection_fallback`` (what Conduit writes).
    collection_parts: tuple[str, ...] = ("db", "schema")
    table_fields: tuple[str, ...] = ("table", "collection")
    collection_fallback: bool = True
    #: Every record's position is its message's place (``Message.where``).
    position_is_place: bool = False
    #: A create, update or snapshot needs its ``after`` image; a delete ``before`` or a key.
    images_required: bool = True
    #: Metadata names the dialect spells its own way: ``<prefix>.source.x`` -> another name.
    renamed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: A ``source`` field of milliseconds (a non-negative integer) that is
    #: ``opencdc.createdAt`` when the source has no time of its own (YDB's ``step``).
    step_time: str | None = None
    #: A ``schema`` block that is ``{}`` means none (Lindorm writes so).
    empty_schema_is_none: bool = False
    #: Rows may be HBase rows (:mod:`~cdc_connectors.formats.hbase_rows`), told by their
    #: shape unless the format's ``hbase`` setting says: typed as bytes, keyed by ``ROW``.
    hbase_rows: bool = False
    #: An update's ``after`` without columns its ``before`` has deleted them: they are null
    #: in ``after`` and named in ``<prefix>.deleted.columns`` (Lindorm's column deletion).
    deleted_columns: bool = False
    #: A payload field that holds the record's key, not metadata (CDL's ``unique``).
    key_field: str | None = None
    #: Payload fields whose values mark the dialect's own messages (CDL's
    #: ``message_version`` ``2.0``); a reader of several layouts reads the others its way.
    marks: Mapping[str, str] = dataclasses.field(default_factory=dict)


class DebeziumJsonFormat(Format):
    """Debezium change events as JSON (module docstring)."""

    name = "debezium-json"
    #: What the dialect writes (:class:`Envelope`); dialects set their own.
    envelope: ClassVar[Envelope] = Envelope()
    options: ClassVar[Mapping[str, str]] = {
        "tombstones": "skip (default): count and skip null values; delete: a key-only delete",
        "truncate": "error (default) or skip: what a truncate event (op 't') becomes",
        "message": "error (default) or skip: what a logical decoding message (op 'm') becomes",
        "schemas.enable": "writing: wrap key and value in {schema, payload} (default: false)",
        "subject.strategy": "conduit (default: <collection>.payload / .key), topic, record or "
        "topic-record; the topic is the collection",
        "key.fields": "comma-separated columns that make the key when a message has no key",
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
        self.key_fields: tuple[str, ...] = ()
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
        self._store: SchemaStore | None = None
        # canonical JSON text of a schema block -> the parsed block
        self._rows: dict[bytes, _RowSchema] = {}
        self._envelopes: dict[bytes, tuple[_RowSchema | None, _RowSchema | None]] = {}
        # (subject, version) of a registered Avro schema -> its Connect block, for writing
        self._connect_blocks: dict[tuple[str, int], dict[str, Any]] = {}

    def __getstate__(self) -> dict[str, Any]:
        # Registries are opened where used, and parsed schemas hold functions: rebuilt there.
        state = dict(self.__dict__)
        for name in ("_store", "_rows", "_envelopes", "_connect_blocks"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_caches()

    @property
    def store(self) -> SchemaStore:
        """The registry's schemas, cached for this process."""
        if self._store is None:
            self._store = SchemaStore(self.registry)
        return self._store

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
            if field not in _ENVELOPE and field != key_field:
                _put(metadata, f"{self.prefix}.{field}", value)

    # --- reading -----------------------------------------------------------------------------

    def decode(self, message: Message) -> list[Record]:
        key = parse_kafka_key(message.key)
        if message.value is None:
            records = self._tombstone(key)
        else:
            envelope = _load_json(message.value, "value")
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
            if "op" in payload and op not in dialect.operations:
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
            _check_images(operation, before, after, key)

        metadata = Metadata()
        renamed = self.envelope.renamed
        for field, value in source.items():
            name = f"{self.prefix}.source.{field}"
            _put(metadata, renamed.get(name, name), value)
        transaction = payload.get("transaction")
        if isinstance(transaction, Mapping):
            for field, value in transaction.items():
                _put(metadata, f"{self.prefix}.transaction.{field}", value)
        elif transaction is not None:
            raise CodecError(f"transaction: expected an object, got {json_kind(transaction)}")
        self.extra_metadata(payload, metadata)
        unavailable = _unavailable_columns(after)
        if unavailable:
            metadata[f"{self.prefix}.unavailable.columns"] = ",".join(unavailable)

        structured_key = self._key(self.key_of(payload, key), before, after, operation)
        created_at, read_at = _times(source, payload, self.envelope.step_time)
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
        envelope = _load_json(message.value, "value")
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
            _check_images(operation, before, after, key)

        pairs: dict[str, str] = {}
        prefix, renamed = self.prefix, self.envelope.renamed
        for field, value in source.items():
            name = f"{prefix}.source.{field}"
            _put_text(pairs, renamed.get(name, name), value)
        for field, value in (transaction or {}).items():
            _put_text(pairs, f"{prefix}.transaction.{field}", value)
        extra = Metadata()
        self.extra_metadata(payload, extra)
        pairs.update(extra)
        unavailable = _unavailable_columns(after)
        if unavailable:
            pairs[f"{prefix}.unavailable.columns"] = ",".join(unavailable)

        structured_key = self._key(self.key_of(payload, key), before, after, operation)[0]
        created_at, read_at = _times(source, payload, self.envelope.step_time)
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
            if _is_heartbeat(payload, schema):
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

    def _image(self, payload: Mapping[str, Any], name: str, row: _RowSchema | None) -> Data:
        value = payload.get(name)
        if value is None or (isinstance(value, Mapping) and not value):
            return None  # {} is Arcion's "absent"
        if isinstance(value, str) and row is None:
            value = _json_document(value, name)  # MongoDB: the document as JSON text
            if not value:
                return None
        if not isinstance(value, Mapping):
            raise CodecError(f"{name}: expected an object or null, got {json_kind(value)}")
        if row is None:
            return dict(value)
        return _typed(row.connect, value, name)

    def kafka_key(self, key: bytes | None) -> tuple[Data, ConnectSchema | None]:
        """The record key a Kafka key gives (structured, raw or none, as :meth:`decode`
        makes it), and the Connect schema of its ``schema`` block if it has one (with a
        registry, :meth:`decode` names that schema per message)."""
        data, row = self._kafka_key(parse_kafka_key(key))
        return data, None if row is None else row.connect

    def _kafka_key(self, key: Any) -> tuple[Data, _RowSchema | None]:
        """The structured (or raw) key of a Kafka key, and its row schema if it has one."""
        if key is None or isinstance(key, bytes):
            return key, None
        if not isinstance(key, Mapping):
            return orjson.dumps(key, default=json_default), None
        schema, payload = unwrap(key, "key")
        if payload is None:
            return None, None
        if not isinstance(payload, Mapping):
            raise CodecError(f"key payload: expected an object, got {json_kind(payload)}")
        if schema is None:
            return dict(payload), None
        row = self._row_schema(schema, "key schema")
        return _typed(row.connect, payload, "key"), row

    def _key(
        self, key: Any, before: Data, after: Data, operation: Operation
    ) -> tuple[Data, _RowSchema | None]:
        found = self._kafka_key(key)
        if found[0] is not None or not self.key_fields:
            return found
        image = before if operation is Operation.DELETE else after
        image = image if image is not None else (after if before is None else before)
        if not isinstance(image, dict):
            raise CodecError(
                "no key: the message has no Kafka key and no image to take key.fields from"
            )
        missing = [f for f in self.key_fields if f not in image]
        if missing:
            raise CodecError(
                f"key.fields: column {missing[0]!r} is not in the row "
                f"(columns: {', '.join(sorted(image)) or 'none'})"
            )
        return {f: image[f] for f in self.key_fields}, None

    # --- schemas -----------------------------------------------------------------------------

    def envelope_rows(self, schema: Any) -> tuple[_RowSchema | None, _RowSchema | None]:
        """The row schemas of the before and after images of an envelope's schema block
        (``None`` for an image without one), cached by the block's text."""
        if schema is None:
            return None, None
        text = orjson.dumps(schema, option=_SORTED)
        found = self._envelopes.get(text)
        if found is not None:
            return found
        if not isinstance(schema, Mapping) or schema.get("type") != "struct":
            raise CodecError(
                f"value schema: a change event's schema is a struct, not {schema!r:.60}"
            )
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise CodecError("value schema: the envelope struct has no list of fields")
        blocks = {
            f.get("field"): f
            for f in fields
            if isinstance(f, Mapping) and isinstance(f.get("field"), str)
        }
        rows = tuple(
            self._row_schema(blocks[name], f"value schema {name}")
            if name in blocks and not _is_json_text(blocks[name])
            else None
            for name in ("before", "after")
        )
        pair = (rows[0], rows[1])
        if len(self._envelopes) >= _MAX_CACHED:
            self._envelopes.clear()  # schemas that change with every message: bounded memory
        self._envelopes[text] = pair
        return pair

    def _row_schema(self, block: Any, what: str) -> _RowSchema:
        """A row struct's schema, parsed once per distinct block text."""
        if not isinstance(block, Mapping):
            raise CodecError(f"{what}: expected an object, got {json_kind(block)}")
        # A row is never null once present: the image itself is the optional part.
        required = {k: v for k, v in block.items() if k not in ("field", "optional", "default")}
        text = orjson.dumps(required, option=_SORTED)
        found = self._rows.get(text)
        if found is not None:
            return found
        if required.get("type") != "struct":
            raise CodecError(f"{what}: a row's schema is a struct, not {required.get('type')!r}")
        try:
            connect = parse_connect_schema(required)
        except SchemaError as exc:
            raise CodecError(f"{what}: {exc}") from None
        avro_text = record_name = problem = None
        try:
            avro = connect_to_avro(connect)
        except SchemaError as exc:
            problem = f"{what} has no Avro form: {exc}"
        else:
            avro_text = orjson.dumps(avro).decode()
            if isinstance(avro, dict) and isinstance(avro.get("name"), str):
                space = avro.get("namespace")
                record_name = f"{space}.{avro['name']}" if space else str(avro["name"])
        found = _RowSchema(connect, avro_text, record_name, problem)
        if len(self._rows) >= _MAX_CACHED:
            self._rows.clear()
        self._rows[text] = found
        return found

    def _subject(self, part: Part, collection: str | None, record_name: str | None) -> str:
        context = SubjectContext(
            part, topic=collection, collection=collection, record_name=record_name
        )
        try:
            return self.subject_of(context)
        except ValueError as exc:
            raise CodecError(f"no {part} subject ({self.strategy_name} strategy): {exc}") from None

    def name_schema(
        self, metadata: Metadata, part: Part, row: _RowSchema, collection: str | None
    ) -> None:
        """Register ``row``'s Avro form and name it in ``metadata`` as the ``part``'s schema."""
        if row.avro_text is None:
            raise CodecError(row.problem or f"the {part} schema has no Avro form")
        subject = self._subject(part, collection, row.record_name)
        registered = self.store.register(subject, row.avro_text)
        framing.set_conduit_schema(metadata, part, subject, registered.version or 0)

    # --- writing -----------------------------------------------------------------------------

    def encode(self, record: Record) -> Message:
        letter = _LETTERS.get(record.operation)
        if letter is None:
            raise CodecError(f"operation {record.operation} has no Debezium op")
        metadata = record.metadata
        before = self._readable(record, record.payload.before, "payload.before")
        after = self._readable(record, record.payload.after, "payload.after")
        key = record.key
        if isinstance(key, bytes):
            key = self._readable(record, key, "key", part="key", raw_as_is=True)
        for data, what in ((before, "payload.before"), (after, "payload.after"), (key, "key")):
            if isinstance(data, dict):
                # orjson would write NaN as null: refuse what JSON cannot hold, naming it
                structured.check(data, what, budget=MAX_DEPTH)
        payload: dict[str, Any] = {"before": before, "after": after}
        payload["source"] = self.source_for(metadata)
        payload["op"] = letter
        transaction = _from_metadata(metadata, f"{self.prefix}.transaction.")
        payload["transaction"] = transaction or None
        read_at = metadata.read_at
        payload["ts_ms"] = read_at // 1_000_000 if read_at is not None else None
        own = (
            f"{self.prefix}.source.",
            f"{self.prefix}.transaction.",
            f"{self.prefix}.unavailable.",
        )
        for name, text in metadata.items():
            if name.startswith(f"{self.prefix}.") and not name.startswith(own):
                payload.setdefault(name[len(self.prefix) + 1 :], _metadata_value(text))
        if not self.schemas_enable:
            return Message(value=_dumps(payload), key=_key_bytes(key, None))
        collection = metadata.collection
        envelope = _envelope_block(self._row_blocks(record, before, after), payload, collection)
        parsed = _parse_for_writing(envelope, "value schema")
        value = {"schema": envelope, "payload": _written(parsed, payload, "")}
        key_block = None
        if isinstance(key, dict):
            key_block = self._row_block(record, "key", [key])
            if key_block is not None and collection:
                key_block.setdefault("name", f"{collection}.Key")
        return Message(value=_dumps(value), key=_key_bytes(key, key_block))

    def source_for(self, metadata: Mapping[str, str]) -> dict[str, Any]:
        """The ``source`` block of a record: ``<prefix>.source.*``, else (as Conduit writes
        it) the record's whole metadata."""
        source = _from_metadata(metadata, f"{self.prefix}.source.")
        return source if source else dict(metadata)

    def _readable(
        self,
        record: Record,
        data: Data,
        where: str,
        *,
        part: Part = "payload",
        raw_as_is: bool = False,
    ) -> Any:
        """Structured data of a key or image: raw bytes are decoded with the schema the
        metadata names, read as a JSON object, or (Conduit's way) put under ``opencdc.rawData``."""
        if not isinstance(data, bytes):
            return data
        named = framing.conduit_schema(record.metadata, part)
        if named is not None and self.registry_url:
            schema = self.store.by_version(*named)
            try:
                value = avro_values.decode(data, avro_values.parsed(schema))
            except CodecError as exc:
                raise CodecError(f"{where} {exc.reason} ({schema.label()})") from None
            if isinstance(value, dict):
                return avro_values.to_structured(value)
        try:
            parsed = _load_json(data, where)
        except CodecError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
        return data if raw_as_is else {_RAW_DATA_KEY: data}

    def _row_blocks(
        self, record: Record, before: Any, after: Any
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The Connect schemas of the before and after images: one struct, as Debezium
        writes, unless inferred images have different columns (a shared struct would add
        the missing ones as nulls)."""
        collection = record.metadata.collection
        images = [i for i in (before, after) if isinstance(i, dict)]
        named = framing.conduit_schema(record.metadata, "payload") is not None
        if named or len(images) < 2 or set(images[0]) == set(images[1]):
            row = self._row_block(record, "payload", images)
            if row is not None and collection and "name" not in row:
                row["name"] = f"{collection}.Value"
            return row, row
        first, second = (_infer_struct([image], "payload") for image in images)
        if collection:
            first["name"], second["name"] = f"{collection}.Before", f"{collection}.Value"
        return first, second

    def _row_block(
        self, record: Record, part: Part, images: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """The Connect schema of a key or row: from its registered Avro schema, else inferred."""
        named = framing.conduit_schema(record.metadata, part)
        if named is not None and self.registry_url:
            block = self._connect_blocks.get(named)
            if block is None:
                resolved = self.store.by_version(*named)
                block = avro_to_connect(avro_values.standalone(resolved), resolved.label())
                self._connect_blocks[named] = block
            return dict(block)
        if not images:
            return None
        return _infer_struct(images, "payload" if part == "payload" else "key")


# --- reading helpers ------------------------------------------------------------------------


def _load_json(data: bytes, what: str) -> Any:
    """``data`` parsed as the OpenCDC JSON codec reads it: numbers exact or refused."""
    try:
        return load_exact(data)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"{what} is not valid JSON: {json_error(exc, data)}") from None


def parse_kafka_key(key: bytes | None) -> Any:
    """The Kafka key as JSON, or its raw bytes when it is no JSON object."""
    if key is None:
        return None
    try:
        orjson.loads(key)
    except orjson.JSONDecodeError:
        return key
    parsed = _load_json(key, "key")
    return parsed if isinstance(parsed, Mapping) else key


def unwrap(document: Mapping[str, Any], what: str) -> tuple[Any, Any]:
    """(schema block, payload) of JsonConverter's wrapper, or (None, the document)."""
    if "payload" in document and ("schema" in document or len(document) == 1):
        return document.get("schema"), document["payload"]
    if "schema" in document and "op" not in document:
        raise CodecError(f"{what}: a 'schema' block without a 'payload'")
    return None, document


def _is_json_text(block: Any) -> bool:
    """Whether an image's schema is JSON text (MongoDB's documents), not a row struct."""
    return (
        isinstance(block, Mapping)
        and block.get("type") == "string"
        and block.get("name") == _JSON_TEXT
    )


def _json_document(text: str, name: str) -> Any:
    """The object a JSON-text image holds (MongoDB), or why it holds none."""
    try:
        document = _load_json(text.encode("utf-8", "surrogatepass"), name)
    except (CodecError, UnicodeEncodeError) as exc:
        reason = exc.reason if isinstance(exc, CodecError) else str(exc)
        raise CodecError(f"{name}: a string image is a document's JSON text; {reason}") from None
    if not isinstance(document, Mapping):
        raise CodecError(
            f"{name}: a string image is a document's JSON text, and this one holds "
            f"{json_kind(document)}, not an object"
        )
    return document


def _is_heartbeat(payload: Mapping[str, Any], schema: Any) -> bool:
    if isinstance(schema, Mapping) and schema.get("name") == _HEARTBEAT_SCHEMA:
        return True
    return set(payload) == {"ts_ms"}


def _typed(schema: ConnectSchema, value: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A row typed by its struct schema; a column the schema does not declare is an error,
    not dropped."""
    declared = {name for name, _ in schema.fields}
    extra = [name for name in value if name not in declared]
    if extra:
        raise CodecError(
            f"the schema does not match the values: {where}.{extra[0]} is not a field of "
            f"the schema (fields: {', '.join(sorted(declared)) or 'none'})"
        )
    try:
        converted = connect_value(schema, value, path=where)
    except SchemaError as exc:
        raise CodecError(f"the schema does not match the values: {exc}") from None
    typed: dict[str, Any] = avro_values.to_structured(converted)
    return typed


def _check_images(operation: Operation, before: Data, after: Data, key: Any) -> None:
    """A create, update or snapshot writes a row: without ``after`` it says nothing; a delete
    needs its ``before`` image or a key to say which row."""
    if operation is Operation.DELETE:
        if before is None and key is None:
            raise CodecError("a delete with neither a before image nor a key names no row")
    elif after is None:
        raise CodecError(f"a {operation} without an after image carries no row")


def _unavailable_columns(image: Data) -> list[str]:
    if not isinstance(image, dict):
        return []
    return [name for name, value in image.items() if _unavailable(value)]


def _unavailable(value: Any) -> bool:
    if value in (UNAVAILABLE_VALUE, _UNAVAILABLE_BYTES):
        return True
    # arrays of a TOASTed array column hold the placeholder as their one element
    return isinstance(value, list) and bool(value) and all(map(_unavailable, value))


def _nanos(block: Mapping[str, Any], what: str) -> int | None:
    for field, factor in _TIME_FIELDS:
        value = block.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise CodecError(f"{what}.{field}: expected an integer, got {json_kind(value)}")
        nanos = value * factor
        if not -(2**63) <= nanos < 2**63:
            raise CodecError(f"{what}.{field}: {value} is beyond the nanoseconds 64 bits hold")
        return nanos
    return None


def _times(
    source: Mapping[str, Any], payload: Mapping[str, Any], step_time: str | None = None
) -> tuple[int | None, int]:
    """``opencdc.createdAt`` and ``.readAt`` in nanoseconds; 0 is a time like any other.
    ``step_time``: :attr:`Envelope.step_time`."""
    created_at = _nanos(source, "source")
    if created_at is None:
        created_at = _conduit_time(source, "opencdc.createdAt")
    if created_at is None and step_time is not None:
        created_at = _step_nanos(source.get(step_time))
    read_at = _nanos(payload, "payload")
    return created_at, time.time_ns() if read_at is None else read_at


def _step_nanos(value: Any) -> int | None:
    """A step of milliseconds (an integer, or its digits) in nanoseconds; ``None`` for
    anything else, or one beyond what 64 bits of nanoseconds hold."""
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    nanos = value * _NANOS_PER_MILLI
    return nanos if nanos < 2**63 else None


def _conduit_time(source: Mapping[str, Any], name: str) -> int | None:
    """A time Conduit's Debezium output carries in ``source`` (its record's metadata)."""
    value = source.get(name)
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _put_text(pairs: dict[str, str], name: str, value: Any) -> None:
    """:func:`_put` into a plain dict, checked later as a whole."""
    if value is None:
        return
    if isinstance(value, str):
        pairs[name] = value
    else:
        pairs[name] = orjson.dumps(value, default=json_default, option=_SORTED).decode()


def _put(metadata: Metadata, name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str):
        metadata[name] = value
        return
    try:
        metadata[name] = orjson.dumps(value, default=json_default, option=_SORTED).decode()
    except TypeError as exc:
        raise CodecError(f"{name}: {exc}") from None


# --- writing helpers ------------------------------------------------------------------------


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value, default=json_default)
    except TypeError as exc:
        raise CodecError(f"cannot be written as JSON: {exc}") from None


def _key_bytes(key: Any, block: dict[str, Any] | None) -> bytes | None:
    if key is None or isinstance(key, bytes):
        return key
    if block is None:
        return _dumps(key)
    parsed = _parse_for_writing(block, "key schema")
    return _dumps({"schema": block, "payload": _written(parsed, key, "key")})


def _from_metadata(metadata: Mapping[str, str], prefix: str) -> dict[str, Any]:
    return {
        name[len(prefix) :]: _metadata_value(text)
        for name, text in metadata.items()
        if name.startswith(prefix)
    }


def _metadata_value(text: str) -> Any:
    """A metadata string back as a JSON value: integers, objects, arrays; else the text."""
    if _INTEGER.fullmatch(text) and -(2**63) <= int(text) < 2**63:
        return int(text)
    if text[:1] in ("{", "["):
        try:
            return _load_json(text.encode(), "metadata")
        except CodecError:
            return text
    return text


def _parse_for_writing(block: Mapping[str, Any], what: str) -> ConnectSchema:
    try:
        return parse_connect_schema(block)
    except SchemaError as exc:
        raise CodecError(f"{what}: {exc}") from None


def _envelope_block(
    rows: tuple[dict[str, Any] | None, dict[str, Any] | None],
    payload: Mapping[str, Any],
    collection: str | None,
) -> dict[str, Any]:
    """The Connect schema of a Debezium envelope around the row schemas (Debezium's order)."""
    empty: dict[str, Any] = {"type": "struct", "fields": []}
    fields: list[dict[str, Any]] = [
        {**(row or empty), "optional": True, "field": name}
        for row, name in zip(rows, ("before", "after"), strict=True)
    ]
    source = payload.get("source") or {}
    fields.append({**_infer_struct([source], "source", optional=True), "field": "source"})
    fields.append({"type": "string", "optional": False, "field": "op"})
    fields.append({"type": "int64", "optional": True, "field": "ts_ms"})
    transaction = {
        "type": "struct",
        "optional": True,
        "name": "event.block",
        "version": 1,
        "fields": [
            {"type": "string", "optional": False, "field": "id"},
            {"type": "int64", "optional": False, "field": "total_order"},
            {"type": "int64", "optional": False, "field": "data_collection_order"},
        ],
    }
    if payload.get("transaction") is not None:
        transaction = {**_infer_struct([payload["transaction"]], "transaction"), "optional": True}
    fields.append({**transaction, "field": "transaction"})
    for name, value in payload.items():
        if name not in _ENVELOPE:
            fields.append({**_infer_value([value], name), "field": name})
    block: dict[str, Any] = {"type": "struct", "optional": False, "fields": fields}
    if collection:
        block["name"] = f"{collection}.Envelope"
    return block


# Inference: Conduit's rules (schema/infer.py) in Connect's types. Connect has no unions,
# so a nested object is a struct (not Conduit's map) and a list takes its first item's type.


def _infer_struct(
    images: Sequence[Mapping[str, Any]], where: str, *, optional: bool = False
) -> dict[str, Any]:
    names: list[str] = []
    for image in images:
        names.extend(n for n in image if n not in names)
    fields = []
    for name in sorted(names):
        values = [image.get(name) for image in images]
        field = _infer_value(values, f"{where}.{name}")
        fields.append({**field, "field": name})
    return {"type": "struct", "optional": optional, "fields": fields}


def _infer_value(values: list[Any], where: str) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    optional = len(present) < len(values)
    if not present:
        return {"type": "string", "optional": True}
    first = present[0]
    schema: dict[str, Any]
    if isinstance(first, bool):
        schema = {"type": "boolean"}
    elif isinstance(first, int):
        schema = {"type": "int64"}
    elif isinstance(first, float):
        schema = {"type": "double"}
    elif isinstance(first, Decimal):
        scale = max([10, *(-int(v.as_tuple().exponent) for v in present if isinstance(v, Decimal))])
        schema = {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {
                "scale": str(scale),
                "connect.decimal.precision": str(max(31, scale + 21)),
            },
        }
    elif isinstance(first, str):
        schema = {"type": "string"}
    elif isinstance(first, bytes):
        schema = {"type": "bytes"}
    elif isinstance(first, dt.datetime):
        schema = {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "version": 1}
    elif isinstance(first, list):
        items = [item for v in present if isinstance(v, list) for item in v]
        schema = {"type": "array", "items": _infer_value(items or [None], f"{where}[]")}
    elif isinstance(first, Mapping):
        schema = _infer_struct([v for v in present if isinstance(v, Mapping)], where)
    else:
        raise CodecError(f"{where}: {type(first).__name__} has no Kafka Connect type")
    schema["optional"] = optional
    return schema


# Avro -> Connect: the reverse of connect_to_avro; AvroData's connect.* properties restore
# the Connect names and parameters, logical types without them get Connect's or Debezium's.
_AVRO_PRIMITIVE = {
    "int": "int32",
    "long": "int64",
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}


def avro_to_connect(avro: Any, where: str, optional: bool = False) -> dict[str, Any]:
    """The Kafka Connect schema block of an Avro schema (expanded JSON), as AvroData
    reads it back; a :class:`CodecError` naming ``where`` for what Connect has no type of."""
    if isinstance(avro, list):
        members = [m for m in avro if m != "null"]
        if len(members) != 1:
            raise CodecError(f"{where}: Kafka Connect has no unions like {avro!r:.80}")
        return avro_to_connect(members[0], where, optional or len(members) < len(avro))
    node: Mapping[str, Any] = {"type": avro} if isinstance(avro, str) else avro
    kind = node.get("type")
    if isinstance(kind, dict | list):
        return avro_to_connect(kind, where, optional)
    block: dict[str, Any]
    logical = node.get("logicalType")
    if logical == "decimal":
        block = {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {
                "scale": str(node.get("scale", 0)),
                "connect.decimal.precision": str(node.get("precision")),
            },
        }
    elif (
        isinstance(logical, str) and logical in AVRO_LOGICAL_CONNECT and "connect.name" not in node
    ):
        connect_type, name = AVRO_LOGICAL_CONNECT[logical]
        block = {"type": connect_type, "name": name}
    elif kind in ("record", "error"):
        name = node.get("name", "")
        space = node.get("namespace")
        fields = []
        for avro_field in node.get("fields", []):
            child = avro_to_connect(avro_field["type"], f"{where}.{avro_field['name']}")
            own = avro_field.get("connect.parameters")
            if isinstance(own, Mapping):
                # A named type shared by several columns (connect_to_avro) carries the first
                # one's parameters; each later field keeps its own.
                child["parameters"] = dict(own)
            default = avro_field.get("default")
            if default is not None:
                # Avro spells bytes defaults as ISO-8859-1 text, Connect's JSON as base64.
                if child["type"] == "bytes" and isinstance(default, str):
                    default = base64.b64encode(default.encode("latin-1")).decode("ascii")
                child["default"] = default
            fields.append({**child, "field": avro_field["name"]})
        block = {"type": "struct", "name": f"{space}.{name}" if space else name, "fields": fields}
    elif kind == "array":
        block = {"type": "array", "items": avro_to_connect(node["items"], f"{where}[]")}
    elif kind == "map":
        values = avro_to_connect(node["values"], f"{where}{{}}")
        block = {"type": "map", "keys": {"type": "string", "optional": False}, "values": values}
    elif kind == "enum":
        symbols = ",".join(node.get("symbols", []))
        block = {
            "type": "string",
            "name": "io.debezium.data.Enum",
            "parameters": {"allowed": symbols},
        }
    elif kind == "fixed":
        block = {"type": "bytes"}
    elif isinstance(kind, str) and kind in _AVRO_PRIMITIVE:
        block = {"type": node.get("connect.type", _AVRO_PRIMITIVE[kind])}
    else:
        raise CodecError(f"{where}: Avro type {kind!r} has no Kafka Connect type")
    for prop, key in (
        ("connect.name", "name"),
        ("connect.version", "version"),
        ("connect.doc", "doc"),
    ):
        if prop in node:
            block[key] = node[prop]
    if isinstance(node.get("connect.parameters"), Mapping):
        block["parameters"] = dict(node["connect.parameters"])
    block["optional"] = optional
    return block


def _written(schema: ConnectSchema, value: Any, path: str) -> Any:
    """``value`` as Connect JSON for ``schema``, read back once: nothing is written that a
    reader of the schema would refuse."""
    written = _connect_json(schema, value, path)
    try:
        connect_value(schema, written, path=path)
    except SchemaError as exc:
        raise CodecError(f"does not fit its Kafka Connect schema: {exc}") from None
    return written


def _connect_json(schema: ConnectSchema, value: Any, path: str) -> Any:
    """``value`` (structured data) as Kafka Connect's JSON for ``schema``."""
    where = path or "value"
    if value is None:
        return None
    if schema.semantic is not None:
        try:
            return schema.semantic.write(value, schema.parameters)
        except (ValueError, TypeError, OverflowError) as exc:
            raise CodecError(f"{where}: cannot be written as {schema.name}: {exc}") from None
    if schema.type == "struct":
        if not isinstance(value, Mapping):
            raise CodecError(f"{where}: expected an object for a struct, got {json_kind(value)}")
        names = {name for name, _ in schema.fields}
        extra = [name for name in value if name not in names]
        if extra:
            raise CodecError(f"{where}: {extra[0]!r} is not a field of its schema")
        prefix = f"{path}." if path else ""
        return {
            name: _connect_json(child, value.get(name), prefix + name)
            for name, child in schema.fields
        }
    if schema.type == "array" and isinstance(value, list):
        assert schema.items is not None
        items = schema.items
        return [_connect_json(items, item, f"{where}[{n}]") for n, item in enumerate(value)]
    if schema.type == "map" and isinstance(value, Mapping):
        assert schema.values is not None
        values = schema.values
        return {k: _connect_json(values, v, f"{where}.{k}") for k, v in value.items()}
    if schema.type == "bytes" and isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if schema.type in ("float32", "float64") and isinstance(value, Decimal):
        return float(value)
    return value
