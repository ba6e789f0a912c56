"""Huawei CDL JSON (``cdl-json``): CDL's change messages as OpenCDC records (decode only).

A message value is Kafka Connect's envelope ``{"schema": ..., "payload": ...}`` (or the
bare payload); ``payload.message_version`` says which of CDL's two layouts it is.

``message_version`` ``1.0``, CDL JSON:

| CDL field | OpenCDC |
|---|---|
| ``OPERATION`` ``INSERT`` / ``UPDATE`` / ``DELETE`` | ``create`` / ``update`` / ``delete`` |
| ``data`` | ``payload.after`` |
| ``before`` | ``payload.before`` |
| ``unique`` | ``key`` (structured) |
| ``SEG_OWNER`` + ``TABLE_NAME`` | ``opencdc.collection`` = ``SEG_OWNER.TABLE_NAME`` |
| ``TIMESTAMP`` (ms) | ``opencdc.createdAt`` (ns) |
| (none) | ``opencdc.readAt``: the time of decoding |
| ``transaction.properties`` ``[{name, value}]`` | ``cdl.<name>`` (``cdl.lsn``, ``cdl.txId``) |
| ``DATA_STORE``, ``LOB_COLUMNS``, ``message_type``, ``HEARTBEAT_IDENTIFIER`` | ``cdl.<field>`` |

The last row takes every other top-level field, ``OPERATION``, ``SEG_OWNER``,
``TABLE_NAME`` and ``TIMESTAMP`` too, so nothing of the message is lost.

``message_version`` ``2.0``, CDL's Debezium JSON, is read by
:class:`~cdc_connectors.formats.debezium.DebeziumJsonFormat` with the prefix ``cdl``:

| CDL field | OpenCDC |
|---|---|
| ``op`` ``c`` / ``u`` / ``d`` / ``r`` | ``create`` / ``update`` / ``delete`` / ``snapshot`` |
| ``after`` / ``before`` | ``payload.after`` / ``payload.before`` |
| ``unique`` (typed by its schema) | ``key`` (structured) |
| ``source.db`` + ``source.schema`` + ``source.table`` | ``opencdc.collection``, dot-joined |
| ``source.ts_ms`` | ``opencdc.createdAt`` (ns) |
| ``ts_ms`` | ``opencdc.readAt`` (ns; the time of decoding without it) |
| ``source.<field>`` | ``cdl.source.<field>`` |
| ``transaction.<field>`` | ``cdl.transaction.<field>`` |
| ``message_version``, ``message_type``, ``LOB_COLUMNS``, ... | ``cdl.<field>`` |

The last row takes every top-level field not named above; ``op`` ``t`` / ``m`` and the
rest of Debezium's rules are as ``debezium-json`` reads them.

Shared by both: metadata values are text (numbers as JSON writes them, ``null`` left
out); ``{}`` for a row image means absent, as ``null``; where the envelope's ``schema``
describes the row images and ``unique``, the columns are converted with it
(:func:`~cdc_connectors.schema.connect.connect_value`: CDL's decimal strings become
exact ``Decimal``, timestamps ISO 8601 text; a column the schema lacks is an error).
A create, update or snapshot needs its row, a delete its ``before`` or ``unique``.
Without ``unique`` the key is the Kafka key (structured when it is a JSON object, raw
bytes otherwise), else the ``key.fields`` columns of the row, else none. A heartbeat (no
operation and no row) is skipped as ``heartbeat``; a tombstone (no value) is skipped as
``tombstone``, or with ``tombstones=delete`` becomes a key-only ``delete``.
``position`` is the message's place (``file:line``, ``topic/partition/offset``) as
UTF-8 bytes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, ClassVar

import orjson

from cdc_connectors.formats.base import Format, Message, SkipMessage
from cdc_connectors.formats.debezium.envelope import Envelope
from cdc_connectors.formats.debezium.json_format import DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record
from cdc_connectors.opencdc.data import Data
from cdc_connectors.opencdc.json_codec import json_error, load_exact
from cdc_connectors.schema.avro_values import to_structured
from cdc_connectors.schema.connect import ConnectSchema, connect_value, parse_connect_schema
from cdc_connectors.schema.errors import SchemaError

__all__ = ["CdlDebeziumJson", "CdlJsonFormat"]

PREFIX = "cdl"
_OPERATIONS = {"INSERT": Operation.CREATE, "UPDATE": Operation.UPDATE, "DELETE": Operation.DELETE}
# Only to check that a change carries its row; Debezium's mapping does the rest.
_DEBEZIUM_OPERATIONS = {
    "c": Operation.CREATE,
    "u": Operation.UPDATE,
    "d": Operation.DELETE,
    "r": Operation.SNAPSHOT,
}
# Payload fields that become the record itself rather than cdl.* metadata.
_ROW_FIELDS = frozenset({"data", "before", "unique", "transaction"})
# Parsed Connect schemas by their JSON text: a topic repeats a handful of schemas.
_SCHEMA_CACHE_SIZE = 64


class CdlDebeziumJson(DebeziumJsonFormat):
    """CDL's Debezium JSON (2.0): Debezium's mapping, metadata under ``cdl.*``; ``unique``
    is the record's key (:meth:`CdlJsonFormat.decode` passes it in as the key). Described
    by its envelope alone, so the columnar path reads it too."""

    name = "cdl-json"
    writable = False
    envelope = Envelope(prefix=PREFIX, key_field="unique", marks={"message_version": "2.0"})


class CdlJsonFormat(Format):
    """Huawei CDL JSON, ``message_version`` 1.0 and 2.0 (module docstring)."""

    name = "cdl-json"
    writable = False
    carries_schemas = True
    options: ClassVar[Mapping[str, str]] = {
        "tombstones": "skip (default): count and drop a message without value; "
        "delete: a key-only delete record",
        "key.fields": "comma-separated columns of the row that form the key when a "
        "message has neither 'unique' nor a Kafka key",
    }

    def configure(self) -> None:
        # 2.0 is Debezium JSON: the Debezium format reads it, and checks the shared options.
        self._debezium = CdlDebeziumJson(self.settings, self.registry_url)
        self.key_fields = self._debezium.key_fields
        self._schemas: dict[bytes, ConnectSchema] = {}

    @property
    def v2(self) -> CdlDebeziumJson:
        """What reads ``message_version`` 2.0: Debezium's mapping, as configured here."""
        return self._debezium

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_schemas"] = {}  # parsed schemas hold functions: parsed again where used
        return state

    # --- reading ---------------------------------------------------------------------------

    def decode(self, message: Message) -> list[Record]:
        position = message.where.encode("utf-8")
        envelope = None if message.value is None else _load(message.value, "value")
        if envelope is None:
            # a tombstone: Debezium's rules (skipped, or a key-only delete)
            records = self._debezium.decode(
                Message(None, message.key, message.headers, message.where)
            )
        else:
            block, payload = _unwrap(envelope)
            version = payload.get("message_version")
            if version == "1.0":
                records = [self._decode_v1(block, payload, message)]
            elif version == "2.0":
                records = self._decode_v2(envelope, block, payload, message)
            elif version is None:
                raise CodecError("payload.message_version: missing (CDL writes 1.0 or 2.0)")
            else:
                raise CodecError(
                    f"payload.message_version: unknown version {_shown(version)} "
                    "(CDL JSON is 1.0, CDL's Debezium JSON 2.0)"
                )
        for record in records:
            record.position = position
        return records

    def encode(self, record: Record) -> Message:
        raise CodecError(f"format {self.name!r} is read-only: records cannot be written as CDL")

    def _schema(self, block: Any) -> ConnectSchema | None:
        if block is None:
            return None
        text = orjson.dumps(block, default=_json_default)
        parsed = self._schemas.get(text)
        if parsed is None:
            try:
                parsed = parse_connect_schema(block)
            except SchemaError as exc:
                raise CodecError(f"not a Kafka Connect schema: {exc}") from None
            if parsed.type != "struct":
                raise CodecError(f"schema: the payload's schema is a struct, not {parsed.type}")
            if len(self._schemas) >= _SCHEMA_CACHE_SIZE:
                self._schemas.clear()
            self._schemas[text] = parsed
        return parsed

    def _decode_v1(self, block: Any, payload: dict[str, Any], message: Message) -> Record:
        schema = self._schema(block)
        operation = payload.get("OPERATION")
        after = _image(payload, "data", schema)
        before = _image(payload, "before", schema)
        if operation is None:
            if after is None and before is None:
                raise SkipMessage("heartbeat")
            raise CodecError("payload.OPERATION: missing in a message that carries a row")
        if not isinstance(operation, str) or operation not in _OPERATIONS:
            raise CodecError(
                f"payload.OPERATION: unknown operation {_shown(operation)} "
                "(expected INSERT, UPDATE or DELETE)"
            )
        unique = _image(payload, "unique", schema)
        _check_rows(operation, _OPERATIONS[operation], before, after, unique, "payload.data")
        metadata = {
            f"{PREFIX}.{name}": _text(value)
            for name, value in payload.items()
            if name not in _ROW_FIELDS and value is not None
        }
        metadata.update(_transaction_properties(payload.get("transaction")))
        owner = _optional_str(payload, "SEG_OWNER")
        table = _required_str(payload, "TABLE_NAME")
        collection = f"{owner}.{table}" if owner else table
        created_at = _millis(payload.get("TIMESTAMP"), "payload.TIMESTAMP") * 1_000_000
        key = self._key_v1(unique, before, after, message)
        if self.registry_url and block is not None:
            self._name_v1(block, metadata, collection, after or before, unique)
        return Record.new(
            _OPERATIONS[operation],
            key=key,
            before=before,
            after=after,
            metadata=metadata,
            collection=collection,
            created_at=created_at,
            read_at=time.time_ns(),
        )

    def _name_v1(
        self,
        block: Any,
        metadata: dict[str, str],
        collection: str,
        row: dict[str, Any] | None,
        unique: dict[str, Any] | None,
    ) -> None:
        """With a registry, the row's schema (the ``data`` struct of the message's schema,
        else ``before``'s) and the key's (``unique``'s) registered and named in
        ``metadata``, as Debezium JSON (and so 2.0) names them: the ``avro`` and
        ``protobuf`` destinations then write every row of a table with its table's schema,
        not one inferred from each row's values (which a registry refuses as soon as a
        column is null in one row and not in the next)."""
        debezium = self._debezium
        if row is not None:
            found = _field_block(block, "data") or _field_block(block, "before")
            if found is not None:
                schema = debezium.row_schema(found, "schema data")
                debezium.name_schema(metadata, "payload", schema, collection)
        if unique is not None:
            found = _field_block(block, "unique")
            if found is not None:
                schema = debezium.row_schema(found, "schema unique")
                debezium.name_schema(metadata, "key", schema, collection)

    def _key_v1(
        self,
        unique: dict[str, Any] | None,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        message: Message,
    ) -> Data:
        """``unique``, else the Kafka key, else the ``key.fields`` columns, else none
        (the order Debezium JSON, and so 2.0, follows)."""
        if unique is not None:
            return unique
        if message.key is not None:
            return _kafka_key(message.key)
        if not self.key_fields:
            return None
        row = before if after is None else after
        if row is None:
            raise CodecError("key.fields: a delete without 'before' has no row to take them from")
        missing = [name for name in self.key_fields if name not in row]
        if missing:
            raise CodecError(
                f"key.fields: column {missing[0]!r} is not in the row "
                f"(columns: {', '.join(sorted(row)) or 'none'})"
            )
        return {name: row[name] for name in self.key_fields}

    def _decode_v2(
        self, envelope: dict[str, Any], block: Any, payload: dict[str, Any], message: Message
    ) -> list[Record]:
        if payload.get("op") is None:
            if _absent(payload.get("before")) and _absent(payload.get("after")):
                raise SkipMessage("heartbeat")
            raise CodecError("payload.op: missing in a message that carries a row")
        op = payload["op"]
        unique = payload.get("unique")
        operation = _DEBEZIUM_OPERATIONS.get(op) if isinstance(op, str) else None
        if operation is not None:
            before, after = payload.get("before"), payload.get("after")
            _check_rows(op, operation, before, after, unique, "payload.after")
        key: Any
        if _absent(unique):
            key = _key_json(message.key)
        elif isinstance(unique, dict):
            # A Connect envelope of its own, so Debezium types it with its schema.
            key = {"payload": unique}
            unique_block = _field_block(block, "unique")
            if unique_block is not None:
                key["schema"] = unique_block
        else:
            raise CodecError(f"payload.unique: expected an object or null, got {_kind(unique)}")
        return self._debezium.records_from_envelope(envelope, key, message)


