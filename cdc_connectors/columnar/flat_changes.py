"""Changes read from JSON without a schema -> OpenCDC protobuf or JSON messages, by columns.

A format whose messages carry no schema (YDB's JSON, OpenCDC JSON) reads each message as
the per-message way reads it, into a :class:`FlatChange` of plain values; :class:`FlatChanges`
sorts the changes of a batch into groups of one shape (the same row columns, each of one
kind, the same kind of key) and writes each group from Arrow columns with the record
writers the Debezium columns use
(:class:`~cdc_connectors.columnar.proto_records.ProtoRecordWriter`,
:class:`~cdc_connectors.columnar.json_records.JsonRecordWriter`): byte for byte what the
destination's ``encode`` writes for the record of the same values.

A row (``before``, ``after``, a structured key) is taken when its values are flat: null,
booleans, 64-bit integers, doubles, text, decimals of one scale per column (as
``Decimal``: a Kafka Connect ``Decimal`` column), or arrays of one of those kinds but
decimals. Left to the
caller, for the per-message way: a nested value, NaN and infinities, a decimal of another
scale than its column's, a row whose images have different columns, a column
whose kind differs from the rest of its group (OpenCDC JSON tells ``1`` from ``1.0``), an
array of mixed kinds, and what the writers refuse (an integer a ``Struct`` double would
change).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import chain
from typing import Any

import numpy as np
import pyarrow as pa

from cdc_connectors.columnar.confluent_frames import non_finite
from cdc_connectors.columnar.debezium_keys import Layout, merged, raw_fields, typed_fields
from cdc_connectors.columnar.debezium_opencdc import Columnar, merged_columnar, topics_of
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.json_text import struct_text
from cdc_connectors.columnar.proto_records import NotColumnar, ProtoRecordWriter, struct_body
from cdc_connectors.opencdc import structured
from cdc_connectors.schema.connect import ConnectSchema, parse_connect_schema
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA

__all__ = ["FlatChange", "FlatChanges"]

#: Shapes kept writers for; the least recently used goes first.
MAX_SHAPES = 32
# Shapes one batch writes from columns; changes of further shapes go the other way.
_SHAPES_PER_BATCH = 16
_INT64 = (-(2**63), 2**63 - 1)
_FLAT = frozenset((type(None), bool, int, float, str))
# Each kind of value a column takes: its Kafka Connect type and its Arrow type.
_SCALARS: dict[type, tuple[str, pa.DataType]] = {
    bool: ("boolean", pa.bool_()),
    int: ("int64", pa.int64()),
    float: ("double", pa.float64()),
    str: ("string", pa.string()),
}
_UNTYPED = ("string", pa.string())  # a column null in every change of its group
_DECIMAL_DIGITS = 38  # decimal128's
_DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"
# Types whose values a change's signature does not tell the kind of.
_UNSEEN = frozenset((list, Decimal))
_METADATA = OPENCDC_ARROW_SCHEMA.field("metadata").type
_IMAGES = ("before", "after")

#: A column's kind: a scalar's type, ``(list, item type)`` for an array, ``None`` while
#: every value seen is null (an array's item type likewise).
Kind = Any


@dataclass
class FlatChange:
    """One record in plain values: its key structured (a ``dict``), raw or ``None``."""

    position: bytes
    operation: str  # create, update, delete or snapshot
    metadata: dict[str, str]
    key: dict[str, Any] | bytes | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass
class _Group:
    """The changes of one shape: their rows in the batch, the changes, each column's kind."""

    names: tuple[str, ...]  # the images' columns, in the order of the group's first
    key_names: tuple[str, ...] | None  # a structured key's fields; None: raw or no key
    kinds: dict[str, Kind]
    key_kinds: dict[str, Kind]
    rows: list[int] = field(default_factory=list)
    changes: list[FlatChange] = field(default_factory=list)
    #: The kinds of the values of changes taken (image by image in the group's order).
    seen: set[tuple[object, ...]] = field(default_factory=set)

    def take(self, row: int, change: FlatChange) -> None:
        """Add the change if its values are flat and of the group's kinds (the kinds of the
        group's null columns become its own)."""
        key = change.key if isinstance(change.key, dict) else None
        signature = (
            _types_in_order(change.before, self.names),
            _types_in_order(change.after, self.names),
            _types_in_order(key, self.key_names or ()),
        )
        if signature in self.seen:
            self.rows.append(row)
            self.changes.append(change)
            return
        kinds = dict(self.kinds)
        key_kinds = dict(self.key_kinds)
        for image in (change.before, change.after):
            if image is not None and not _fits(image.items(), kinds):
                return
        if key is not None and not _fits(key.items(), key_kinds):
            return
        self.kinds, self.key_kinds = kinds, key_kinds
        if False not in signature and _UNSEEN.isdisjoint(_flattened(signature)):
            self.seen.add(signature)
        self.rows.append(row)
        self.changes.append(change)


