"""Typed OpenCDC batches -> ``opencdc.v1.Record`` messages, column by column.

:class:`ProtoRecordWriter` writes each row of a typed batch (the layout of
:mod:`cdc_connectors.spark.debezium_typed`: position, operation, metadata, key, before,
after) as the bytes :func:`cdc_connectors.opencdc.proto_codec.record_to_proto_bytes` gives
for the record the per-message Debezium reading makes of the same message: map entries in
protobuf's deterministic key order (:func:`~cdc_connectors.columnar.maps.proto_key`), every
number a ``Struct`` double, and each Kafka Connect semantic type as the per-message reading
holds it:

| typed column | per-message value | ``Struct`` value |
|---|---|---|
| integers, ``Year``, ``NanoTime``, ``NanoTimestamp`` | int | double; beyond +-2**53 refused |
| ``double`` (also ``float32`` read as doubles) | float | double |
| ``decimal(p, s)``, decimal text | Decimal | the double; one that changes it: refused |
| ``date`` (Date) | date | ``YYYY-MM-DD`` |
| ``timestamp`` (Timestamp, MicroTimestamp) | datetime | ``YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`` |
| ``int`` / ``bigint`` (Time, MicroTime) | time | ``HH:MM:SS[.ffffff]`` |
| ``binary`` | bytes | base64 text |
| ``string`` (also Uuid, Enum, Json, Zoned*) | str | text |
| struct | dict | ``Struct`` |
| list (Connect array) | list | ``ListValue`` of its items' values |
| map (Connect map of string keys) | dict | ``Struct`` of its entries |

A row the columns cannot write exactly is flagged (:meth:`ProtoRecordWriter.write`) for
the per-message way, which then writes it or refuses it with its own reason: an integer
or decimal a double would change, a Spark ``float`` column (its typed value has lost the digits
the message had). A ``-0.0`` is the message's own: the decoder
sends a message that says ``-0`` (the integer, 0 the per-message way) that way.
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Callable
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import isotext, maps, wire
from cdc_connectors.columnar.kinds import column_kind
from cdc_connectors.schema.connect import ConnectSchema
from cdc_connectors.spark.arrow_lists import item_rows, list_offsets, list_sizes

__all__ = ["NotColumnar", "ProtoRecordWriter", "StructWriter", "struct_body"]

_NULL_VALUE = b"\x08\x00"  # google.protobuf.Value{null_value: NULL_VALUE}
_EXACT = 2**53
_EXACT_DIGITS = 10**15  # a decimal of at most 15 digits reads back from its double
_DOUBLE_DIGITS = 15
_SMALLEST_NORMAL = float.fromhex("0x1p-1022")
_MAX_SCALE = 22  # 10**22 is the largest power of ten a double holds exactly
_OPERATIONS = pa.array(["create", "update", "delete", "snapshot"], pa.string())
# Struct nesting the per-record writer accepts in a payload image: 3 per object level.
_MAX_LEVELS = (101 - 3) // 3

Flagged = tuple[pa.Array, np.ndarray]
_NO_SEPARATOR = pa.scalar(b"", pa.binary())


class NotColumnar(ValueError):
    """A row schema the columnar writer does not write (its rows go the per-message way)."""


class ProtoRecordWriter:
    """Typed batches of one row schema -> ``opencdc.v1.Record`` bytes (module docstring)."""

    def __init__(self, row: ConnectSchema, row_type: pa.StructType):
        if _levels(row) > _MAX_LEVELS:
            raise NotColumnar(f"{row.path}: nested deeper than a protobuf Struct is read back")
        self._struct = _struct_writer(row, row_type)

    def write(self, batch: pa.RecordBatch, key_fields: pa.Array) -> Flagged:
        """The record bytes of each row of ``batch`` and the rows to write the per-message
        way instead. ``key_fields`` holds each row's serialized ``key`` field (empty when
        the record has no key)."""
        count = batch.num_rows
        bad = np.zeros(count, dtype=bool)
        change = wire.Pieces.empty(count)
        anything = np.zeros(count, dtype=bool)
        for tag, name in ((b"\x0a", "before"), (b"\x12", "after")):
            column = batch.column(name)
            present = wire.valid(column)
            if not present.any():
                continue
            body, refused = self._struct(column, present)
            bad |= refused & present
            anything |= present
            change += wire.framed(tag, wire.framed(b"\x12", body, present), present)
        position = batch.column("position")
        sizes = wire.lengths(position)
        record = (
            wire.framed(b"\x0a", wire.Pieces([wire.masked(position, sizes > 0)], sizes), sizes > 0)
            + _operation_field(batch.column("operation"))
            + _metadata_fields(batch.column("metadata"))
            + wire.Pieces.of(key_fields)
            + wire.framed(b"\x2a", change, anything)
        )
        return record.joined(), bad


def struct_body(node: ConnectSchema, type_: pa.DataType) -> StructWriter:
    """How a struct column of Connect schema ``node`` becomes ``google.protobuf.Struct``
    bodies (a record key's, an image's); :class:`NotColumnar` if it does not."""
    if _levels(node) > _MAX_LEVELS:
        raise NotColumnar(f"{node.path}: nested deeper than a protobuf Struct is read back")
    return _struct_writer(node, type_)


def _levels(node: ConnectSchema) -> int:
    if node.type != "struct":
        return 0
    return 1 + max((_levels(child) for _, child in node.fields), default=0)


def _operation_field(operations: pa.Array) -> wire.Pieces:
    numbers = np.asarray(pc.index_in(operations, _OPERATIONS).to_numpy(zero_copy_only=False))
    matrix = np.empty((len(numbers), 2), dtype=np.uint8)
    matrix[:, 0] = 0x10
    matrix[:, 1] = numbers + 1
    return wire.segments([(matrix, np.full(len(numbers), 2, dtype=np.int64))])


def _metadata_fields(metadata: pa.MapArray) -> wire.Pieces:
    """The ``metadata`` map entries of each row, in key order as deterministic
    serialization writes them."""
    entries = maps.sorted_entries(metadata, proto=True)
    count = entries.count
    if entries.uniform is not None:
        return _same_keys(entries.uniform, count)
    assert entries.names is not None and entries.items is not None
    assert entries.offsets is not None
    names, items = entries.names, entries.items
    name_sizes, item_sizes = wire.lengths(names), wire.lengths(items)
    entry_sizes = (
        2 + wire.varint_size(name_sizes) + name_sizes + wire.varint_size(item_sizes) + item_sizes
    )
    total = len(names)
    header = wire.segments(
        [
            wire.constant(b"\x1a", total),
            wire.varint(entry_sizes),
            wire.constant(b"\x0a", total),
            wire.varint(name_sizes),
        ]
    )
    middle = wire.segments([wire.constant(b"\x12", total), wire.varint(item_sizes)])
    joined = (header + wire.Pieces.of(names) + middle + wire.Pieces.of(items)).joined()
    lists = pa.ListArray.from_arrays(pa.array(entries.offsets.astype(np.int32)), joined)
    return wire.Pieces.of(pc.binary_join(lists, _NO_SEPARATOR))


def _same_keys(columns: list[tuple[bytes, pa.Array]], count: int) -> wire.Pieces:
    """Map entries of rows that all have the same keys: one column of values per key, in
    key order."""
    pieces = wire.Pieces.empty(count)
    for name, column in columns:
        values = wire.Pieces.of(column)
        key = _tagged(b"\x0a", name) + b"\x12"
        sizes = len(key) + wire.varint_size(values.sizes) + values.sizes
        header = wire.segments(
            [
                wire.constant(b"\x1a", count),
                wire.varint(sizes),
                wire.constant(key, count),
                wire.varint(values.sizes),
            ]
        )
        pieces += header + values
    return pieces


def _tagged(tag: bytes, data: bytes) -> bytes:
    """A length-delimited field of constant bytes."""
    matrix, sizes = wire.varint(np.array([len(data)]))
    return tag + bytes(matrix[0, : sizes[0]]) + data


# --- images: a typed struct column -> google.protobuf.Struct bodies ---------------------------

#: (a struct column, the rows to write) -> the Struct body of each row, and rows refused.
StructWriter = Callable[[pa.Array, np.ndarray], tuple[wire.Pieces, np.ndarray]]
#: (a column, the rows to write) -> each row's Value: its leading bytes, its body (no
#: bytes where not written), and the rows refused.
ValueWriter = Callable[[pa.Array, np.ndarray], tuple[wire.Segment, wire.Pieces, np.ndarray]]


def _struct_writer(node: ConnectSchema, type_: pa.DataType) -> StructWriter:
    """The ``Struct`` body of each written row of a struct column: its fields' map entries
    in key order."""
    if node.type != "struct" or not pa.types.is_struct(type_):
        raise NotColumnar(f"{node.path}: {node.type} as {type_}")
    children = sorted(node.fields, key=lambda pair: maps.proto_key(pair[0].encode("utf-8")))
    writers = []
    for name, child in children:
        index = type_.get_field_index(name)
        if index < 0:
            raise NotColumnar(f"{child.path}: not a column of {type_}")
        key = name.encode("utf-8")
        writers.append(
            (_tagged(b"\x0a", key), _value_writer(child, type_.field(index).type), index)
        )

    def write(array: pa.Array, present: np.ndarray) -> tuple[wire.Pieces, np.ndarray]:
        count = len(array)
        bad = np.zeros(count, dtype=bool)
        body = wire.Pieces.empty(count)
        for key, value_of, index in writers:
            header, value, refused = value_of(array.field(index), present)
            bad |= refused
            body += _entry(key, header, value, present)
        return body, bad

    return write


def _entry(
    key: bytes, header: wire.Segment, value: wire.Pieces, present: np.ndarray
) -> wire.Pieces:
    """A ``Struct.fields`` map entry: the key, then the Value (``header`` and ``value``)."""
    count = len(present)
    matrix, sizes = header
    value_sizes = sizes + value.sizes
    if len(key) + 2 + int(value_sizes.max(initial=0)) < 128:
        # Entries of fewer than 128 bytes (a number, a date, a short text): both sizes are
        # one byte, and what leads the value's body one segment.
        width = len(key) + 1
        entry = np.empty((count, width + 3 + matrix.shape[1]), dtype=np.uint8)
        entry[:, 0] = 0x0A
        entry[:, 1] = value_sizes + width + 1
        entry[:, 2 : 2 + width] = np.frombuffer(key + b"\x12", dtype=np.uint8)
        entry[:, 2 + width] = value_sizes
        entry[:, 3 + width :] = matrix
        return wire.segments([(entry, sizes + (width + 3))], present) + value
    entry_sizes = len(key) + 1 + wire.varint_size(value_sizes) + value_sizes
    leading = wire.segments(
        [
            wire.constant(b"\x0a", count),
            wire.varint(entry_sizes),
            wire.constant(key + b"\x12", count),
            wire.varint(value_sizes),
            header,
        ],
        present,
    )
    return leading + value


def _value_writer(node: ConnectSchema, type_: pa.DataType) -> ValueWriter:
    """How one column becomes ``google.protobuf.Value`` bytes (module docstring)."""
    kind = column_kind(node, type_)
    if kind is None:
        raise NotColumnar(f"{node.path}: {node.type} as {type_}")
    if kind.name == "struct":
        return _nested(_struct_writer(node, type_))
    if kind.name == "list":
        assert node.items is not None
        return _list_values(_value_writer(node.items, type_.value_type))
    if kind.name == "map":
        assert node.values is not None
        return _map_values(_value_writer(node.values, type_.item_type))
    if kind.name == "time_of_day":
        per_unit = kind.unit
        return _short_texts(lambda counts: isotext.times(counts * per_unit))
    if kind.name == "decimal":
        return _decimal_numbers(kind.unit)
    if kind.name == "decimal_text":
        return _decimal_text_numbers
    return {
        "date": _short_texts(isotext.dates),
        "timestamp": _short_texts(isotext.timestamps),
        "refused": _refused,
        "string": _texts(None),
        "binary": _texts(_base64),
        "integer": _integers,
        "double": _doubles,
        "boolean": _booleans,
    }[kind.name]


def _null_or(valid: np.ndarray, header: wire.Segment) -> wire.Segment:
    return wire.choose(valid, header, wire.constant(_NULL_VALUE, len(valid)))


def _nested(struct: StructWriter) -> ValueWriter:
    def write(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
        valid = present & wire.valid(array)
        body, bad = struct(array, valid)
        count = len(array)
        header = wire.choose(
            valid,
            _joined_segments(wire.constant(b"\x2a", count), wire.varint(body.sizes)),
            wire.constant(_NULL_VALUE, count),
        )
        return header, body, bad & valid

    return write


def _list_values(item: ValueWriter) -> ValueWriter:
    """A list column as ``Value.list_value``: each item a ``ListValue.values`` entry."""

    def write(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
        valid = present & wire.valid(array)
        count = len(array)
        sizes = list_sizes(array)
        rows = item_rows(sizes)
        header, value, refused = item(pc.list_flatten(array), valid[rows])
        items = len(rows)
        value_sizes = header[1] + value.sizes
        entries = (
            wire.segments([wire.constant(b"\x0a", items), wire.varint(value_sizes), header]) + value
        ).joined()
        header, body = _gathered(b"\x32", entries, list_offsets(sizes), valid)
        bad = np.zeros(count, dtype=bool)
        bad[rows[refused]] = True
        return header, body, bad & valid

    return write


def _map_values(item: ValueWriter) -> ValueWriter:
    """A map column (string keys) as ``Value.struct_value``: each entry a ``Struct.fields``
    entry, in protobuf's key order (:func:`~cdc_connectors.columnar.maps.proto_key`)."""

    def write(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
        valid = present & wire.valid(array)
        count = len(array)
        entries = maps.sorted_entries(array, proto=True, uniform=False)
        assert entries.names is not None and entries.items is not None
        assert entries.offsets is not None
        names, offsets = entries.names.cast(pa.binary()), entries.offsets
        rows = np.repeat(np.arange(count), np.diff(offsets))
        header, value, refused = item(entries.items, valid[rows])
        value_sizes = header[1] + value.sizes
        name_sizes = wire.lengths(names)
        total = len(names)
        sizes = 2 + wire.varint_size(name_sizes) + name_sizes + wire.varint_size(value_sizes)
        leading = wire.segments(
            [
                wire.constant(b"\x0a", total),
                wire.varint(sizes + value_sizes),
                wire.constant(b"\x0a", total),
                wire.varint(name_sizes),
            ]
        )
        middle = wire.segments([wire.constant(b"\x12", total), wire.varint(value_sizes), header])
        joined = (leading + wire.Pieces.of(names) + middle + value).joined()
        header, body = _gathered(b"\x2a", joined, pa.array(offsets.astype(np.int32)), valid)
        bad = np.zeros(count, dtype=bool)
        bad[rows[refused]] = True
        return header, body, bad & valid

    return write


def _gathered(
    tag: bytes, entries: pa.Array, offsets: pa.Array, valid: np.ndarray
) -> tuple[wire.Segment, wire.Pieces]:
    """Each valid row's ``entries`` (``offsets[n]:offsets[n + 1]``) joined as the body of a
    ``Value`` field ``tag`` (a list's, a struct's), and the leading bytes of each row's
    Value: that field's tag and size, or a null value."""
    lists = pa.ListArray.from_arrays(offsets, entries)
    bodies = wire.masked(pc.binary_join(lists, _NO_SEPARATOR), valid)
    body_sizes = wire.lengths(bodies)
    count = len(valid)
    header = _null_or(valid, _joined_segments(wire.constant(tag, count), wire.varint(body_sizes)))
    return header, wire.Pieces([bodies], body_sizes)


def _joined_segments(first: wire.Segment, second: wire.Segment) -> wire.Segment:
    """Two segments as one (``first``'s bytes then ``second``'s)."""
    count = len(first[1])
    width = first[0].shape[1] + second[0].shape[1]
    matrix = np.zeros((count, width), dtype=np.uint8)
    sizes = first[1] + second[1]
    rows = np.arange(count)
    matrix[:, : first[0].shape[1]] = first[0]
    for k in range(second[0].shape[1]):
        column = first[1] + k
        inside = k < second[1]
        matrix[rows[inside], column[inside]] = second[0][inside, k]
    return matrix, sizes


def _texts(text_of: Callable[[pa.Array], pa.Array] | None) -> ValueWriter:
    def write(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
        valid = present & wire.valid(array)
        count = len(array)
        texts = array if text_of is None else text_of(array)
        body = wire.masked(texts, valid)
        sizes = wire.lengths(body)
        header = _null_or(
            valid, _joined_segments(wire.constant(b"\x1a", count), wire.varint(sizes))
        )
        return header, wire.Pieces([body], sizes), np.zeros(count, dtype=bool)

    return write


def _short_texts(text_of: Callable[[np.ndarray], wire.Segment]) -> ValueWriter:
    """Text of fewer than 128 bytes computed from a column's integers (dates, times)."""

    def write(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
        valid = present & wire.valid(array)
        count = len(array)
        integers = array.cast(pa.int32() if pa.types.is_date32(array.type) else pa.int64())
        counts = np.asarray(pc.fill_null(integers, 0).to_numpy(), dtype=np.int64)
        text, sizes = text_of(counts)
        matrix = np.empty((count, text.shape[1] + 2), dtype=np.uint8)
        matrix[:, 0] = 0x1A
        matrix[:, 1] = sizes
        matrix[:, 2:] = text
        header = _null_or(valid, (matrix, sizes + 2))
        return (*_fixed(header, count), np.zeros(count, dtype=bool))

    return write


def _fixed(header: wire.Segment, count: int) -> tuple[wire.Segment, wire.Pieces]:
    return header, wire.Pieces.empty(count)


def _refused(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
    count = len(array)
    return wire.constant(_NULL_VALUE, count), wire.Pieces.empty(count), present & wire.valid(array)


def _numbers(numbers: np.ndarray, valid: np.ndarray) -> wire.Segment:
    count = len(numbers)
    matrix = np.empty((count, 9), dtype=np.uint8)
    matrix[:, 0] = 0x11
    matrix[:, 1:] = np.ascontiguousarray(numbers, dtype="<f8").view(np.uint8).reshape(count, 8)
    return _null_or(valid, (matrix, np.full(count, 9, dtype=np.int64)))


def _integers(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
    valid = present & wire.valid(array)
    if pa.types.is_decimal(array.type):
        # An unsigned 64-bit integer (protobuf's uint64, held as decimal(20,0)) may not fit
        # the int64 cast: what is beyond 2**53 becomes 2**53 + 1 first, refused as such.
        beyond = pc.fill_null(pc.greater(array, pa.scalar(_EXACT).cast(array.type)), False)
        array = pc.if_else(beyond, pa.scalar(_EXACT + 1).cast(array.type), array)
    found = np.asarray(pc.fill_null(array.cast(pa.int64()), 0).to_numpy(), dtype=np.int64)
    bad = valid & ((found > _EXACT) | (found < -_EXACT))
    return (*_fixed(_numbers(found.astype(np.float64), valid), len(array)), bad)


def _doubles(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
    valid = present & wire.valid(array)
    found = np.asarray(pc.fill_null(array, 0.0).to_numpy(), dtype=np.float64)
    bad = np.zeros(len(valid), dtype=bool)  # -0.0 is the message's (see the decoder)
    return (*_fixed(_numbers(found, valid), len(array)), bad)


def _booleans(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
    valid = present & wire.valid(array)
    count = len(array)
    matrix = np.empty((count, 2), dtype=np.uint8)
    matrix[:, 0] = 0x20
    matrix[:, 1] = wire.mask(array)
    header = _null_or(valid, (matrix, np.full(count, 2, dtype=np.int64)))
    return (*_fixed(header, count), np.zeros(count, dtype=bool))


def _decimal_numbers(scale: int) -> ValueWriter:
    """Decimals as the doubles ``float(Decimal)`` gives: the unscaled integer without its
    trailing zeros (exact below 10**15) divided by 10**scale less those zeros (exact up to
    10**22), rounded once, as the division of two exact doubles is; a decimal of more
    digits by ``float`` itself (few are), refused where the double changes it."""
    divisor = float(10**scale) if 0 <= scale <= _MAX_SCALE else None

    def write(array: pa.Array, present: np.ndarray) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
        valid = present & wire.valid(array)
        words = np.frombuffer(array.buffers()[1], dtype=np.int64)
        words = words[2 * array.offset : 2 * (array.offset + len(array))].reshape(-1, 2)
        low, high = words[:, 0], words[:, 1]
        fits = high == (low >> 63)  # the unscaled integer is a 64-bit one
        # Trailing zeros dropped (12.500 is 125 / 10): fewer digits, the same value.
        unscaled = np.where(fits, low, 0)
        scales = np.full(len(array), scale, dtype=np.int64)
        for _ in range(scale if divisor is not None else 0):
            tens = (unscaled % 10 == 0) & (unscaled != 0) & (scales > 0)
            if not tens.any():
                break
            unscaled = np.where(tens, unscaled // 10, unscaled)
            scales -= tens
        # not np.abs: -2**63 has no positive int64
        small = fits & (unscaled < _EXACT_DIGITS) & (unscaled > -_EXACT_DIGITS)
        if divisor is None:
            small[:] = False
        divisors = np.power(10.0, scales)
        numbers = np.where(small, unscaled, 0).astype(np.float64) / divisors
        # The rest (more digits): Python's own float(Decimal), where it keeps the value.
        refused = np.zeros(len(array), dtype=bool)
        for row in np.flatnonzero(valid & ~small):
            value = array[int(row)].as_py()
            number = float(value)
            if Decimal(repr(number)) == value:
                numbers[row] = number
            else:
                refused[row] = True
        return (*_fixed(_numbers(numbers, valid), len(array)), refused)

    return write


def _decimal_text_numbers(
    array: pa.Array, present: np.ndarray
) -> tuple[wire.Segment, wire.Pieces, np.ndarray]:
    """Decimals held as their plain text (:mod:`~cdc_connectors.spark.decimal_text`) as the
    doubles ``float(Decimal)`` gives: Arrow's reading of the text, correctly rounded as
    Python's, where it has at most 15 significant digits (a double keeps those) and is
    neither beyond a double's range nor below its normal numbers; the others by ``float``
    itself, refused where the double changes the value."""
    valid = present & wire.valid(array)
    texts = pc.fill_null(array, "0")
    numbers = np.array(pc.cast(texts, pa.float64()).to_numpy(zero_copy_only=False))
    digits = pc.replace_substring(pc.replace_substring(texts, "-", ""), ".", "")
    significant = np.asarray(
        pc.utf8_length(pc.utf8_rtrim(pc.utf8_ltrim(digits, "0"), "0")).to_numpy(), dtype=np.int64
    )
    magnitude = np.abs(numbers)
    sure = (significant <= _DOUBLE_DIGITS) & np.isfinite(numbers)
    sure &= (significant == 0) | (magnitude >= _SMALLEST_NORMAL)
    refused = np.zeros(len(array), dtype=bool)
    for row in np.flatnonzero(valid & ~sure):
        value = Decimal(array[int(row)].as_py())
        number = float(value)
        numbers[row] = number
        refused[row] = not math.isfinite(number) or Decimal(repr(number)) != value
    return (*_fixed(_numbers(numbers, valid), len(array)), refused)


def _base64(array: pa.Array) -> pa.Array:
    encode = binascii.b2a_base64
    return pa.array(
        [None if v is None else encode(v, newline=False) for v in array.to_pylist()], pa.binary()
    )