def _load(data: bytes, what: str) -> Any:
    """JSON with every number exact (as OpenCDC JSON reads it); CodecError naming ``what``."""
    try:
        try:
            return load_exact(data)
        except orjson.JSONDecodeError as exc:
            raise CodecError(f"invalid JSON: {json_error(exc, data)}") from None
    except CodecError as exc:
        raise CodecError(f"{what}: {exc.reason}") from None


def _unwrap(envelope: Any) -> tuple[Any, dict[str, Any]]:
    """The envelope's ``schema`` block (``None`` without one) and its ``payload``."""
    if not isinstance(envelope, dict):
        raise CodecError(f"value: a CDL message is a JSON object, not {_kind(envelope)}")
    if "payload" not in envelope:
        return None, envelope  # schemas.enable=false: the payload alone
    extra = sorted(set(envelope) - {"schema", "payload"})
    if extra:
        raise CodecError(
            f"value: {extra[0]!r} beside 'payload': an envelope holds schema and payload only"
        )
    payload = envelope["payload"]
    if not isinstance(payload, dict):
        raise CodecError(f"payload: expected an object, got {_kind(payload)}")
    return envelope.get("schema"), payload


def _key_json(data: bytes | None) -> dict[str, Any] | bytes | None:
    """The Kafka key as a JSON object (a Connect envelope left whole), else its raw bytes."""
    if data is None:
        return None
    try:
        obj = _load(data, "key")
    except CodecError:
        return data  # not JSON: an opaque key, kept as it is
    if isinstance(obj, dict):
        document: dict[str, Any] = obj
        return document
    return data


