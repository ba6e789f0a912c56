"""Confluent-framed Avro messages as Arrow columns: what the columnar Avro converters share.

- :func:`frames` finds the messages framed as Confluent's serializers frame them (magic byte,
  schema id, body) and their schema ids, with numpy on the value buffer;
  :func:`schema_headers` the messages whose schema id is in a Kafka header instead;
- :class:`SchemaKeys` turns Kafka keys into the record keys the OpenCDC writers write: raw keys
  as they are, Avro keys of a record schema and Protobuf keys of a message decoded and
  written from columns;
- :func:`plain`, :func:`has_logical`, :func:`naive_times`, :func:`non_finite` tell what the
  columns write exactly as the per-message way does (its values follow Avro's logical types
  alone, JSON has no NaN, a local timestamp has no zone);
- :func:`together` merges the :class:`Columnar` parts of a batch in message order.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.debezium_keys import Keys, Layout, merged, raw_fields, typed_fields
from cdc_connectors.columnar.debezium_opencdc import Columnar
from cdc_connectors.columnar.json_text import struct_text
from cdc_connectors.columnar.kinds import column_kind
from cdc_connectors.columnar.proto_records import NotColumnar, struct_body
from cdc_connectors.columnar.protobuf_shapes import (
    FIRST_MESSAGE,
    connect_block,
    first_message,
    readable,
    unnamed_enums,
)
from cdc_connectors.formats.debezium import avro_to_connect
from cdc_connectors.opencdc import CodecError
from cdc_connectors.schema import avro_values, framing
from cdc_connectors.schema.connect import ConnectSchema, parse_connect_schema
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.protobuf import message_class
from cdc_connectors.spark.arrow_lists import item_rows, list_sizes
from cdc_connectors.spark.arrow_names import member
from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.debezium_typed import doubles_for_floats
from cdc_connectors.spark.envelope_columns import mask
from cdc_connectors.spark.protobuf_batch import ProtobufBatchDecoder

if TYPE_CHECKING:
    from cdc_connectors.registry.store import Resolved, SchemaStore

__all__ = [
    "HEADER",
    "SchemaKeys",
    "frames",
    "has_logical",
    "naive_times",
    "non_finite",
    "odd_uuids",
    "out_of_range",
    "plain",
    "same_logical_types",
    "schema_headers",
    "together",
    "uuid_fields",
]

#: Writer schemas kept decoders for; the least recently used goes first.
MAX_SCHEMAS = 32
#: The magic byte and a 4-byte schema id.
HEADER = 5
_MAGIC = 0
_MICROS_PER_DAY = 86_400_000_000
#: The counts of Python's first and last datetime (microseconds) and date (days).
_RANGES = {
    "timestamp": (-62_135_596_800_000_000, 253_402_300_799_999_999),
    "date": (-719_162, 2_932_896),
}
_CANONICAL_UUID = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
# Avro properties that name a Connect type without changing the value Avro reads.
_CONNECT_NAMES = ("connect.name", "connect.version", "connect.doc", "connect.parameters")


class Registered(Protocol):
    """A format that reads through a registry: its schema store."""

    @property
    def store(self) -> SchemaStore: ...


@dataclass
class _Key:
    """One key writer schema (a record or message): how its keys are read into a typed
    struct column (and the rows it does not take), and its writers."""

    writer: Resolved
    read: Callable[[list[bytes]], tuple[pa.StructArray, np.ndarray]]
    proto: object | None
    text: object
    #: A Protobuf key, whose index path must be [0] (the byte 0 after the id).
    protobuf: bool = False


class SchemaKeys:
    """Kafka keys -> :class:`Keys` for one destination layout: raw keys as they are (all of
    them with ``raw``); keys in Confluent's wire format of an Avro record or a Protobuf
    message (the file's first) from columns; a GUID-framed key, one of another schema or
    one that does not decode is refused (the per-message way)."""

    def __init__(self, fmt: Registered, layout: Layout, raw: bool = False):
        self.fmt = fmt  # its store is opened where the keys are read (not pickled)
        self.layout: Layout = layout
        self.raw = raw
        self._keys: OrderedDict[int, _Key | None] = OrderedDict()

    def key_of(self, schema_id: int) -> _Key | None:
        """The reader of the keys of writer schema ``schema_id`` (kept for the run), or
        ``None`` for a schema the columns do not read."""
        if schema_id in self._keys:
            self._keys.move_to_end(schema_id)
            return self._keys[schema_id]
        found = None
        try:
            writer = self.fmt.store.by_id(schema_id)
            if writer.schema_type == "AVRO":
                found = self._avro(writer)
            elif writer.schema_type == "PROTOBUF":
                found = self._protobuf(writer)
        except (CodecError, SchemaError, NotColumnar, ValueError, TypeError, KeyError):
            found = None
        except BaseException as exc:  # ptars panics (a PanicException) on what it cannot read
            if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
                raise
            found = None
        self._keys[schema_id] = found
        while len(self._keys) > MAX_SCHEMAS:
            self._keys.popitem(last=False)
        return found

    def _avro(self, writer: Resolved) -> _Key | None:
        shape = avro_values.standalone(writer)
        uuids = uuid_fields(shape)
        if not isinstance(shape, dict) or shape.get("type") != "record" or not shape.get("fields"):
            return None
        if uuids is None:
            return None
        connect = parse_connect_schema(avro_to_connect(plain(shape), "key"))
        decoder = AvroBatchDecoder(shape)
        if naive_times(decoder.arrow_type):
            return None
        row_type = doubles_for_floats(decoder.arrow_type)
        assert isinstance(row_type, pa.StructType)

        def read(keys: list[bytes]) -> tuple[pa.StructArray, np.ndarray]:
            decoded, problems = decoder.decode(keys, [HEADER] * len(keys))
            typed = decoded.cast(row_type)
            bad = np.array([p is not None for p in problems], dtype=bool) | non_finite(typed)
            return typed, bad | odd_uuids(typed, uuids) | out_of_range(connect, typed)

        return self._writers(writer, read, connect, row_type)

    def _protobuf(self, writer: Resolved) -> _Key | None:
        cls = message_class(writer.text, writer.references, (0,))
        if not readable(cls.DESCRIPTOR):
            return None
        decoder = ProtobufBatchDecoder(cls, exact=True)  # nanoseconds: the per-message way
        row_type = doubles_for_floats(decoder.arrow_type)
        assert isinstance(row_type, pa.StructType)
        connect = parse_connect_schema(connect_block(row_type, "key"))

        def read(keys: list[bytes]) -> tuple[pa.StructArray, np.ndarray]:
            decoded, problems = decoder.decode(keys, [FIRST_MESSAGE] * len(keys))
            bad = np.array([p is not None for p in problems], dtype=bool)
            bad |= unnamed_enums(cls.DESCRIPTOR, decoded)
            typed = decoded.cast(row_type)
            return typed, bad | non_finite(typed)

        found = self._writers(writer, read, connect, row_type)
        found.protobuf = True
        return found

    def _writers(
        self,
        writer: Resolved,
        read: Callable[[list[bytes]], tuple[pa.StructArray, np.ndarray]],
        connect: ConnectSchema,
        row_type: pa.StructType,
    ) -> _Key:
        proto = struct_body(connect, row_type) if self.layout == "proto" else None
        return _Key(writer, read, proto, struct_text(connect, row_type))

    def write(
        self, keys: pa.Array | None, count: int
    ) -> tuple[Keys, list[tuple[np.ndarray, Resolved]]]:
        """The record keys of the messages' Kafka keys (``None``: no keys), and the rows of
        each key schema (for naming it)."""
        if keys is None:
            return merged([], count, np.zeros(count, dtype=bool), self.layout), []
        if keys.type != pa.binary():
            keys = keys.cast(pa.binary())
        if self.raw:
            rows = np.flatnonzero(wire.valid(keys))
            parts = (
                [(rows, *raw_fields(keys.take(pa.array(rows)), self.layout))] if len(rows) else []
            )
            return merged(parts, count, np.zeros(count, dtype=bool), self.layout), []
        valid = wire.valid(keys)
        starts = np.zeros(count, dtype=np.int16) - 1
        first = pc.binary_slice(keys, 0, 1)
        for byte in (0, 1):
            starts[wire.mask(pc.equal(first, pa.scalar(bytes([byte]), pa.binary())))] = byte
        # A key that does not start with a magic byte is raw; a GUID-framed one and an
        # Avro key the columns do not write go the per-message way.
        raw = valid & (starts < 0)
        refused = valid & (starts == 1)
        parts = []
        named: list[tuple[np.ndarray, Resolved]] = []
        if raw.any():
            rows = np.flatnonzero(raw)
            parts.append((rows, *raw_fields(keys.take(pa.array(rows)), self.layout)))
        framed, ids = frames(keys)
        framed &= valid & (starts == 0)
        refused |= valid & (starts == 0) & ~framed  # too short for a frame
        for schema_id in np.unique(ids[framed]):
            rows = np.flatnonzero(framed & (ids == schema_id))
            key = self.key_of(int(schema_id))
            if key is None:
                refused[rows] = True
                continue
            if key.protobuf:
                # another message of the file than its first: the per-message way
                first = first_message(keys.take(pa.array(rows)))
                refused[rows[~first]] = True
                rows = rows[first]
                if not len(rows):
                    continue
            typed, bad = key.read(keys.take(pa.array(rows)).to_pylist())
            found = typed_fields(key.proto, key.text, typed, bad)
            written = np.zeros(len(rows), dtype=bool)
            if found is not None:
                written[found[0]] = True
                parts.append((rows[found[0]], found[1], found[2]))
                named.append((rows[found[0]], key.writer))
            refused[rows[~written]] = True
        return merged(parts, count, refused, self.layout), named


def frames(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Which values start with Confluent's magic byte and a schema id, and each one's id
    (0 for the others)."""
    count = len(values)
    sizes = wire.lengths(values)
    framed = wire.valid(values) & (sizes >= HEADER)
    ids = np.zeros(count, dtype=np.int64)
    data = values.buffers()[2]
    if not framed.any() or data is None:
        return framed, ids
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[values.offset :][:count]
    buffer = np.frombuffer(data, dtype=np.uint8)
    starts = offsets[framed].astype(np.int64)
    framed[framed] = buffer[starts] == _MAGIC
    starts = offsets[framed].astype(np.int64)
    found = np.zeros(len(starts), dtype=np.int64)
    for at in range(1, HEADER):
        found = (found << 8) | buffer[starts + at]
    ids[framed] = found
    framed &= ids > 0
    return framed, ids


def schema_headers(headers: pa.Array) -> np.ndarray:
    """Messages with a ``__value_schema_id`` or ``__key_schema_id`` header."""
    count = len(headers)
    if not count or headers.null_count == count:
        return np.zeros(count, dtype=bool)
    names = pc.struct_field(pc.list_flatten(headers), "key")
    hits = wire.mask(
        pc.is_in(
            names,
            pa.array([framing.KEY_SCHEMA_ID_HEADER, framing.VALUE_SCHEMA_ID_HEADER], names.type),
        )
    )
    rows = pc.list_parent_indices(headers).to_numpy()
    found = np.zeros(count, dtype=bool)
    found[rows[hits]] = True
    return found


def plain(avro: Any) -> Any:
    """``avro`` without the properties naming Connect types, which the per-message way's
    values do not follow (only Avro's logical types give a value a type of its own)."""
    found = copy.deepcopy(avro)
    stack = [found]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for name in _CONNECT_NAMES:
                node.pop(name, None)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def has_logical(avro: Any, names: tuple[str, ...] | None = None) -> bool:
    """Whether ``avro`` (expanded schema JSON) has a logical type (one of ``names``)."""
    stack = [avro]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            logical = node.get("logicalType")
            if isinstance(logical, str) and (names is None or logical in names):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def logical_types(avro: Any) -> dict[tuple[str, ...], str | None]:
    """The logical type (or none) at each place of an Avro schema (expanded JSON): fields
    by name, array items as ``[]``, map values as ``{}``, union members by their type."""
    found: dict[tuple[str, ...], str | None] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, list):
            for member in node:
                kind = member.get("type") if isinstance(member, dict) else member
                walk(member, (*path, f"|{kind if isinstance(kind, str) else '?'}"))
            return
        if not isinstance(node, dict):
            found[path] = None
            return
        logical = node.get("logicalType")
        found[path] = logical if isinstance(logical, str) else None
        kind = node.get("type")
        if kind == "record":
            for field in node.get("fields", []):
                walk(field.get("type"), (*path, str(field.get("name"))))
        elif kind == "array":
            walk(node.get("items"), (*path, "[]"))
        elif kind == "map":
            walk(node.get("values"), (*path, "{}"))
        elif isinstance(kind, dict | list):
            walk(kind, path)

    walk(avro, ())
    return found


