"""Writing records as Debezium change events (JSON): Conduit's reverse mapping, and with
``schemas.enable`` the Kafka Connect schema blocks (:mod:`.connect_blocks`) around key and
value, each value read back once against its block."""

from __future__ import annotations

import base64
import math
from abc import abstractmethod
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import orjson

from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium.connect_blocks import (
    avro_to_connect,
    envelope_block,
    infer_struct,
)
from cdc_connectors.formats.debezium.envelope import (
    CONNECTOR_TEXT_MEMBERS,
    LETTERS,
    TEXT_MEMBERS,
    TIME_FIELDS,
)
from cdc_connectors.formats.debezium.reading import INTEGER, load_json
from cdc_connectors.formats.debezium.row_schemas import RowSchemas
from cdc_connectors.opencdc import CodecError, Record, structured
from cdc_connectors.opencdc.data import Data
from cdc_connectors.opencdc.json_codec import MAX_DEPTH, json_default
from cdc_connectors.opencdc.jsonkinds import json_kind
from cdc_connectors.schema import avro_values, float32, framing
from cdc_connectors.schema.connect import ConnectSchema, connect_value, parse_connect_schema
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.subjects import Part

__all__ = ["EnvelopeWriter", "connect_json", "envelope_times"]

_RAW_DATA_KEY = "opencdc.rawData"  # Conduit's name for raw data that is no JSON object
_NANOS_PER = (1_000_000, 1_000, 1)  # of each of TIME_FIELDS


def envelope_times(nanos: int | None) -> dict[str, int | None]:
    """The envelope's ``ts_ms``, ``ts_us`` and ``ts_ns`` of an instant in nanoseconds (each
    rounded down; all ``None`` without one), as Debezium 2.6 and later write them: the
    coarser one for the readers that know no other, the finest so that no digit is lost;
    one a 64-bit long does not hold (an instant past 2262 in nanoseconds) ``None``."""
    if nanos is None:
        return dict.fromkeys(TIME_FIELDS)
    found: dict[str, int | None] = {}
    for name, per in zip(TIME_FIELDS, _NANOS_PER, strict=True):
        count = nanos // per
        found[name] = count if -(2**63) <= count < 2**63 else None  # (a long holds it)
    return found


class EnvelopeWriter(RowSchemas):
    """The writing side of :class:`~cdc_connectors.formats.debezium.DebeziumJsonFormat`:
    ``op`` from the operation, ``before``/``after``, ``source`` and ``transaction`` from
    ``<prefix>.*`` metadata, ``ts_ms``, ``ts_us`` and ``ts_ns`` from ``opencdc.readAt``."""

    schemas_enable: bool
    # (subject, version) of a registered Avro schema -> its Connect block, for writing
    _connect_blocks: dict[tuple[str, int], dict[str, Any]]

    @property
    @abstractmethod
    def prefix(self) -> str:
        """The metadata prefix of the dialect."""

    def encode(self, record: Record) -> Message:
        letter = LETTERS.get(record.operation)
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
        transaction = _from_metadata(
            metadata, f"{self.prefix}.transaction.", TEXT_MEMBERS["transaction"]
        )
        payload["transaction"] = transaction or None
        payload.update(envelope_times(metadata.read_at))
        own = (
            f"{self.prefix}.source.",
            f"{self.prefix}.transaction.",
            f"{self.prefix}.unavailable.",
        )
        for name, text in sorted(metadata.items()):
            if name.startswith(f"{self.prefix}.") and not name.startswith(own):
                payload.setdefault(name[len(self.prefix) + 1 :], _metadata_value(text))
        if not self.schemas_enable:
            return Message(value=_dumps(payload), key=key_bytes(key, None))
        collection = metadata.collection
        envelope = envelope_block(self._row_blocks(record, before, after), payload, collection)
        parsed = _parse_for_writing(envelope, "value schema")
        value = {"schema": envelope, "payload": connect_json(parsed, payload)}
        key_block = None
        if isinstance(key, dict):
            key_block = self._row_block(record, "key", [key])
            if key_block is not None and collection:
                key_block.setdefault("name", f"{collection}.Key")
        return Message(value=_dumps(value), key=key_bytes(key, key_block))

    def message_key(self, key: Data) -> bytes | None:
        """The Kafka key :meth:`encode` writes for a record's ``key`` without schemas (a raw
        key of a record whose metadata names no schema); :class:`CodecError` for one it
        refuses."""
        if isinstance(key, bytes):
            key = self._readable(Record(key=key), key, "key", part="key", raw_as_is=True)
        if isinstance(key, dict):
            structured.check(key, "key", budget=MAX_DEPTH)
        return key_bytes(key, None)

    def source_for(self, metadata: Mapping[str, str]) -> dict[str, Any]:
        """The ``source`` block of a record: ``<prefix>.source.*``, else (as Conduit writes
        it) the record's whole metadata; members in name order."""
        prefix = f"{self.prefix}.source."
        texts = TEXT_MEMBERS["source"] | CONNECTOR_TEXT_MEMBERS.get(
            metadata.get(f"{prefix}connector", ""), frozenset()
        )
        source = _from_metadata(metadata, prefix, texts)
        return source if source else dict(sorted(metadata.items()))

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
            parsed = load_json(data, where)
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
        first, second = (infer_struct([image], "payload") for image in images)
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
        return infer_struct(images, "payload" if part == "payload" else "key")


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value, default=json_default)
    except TypeError as exc:
        raise CodecError(f"cannot be written as JSON: {exc}") from None