def _kafka_key(data: bytes) -> Data:
    """The Kafka key: structured when it is a JSON object (a Connect envelope unwrapped),
    raw bytes otherwise."""
    key = _key_json(data)
    if isinstance(key, dict) and "payload" in key and set(key) <= {"schema", "payload"}:
        inner = key["payload"]
        return inner if isinstance(inner, dict) else data
    return key


def _field_block(block: Any, name: str) -> Any:
    """The schema block of the payload field ``name``; ``None`` when there is none."""
    fields = block.get("fields") if isinstance(block, dict) else None
    for field in fields if isinstance(fields, list) else ():
        if isinstance(field, dict) and field.get("field") == name:
            return field
    return None


def _absent(image: Any) -> bool:
    """``null`` or ``{}``: both mean "no image", as in every format here."""
    return image is None or image == {}


def _image(
    payload: dict[str, Any], name: str, schema: ConnectSchema | None
) -> dict[str, Any] | None:
    """A row image (or ``unique``) of the payload: ``None`` when absent, null or ``{}``;
    converted with its schema when the envelope has one."""
    where = f"payload.{name}"
    value = payload.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CodecError(f"{where}: expected an object or null, got {_kind(value)}")
    if not value:
        return None
    row: dict[str, Any] = value
    column_schema = _field(schema, name)
    if column_schema is None:
        return row
    if column_schema.type != "struct":
        raise CodecError(f"{where}: the schema says {column_schema.type}, not a struct")
    known = {field for field, _ in column_schema.fields}
    extra = [column for column in row if column not in known]
    if extra:
        # connect_value would drop it: a column lost without a word
        raise CodecError(f"{where}.{extra[0]}: a column the message's schema does not have")
    try:
        converted = connect_value(column_schema, row, path=where)
    except SchemaError as exc:
        raise CodecError(str(exc)) from None
    structured: dict[str, Any] = to_structured(converted)
    return structured