def _flattened(signature: tuple[object, ...]) -> Iterable[object]:
    for part in signature:
        if isinstance(part, tuple):
            yield from part


def _types_in_order(image: dict[str, Any] | None, names: tuple[str, ...]) -> object:
    """The types of an image's values if its columns are in the group's order (else
    ``False``: looked at name by name)."""
    if image is None:
        return None
    if tuple(image) != names:
        return False
    return tuple(map(type, image.values()))


def _fits(items: Iterable[tuple[str, Any]], kinds: dict[str, Kind]) -> bool:
    for name, value in items:
        kind = _kind(value)
        if kind is False:
            return False
        if kind is None:
            continue
        merged = _merged(kinds[name], kind)
        if merged is False:
            return False
        kinds[name] = merged
    return True


def _kind(value: Any) -> Kind:
    """A value's kind (``None`` for null, ``False`` for one the columns do not hold)."""
    if type(value) is list:
        item: Kind = None
        for each in value:
            found = _scalar_kind(each)
            if found is False or isinstance(found, tuple):  # no arrays of decimals
                return False
            item = _merged(item, found)
            if item is False:
                return False
        return (list, item)
    return _scalar_kind(value)


def _scalar_kind(value: Any) -> Kind:
    """A scalar's kind (``None`` for null, ``False`` for anything else)."""
    kind = type(value)
    if kind is Decimal:
        return _decimal_kind(value)
    if kind not in _FLAT:
        return False
    if kind is type(None):
        return None
    if kind is int and not _INT64[0] <= value <= _INT64[1]:
        return False
    if kind is float and not math.isfinite(value):
        return False  # NaN and infinities: no JSON form, the per-message way says so
    return kind


def _decimal_kind(value: Decimal) -> Kind:
    """A decimal's kind, ``("decimal", scale)``, where a decimal column of that scale
    writes its text and double exactly: finite, of at most 38 digits, not of a positive
    exponent, not a negative zero, and a JSON number (:func:`structured.decimal_problem`)."""
    sign, digits, exponent = value.as_tuple()
    if (
        not isinstance(exponent, int)
        or exponent > 0
        or len(digits) > _DECIMAL_DIGITS
        or -exponent > _DECIMAL_DIGITS
        or (sign and not any(digits))
        or structured.decimal_problem(value)
    ):
        return False
    return ("decimal", -exponent)


def _merged(one: Kind, other: Kind) -> Kind:
    """The kind of a column holding values of both kinds; ``False`` if none does."""
    if one is None:
        return other
    if other is None or one == other:
        return one
    if isinstance(one, tuple) and isinstance(other, tuple) and one[0] is list is other[0]:
        item = _merged(one[1], other[1])
        return False if item is False else (list, item)
    return False


@dataclass
class _Writers:
    row_type: pa.StructType
    records: ProtoRecordWriter | JsonRecordWriter
    key_type: pa.StructType | None
    key_proto: object | None
    key_text: object | None


