"""Typed rows -> the ``protobuf`` destination's key or value bytes, column by column.

:class:`ProtobufRows` writes one part of a batch of typed rows (the record's key, or its
``after`` image) as :meth:`ProtobufFormat.encode <cdc_connectors.formats.protobuf.ProtobufFormat>`
writes it: the message of the schema the destination writes a row of its collection with
(:meth:`~cdc_connectors.formats.protobuf.ProtobufFormat.schema_of`), framed with its id and
message-index path. The body is Protobuf's wire format assembled from the columns
(:mod:`~cdc_connectors.columnar.wire`), field after field in the order of their numbers, as
``SerializeToString`` writes what :func:`~cdc_connectors.schema.protobuf.from_dict` builds.

Each column goes into the field of its name; these pairs are written from columns:

| column | field |
|---|---|
| integer | any integer type, and its wrapper (``Int64Value`` ...) |
| double | ``double``, ``float`` (not a finite double beyond its range), their wrappers |
| boolean | ``bool``, ``BoolValue`` |
| string | ``string``, ``StringValue``, an enum (by value name) |
| binary | ``bytes``, ``BytesValue`` |
| decimal | ``string`` (the decimal's text) |
| timestamp, date | ``google.protobuf.Timestamp`` |
| a list of one of the above but times | a ``repeated`` field of that kind (packed or not) |
| a struct of columns written so | a message field of that message |

A field without presence (proto3's default) is left out where its value is the default
(0, an empty text, false, ``0.0`` but not ``-0.0``), as Protobuf leaves it out. The rows of
a collection go the per-message way, which then writes them or says why not, where its
schema cannot be had, the schema is no proto3 file, a column names no field (or a map,
``oneof`` or group field, or a list of messages), or the pair is not above; a row goes that
way where its value does not fit the field (out of the field's range, no value of the enum,
a time outside 0001..9999, a null item of a list).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.avro_rows import codes
from cdc_connectors.formats.protobuf import ProtobufFormat
from cdc_connectors.opencdc import CodecError
from cdc_connectors.registry.store import Resolved
from cdc_connectors.schema import float32, framing
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.protobuf import (
    MAX_SECONDS,
    MIN_SECONDS,
    TIMESTAMP,
    WRAPPERS,
    synthetic_oneofs,
)
from cdc_connectors.schema.subjects import Part

__all__ = ["Bodies", "ProtobufRows", "plan"]

_FD = FieldDescriptor
#: A field's writer: its column -> its bytes on each row, and the rows it refuses.
Writer = Callable[[pa.Array], tuple[wire.Pieces, np.ndarray]]
#: A value's bytes (no tag) from its column: the segment, which rows hold a value other
#: than the default, and the rows refused.
_Values = Callable[[pa.Array], tuple[wire.Segment | wire.Pieces, np.ndarray, np.ndarray]]

_VARINT, _FIXED64, _DELIMITED, _FIXED32 = 0, 1, 2, 5
#: Each integer type: its range, and how its values are written.
_INTEGERS: dict[int, tuple[int, int, str]] = {
    _FD.TYPE_INT32: (-(2**31), 2**31 - 1, "varint"),
    _FD.TYPE_INT64: (-(2**63), 2**63 - 1, "varint"),
    _FD.TYPE_UINT32: (0, 2**32 - 1, "varint"),
    _FD.TYPE_UINT64: (0, 2**64 - 1, "varint"),
    _FD.TYPE_SINT32: (-(2**31), 2**31 - 1, "zigzag"),
    _FD.TYPE_SINT64: (-(2**63), 2**63 - 1, "zigzag"),
    _FD.TYPE_FIXED32: (0, 2**32 - 1, "fixed32"),
    _FD.TYPE_SFIXED32: (-(2**31), 2**31 - 1, "fixed32"),
    _FD.TYPE_FIXED64: (0, 2**64 - 1, "fixed64"),
    _FD.TYPE_SFIXED64: (-(2**63), 2**63 - 1, "fixed64"),
}
_WIRE_TYPES = {"varint": _VARINT, "zigzag": _VARINT, "fixed32": _FIXED32, "fixed64": _FIXED64}
#: Units of a timestamp column per second (nanoseconds are finer than the per-message way's
#: datetimes: such columns go its way).
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000}
_SECONDS_PER_DAY = 86_400


@dataclass
class Bodies:
    """The Protobuf bodies of one part of a batch, before their schemas are registered
    (:meth:`ProtobufRows.framed`)."""

    count: int
    #: The rows the per-message way must write.
    refused: np.ndarray
    #: (rows, their bodies, their schema, registered when called, and its message-index
    #: path) of each group of rows written.
    groups: list[tuple[np.ndarray, pa.Array, Callable[[], Resolved], list[int]]] = field(
        default_factory=list
    )

    @classmethod
    def empty(cls, count: int) -> Bodies:
        return cls(count, np.zeros(count, dtype=bool))

    def place(self, other: Bodies, at: np.ndarray) -> None:
        """Take in ``other``, whose rows are these rows of ``at``."""
        self.refused[at[other.refused]] = True
        for rows, bodies, schema, indexes in other.groups:
            self.groups.append((at[rows], bodies, schema, indexes))


class ProtobufRows:
    """One part of typed rows -> Confluent-framed Protobuf (module docstring)."""

    def __init__(self, destination: ProtobufFormat, part: Part):
        self.destination = destination
        self.part: Part = part
        self._plans: dict[tuple[bytes, tuple[int, ...], pa.DataType], _Plan | None] = {}

    def encode(
        self,
        data: pa.Array,
        present: np.ndarray,
        collections: pa.Array,
        leave: frozenset[str] = frozenset(),
    ) -> Bodies:
        """The body of each row where ``present`` (``data`` is a struct column,
        ``collections`` each row's collection or null), and the rows refused; the rows of
        a struct with a column named in ``leave`` (one the per-message way holds otherwise
        than its column: a time of day as text) are all refused."""
        encoded = Bodies.empty(len(data))
        if not present.any():
            return encoded
        combined, (names,) = codes([collections])
        _, first, group_of = np.unique(combined, return_index=True, return_inverse=True)
        for number in np.argsort(first, kind="stable").tolist():
            rows = np.flatnonzero(present & (group_of.reshape(-1) == number))
            if len(rows):
                self._group(data, rows, names[int(rows[0])], encoded, leave)
        return encoded

    def _group(
        self,
        data: pa.Array,
        rows: np.ndarray,
        collection: str | None,
        out: Bodies,
        leave: frozenset[str],
    ) -> None:
        """The bodies of ``rows``, of one collection."""
        names = data.type.names if pa.types.is_struct(data.type) else []
        if any(name in leave for name in names):
            out.refused[rows] = True
            return
        try:
            cls, indexes, schema = self.destination.message_for(collection, self.part)
        except (CodecError, SchemaError):
            out.refused[rows] = True
            return
        key = (cls.DESCRIPTOR.file.serialized_pb, tuple(indexes), data.type)
        if key not in self._plans:
            self._plans[key] = plan(cls.DESCRIPTOR, data.type)
        found = self._plans[key]
        if found is None:
            out.refused[rows] = True
            return
        bodies, bad = found.write(data.take(pa.array(rows)))
        out.refused[rows[bad]] = True
        if not bad.all():
            out.groups.append((rows[~bad], bodies.filter(pa.array(~bad)), schema, indexes))

    def framed(self, encoded: Bodies, keep: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        """The message bytes of the rows to ``keep`` (null elsewhere): each schema with a row
        kept registered (as the per-message way registers it before it writes a row), its
        header before the body; and the rows refused, those of a schema the registry
        refuses among them."""
        refused = encoded.refused.copy()
        parts = []
        for rows, bodies, schema, indexes in encoded.groups:
            kept = keep[rows]
            if not kept.any():
                continue
            try:
                header = framing.frame(schema().schema_id, b"", indexes)
            except CodecError:
                refused[rows[kept]] = True
                continue
            chosen = bodies.filter(pa.array(kept))
            prefix = pa.scalar(header, pa.binary())
            parts.append((rows[kept], pc.binary_join_element_wise(prefix, chosen, b"")))
        return _scattered(encoded.count, parts), refused


def _scattered(count: int, parts: list[tuple[np.ndarray, pa.Array]]) -> pa.Array:
    """A binary column of ``count`` rows holding each part's values at its rows (null
    elsewhere)."""
    if not parts:
        return pa.nulls(count, pa.binary())
    combined = pa.concat_arrays([values for _, values in parts] + [pa.nulls(1, pa.binary())])
    index = np.full(count, len(combined) - 1, dtype=np.int64)
    start = 0
    for rows, values in parts:
        index[rows] = np.arange(start, start + len(values))
        start += len(values)
    return combined.take(pa.array(index))


@dataclass
class _Plan:
    """How the columns of one struct type are written as one message type."""

    #: (field number, column index, writer), in the order of the field numbers.
    writers: list[tuple[int, int, Writer]]

    def write(self, data: pa.Array) -> tuple[pa.Array, np.ndarray]:
        """Each row's body, and the rows refused."""
        pieces, bad = self.pieces(data)
        return pieces.joined(), bad

    def pieces(self, data: pa.Array) -> tuple[wire.Pieces, np.ndarray]:
        """Each row's body as pieces (none where the row is null), and the rows refused."""
        count = len(data)
        columns = data.flatten()  # a null row's fields null too: nothing written
        pieces = wire.Pieces.empty(count)
        bad = np.zeros(count, dtype=bool)
        for _, index, writer in self.writers:
            written, refused = writer(columns[index])
            pieces += written
            bad |= refused
        return pieces, bad


