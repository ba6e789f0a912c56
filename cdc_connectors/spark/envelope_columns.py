"""What a Debezium envelope gives beside its images, column by column.

:class:`EnvelopeColumns` reads the fields of a batch of change events (``op``, ``source``,
``transaction``, ``ts_*`` and a dialect's extra fields, as a struct column) into what the
per-message way makes of them: the OpenCDC operation, the metadata columns
(``<prefix>.source.*``, ``<prefix>.transaction.*``, the collection, ``createdAt``,
``readAt``, the columns holding Debezium's unavailable-value placeholder) and which rows
only the per-message way can take (an unknown op, what the dialect refuses, a change
without the image it needs). It serves every encoding of the envelope: the JSON one read
by Arrow's JSON reader (:mod:`cdc_connectors.spark.debezium_typed`) and the Avro one
(:mod:`cdc_connectors.columnar.debezium_avro_opencdc`). The envelope is described as a
Kafka Connect struct block; :func:`metadata_map` builds the metadata map column.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.formats.debezium import UNAVAILABLE_VALUE, DebeziumJsonFormat
from cdc_connectors.formats.debezium.hbase_rows import ROW
from cdc_connectors.opencdc import keys
from cdc_connectors.schema.connect import ConnectSchema
from cdc_connectors.spark.arrow_lists import item_rows, list_sizes
from cdc_connectors.spark.arrow_masks import mask
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA

__all__ = ["TIME_FIELDS", "EnvelopeColumns", "NotColumnar", "map_column", "mask", "metadata_map"]

#: The envelope's time fields, each with its nanoseconds per unit.
TIME_FIELDS = (("ts_ns", 1), ("ts_us", 1_000), ("ts_ms", 1_000_000))
_KNOWN_PAYLOAD = frozenset(("before", "after", "source", "op", "transaction", *dict(TIME_FIELDS)))
_INTEGERS = frozenset(("int8", "int16", "int32", "int64"))
_UNAVAILABLE_BYTES = UNAVAILABLE_VALUE.encode()
_NANOS_PER_MILLI = 1_000_000


class NotColumnar(Exception):
    """An envelope (or a batch of it) the columns do not take: the per-message way does."""


class EnvelopeColumns:
    """The envelope fields of one envelope schema of one dialect (module docstring)."""

    def __init__(self, envelope: Mapping[str, Any], row: ConnectSchema, fmt: DebeziumJsonFormat):
        fields = envelope.get("fields")
        if not isinstance(fields, list):
            raise NotColumnar("no fields")
        dialect = fmt.envelope
        self.dialect = dialect
        #: The ``collection`` option's value, every record's collection when set.
        self.collection = fmt.collection
        self.refused_ops = pa.array(list(fmt.refused_ops), pa.string())
        self.refused_images = tuple(fmt.refused_images)
        self.prefix = dialect.prefix
        self.operations = pa.array(list(dialect.operations), pa.string())
        self.operation_names = pa.array(
            [str(operation) for operation in dialect.operations.values()], pa.string()
        )
        self.deletes = [
            n for n, op in enumerate(dialect.operations.values()) if op.name == "DELETE"
        ]
        maybe_hbase = fmt.hbase or any(name == ROW for name, _ in row.fields)
        if dialect.hbase_rows and fmt.hbase is not False and maybe_hbase:
            raise NotColumnar("rows that may be HBase rows (told per message)")
        blocks = _named_blocks(fields, "the envelope")
        self.source_fields = _scalar_fields(blocks.get("source"), "source")
        named = {n for n, _ in self.source_fields}
        if "table" not in dialect.table_fields[:1] or (
            {*dialect.table_fields[1:], "opencdc.collection", "opencdc.createdAt"} & named
        ):
            raise NotColumnar("a source that names its collection or its time its own way")
        self.step_time = dialect.step_time if dialect.step_time in named else None
        if self.step_time is not None and dict(self.source_fields)[self.step_time] != pa.int64():
            raise NotColumnar(f"source.{self.step_time}: a step that is no integer")
        self.transaction_fields = _scalar_fields(blocks.get("transaction"), "transaction")
        if dialect.key_field is not None and dialect.key_field in blocks:
            raise NotColumnar(f"keys in the payload's {dialect.key_field!r} (told per message)")
        self.extra_fields = [
            (name, _scalar_type(block))
            for name, block in blocks.items()
            if name not in _KNOWN_PAYLOAD
        ]
        extras = dict(self.extra_fields)
        if any(extras.get(name) != pa.string() for name in dialect.marks):
            raise NotColumnar("no field that marks the dialect's messages")
        self.marks = [
            (name, pa.scalar(value, pa.string())) for name, value in dialect.marks.items()
        ]
        self.times = [(name, factor) for name, factor in TIME_FIELDS if name in blocks]
        parts = (*dialect.collection_parts, *dialect.table_fields)
        self.untextual_parts = [n for n, t in self.source_fields if n in parts and t != pa.string()]
        written = [
            *(
                dialect.renamed.get(k, k)
                for k in (f"{self.prefix}.source.{n}" for n, _ in self.source_fields)
            ),
            *(f"{self.prefix}.transaction.{n}" for n, _ in self.transaction_fields),
            *(f"{self.prefix}.{n}" for n, _ in self.extra_fields),
            f"{self.prefix}.unavailable.columns",
        ]
        if len(set(written)) < len(written):
            raise NotColumnar("metadata names that collide (the per-message way keeps the last)")
        self.source_type = pa.struct([pa.field(n, t) for n, t in self.source_fields])
        self.transaction_type = pa.struct([pa.field(n, t) for n, t in self.transaction_fields])

    def fields(self) -> list[pa.Field]:
        """The envelope's fields besides the images, as this reads them: ``op``, ``source``,
        ``transaction`` (structs of text, integers and booleans), the time fields (integers)
        and the dialect's extra fields."""
        return [
            pa.field("op", pa.string()),
            pa.field("source", self.source_type),
            pa.field("transaction", self.transaction_type),
            *[pa.field(name, pa.int64()) for name, _ in self.times],
            *[pa.field(name, t) for name, t in self.extra_fields],
        ]

    def columns(
        self, payload: pa.StructArray, before: pa.Array, after: pa.Array
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The columns of a batch of envelopes (``payload``: :meth:`fields`, and the images
        ``before`` and ``after`` as the payload has them, for what they say of the change;
        ``before`` and ``after``: the typed images) and the rows only the per-message way
        takes."""
        op = payload.field("op")
        index = pc.index_in(op, self.operations)
        bad = mask(pc.is_null(index))
        # What this configuration refuses (a mode's): the per-message way says why.
        if len(self.refused_ops):
            bad |= mask(pc.is_in(op, self.refused_ops))
        for image in self.refused_images:
            bad |= mask(pc.is_valid(payload.field(image)))
        for name, value in self.marks:
            # another layout of the dialect's (CDL's 1.0): the per-message way reads it
            bad |= ~mask(pc.equal(payload.field(name), value))
        operation = pc.take(self.operation_names, pc.fill_null(index, 0))
        source = payload.field("source")
        if self.collection is None:
            # A part of the collection that is no string: collection_of refuses it.
            for name in self.untextual_parts:
                bad |= mask(pc.is_valid(source.field(name)))
        # What a change needs (DebeziumJsonFormat's check): a row to write, a row to delete.
        if self.dialect.images_required:
            deletes = mask(pc.is_in(index, pa.array(self.deletes, pa.int32())))
            bad |= ~deletes & mask(pc.is_null(payload.field("after")))
            bad |= deletes & mask(pc.is_null(payload.field("before")))
        metadata: list[tuple[str, pa.Array]] = []
        renamed = self.dialect.renamed
        for name, _ in self.source_fields:
            key = f"{self.prefix}.source.{name}"
            metadata.append((renamed.get(key, key), _text(source.field(name), source)))
        transaction = payload.field("transaction")
        for name, _ in self.transaction_fields:
            metadata.append(
                (f"{self.prefix}.transaction.{name}", _text(transaction.field(name), transaction))
            )
        for name, _ in self.extra_fields:
            metadata.append((f"{self.prefix}.{name}", _text(payload.field(name), None)))
        unavailable = _unavailable(after)
        if unavailable is not None:
            metadata.append((f"{self.prefix}.unavailable.columns", unavailable))
        created_at, beyond = self._created_at(source)
        read_at, read_beyond = _nanos(payload, self.times)
        bad |= beyond | read_beyond
        return {
            "operation": operation,
            "before": before,
            "after": after,
            "metadata": metadata,
            "collection": (
                _collection(source, self.dialect.collection_parts)
                if self.collection is None
                else pa.array([self.collection] * len(payload), pa.string())
            ),
            "created_at": pc.cast(created_at, pa.string()),
            "read_at": read_at,
        }, bad

    def _created_at(self, source: pa.StructArray) -> tuple[pa.Array, np.ndarray]:
        """The source's time, else its step of milliseconds (:attr:`Envelope.step_time`),
        and the rows with a time beyond 64 bits of nanoseconds."""
        found, beyond = _nanos(source, TIME_FIELDS)
        if self.step_time is None:
            return found, beyond
        step = source.field(self.step_time)
        fits = pc.and_(
            pc.greater_equal(step, 0), pc.less_equal(step, (2**63 - 1) // _NANOS_PER_MILLI)
        )
        nanos = pc.multiply(pc.if_else(fits, step, pa.scalar(None, pa.int64())), _NANOS_PER_MILLI)
        return pc.coalesce(found, nanos), beyond


def metadata_map(
    columns: Mapping[str, Any], count: int, more: Iterable[tuple[str, pa.Array]] = ()
) -> pa.MapArray:
    """Each row's metadata map (:meth:`EnvelopeColumns.columns`' entries, the OpenCDC
    version, collection, ``createdAt`` and ``readAt``, now for a change without a time of
    its own), then ``more`` entries."""
    entries: list[tuple[str, pa.Array]] = list(columns["metadata"])
    entries.append((keys.VERSION, pa.array([keys.OPENCDC_VERSION] * count, pa.string())))
    entries.append((keys.COLLECTION, columns["collection"]))
    entries.append((keys.CREATED_AT, columns["created_at"]))
    read_at = pc.fill_null(columns["read_at"], pa.scalar(time.time_ns(), pa.int64()))
    entries.append((keys.READ_AT, pc.cast(read_at, pa.string())))
    entries.extend(more)
    return map_column(entries, count)


def _named_blocks(fields: Any, what: str) -> dict[str, Any]:
    """The field blocks of a struct schema by name; :class:`NotColumnar` for fields that are
    no list of named blocks (what the per-message way then reads or refuses)."""
    if not isinstance(fields, list):
        raise NotColumnar(f"{what}: fields that are no list")
    blocks: dict[str, Any] = {}
    for block in fields:
        name = block.get("field") if isinstance(block, dict) else None
        if not isinstance(name, str):
            raise NotColumnar(f"{what}: a field without a name")
        blocks[name] = block
    return blocks


def _scalar_fields(block: Any, what: str) -> list[tuple[str, pa.DataType]]:
    if block is None:
        return []
    if not isinstance(block, dict) or block.get("type") != "struct":
        raise NotColumnar(f"{what} is not a struct")
    named = _named_blocks(block.get("fields") or [], what)
    return [(name, _scalar_type(field)) for name, field in named.items()]


def _scalar_type(block: Any) -> pa.DataType:
    """The type of a field that goes to metadata: text, integers and booleans only (a
    float's or an object's JSON text is the per-message way's to write)."""
    kind = block.get("type") if isinstance(block, dict) else None
    if not isinstance(kind, str):
        raise NotColumnar(f"a metadata field of type {kind!r}")
    if kind == "string":
        return pa.string()
    if kind in _INTEGERS:
        return pa.int64()
    if kind == "boolean":
        return pa.bool_()
    raise NotColumnar(f"a metadata field of type {kind!r}")


def _text(column: pa.Array, parent: pa.Array | None) -> pa.Array:
    """A metadata value column: text as is, numbers and booleans as their JSON text."""
    if column.type != pa.string():
        column = pc.cast(column, pa.string())
    if parent is not None and parent.null_count:
        column = pc.if_else(pc.is_valid(parent), column, pa.scalar(None, pa.string()))
    return column


def _collection(source: pa.StructArray, before_table: tuple[str, ...]) -> pa.Array:
    """``db.schema.table`` (the envelope's parts) per row, of the parts that are set (as
    ``collection_of`` joins)."""
    parts = []
    for name in (*before_table, "table"):
        index = source.type.get_field_index(name)
        if index >= 0 and source.type.field(index).type == pa.string():
            part = source.field(index)
            parts.append(pc.if_else(pc.equal(part, ""), pa.scalar(None, pa.string()), part))
        elif name == "table":  # none names the collection (opencdc.collection is refused)
            return pa.nulls(len(source), pa.string())
    table = parts[-1]
    # pyarrow 26's "skip" drops a row whose parts are all null: a row without a table is
    # given one here, then no collection below.
    parts[-1] = pc.fill_null(table, "")
    joined = pc.binary_join_element_wise(*parts, ".", null_handling="skip")
    return pc.if_else(pc.is_valid(table), joined, pa.scalar(None, pa.string()))


def _nanos(block: pa.StructArray, times: Iterable[tuple[str, int]]) -> tuple[pa.Array, np.ndarray]:
    """The first time field set, in nanoseconds, and the rows with a time that 64 bits of
    nanoseconds do not hold (the per-message way says what becomes of them)."""
    found: pa.Array | None = None
    beyond = np.zeros(len(block), dtype=bool)
    for name, factor in times:
        if block.type.get_field_index(name) < 0:
            continue
        column = block.field(name)
        limit = (2**63 - 1) // factor
        outside = pc.or_(pc.greater(column, limit), pc.less(column, -limit))
        beyond |= mask(outside)
        column = pc.multiply(pc.if_else(outside, pa.scalar(None, pa.int64()), column), factor)
        found = column if found is None else pc.coalesce(found, column)
    if found is None:
        return pa.nulls(len(block), pa.int64()), beyond
    return found, beyond


def _unavailable(array: pa.StructArray) -> pa.Array | None:
    """``debezium.unavailable.columns`` per row: the columns holding the placeholder."""
    hits: list[tuple[str, np.ndarray]] = []
    for index in range(array.type.num_fields):
        hit = _placeholders(array.field(index))
        if hit is not None and hit.any():
            hits.append((array.type.field(index).name, hit))
    if not hits:
        return None
    out: list[str | None] = [None] * len(array)
    for row in np.flatnonzero(np.logical_or.reduce([h for _, h in hits])):
        out[row] = ",".join(name for name, hit in hits if hit[row])
    return pa.array(out, pa.string())


def _placeholders(column: pa.Array) -> np.ndarray | None:
    """Rows of a column that hold the placeholder: the text (or its bytes), or an array of
    nothing but placeholders (a TOASTed array column); ``None`` for a column of neither."""
    if column.type in (pa.string(), pa.binary()):
        probe: Any = UNAVAILABLE_VALUE if column.type == pa.string() else _UNAVAILABLE_BYTES
        return mask(pc.equal(column, pa.scalar(probe, column.type)))
    if not pa.types.is_list(column.type):
        return None
    items = _placeholders(pc.list_flatten(column))
    if items is None:
        return None
    sizes = list_sizes(column)
    held = np.bincount(item_rows(sizes)[items], minlength=len(column))
    found: np.ndarray = (sizes > 0) & (held == sizes)
    return found


def map_column(entries: list[tuple[str, pa.Array]], count: int) -> pa.MapArray:
    """A ``map<string,string>`` column from (key, values) columns; null values left out."""
    width = len(entries)
    values = pa.concat_arrays([pc.cast(v, pa.string()) for _, v in entries])
    names = pa.array([name for name, _ in entries], pa.string())
    order = (np.arange(width)[None, :] * count + np.arange(count)[:, None]).ravel()
    taken = values.take(pa.array(order))
    present = mask(pc.is_valid(taken))
    key_index = np.tile(np.arange(width), count)[present]
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(present.reshape(count, width).sum(axis=1), out=offsets[1:])
    return pa.MapArray.from_arrays(
        pa.array(offsets),
        names.take(pa.array(key_index)),
        taken.filter(pa.array(present)),
        type=OPENCDC_ARROW_SCHEMA.field("metadata").type,
    )