def same_logical_types(writer: Any, reader: Any) -> bool:
    """Whether a writer and a reader schema give every place they share the same logical
    type: where they differ, fastavro reads the writer's (a ``long`` read as a
    ``timestamp-millis`` stays an integer), which the reader's columns would not."""
    written, read = logical_types(writer), logical_types(reader)
    return all(read[place] == kind for place, kind in written.items() if place in read)


def uuid_fields(record: Any) -> list[tuple[str, ...]] | None:
    """The paths (field names through records) of the ``uuid`` strings of an Avro record
    (expanded schema JSON); ``None`` when one sits where no path reaches (an array, a map,
    a union of several types)."""
    found: list[tuple[str, ...]] = []

    def walk(node: Any, path: tuple[str, ...]) -> bool:
        if isinstance(node, list):
            members = [m for m in node if m != "null"]
            if len(members) != 1:
                return not has_logical(node, ("uuid",))
            return walk(members[0], path)
        if not isinstance(node, dict):
            return True
        if node.get("logicalType") == "uuid" and node.get("type") == "string":
            found.append(path)
            return True
        if node.get("type") == "record":
            return all(walk(f.get("type"), (*path, f.get("name"))) for f in node.get("fields", []))
        if isinstance(node.get("type"), dict | list):
            return walk(node["type"], path)
        return not has_logical(node, ("uuid",))

    return found if walk(record, ()) else None