def key_bytes(key: Any, block: dict[str, Any] | None) -> bytes | None:
    """The Kafka key of a record's key (structured, raw or none), with its Connect
    ``block`` around it when schemas are written."""
    if key is None or isinstance(key, bytes):
        return key
    if block is None:
        return _dumps(key)
    parsed = _parse_for_writing(block, "key schema")
    return _dumps({"schema": block, "payload": connect_json(parsed, key, "key")})


def _from_metadata(
    metadata: Mapping[str, str], prefix: str, texts: frozenset[str]
) -> dict[str, Any]:
    """The members named ``<prefix><member>`` in metadata, in name order: metadata is a map
    (``map<string, string>`` in OpenCDC protobuf), whose order is no part of a record.
    Those named in ``texts`` (Debezium's strings) stay text; others are read back as JSON."""
    members = {}
    for name, text in sorted(metadata.items()):
        if name.startswith(prefix):
            member = name[len(prefix) :]
            members[member] = text if member in texts else _metadata_value(text)
    return members


def _metadata_value(text: str) -> Any:
    """A metadata string back as a JSON value: integers, objects, arrays; else the text."""
    if INTEGER.fullmatch(text) and -(2**63) <= int(text) < 2**63:
        return int(text)
    if text[:1] in ("{", "["):
        try:
            return load_json(text.encode(), "metadata")
        except CodecError:
            return text
    return text


def _parse_for_writing(block: Mapping[str, Any], what: str) -> ConnectSchema:
    try:
        return parse_connect_schema(block)
    except SchemaError as exc:
        raise CodecError(f"{what}: {exc}") from None


def connect_json(schema: ConnectSchema, value: Any, path: str = "") -> Any:
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
    if schema.type in ("float32", "float64") and isinstance(value, int | float | Decimal):
        return _float_of(value, schema.type, where)
    return value


def _float_of(value: int | float | Decimal, kind: str, where: str) -> Any:
    """A number for a ``float32`` or ``float64`` field, as the JSON number written; a
    CodecError where the field would not read back as it (more digits than a double keeps,
    an integer past 2^53, a number a 32-bit float does not hold: ``16777217``, ``1e-46``)."""
    if isinstance(value, bool):
        return value  # (the read-back check refuses it, as any non-number)
    if isinstance(value, Decimal):
        number = float(value) if value.is_finite() else math.nan
        if not (math.isfinite(number) and Decimal(repr(number)) == value):
            raise CodecError(f"{where}: {value} would change as a {kind} (it reads as {number!r})")
    else:
        number = value
    if kind == "float32" and not float32.holds(number):
        raise CodecError(f"{where}: {value} would change as a float32 (32 bits)")
    return float(number) if isinstance(value, Decimal) else value
