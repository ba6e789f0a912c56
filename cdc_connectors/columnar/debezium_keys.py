"""Kafka keys of Debezium JSON messages -> the record keys OpenCDC writers write, column by
column.

What ``DebeziumJsonFormat.decode`` makes of a Kafka key (:meth:`~cdc_connectors.formats.
debezium.DebeziumJsonFormat.kafka_key`), written for an OpenCDC destination
(:class:`Keys`: the record's ``key`` as the destination writes it, and the message key,
``data_to_bytes`` of it):

| Kafka key | record key | written |
|---|---|---|
| none | none | a constant |
| not starting with ``{`` or JSON whitespace (``abc``, ``5``) | raw: the bytes | as is |
| ``{"schema": <block>, "payload": {...}}``, a block met | structured, typed | from columns |
| flat objects of integers, strings, booleans, alike (no schema) | structured | from columns |
| anything else (other objects, other blocks) | per key | one by one |

A block is matched as the keys spell it, with or without spaces. Keys of a schema block are
read by
:class:`~cdc_connectors.spark.debezium_typed.TypedKeyReader` (Arrow's JSON reader).
A key whose text has a run of 19 digits goes one by one too (the per-message way refuses an
integer beyond 64 bits even in a raw key); so does a structured key with a schema when a
registry names schemas per message. A key the per-message way refuses is flagged: its
message is the caller's to send that way.
"""

from __future__ import annotations

import base64
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from cdc_connectors.columnar import base64text, wire
from cdc_connectors.columnar.json_text import joined, struct_text
from cdc_connectors.columnar.proto_records import NotColumnar, struct_body
from cdc_connectors.columnar.schema_block import learn_key, rows_by_prefix
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.debezium.row_schemas import RowSchema
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.data import Data
from cdc_connectors.opencdc.json_codec import data_to_bytes
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.opencdc.proto_codec import record_to_proto_bytes
from cdc_connectors.schema import framing
from cdc_connectors.schema.connect import ConnectSchema, parse_connect_schema
from cdc_connectors.spark.debezium_typed import TypedKeyReader, two_documents
from cdc_connectors.spark.json_blocks import read_lines, too_deep

__all__ = ["KeyColumns", "Keys", "merged", "raw_fields", "typed_fields"]

#: How the record's ``key`` is written: a ``opencdc.v1.Record`` key field, JSON text, or
#: not at all (a Debezium JSON event holds no key: only its message key is written).
Layout = Literal["proto", "json", "debezium"]
#: Key schemas kept readers for; the least recently used goes first.
MAX_SCHEMAS = 32
_LOOKS_PER_BATCH = 8
# First bytes of a key that may be a JSON object: '{' and JSON whitespace.
_MAYBE_OBJECT = np.zeros(256, dtype=bool)
_MAYBE_OBJECT[list(b"{ \t\n\r")] = True
_LONG_INTEGER = "[0-9]{19}"
# Connect's types of the JSON values a key without a schema may hold, as Arrow reads them.
_PLAIN_CONNECT = {pa.int64(): "int64", pa.string(): "string", pa.bool_(): "boolean"}
# One thread: a Spark Python worker has one core.
_READ_OPTIONS = pajson.ReadOptions(block_size=1 << 20, use_threads=False)


@dataclass
class Keys:
    """Each row's record key as the destination writes it (``fields``: the serialized
    ``key`` field of a ``Record``, or the key's JSON text), its message key (binary, null
    for none) and the rows only the per-message way writes."""

    fields: pa.Array
    message_keys: pa.Array
    refused: np.ndarray
    #: With a registry, the subject and version each row's key schema is named by
    #: (``opencdc.key.schema.*``, null for none; :meth:`KeyColumns.name`); ``None`` without.
    names: tuple[pa.Array, pa.Array] | None = None
    #: With a registry, the key schemas still to name and the rows of each.
    pending: list[tuple[RowSchema, np.ndarray]] = dataclass_field(default_factory=list)

    def take(self, rows: np.ndarray) -> Keys:
        """The keys of ``rows`` (indexes, ascending), renumbered; names still to give."""
        place = np.full(len(self.refused), -1, dtype=np.int64)
        place[rows] = np.arange(len(rows))
        pending = [(row, place[of][place[of] >= 0]) for row, of in self.pending]
        taken = pa.array(rows)
        return Keys(
            self.fields.take(taken),
            self.message_keys.take(taken),
            self.refused[rows],
            pending=[(row, of) for row, of in pending if len(of)],
        )


@dataclass
class _Schema:
    reader: TypedKeyReader | None  # None for keys without a schema block
    proto: object | None  # a StructWriter for the proto layout
    text: object  # a StructText
    row: RowSchema | None = None  # the block's schema, named per collection with a registry