def _field(schema: ConnectSchema | None, name: str) -> ConnectSchema | None:
    if schema is None:
        return None
    for field, child in schema.fields:
        if field == name:
            return child
    return None


def _check_rows(
    name: str, operation: Operation, before: Any, after: Any, unique: Any, after_field: str
) -> None:
    """A create, update or snapshot carries the row it writes; a delete names the row it
    removes (``before``, or at least ``unique``)."""
    if operation is Operation.DELETE:
        if _absent(before) and _absent(unique):
            raise CodecError(
                f"payload.before: missing: {name!r} (delete) without 'unique' needs the row "
                "it removes"
            )
    elif _absent(after):
        raise CodecError(f"{after_field}: missing: {name!r} ({operation}) needs the row it writes")


def _transaction_properties(transaction: Any) -> dict[str, str]:
    """``transaction.properties`` ``[{"name": ..., "value": ...}]`` as ``cdl.<name>``."""
    if transaction is None:
        return {}
    if not isinstance(transaction, dict):
        raise CodecError(f"payload.transaction: expected an object, got {_kind(transaction)}")
    properties = transaction.get("properties")
    if properties is None:
        return {}
    if not isinstance(properties, list):
        raise CodecError(
            f"payload.transaction.properties: expected an array, got {_kind(properties)}"
        )
    found: dict[str, str] = {}
    for number, item in enumerate(properties):
        where = f"payload.transaction.properties[{number}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise CodecError(f"{where}: expected an object with a string 'name'")
        if item.get("value") is not None:
            found[f"{PREFIX}.{item['name']}"] = _text(item["value"])
    return found


def _required_str(payload: dict[str, Any], name: str) -> str:
    value = payload.get(name)
    if not isinstance(value, str) or not value:
        what = "missing" if value is None else f"expected a non-empty string, got {_kind(value)}"
        raise CodecError(f"payload.{name}: {what}")
    return value


def _optional_str(payload: dict[str, Any], name: str) -> str | None:
    value = payload.get(name)
    if value is not None and not isinstance(value, str):
        raise CodecError(f"payload.{name}: expected a string, got {_kind(value)}")
    return value


def _millis(value: Any, where: str) -> int:
    if value is None:
        raise CodecError(f"{where}: missing (the time in Unix milliseconds)")
    if isinstance(value, bool) or not isinstance(value, int):
        raise CodecError(f"{where}: expected Unix milliseconds (an integer), got {_kind(value)}")
    return value


def _text(value: Any) -> str:
    """A metadata value: strings as they are, anything else as its JSON text."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=_json_default, option=orjson.OPT_SORT_KEYS).decode()


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return orjson.Fragment(str(value))  # exact, as it was written
    raise TypeError(f"type {type(value).__name__} has no JSON form")


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else _text(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | Decimal):
        return f"the number {_text(value)}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