def odd_uuids(array: pa.StructArray, paths: list[tuple[str, ...]]) -> np.ndarray:
    """Rows with a ``uuid`` at one of ``paths`` that is not spelled as Python spells a UUID
    (lowercase, hyphenated): the per-message way reads it as a UUID and writes it so, or
    refuses it."""
    found = np.zeros(len(array), dtype=bool)
    for path in paths:
        column: pa.Array = array
        for name in path:
            column = member(column, name)
        odd = pc.invert(pc.match_substring_regex(column, _CANONICAL_UUID))
        found |= mask(odd)
    return found


def out_of_range(node: ConnectSchema, array: pa.Array) -> np.ndarray:
    """Rows holding a time Python's types do not hold (a timestamp or a date outside years
    1..9999, a time of day outside 00:00..24:00): Arrow holds them, the per-message way
    refuses them."""
    found = np.zeros(len(array), dtype=bool)
    kind = column_kind(node, array.type)
    if kind is None:
        return found
    if kind.name == "struct":
        for name, child in node.fields:
            found |= out_of_range(child, member(array, name))
    elif kind.name == "list" and node.items is not None:
        inner = out_of_range(node.items, pc.list_flatten(array))
        if inner.any():
            found[item_rows(list_sizes(array))[inner]] = True
    elif kind.name in ("timestamp", "date", "time_of_day"):
        if kind.name == "time_of_day":
            low, high = 0, _MICROS_PER_DAY // kind.unit - 1
            values = array
        else:
            low, high = _RANGES[kind.name]
            values = array.cast(pa.int64() if kind.name == "timestamp" else pa.int32())
        outside = pc.or_(pc.less(values, low), pc.greater(values, high))
        found |= mask(outside)
    return found


