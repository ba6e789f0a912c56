"""YDB changefeed records (``ydb-json``) -> OpenCDC protobuf or JSON messages, from columns.

:class:`YdbToOpenCDC` writes the change records of a batch whose rows are flat (integers,
doubles, text, booleans, nulls) from Arrow columns: byte for byte what
:meth:`~cdc_connectors.formats.ydb.YdbJsonFormat.decode` then the destination's
``encode`` give. YDB's JSON has no schema block, so each record is first read as the
per-message way reads it (:func:`~cdc_connectors.opencdc.json_codec.load_exact`) and
checked against the format's own rules (:meth:`YdbJsonFormat.check_shape`); that pass
sorts the records into groups of one row shape (the same columns, each of one kind), and
each group is written column by column by the record writers the Debezium columns use
(:class:`~cdc_connectors.columnar.proto_records.ProtoRecordWriter`,
:class:`~cdc_connectors.columnar.json_records.JsonRecordWriter`). Left to the caller, for
the per-message way, so that its dead letter or skip stays what it is there: anything
that is no JSON object, a resolved timestamp, a record the format refuses, a nested
value, a number a double would change or one beyond 64 bits, an image holding a key
column, an old and a new image of different columns, and a column whose kind differs from
the rest of its group (OpenCDC JSON tells ``1`` from ``1.0``).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from cdc_connectors.columnar.debezium_keys import typed_fields
from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of, topics_of
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.json_text import struct_text
from cdc_connectors.columnar.proto_records import NotColumnar, ProtoRecordWriter, struct_body
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.ydb import IMAGE_MODES, OPERATIONS, YdbJsonFormat
from cdc_connectors.opencdc import CodecError, keys
from cdc_connectors.opencdc.json_codec import load_exact
from cdc_connectors.schema.connect import ConnectSchema, parse_connect_schema
from cdc_connectors.spark.envelope_columns import map_column

__all__ = ["YdbToOpenCDC"]

#: Row shapes kept writers for; the least recently used goes first.
MAX_SHAPES = 32
# Row shapes one batch writes from columns; records of further shapes go the other way.
_SHAPES_PER_BATCH = 16
_INT64 = (-(2**63), 2**63 - 1)
_NS_PER_MS = 1_000_000
# Each JSON kind a column takes: its Kafka Connect type and its Arrow type.
_KINDS: dict[type, tuple[str, pa.DataType]] = {
    bool: ("boolean", pa.bool_()),
    int: ("int64", pa.int64()),
    float: ("double", pa.float64()),
    str: ("string", pa.string()),
}
_UNTYPED = ("string", pa.string())  # a column null in every record of its group


_FLAT = frozenset((type(None), bool, int, float, str))


@dataclass
class _Change:
    """One record as the per-message way reads it: its images as YDB writes them (without
    the key columns the per-message way adds to them)."""

    operation: str
    key: list[Any]
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    step: int | None
    tx_id: int | None
    partial: bool


@dataclass
class _Group:
    """The records of one row shape: their rows in the batch and their changes."""

    names: tuple[str, ...]  # the images' columns, in the order of the group's first
    kinds: dict[str, type | None]  # each column's kind (None: null so far)
    key_kinds: list[type | None]
    rows: list[int] = field(default_factory=list)
    changes: list[_Change] = field(default_factory=list)
    #: The kinds of the values of records taken, image by image in the group's order.
    seen: set[tuple[object, ...]] = field(default_factory=set)

    def take(self, row: int, change: _Change) -> None:
        """Add the record if its values are flat and of the group's kinds (the kinds of the
        group's null columns become its own)."""
        signature = (
            _kinds_in_order(change.before, self.names),
            _kinds_in_order(change.after, self.names),
            tuple(map(type, change.key)),
        )
        if signature not in self.seen:
            kinds = dict(self.kinds)
            key_kinds = list(self.key_kinds)
            for image in (change.before, change.after):
                if image is not None and not _fits(image.items(), kinds):
                    return
            if not _fits(enumerate(change.key), key_kinds):
                return
            self.kinds, self.key_kinds = kinds, key_kinds
            if False not in signature:
                self.seen.add(signature)
        self.rows.append(row)
        self.changes.append(change)