class FlatChanges:
    """Flat changes -> OpenCDC protobuf or JSON messages, for one destination layout
    (module docstring)."""

    def __init__(self, layout: Layout, topic: tuple[tuple[str, str | None], ...] | None = None):
        self.layout: Layout = layout
        self.topic = topic
        self._writers: OrderedDict[tuple[object, ...], _Writers | None] = OrderedDict()

    def write(self, changes: Iterable[tuple[int, FlatChange]]) -> Columnar:
        """The messages of the changes (each with its row in the batch) the columns write,
        in the order of their rows; the others are the caller's."""
        parts = [self._write(group) for group in _groups(changes)]
        return merged_columnar(
            [part for part in parts if part is not None], routed=self.topic is not None
        )

    def _write(self, group: _Group) -> Columnar | None:
        writers = self._writers_of(group)
        if writers is None:
            return None
        rows = np.array(group.rows, dtype=np.int64)
        changes = group.changes
        try:
            images = _typed(changes, writers)
        except (OverflowError, pa.ArrowInvalid):  # an integer beyond 64 bits: not the columns'
            fitting = [n for n, change in enumerate(changes) if _within_64_bits(change)]
            if not fitting:
                return None
            rows, changes = rows[fitting], [changes[n] for n in fitting]
            images = _typed(changes, writers)
        # NaN and infinities, which kinds do not tell: the per-message way refuses them
        odd = non_finite(images[0]) | non_finite(images[1])
        if images[2] is not None:
            odd |= non_finite(images[2])
        if odd.any():
            kept = pa.array(~odd)
            rows, changes = rows[~odd], [c for c, bad in zip(changes, odd, strict=True) if not bad]
            images = tuple(None if image is None else image.filter(kept) for image in images)  # type: ignore[assignment]
            if not changes:
                return None
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array([c.position for c in changes], pa.binary()),
                pa.array([c.operation for c in changes], pa.string()),
                _metadata([c.metadata for c in changes]),
                images[0],
                images[1],
            ],
            names=["position", "operation", "metadata", "before", "after"],
        )
        raw = None if writers.key_type is not None else [c.key for c in changes]
        return self._written(writers, rows, batch, images[2], raw)  # type: ignore[arg-type]

    def write_columns(
        self,
        rows: np.ndarray,
        batch: pa.RecordBatch,
        row_kinds: tuple[tuple[str, Kind], ...],
        keys: pa.StructArray | None,
        key_kinds: tuple[tuple[str, Kind], ...] | None,
        raw_keys: list[bytes | None] | None,
    ) -> Columnar | None:
        """The messages of changes read as columns: ``batch`` (``position``,
        ``operation``, ``metadata``, ``before``, ``after``, the images of ``row_kinds``)
        and structured ``keys`` of ``key_kinds``, else ``raw_keys`` (``None`` for none);
        ``None`` when the writers refuse the shape. Rows whose values the writers refuse
        are left out, for the caller."""
        writers = self._writers_for(row_kinds, key_kinds)
        if writers is None:
            return None
        images = [batch.column(name).cast(writers.row_type) for name in ("before", "after")]
        batch = pa.RecordBatch.from_arrays(
            [*batch.columns[:3], *images], names=["position", "operation", "metadata", *_IMAGES]
        )
        if keys is not None and writers.key_type is not None:
            keys = keys.cast(writers.key_type)
        return self._written(writers, rows, batch, keys, raw_keys)

    def _written(
        self,
        writers: _Writers,
        rows: np.ndarray,
        batch: pa.RecordBatch,
        keys: pa.Array | None,
        raw_keys: list[bytes | None] | None,
    ) -> Columnar | None:
        """The records of ``batch`` (and their structured ``keys``, else ``raw_keys``)."""
        count = batch.num_rows
        if writers.key_type is not None:
            found = typed_fields(
                writers.key_proto, writers.key_text, keys, np.zeros(count, dtype=bool)
            )
            if found is None:
                return None
            taken, key_fields, message_keys = found
            if len(taken) < count:
                batch = batch.take(pa.array(taken))
                rows = rows[taken]
        else:
            key_fields, message_keys = _raw_keys(raw_keys or [None] * count, self.layout)
        records, refused = writers.records.write(batch, key_fields)
        keep = ~refused
        topics = None
        if self.topic is not None:
            topics, no_topic = topics_of(self.topic, batch.column("metadata"))
            keep &= ~no_topic
        if not keep.any():
            return None
        if not keep.all():
            kept = pa.array(keep)
            return Columnar(
                rows[keep],
                records.filter(kept),
                message_keys.filter(kept),
                None if topics is None else topics.filter(kept),
            )
        return Columnar(rows, records, message_keys, topics)

    def _writers_of(self, group: _Group) -> _Writers | None:
        row_kinds = tuple((name, group.kinds[name]) for name in group.names)
        key_kinds = (
            None
            if group.key_names is None
            else tuple((name, group.key_kinds[name]) for name in group.key_names)
        )
        return self._writers_for(row_kinds, key_kinds)

    def _writers_for(
        self,
        row_kinds: tuple[tuple[str, Kind], ...],
        key_kinds: tuple[tuple[str, Kind], ...] | None,
    ) -> _Writers | None:
        """The writers of a shape, made once (the least recently used go first)."""
        shape = (row_kinds, key_kinds)
        if shape not in self._writers:
            self._writers[shape] = self._made(row_kinds, key_kinds)
            while len(self._writers) > MAX_SHAPES:
                self._writers.popitem(last=False)
        self._writers.move_to_end(shape)
        return self._writers[shape]

    def _made(
        self,
        row_kinds: tuple[tuple[str, Kind], ...],
        key_kinds: tuple[tuple[str, Kind], ...] | None,
    ) -> _Writers | None:
        # A change without images still needs a row type: one column, never written.
        row, row_type = _struct(row_kinds or (("", None),))
        try:
            records: ProtoRecordWriter | JsonRecordWriter = (
                ProtoRecordWriter(row, row_type)
                if self.layout == "proto"
                else JsonRecordWriter(row, row_type)
            )
            if key_kinds is None:
                return _Writers(row_type, records, None, None, None)
            key, key_type = _struct(key_kinds)
            key_proto = struct_body(key, key_type) if self.layout == "proto" else None
            return _Writers(row_type, records, key_type, key_proto, struct_text(key, key_type))
        except (NotColumnar, ValueError):
            return None