def plan(descriptor: Descriptor, type_: pa.DataType) -> _Plan | None:
    """How rows of ``type_`` are written as ``descriptor``'s message, or ``None`` when the
    columns do not write them (module docstring)."""
    if not pa.types.is_struct(type_) or _syntax(descriptor) != "proto3":
        return None
    synthetic = synthetic_oneofs(descriptor)
    writers = []
    for index in range(type_.num_fields):
        column = type_.field(index)
        fd = descriptor.fields_by_name.get(column.name)
        if fd is None:
            return None
        oneof = fd.containing_oneof
        if oneof is not None and oneof.name not in synthetic:
            return None
        writer = _field_writer(fd, column.type)
        if writer is None:
            return None
        writers.append((fd.number, index, writer))
    writers.sort(key=lambda found: found[0])
    return _Plan(writers)


def _syntax(descriptor: Descriptor) -> str:
    """The syntax of the file of ``descriptor`` (``proto2``, ``proto3``, ``editions``)."""
    proto = descriptor_pb2.FileDescriptorProto()
    descriptor.file.CopyToProto(proto)
    return proto.syntax or "proto2"


def _tag(number: int, wire_type: int) -> bytes:
    matrix, sizes = wire.varint(np.array([(number << 3) | wire_type], dtype=np.int64))
    return bytes(matrix[0, : int(sizes[0])])