class KeyColumns:
    """Kafka keys -> :class:`Keys` for one destination layout (module docstring)."""

    def __init__(
        self,
        fmt: DebeziumJsonFormat,
        layout: Layout,
        message_key: Callable[[Data], bytes | None] = data_to_bytes,
    ):
        """``message_key``: the message key the destination writes for a record's key,
        for keys read one by one (:class:`CodecError` for one it refuses)."""
        self.fmt = fmt
        self.layout: Layout = layout
        self.message_key = message_key
        # Debezium JSON writes a key's members in the order it read them: Arrow's
        # inference may order keys without a schema otherwise, so they go one by one.
        self.ordered = layout == "debezium"
        self._schemas: OrderedDict[bytes, _Schema | None] = OrderedDict()
        self._plain: dict[pa.StructType, _Schema | None] = {}

    def write(self, keys: pa.Array | None, count: int, name_later: bool = False) -> Keys:
        """The :class:`Keys` of ``keys`` (binary, one per message; ``None``: no keys).
        With a registry, keys of a schema block are written from columns only when their
        schema is to be named later (``name_later``, :meth:`name`: per collection, as
        ``decode`` names it, once the rows are decoded); else they go one by one."""
        if keys is None or keys.null_count == count:
            none = b"" if self.layout == "proto" else b"null"
            return Keys(
                pa.array([none] * count, pa.binary()),
                pa.nulls(count, pa.binary()),
                np.zeros(count, dtype=bool),
            )
        if keys.type != pa.binary():
            keys = keys.cast(pa.binary())
        valid = wire.valid(keys)
        sizes = wire.lengths(keys)
        first = np.zeros(count, dtype=np.uint8)
        offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[keys.offset :][:count]
        data = keys.buffers()[2]
        if data is not None and len(data):
            present = sizes > 0
            first[present] = np.frombuffer(data, dtype=np.uint8)[offsets[present]]
        long_integer = wire.mask(pc.match_substring_regex(keys, _LONG_INTEGER))
        raw = valid & ((sizes == 0) | ~_MAYBE_OBJECT[first]) & ~long_integer
        structured = valid & ~raw & ~long_integer & (first == ord("{"))
        structured &= ~two_documents(keys)  # read together, documents could shift keys
        fields: list[tuple[np.ndarray, pa.Array, pa.Array]] = []
        refused = np.zeros(count, dtype=bool)
        if raw.any():
            rows = np.flatnonzero(raw)
            fields.append((rows, *raw_fields(keys.take(pa.array(rows)), self.layout)))
        rest = valid & ~raw
        named = bool(self.fmt.registry_url)
        pending: list[tuple[RowSchema, np.ndarray]] = []
        if structured.any() and (not named or name_later):
            for schema, rows in self._schemas_of(keys, np.flatnonzero(structured)):
                found = self._structured(schema, keys.take(pa.array(rows)))
                if found is None:
                    continue
                written, field_texts, message_keys = found
                fields.append((rows[written], field_texts, message_keys))
                rest[rows[written]] = False
                if named:
                    if schema.row is None:
                        refused[rows[written]] = True  # the per-message way says why
                    else:
                        pending.append((schema.row, rows[written]))
        plain = rest & structured & ~_wrapped(keys)
        if plain.any() and not self.ordered:
            rows = np.flatnonzero(plain)
            found = self._schemaless(keys.take(pa.array(rows)))
            if found is not None:
                written, field_texts, message_keys = found
                fields.append((rows[written], field_texts, message_keys))
                rest[rows[written]] = False
        if rest.any():
            rows = np.flatnonzero(rest)
            field_texts, message_keys, bad = self._one_by_one(keys.take(pa.array(rows)))
            refused[rows] = bad
            fields.append((rows, field_texts, message_keys))
        read = merged(fields, count, refused, self.layout)
        read.pending = pending
        return read

    def name(self, keys: Keys, collections: pa.Array) -> Keys:
        """``keys`` with their schemas named (:attr:`Keys.names`), registered once per
        collection (each row's ``collections``); the rows of a schema the registry refuses
        are refused."""
        count = len(keys.refused)
        names = (np.full(count, None, dtype=object), np.full(count, None, dtype=object))
        refused = keys.refused.copy()
        for row, rows in keys.pending:
            if not self._name(row, collections, rows, names):
                refused[rows] = True
        return Keys(
            keys.fields,
            keys.message_keys,
            refused,
            (pa.array(names[0], pa.string()), pa.array(names[1], pa.string())),
        )

    def _name(
        self,
        row: RowSchema,
        collections: pa.Array,
        rows: np.ndarray,
        names: tuple[np.ndarray, np.ndarray],
    ) -> bool:
        """Names the key schema ``row`` of ``rows`` (registered once per collection) in
        ``names``; ``False`` when the registry refuses it."""
        of_rows = collections.take(pa.array(rows))
        for collection in pc.unique(of_rows).to_pylist():
            metadata = Metadata()
            try:
                self.fmt.name_schema(metadata, "key", row, collection)
                subject, version = framing.conduit_schema(metadata, "key") or ("", 0)
            except CodecError:
                return False
            same = wire.mask(
                pc.is_null(of_rows) if collection is None else pc.equal(of_rows, collection)
            )
            names[0][rows[same]] = subject
            names[1][rows[same]] = str(version)
        return True

    # --- raw keys ---------------------------------------------------------------------------

    # --- keys with a schema block -----------------------------------------------------------

    def _schemas_of(self, keys: pa.Array, rows: np.ndarray) -> list[tuple[_Schema, np.ndarray]]:
        """Each known key schema with the rows (of ``rows``) that start with its block."""
        return rows_by_prefix(keys, rows, self._schemas, self._learn, _LOOKS_PER_BATCH)

    def _learn(self, key: bytes | None) -> bytes | None:
        """The schema block prefix of a sample key, its reader now known (see
        :func:`~cdc_connectors.columnar.schema_block.learn_key`)."""
        return learn_key(self.fmt, key, self._schemas, self._schema, MAX_SCHEMAS)

    def _schema(
        self, block: dict[str, object], connect: ConnectSchema, prefix: bytes
    ) -> _Schema | None:
        try:
            reader = TypedKeyReader(block, connect, prefix)
            proto = struct_body(connect, reader.row_type) if self.layout == "proto" else None
            text = struct_text(connect, reader.row_type, ordered=self.ordered)
            row = self.fmt.key_schema(block) if self.fmt.registry_url else None
        except (ValueError, NotColumnar, CodecError):
            return None
        return _Schema(reader, proto, text, row)

    # --- keys without a schema block ---------------------------------------------------------

    def _schemaless(self, keys: pa.Array) -> tuple[np.ndarray, pa.Array, pa.Array] | None:
        """Keys that are flat JSON objects of integers, strings and booleans, every one
        with the same members (JsonConverter's ``schemas.enable=false``; alone or in its
        ``{"payload": ...}`` wrapper), written from columns; ``None`` when Arrow reads them
        otherwise (then they go one by one)."""
        count = len(keys)
        if too_deep(keys).any():
            return None
        joined = pc.binary_join(
            pa.ListArray.from_arrays(pa.array([0, count], pa.int32()), keys), b"\n"
        )
        try:
            table = read_lines(
                pa.py_buffer(joined[0].as_buffer().to_pybytes()), read_options=_READ_OPTIONS
            )
            if table.num_rows != count or not table.num_columns:
                return None
            typed = pa.StructArray.from_arrays(
                [column.combine_chunks() for column in table.columns], names=table.column_names
            )
            if table.column_names == ["payload"] and pa.types.is_struct(typed.type.field(0).type):
                typed = typed.field(0)  # {"payload": {...}}: the wrapper without its schema
            if not typed.type.num_fields:
                return None
            typed.validate(full=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        # A null may be a member that is not there: only keys with every member set.
        if typed.null_count or any(typed.field(n).null_count for n in range(typed.type.num_fields)):
            return None
        schema = self._plain_schema(typed.type)
        if schema is None:
            return None
        return typed_fields(schema.proto, schema.text, typed, np.zeros(count, dtype=bool))

    def _plain_schema(self, type_: pa.StructType) -> _Schema | None:
        """The writers of keys typed ``type_`` (Connect's types for JSON's), if it holds
        only integers, strings and booleans."""
        if type_ in self._plain:
            return self._plain[type_]
        fields = []
        for field in type_:
            connect = _PLAIN_CONNECT.get(field.type)
            if connect is None or field.name in ("schema", "payload"):
                self._plain[type_] = None
                return None
            fields.append({"type": connect, "optional": False, "field": field.name})
        block = {"type": "struct", "optional": False, "fields": fields}
        try:
            connect_schema = parse_connect_schema(block)
            proto = struct_body(connect_schema, type_) if self.layout == "proto" else None
            text = struct_text(connect_schema, type_)
        except (ValueError, NotColumnar):
            found = None
        else:
            found = _Schema(None, proto, text)
        self._plain[type_] = found
        return found

    def _structured(
        self, schema: _Schema, keys: pa.Array
    ) -> tuple[np.ndarray, pa.Array, pa.Array] | None:
        """The keys of one schema written from columns: which of them (indexes into
        ``keys``), their fields and message keys; ``None`` when Arrow cannot read them."""
        assert schema.reader is not None
        try:
            typed, bad = schema.reader.read(keys)
        except ValueError:
            return None
        return typed_fields(schema.proto, schema.text, typed, bad)

    # --- the rest, one by one ---------------------------------------------------------------

    def _one_by_one(self, keys: pa.Array) -> tuple[pa.Array, pa.Array, np.ndarray]:
        """Keys as :meth:`DebeziumJsonFormat.kafka_key` reads them, one by one."""
        bad = np.zeros(len(keys), dtype=bool)
        field_texts: list[bytes] = []
        message_keys: list[bytes | None] = []
        named = bool(self.fmt.registry_url)
        for n, key in enumerate(keys.to_pylist()):
            try:
                data, key_schema = self.fmt.kafka_key(key)
                if key_schema is not None and named:
                    raise CodecError("the key's schema is named per message")
                message_key = self.message_key(data)
                if self.layout == "proto":
                    field_texts.append(record_to_proto_bytes(Record(key=data)))
                elif self.layout == "debezium":
                    field_texts.append(message_key or b"null")
                elif isinstance(data, dict):
                    field_texts.append(message_key or b"")
                elif data is None:
                    field_texts.append(b"null")
                else:
                    field_texts.append(b'"' + base64.b64encode(data) + b'"')
                message_keys.append(message_key)
            except CodecError:
                bad[n] = True
                field_texts.append(b"")
                message_keys.append(None)
        return pa.array(field_texts, pa.binary()), pa.array(message_keys, pa.binary()), bad


def merged(
    parts: list[tuple[np.ndarray, pa.Array, pa.Array]],
    count: int,
    refused: np.ndarray,
    layout: Layout,
) -> Keys:
    """The :class:`Keys` of ``count`` rows from parts of (rows, fields, message keys); a
    row in no part has no key."""
    none = b"" if layout == "proto" else b"null"
    rows = np.concatenate([np.flatnonzero(~_covered(parts, count)), *[p[0] for p in parts]])
    missing = count - sum(len(p[0]) for p in parts)
    nones = pa.array([none] * missing, pa.binary())
    field_texts = pa.concat_arrays([nones, *[p[1] for p in parts]])
    message_keys = pa.concat_arrays([pa.nulls(missing, pa.binary()), *[p[2] for p in parts]])
    order = np.empty(count, dtype=np.int64)
    order[rows] = np.arange(count)
    take = pa.array(order)
    return Keys(field_texts.take(take), message_keys.take(take), refused)


def raw_fields(keys: pa.Array, layout: Layout) -> tuple[pa.Array, pa.Array]:
    """Raw keys (binary) as the record's ``key`` is written, and as message keys."""
    if layout == "debezium":
        return keys, keys
    if layout == "json":
        return joined(b'"', base64text.encode(keys), b'"'), keys
    data = wire.Pieces.of(keys)
    inner = wire.segments([wire.constant(b"\x0a", len(keys)), wire.varint(data.sizes)]) + data
    return wire.framed(b"\x22", inner).joined(), keys


def typed_fields(
    proto: object | None, text: object, typed: pa.Array, bad: np.ndarray
) -> tuple[np.ndarray, pa.Array, pa.Array] | None:
    """Structured keys of a typed struct column, written by their ``proto`` body writer
    (:func:`~cdc_connectors.columnar.proto_records.struct_body`, ``None`` for the JSON
    layout) and their ``text`` writer (:func:`~cdc_connectors.columnar.json_text.
    struct_text`): which of them (not ``bad``, not refused), their fields and message keys;
    ``None`` when none is."""
    texts, refused = text(typed)  # type: ignore[operator]
    bad |= refused
    if proto is not None:
        body, refused = proto(typed, ~bad)  # type: ignore[operator]
        bad |= refused
        struct = wire.framed(b"\x12", body, ~bad)
        field_texts = wire.framed(b"\x22", struct, ~bad).joined()
    else:
        field_texts = texts
    written = np.flatnonzero(~bad)
    if not len(written):
        return None
    if len(written) < len(typed):
        take = pa.array(written)
        return written, field_texts.take(take), texts.take(take)
    return written, field_texts, texts


def _wrapped(keys: pa.Array) -> np.ndarray:
    """Keys that may carry a schema block (a ``schema`` member)."""
    found: np.ndarray = wire.mask(pc.match_substring(keys, '"schema"'))
    return found


def _covered(parts: list[tuple[np.ndarray, pa.Array, pa.Array]], count: int) -> np.ndarray:
    covered = np.zeros(count, dtype=bool)
    for rows, _, _ in parts:
        covered[rows] = True
    return covered