def _kinds_in_order(image: dict[str, Any] | None, names: tuple[str, ...]) -> object:
    """The kinds of an image's values, if its columns are in the group's order (else
    ``False``: looked at name by name)."""
    if image is None:
        return None
    if tuple(image) != names:
        return False
    return tuple(map(type, image.values()))


def _fits(items: Any, kinds: Any) -> bool:
    for name, value in items:
        kind = type(value)
        if kind not in _FLAT:
            return False
        if value is None:
            continue
        if kinds[name] is None:
            kinds[name] = kind
        elif kinds[name] is not kind:
            return False
    return True


@dataclass
class _Writers:
    row: ConnectSchema
    row_type: pa.StructType
    records: ProtoRecordWriter | JsonRecordWriter
    key_type: pa.StructType
    key_proto: object | None
    key_text: object


class YdbToOpenCDC:
    """``ydb-json`` -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    def __init__(
        self,
        fmt: YdbJsonFormat,
        destination: Format,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        layout = layout_of(destination)
        assert layout is not None, "see serves()"
        self.fmt = fmt
        self.layout = layout
        self.topic = None if topic is None else tuple(topic)
        self._key_names = frozenset(fmt.key_columns or ())
        self._writers: OrderedDict[tuple[object, ...], _Writers | None] = OrderedDict()

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        ``ydb-json`` itself, to OpenCDC protobuf or JSON."""
        return type(source) is YdbJsonFormat and layout_of(destination) is not None

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the rows the columns take; the others are the caller's. YDB's
        records carry their own key: the Kafka keys and headers do not change them."""
        groups = self._groups(values.to_pylist())
        rows: list[np.ndarray] = []
        written: list[pa.Array] = []
        written_keys: list[pa.Array] = []
        topics: list[pa.Array] = []
        for group in groups:
            found = self._write(group, places)
            if found is not None:
                rows.append(found.rows)
                written.append(found.values)
                written_keys.append(found.keys)
                if found.topics is not None:
                    topics.append(found.topics)
        if not rows:
            empty = np.zeros(0, dtype=np.int64)
            none = pa.array([], pa.binary())
            return Columnar(
                empty, none, none, None if self.topic is None else pa.array([], pa.string())
            )
        every = np.concatenate(rows)
        order = np.argsort(every, kind="stable")
        take = pa.array(order)
        return Columnar(
            every[order],
            pa.concat_arrays(written).take(take),
            pa.concat_arrays(written_keys).take(take),
            pa.concat_arrays(topics).take(take) if self.topic is not None else None,
        )

    # --- reading ------------------------------------------------------------------------

    def _groups(self, values: list[bytes | None]) -> list[_Group]:
        """The records the columns may write, in groups of one row shape."""
        groups: dict[tuple[object, ...], _Group] = {}
        for row, value in enumerate(values):
            change = self._change(value)
            if change is None:
                continue
            before, after = change.before, change.after
            if before is not None and after is not None and before.keys() != after.keys():
                continue
            image = after if after is not None else before
            shape = (() if image is None else tuple(image), len(change.key))
            group = groups.get(shape)
            if group is None:
                if len(groups) == _SHAPES_PER_BATCH:
                    continue
                names = shape[0]
                group = groups[shape] = _Group(
                    names, dict.fromkeys(names), [None] * len(change.key)
                )
            group.take(row, change)
        return [group for group in groups.values() if group.rows]

    def _change(self, value: bytes | None) -> _Change | None:
        """The record ``value`` holds, as :meth:`YdbJsonFormat.decode` reads it, if the
        columns can write it (module docstring)."""
        if value is None or not value.startswith(b"{"):
            return None
        fmt = self.fmt
        try:
            obj = load_exact(value)
        except (CodecError, ValueError):
            return None
        if not isinstance(obj, dict) or "resolved" in obj:
            return None
        key = obj.get("key")
        if not isinstance(key, list) or not key:
            return None
        if fmt.key_columns is not None and len(key) != len(fmt.key_columns):
            return None
        present = [name for name in OPERATIONS if name in obj]
        if len(present) != 1 or not isinstance(obj[present[0]], dict):
            return None
        op = present[0]
        changed = obj[op]
        old, new = obj.get("oldImage"), obj.get("newImage")
        if ("oldImage" in obj and not isinstance(old, dict)) or (
            "newImage" in obj and not isinstance(new, dict)
        ):
            return None
        try:
            fmt.check_shape(op, changed, old, new)
        except CodecError:
            return None
        step = tx_id = None
        if "ts" in obj:
            ts = obj["ts"]
            if not isinstance(ts, list) or len(ts) != 2:
                return None
            step, tx_id = ts
            if not (_unsigned(step) and _unsigned(tx_id)) or step * _NS_PER_MS > _INT64[1]:
                return None
        images = old is not None or new is not None or fmt.mode in IMAGE_MODES
        before, after, partial = old, new, False
        if op == "erase":
            operation = "delete"
        elif images:
            new_row = fmt.mode == "NEW_AND_OLD_IMAGES" and old is None
            operation = "create" if new_row else "update"
        else:
            operation = "update"
            if fmt.mode != "KEYS_ONLY":
                after = changed
                partial = op == "update"
        columns = fmt.key_columns
        for image in (before, after):
            if image is None:
                continue
            if columns is None and not image:
                return None  # a row of no columns
            if columns is not None and not self._key_names.isdisjoint(image):
                return None  # checked against the key by the per-message way
        return _Change(operation, key, before, after, step, tx_id, partial)

    # --- writing ------------------------------------------------------------------------

    def _write(self, group: _Group, places: pa.Array) -> Columnar | None:
        writers = self._writers_of(group)
        if writers is None:
            return None
        rows = np.array(group.rows, dtype=np.int64)
        changes = group.changes
        try:
            before, after, key_column = self._columns(changes, writers)
        except (OverflowError, pa.ArrowInvalid):  # an integer beyond 64 bits: not the columns'
            fitting = [n for n, change in enumerate(changes) if _within_64_bits(change)]
            if not fitting:
                return None
            rows, changes = rows[fitting], [changes[n] for n in fitting]
            before, after, key_column = self._columns(changes, writers)
        count = len(rows)
        steps = pa.array([c.step for c in changes], pa.uint64())
        metadata = map_column(
            [
                ("ydb.step", steps),
                ("ydb.txId", pa.array([c.tx_id for c in changes], pa.uint64())),
                ("ydb.partial", pa.array(["true" if c.partial else None for c in changes])),
                (keys.VERSION, pa.array([keys.OPENCDC_VERSION] * count, pa.string())),
                (keys.COLLECTION, pa.array([self.fmt.collection] * count, pa.string())),
                (keys.CREATED_AT, pa.array([_created_at(c.step) for c in changes], pa.int64())),
                (keys.READ_AT, pa.array([time.time_ns()] * count, pa.int64())),
            ],
            count,
        )
        batch = pa.RecordBatch.from_arrays(
            [
                places.take(pa.array(rows)),
                pa.array([c.operation for c in changes], pa.string()),
                metadata,
                before,
                after,
            ],
            names=["position", "operation", "metadata", "before", "after"],
        )
        found = typed_fields(
            writers.key_proto, writers.key_text, key_column, np.zeros(count, dtype=bool)
        )
        if found is None:
            return None
        written, key_fields, message_keys = found
        if len(written) < count:
            batch = batch.take(pa.array(written))
            rows = rows[written]
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

    def _columns(
        self, changes: list[_Change], writers: _Writers
    ) -> tuple[pa.Array, pa.Array, pa.Array]:
        """The before and after images (struct columns of the row) and the keys."""
        key_values = [change.key for change in changes]
        key_count = len(self.fmt.key_columns or ())
        images = []
        for befores in (True, False):
            found = [change.before if befores else change.after for change in changes]
            valid = np.array([image is not None for image in found], dtype=bool)
            columns = [
                pa.array(
                    [
                        None if image is None else key[n]
                        for image, key in zip(found, key_values, strict=True)
                    ]
                    if n < key_count
                    else [None if image is None else image[f.name] for image in found],
                    f.type,
                )
                if valid.any()
                else pa.nulls(len(found), f.type)
                for n, f in enumerate(writers.row_type)
            ]
            images.append(
                pa.StructArray.from_arrays(
                    columns, fields=list(writers.row_type), mask=pa.array(~valid)
                )
            )
        return images[0], images[1], self._key_column(key_values, writers.key_type)

    def _key_column(self, key_values: list[list[Any]], key_type: pa.StructType) -> pa.Array:
        if self.fmt.key_columns is None:
            return pa.StructArray.from_arrays(
                [pa.array(key_values, key_type.field(0).type)], fields=list(key_type)
            )
        return pa.StructArray.from_arrays(
            [
                pa.array([key[n] for key in key_values], key_type.field(n).type)
                for n in range(key_type.num_fields)
            ],
            fields=list(key_type),
        )

    def _writers_of(self, group: _Group) -> _Writers | None:
        row_kinds = tuple((name, group.kinds[name]) for name in group.names)
        if self.fmt.key_columns is not None:
            row_kinds = (*zip(self.fmt.key_columns, group.key_kinds, strict=True), *row_kinds)
        shape = (row_kinds, tuple(group.key_kinds))
        if shape not in self._writers:
            self._writers[shape] = self._made(row_kinds, group.key_kinds)
            while len(self._writers) > MAX_SHAPES:
                self._writers.popitem(last=False)
        self._writers.move_to_end(shape)
        return self._writers[shape]

    def _made(
        self, row_kinds: tuple[tuple[str, type | None], ...], key_kinds: list[type | None]
    ) -> _Writers | None:
        # A change without images still needs a row type: one column, never written.
        row, row_type = _struct(row_kinds or (("", None),))
        if self.fmt.key_columns is not None:
            key, key_type = _struct(tuple(zip(self.fmt.key_columns, key_kinds, strict=True)))
        else:
            kinds = {kind for kind in key_kinds if kind is not None}
            if len(kinds) > 1:
                return None
            item, item_type = _KINDS[kinds.pop()] if kinds else _UNTYPED
            key = parse_connect_schema(
                {
                    "type": "struct",
                    "optional": False,
                    "fields": [
                        {
                            "field": "key",
                            "type": "array",
                            "optional": False,
                            "items": {"type": item, "optional": True},
                        }
                    ],
                }
            )
            key_type = pa.struct([pa.field("key", pa.list_(item_type))])
        try:
            records: ProtoRecordWriter | JsonRecordWriter = (
                ProtoRecordWriter(row, row_type)
                if self.layout == "proto"
                else JsonRecordWriter(row, row_type)
            )
            key_proto = struct_body(key, key_type) if self.layout == "proto" else None
            key_text = struct_text(key, key_type)
        except (NotColumnar, ValueError):
            return None
        return _Writers(row, row_type, records, key_type, key_proto, key_text)


def _struct(kinds: tuple[tuple[str, type | None], ...]) -> tuple[ConnectSchema, pa.StructType]:
    """The Connect schema and Arrow type of a flat row of columns of these kinds."""
    typed = [(name, _KINDS[kind] if kind is not None else _UNTYPED) for name, kind in kinds]
    schema = parse_connect_schema(
        {
            "type": "struct",
            "optional": True,
            "fields": [
                {"field": name, "type": connect, "optional": True} for name, (connect, _) in typed
            ],
        }
    )
    return schema, pa.struct([pa.field(name, arrow) for name, (_, arrow) in typed])


def _within_64_bits(change: _Change) -> bool:
    """Whether every integer of the record's key and images is a 64-bit one."""
    values = [*change.key]
    for image in (change.before, change.after):
        if image is not None:
            values += image.values()
    return all(_INT64[0] <= v <= _INT64[1] for v in values if type(v) is int)


def _unsigned(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _INT64[1]


def _created_at(step: int | None) -> int | None:
    return None if step is None else step * _NS_PER_MS