def _field_writer(fd: FieldDescriptor, type_: pa.DataType) -> Writer | None:
    """The writer of a column of ``type_`` into field ``fd``, or ``None``."""
    if fd.is_repeated:
        return _repeated_writer(fd, type_)
    if fd.type == _FD.TYPE_MESSAGE:
        name = fd.message_type.full_name
        if name == TIMESTAMP:
            return _message_writer(fd.number, _timestamp(type_))
        if name in WRAPPERS:
            inner = _values(WRAPPERS[name], None, type_)
            if inner is None:
                return None
            return _message_writer(fd.number, _wrapped(WRAPPERS[name], inner))
        nested = plan(fd.message_type, type_)
        if nested is None:
            return None
        return _message_writer(fd.number, nested.pieces)
    if fd.type == _FD.TYPE_GROUP:
        return None
    values = _values(fd.type, fd, type_)
    if values is None:
        return None
    wire_type = _wire_type(fd.type)
    tag = _tag(fd.number, wire_type)
    always = fd.has_presence

    def write(column: pa.Array) -> tuple[wire.Pieces, np.ndarray]:
        written, set_, bad = values(column)
        return _tagged(tag, written, wire.valid(column) & ~bad & (set_ | always)), bad

    return write


def _tagged(tag: bytes, written: wire.Segment | wire.Pieces, shown: np.ndarray) -> wire.Pieces:
    """A field on each row ``shown``: its tag, then a scalar's bytes, or a length-delimited
    value's size and bytes (``written`` has none on the other rows)."""
    if isinstance(written, wire.Pieces):
        return wire.framed(tag, written, shown)
    return wire.segments([wire.constant(tag, len(shown)), written], shown)