def _groups(changes: Iterable[tuple[int, FlatChange]]) -> list[_Group]:
    """The changes in groups of one shape (the columns of their images, their key's)."""
    groups: dict[tuple[object, ...], _Group] = {}
    for row, change in changes:
        before, after = change.before, change.after
        if before is not None and after is not None and before.keys() != after.keys():
            continue
        image = after if after is not None else before
        key = change.key
        key_names = tuple(key) if isinstance(key, dict) else None
        if key_names == () or image == {}:
            continue  # a row of no columns: the per-message way writes it
        shape = (() if image is None else tuple(image), key_names)
        group = groups.get(shape)
        if group is None:
            if len(groups) == _SHAPES_PER_BATCH:
                continue
            names = shape[0]
            group = groups[shape] = _Group(
                names, key_names, dict.fromkeys(names), dict.fromkeys(key_names or ())
            )
        group.take(row, change)
    return [group for group in groups.values() if group.rows]


def _struct(kinds: tuple[tuple[str, Kind], ...]) -> tuple[ConnectSchema, pa.StructType]:
    """The Connect schema and Arrow type of a flat row of columns of these kinds."""
    blocks = []
    types = []
    for name, kind in kinds:
        if isinstance(kind, tuple) and kind[0] == "decimal":
            blocks.append(
                {
                    "field": name,
                    "type": "bytes",
                    "name": _DECIMAL_NAME,
                    "parameters": {"scale": str(kind[1])},
                    "optional": True,
                }
            )
            types.append(pa.field(name, pa.decimal128(_DECIMAL_DIGITS, kind[1])))
        elif isinstance(kind, tuple):
            item, item_type = _SCALARS[kind[1]] if kind[1] is not None else _UNTYPED
            blocks.append(
                {
                    "field": name,
                    "type": "array",
                    "optional": True,
                    "items": {"type": item, "optional": True},
                }
            )
            types.append(pa.field(name, pa.list_(item_type)))
        else:
            connect, arrow = _SCALARS[kind] if kind is not None else _UNTYPED
            blocks.append({"field": name, "type": connect, "optional": True})
            types.append(pa.field(name, arrow))
    schema = parse_connect_schema({"type": "struct", "optional": True, "fields": blocks})
    return schema, pa.struct(types)


def _typed(
    changes: list[FlatChange], writers: _Writers
) -> tuple[pa.Array, pa.Array, pa.Array | None]:
    """The before and after images and the structured keys (``None``: raw or none) as
    struct columns."""
    keys = None
    if writers.key_type is not None:
        keys = _images([c.key for c in changes], writers.key_type)  # type: ignore[misc]
    return (
        _images([c.before for c in changes], writers.row_type),
        _images([c.after for c in changes], writers.row_type),
        keys,
    )


def _metadata(metadata: list[dict[str, str]]) -> pa.MapArray:
    """A map column of the changes' metadata."""
    offsets = np.zeros(len(metadata) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, metadata), np.int32, len(metadata)), out=offsets[1:])
    return pa.MapArray.from_arrays(
        pa.array(offsets),
        pa.array(list(chain.from_iterable(metadata)), pa.string()),
        pa.array(list(chain.from_iterable(m.values() for m in metadata)), pa.string()),
        type=_METADATA,
    )


def _within_64_bits(change: FlatChange) -> bool:
    """Whether every integer of the change's key and images (and their arrays) is a 64-bit
    one."""
    rows = [change.before, change.after, change.key if isinstance(change.key, dict) else None]
    return all(_kind(value) is not False for row in rows if row for value in row.values())


def _images(images: list[dict[str, Any] | None], row_type: pa.StructType) -> pa.Array:
    """A struct column of the rows (null where there is none)."""
    valid = np.array([image is not None for image in images], dtype=bool)
    if not valid.any():
        return pa.nulls(len(images), row_type)
    columns = [
        pa.array([None if image is None else image[f.name] for image in images], f.type)
        for f in row_type
    ]
    return pa.StructArray.from_arrays(columns, fields=list(row_type), mask=pa.array(~valid))


def _raw_keys(keys: list[bytes | None], layout: Layout) -> tuple[pa.Array, pa.Array]:
    """Raw keys (or none) as the record's ``key`` field is written, and as message keys."""
    column = pa.array(keys, pa.binary())
    present = np.flatnonzero(np.array([key is not None for key in keys], dtype=bool))
    parts = [(present, *raw_fields(column.take(pa.array(present)), layout))] if len(present) else []
    found = merged(parts, len(keys), np.zeros(len(keys), dtype=bool), layout)
    return found.fields, found.message_keys