def non_finite(array: pa.Array) -> np.ndarray:
    """Rows holding a NaN or an infinity anywhere (JSON has none: the per-message way
    refuses them)."""
    found = np.zeros(len(array), dtype=bool)
    if pa.types.is_struct(array.type):
        for index in range(array.type.num_fields):
            found |= non_finite(array.field(index))
    elif pa.types.is_list(array.type):
        inner = non_finite(pc.list_flatten(array))
        if inner.any():
            found[item_rows(list_sizes(array))[inner]] = True
    elif pa.types.is_floating(array.type):
        found |= mask(pc.invert(pc.is_finite(array)))
    return found


def naive_times(type_: pa.DataType) -> bool:
    """Whether ``type_`` holds a timestamp without a time zone (Avro's local timestamps,
    which the record writers would give one)."""
    if pa.types.is_struct(type_):
        return any(naive_times(field.type) for field in type_)
    if pa.types.is_map(type_):
        return naive_times(type_.item_type)
    if pa.types.is_list(type_):
        return naive_times(type_.value_type)
    return bool(pa.types.is_timestamp(type_) and type_.tz is None)


def together(parts: list[Columnar], routed: bool) -> Columnar:
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        none = pa.array([], pa.binary())
        return Columnar(empty, none, none, pa.array([], pa.string()) if routed else None)
    every = np.concatenate([p.rows for p in parts])
    order = np.argsort(every, kind="stable")
    take = pa.array(order)
    topics = [p.topics for p in parts if p.topics is not None]
    return Columnar(
        every[order],
        pa.concat_arrays([p.values for p in parts]).take(take),
        pa.concat_arrays([p.keys for p in parts]).take(take),
        pa.concat_arrays(topics).take(take) if routed else None,
    )