def _repeated_writer(fd: FieldDescriptor, type_: pa.DataType) -> Writer | None:
    """A repeated scalar field from a list column: packed (a numeric field's values after
    one tag and their size, as proto3 writes them unless ``[packed = false]``), or each
    value after its own tag; an empty list writes nothing, a null item is refused."""
    if fd.type == _FD.TYPE_MESSAGE or not pa.types.is_list(type_):
        return None
    values = _values(fd.type, fd, type_.value_type)
    if values is None:
        return None
    packed = bool(fd.is_packed)
    tag = _tag(fd.number, _DELIMITED if packed else _wire_type(fd.type))

    def write(column: pa.Array) -> tuple[wire.Pieces, np.ndarray]:
        count = len(column)
        valid = wire.valid(column)
        lengths = np.asarray(pc.fill_null(pc.list_value_length(column), 0).to_numpy(), np.int64)
        items = column.flatten()
        written, _, bad_items = values(items)
        bad_items = bad_items | ~wire.valid(items)
        ends = np.cumsum(lengths)
        bad_counts = np.zeros(len(items) + 1, dtype=np.int64)
        np.cumsum(bad_items, out=bad_counts[1:])
        starts = ends - lengths
        bad = valid & (bad_counts[ends] - bad_counts[starts] > 0)
        if packed:  # the values alone (numbers: segments)
            item_bytes = wire.segments([written]).joined()  # type: ignore[list-item]
        else:
            item_bytes = _tagged(tag, written, np.ones(len(items), dtype=bool)).joined()
        offsets = np.zeros(count + 1, dtype=np.int32)
        offsets[1:] = ends
        rows = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), item_bytes), b"")
        shown = valid & ~bad & (lengths > 0)
        row_pieces = wire.Pieces.of(wire.masked(rows, shown))
        if packed:
            return wire.framed(tag, row_pieces, shown), bad
        return row_pieces, bad

    return write


def _wire_type(field_type: int) -> int:
    if field_type in _INTEGERS:
        return _WIRE_TYPES[_INTEGERS[field_type][2]]
    if field_type == _FD.TYPE_DOUBLE:
        return _FIXED64
    if field_type == _FD.TYPE_FLOAT:
        return _FIXED32
    if field_type in (_FD.TYPE_STRING, _FD.TYPE_BYTES):
        return _DELIMITED
    return _VARINT  # bool, enum


def _message_writer(
    number: int, body: Callable[[pa.Array], tuple[wire.Pieces, np.ndarray]] | None
) -> Writer | None:
    """A message field: its tag, its body's size and its body, on each row with a value."""
    if body is None:
        return None
    tag = _tag(number, _DELIMITED)

    def write(column: pa.Array) -> tuple[wire.Pieces, np.ndarray]:
        pieces, bad = body(column)
        return wire.framed(tag, pieces, wire.valid(column) & ~bad), bad

    return write


def _wrapped(
    field_type: int, values: _Values
) -> Callable[[pa.Array], tuple[wire.Pieces, np.ndarray]]:
    """A wrapper's body: its ``value`` field (number 1), left out where it is the default."""
    tag = _tag(1, _wire_type(field_type))

    def body(column: pa.Array) -> tuple[wire.Pieces, np.ndarray]:
        written, set_, bad = values(column)
        return _tagged(tag, written, wire.valid(column) & ~bad & set_), bad

    return body


def _timestamp(type_: pa.DataType) -> Callable[[pa.Array], tuple[wire.Pieces, np.ndarray]] | None:
    """A ``Timestamp``'s body (``seconds`` 1, ``nanos`` 2) from a timestamp or date column."""
    if pa.types.is_timestamp(type_) and type_.unit in _PER_SECOND:
        per_second = _PER_SECOND[type_.unit]
    elif pa.types.is_date32(type_):
        per_second = 0
    else:
        return None
    seconds_tag, nanos_tag = _tag(1, _VARINT), _tag(2, _VARINT)

    def body(column: pa.Array) -> tuple[wire.Pieces, np.ndarray]:
        count = len(column)
        numbers = _integers_of(column.cast(pa.int32() if per_second == 0 else pa.int64()))
        if per_second == 0:
            seconds, nanos = numbers * _SECONDS_PER_DAY, np.zeros(count, dtype=np.int64)
        else:
            seconds, rest = np.divmod(numbers, per_second)
            nanos = rest * (1_000_000_000 // per_second)
        valid = wire.valid(column)
        bad = valid & ((seconds < MIN_SECONDS) | (seconds > MAX_SECONDS))
        shown = valid & ~bad
        return (
            wire.segments(
                [wire.constant(seconds_tag, count), wire.varint64(seconds)], shown & (seconds != 0)
            )
            + wire.segments(
                [wire.constant(nanos_tag, count), wire.varint64(nanos)], shown & (nanos != 0)
            )
        ), bad

    return body


def _values(field_type: int, fd: FieldDescriptor | None, type_: pa.DataType) -> _Values | None:
    """How a column of ``type_`` is written as values of ``field_type`` (``fd``: the field,
    for an enum's names), or ``None``."""
    if field_type in _INTEGERS and pa.types.is_integer(type_) and pa.types.is_signed_integer(type_):
        return _integer_values(*_INTEGERS[field_type])
    if field_type in (_FD.TYPE_DOUBLE, _FD.TYPE_FLOAT) and pa.types.is_float64(type_):
        return _float_values(field_type == _FD.TYPE_FLOAT)
    if field_type == _FD.TYPE_BOOL and pa.types.is_boolean(type_):
        return _bool_values
    if field_type == _FD.TYPE_STRING and pa.types.is_string(type_):
        return _text_values
    if field_type == _FD.TYPE_STRING and pa.types.is_decimal(type_) and type_.scale >= 0:
        return lambda column: _text_values(column.cast(pa.string()))
    if field_type == _FD.TYPE_BYTES and pa.types.is_binary(type_):
        return _text_values
    if field_type == _FD.TYPE_ENUM and fd is not None and pa.types.is_string(type_):
        return _enum_values(fd)
    return None


def _integers_of(column: pa.Array) -> np.ndarray:
    """A column's integers as ``int64`` (0 for nulls)."""
    return np.asarray(pc.fill_null(column.cast(pa.int64()), 0).to_numpy(), dtype=np.int64)


def _integer_values(low: int, high: int, form: str) -> _Values:
    def values(column: pa.Array) -> tuple[wire.Segment, np.ndarray, np.ndarray]:
        numbers = _integers_of(column)
        bad = wire.valid(column) & (
            (numbers < max(low, -(2**63))) | (numbers > min(high, 2**63 - 1))
        )
        if form == "zigzag":
            segment = wire.varint64((numbers << 1) ^ (numbers >> 63))
        elif form == "fixed32":
            segment = _fixed(numbers.astype("<u4"))
        elif form == "fixed64":
            segment = _fixed(numbers.astype("<i8"))
        else:
            segment = wire.varint64(numbers)
        return segment, numbers != 0, bad

    return values


def _fixed(numbers: np.ndarray) -> wire.Segment:
    """Each number's little-endian bytes."""
    width = numbers.dtype.itemsize
    matrix = np.ascontiguousarray(numbers).view(np.uint8).reshape(len(numbers), width)
    return matrix, np.full(len(numbers), width, dtype=np.int64)


def _float_values(single: bool) -> _Values:
    def values(column: pa.Array) -> tuple[wire.Segment, np.ndarray, np.ndarray]:
        doubles = np.asarray(pc.fill_null(column, 0.0).to_numpy(), dtype=np.float64)
        if not single:
            return (
                _fixed(doubles.astype("<f8")),
                doubles.view(np.uint64) != 0,
                np.zeros(len(doubles), dtype=bool),
            )
        with np.errstate(over="ignore", invalid="ignore"):
            bad = wire.valid(column) & ~float32.holds_each(doubles)
            floats = doubles.astype("<f4")
        return _fixed(floats), floats.view(np.uint32) != 0, bad

    return values


def _bool_values(column: pa.Array) -> tuple[wire.Segment, np.ndarray, np.ndarray]:
    truth = np.asarray(pc.fill_null(column, False).to_numpy(zero_copy_only=False), dtype=bool)
    return (
        (truth.astype(np.uint8)[:, None], np.ones(len(truth), dtype=np.int64)),
        truth,
        np.zeros(len(truth), dtype=bool),
    )


def _text_values(column: pa.Array) -> tuple[wire.Pieces, np.ndarray, np.ndarray]:
    sizes = wire.lengths(column)
    return (
        wire.Pieces.of(wire.masked(column, sizes > 0)),
        sizes > 0,
        np.zeros(len(column), dtype=bool),
    )


def _enum_values(fd: FieldDescriptor) -> _Values:
    names = pa.array(list(fd.enum_type.values_by_name), pa.string())
    numbers = np.array(
        [value.number for value in fd.enum_type.values_by_name.values()], dtype=np.int64
    )

    def values(column: pa.Array) -> tuple[wire.Segment, np.ndarray, np.ndarray]:
        found = pc.index_in(column, value_set=names)
        bad = wire.valid(column) & ~wire.valid(found)
        chosen = (
            numbers[_integers_of(found)] if len(numbers) else np.zeros(len(column), dtype=np.int64)
        )
        return wire.varint64(chosen), chosen != 0, bad

    return values
