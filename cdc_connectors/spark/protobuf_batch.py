"""Protobuf message bodies <-> one Arrow struct array of the message's Spark type.

:class:`ProtobufBatchDecoder` parses a batch of bodies (the Confluent header
already read by the caller) and builds the columns of
:func:`~cdc_connectors.spark.proto_types.message_struct` field by field, from
the parsed messages straight into Arrow arrays: no per-row dict in between,
which is where the time of a per-message decoder goes. The Arrow type is
PySpark's own conversion of that struct (``timestamp[us, tz=UTC]``, ``string``,
uint64 as ``decimal(20,0)``), so a data source may yield it as it is.

The fast path hands the whole batch of bodies to ptars, which parses them and
builds the Arrow columns in Rust, many times faster than parsing message by message;
its columns are cast to the Spark types. A batch it cannot take as a whole (a
body that does not parse, a null body, a Timestamp outside years 1..9999) and
messages holding ``google.protobuf.Struct`` / ``Value`` / ``ListValue``
(VARIANT columns) go the way below, message by message.

A body that does not parse becomes a null row, and its reason the error at
that index; bad bytes never raise. A null body (a tombstone) is a null row
without an error. Values the Spark type cannot hold (a Timestamp outside years
1..9999) fail their row the same way. Enum numbers the schema does not name
read as their decimal text.

:class:`ProtobufBatchEncoder` goes the other way, row by row through
:func:`~cdc_connectors.schema.protobuf.from_dict`, so a bad row's error names
the field path.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from decimal import Decimal
from itertools import chain, repeat
from operator import attrgetter, itemgetter, le
from typing import Any, TypeAlias, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass
from ptars import HandlerPool, PtarsConfig
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import StructType

from cdc_connectors.schema.protobuf import (
    JSON_TYPES,
    MAX_SECONDS,
    MIN_SECONDS,
    TIMESTAMP,
    WRAPPERS,
    from_dict,
    json_value,
)
from cdc_connectors.spark.proto_types import message_struct
from cdc_connectors.spark.variant import from_variant, to_variant

_FD = FieldDescriptor
_Mask: TypeAlias = "npt.NDArray[np.bool_] | None"
# (values of one field, True where null or None) -> Arrow array
_Values: TypeAlias = Callable[[list[Any], _Mask], pa.Array]
# parent messages -> the Arrow array of one of their fields
_Field: TypeAlias = Callable[[list[Any]], pa.Array]
_UNSIGNED_64 = (_FD.TYPE_UINT64, _FD.TYPE_FIXED64)
_ALL = itemgetter(slice(None))


def arrow_type(descriptor: Descriptor) -> pa.StructType:
    """The Arrow type Spark expects for the ``StructType`` of a message."""
    result: pa.StructType = to_arrow_type(message_struct(descriptor), timezone="UTC")
    return result


# What ptars builds, made to differ from the Spark types only where a cast mends it.
_PTARS = PtarsConfig(timestamp_unit="us", timestamp_tz="UTC", enum_repr="string")


def _fast_handler(descriptor: Descriptor) -> Any:
    """The ptars handler of a message, or ``None`` where its columns need the slow way.

    ptars folds a Timestamp's ``nanos`` into its seconds, so one of nanos outside
    0..999,999,999 (which the slow way refuses) would read as another time: the handler
    reads every Timestamp as a plain message of its ``seconds`` and ``nanos`` instead
    (:func:`_raw_timestamps`), and :meth:`ProtobufBatchDecoder._decode_fast` checks both."""
    stack, seen = [descriptor], set()
    while stack:
        message = stack.pop()
        if message.full_name in JSON_TYPES:
            return None  # VARIANT columns: built from the parsed messages
        if message.full_name in seen:
            continue
        seen.add(message.full_name)
        stack.extend(fd.message_type for fd in message.fields if fd.message_type is not None)
    raw = _raw_timestamps(descriptor)
    return HandlerPool([raw.file], config=_PTARS).get_for_message(raw)


_RAW_TIMESTAMP_FILE = "cdc_connectors/raw_timestamp.proto"
_RAW_TIMESTAMP = "cdc_connectors.internal.RawTimestamp"


def _raw_timestamps(descriptor: Descriptor) -> Descriptor:
    """``descriptor`` in a pool of its own where every ``google.protobuf.Timestamp`` field
    is a message ``{int64 seconds = 1; int32 nanos = 2;}``: the same bytes, read as they
    are."""
    pool = descriptor_pool.DescriptorPool()
    raw = descriptor_pb2.FileDescriptorProto(
        name=_RAW_TIMESTAMP_FILE, package="cdc_connectors.internal", syntax="proto3"
    )
    message = raw.message_type.add(name="RawTimestamp")
    message.field.add(name="seconds", number=1, type=_FD.TYPE_INT64, label=_FD.LABEL_OPTIONAL)
    message.field.add(name="nanos", number=2, type=_FD.TYPE_INT32, label=_FD.LABEL_OPTIONAL)
    pool.AddSerializedFile(raw.SerializeToString())
    added = {_RAW_TIMESTAMP_FILE}

    def add(file: Any) -> None:
        if file.name in added:
            return
        added.add(file.name)
        for dependency in file.dependencies:
            add(dependency)
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        if _retarget(proto.message_type):
            proto.dependency.append(_RAW_TIMESTAMP_FILE)
        pool.AddSerializedFile(proto.SerializeToString())

    add(descriptor.file)
    found: Descriptor = pool.FindMessageTypeByName(descriptor.full_name)
    return found


def _retarget(messages: Any) -> bool:
    """Point the Timestamp fields of ``messages`` (and their nested types) at the raw
    message; whether any was."""
    changed = False
    for message in messages:
        for field in message.field:
            if field.type_name == "." + TIMESTAMP:
                field.type_name = "." + _RAW_TIMESTAMP
                changed = True
        changed |= _retarget(message.nested_type)
    return changed


def _timestamps(
    column: pa.Array, type_: pa.DataType, exact: bool = False
) -> tuple[pa.Array | None, np.ndarray]:
    """``column`` as ptars built it (Timestamps as raw ``{seconds, nanos}`` structs) in
    the Arrow type ``type_`` (``None`` when a Timestamp lies outside years 1..9999 or its
    nanos outside 0..999,999,999: the slow way says which row), and, with ``exact``, which
    of its values hold a Timestamp with nanoseconds past its microseconds (the column
    holds microseconds)."""
    finer = np.zeros(len(column), dtype=bool)
    if pa.types.is_timestamp(type_) and pa.types.is_struct(column.type):
        seconds = column.field("seconds").cast(pa.int64())
        nanos = column.field("nanos").cast(pa.int64())
        valid = pc.is_valid(column)
        bad = pc.or_(
            pc.or_(pc.less(seconds, MIN_SECONDS), pc.greater(seconds, MAX_SECONDS)),
            pc.or_(pc.less(nanos, 0), pc.greater_equal(nanos, 1_000_000_000)),
        )
        if pc.any(pc.and_(valid, bad)).as_py():
            return None, finer
        if exact:
            cut = pc.and_(valid, pc.not_equal(pc.remainder(nanos, 1000), 0))
            finer = np.asarray(pc.fill_null(cut, False).to_numpy(zero_copy_only=False), bool)
        micros = pc.add(pc.multiply(seconds, 1_000_000), pc.divide(nanos, 1000))
        micros = pc.if_else(valid, micros, pa.scalar(None, pa.int64()))
        return micros.cast(type_), finer
    if pa.types.is_struct(type_) and pa.types.is_struct(column.type):
        children = []
        for field in type_:
            child, child_finer = _timestamps(column.field(field.name), field.type, exact)
            if child is None:
                return None, finer
            children.append(child)
            finer |= child_finer
        nulls = None if column.null_count == 0 else pc.is_null(column)
        return pa.StructArray.from_arrays(children, fields=list(type_), mask=nulls), finer
    if pa.types.is_list(type_) and pa.types.is_list(column.type):
        items, items_finer = _timestamps(column.values, type_.value_type, exact)
        if items is None:
            return None, finer
        if items_finer.any():  # each item's row
            bounds = np.asarray(column.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
            rows = np.searchsorted(bounds, np.flatnonzero(items_finer), side="right") - 1
            finer[rows[(rows >= 0) & (rows < len(column))]] = True
        nulls = None if column.null_count == 0 else pc.is_null(column)
        return pa.ListArray.from_arrays(column.offsets, items, type=type_, mask=nulls), finer
    return (column if column.type == type_ else column.cast(type_)), finer


class ProtobufBatchDecoder:
    """Message bodies of one class -> one Arrow struct array, built column by column."""

    def __init__(self, cls: type[Message], exact: bool = False):
        """``exact``: a message with a Timestamp that has nanoseconds past its microseconds
        (which the Arrow column does not hold) is a null row with its problem, not cut."""
        self.cls = cls
        self.exact = exact
        self.struct_type: StructType = message_struct(cls.DESCRIPTOR)
        self.arrow_type: pa.StructType = arrow_type(cls.DESCRIPTOR)
        self._build = _struct_values(cls.DESCRIPTOR, self.arrow_type, "", exact)
        self._empty = cls()
        self._fast = _fast_handler(cls.DESCRIPTOR)

    def _decode_fast(
        self, messages: Sequence[bytes | None], offsets: Sequence[int]
    ) -> tuple[pa.StructArray, np.ndarray] | None:
        """The whole batch through ptars and, with ``exact``, the rows holding a Timestamp
        with nanoseconds its column cuts; ``None`` when some row needs the slow way."""
        if self._fast is None or not messages:
            return None
        finer = np.zeros(len(messages), dtype=bool)
        try:
            bodies = [m if o == 0 else m[o:] for m, o in zip(messages, offsets, strict=True)]  # type: ignore[index]
            batch = self._fast.list_to_record_batch(bodies)
            fields = list(self.arrow_type)
            columns = []
            for column, field in zip(batch.columns, fields, strict=True):
                built, column_finer = _timestamps(column, field.type, self.exact)
                columns.append(built)
                finer |= column_finer
        except (ValueError, TypeError, pa.ArrowException):
            return None  # a body that does not parse, a None, a type that does not cast
        if any(column is None for column in columns):
            return None  # a Timestamp Python does not hold: the slow way says which
        array = pa.StructArray.from_arrays(columns, fields=fields)
        return (array, finer) if _timestamps_in_range(array) else None

    def decode(
        self, messages: Sequence[bytes | None], offsets: Sequence[int]
    ) -> tuple[pa.StructArray, list[str | None]]:
        """Parse ``messages[i][offsets[i]:]``; the array and, per row, why it is null (or,
        with ``exact``, why its value is not the message's: nanoseconds it cuts)."""
        if len(messages) != len(offsets):
            raise ValueError(f"{len(messages)} messages but {len(offsets)} offsets")
        # A batch allocates objects per message and field, none of them in cycles; the cyclic
        # collector would otherwise scan the growing lists over and over (a third of the time).
        fast = self._decode_fast(messages, offsets)
        if fast is not None:
            array, finer = fast
            problems: list[str | None] = [None] * len(messages)
            for row in np.flatnonzero(finer).tolist():
                problems[row] = "a Timestamp with nanoseconds past its microseconds"
            return array, problems
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._decode(messages, offsets)
        finally:
            if collecting:
                gc.enable()

    def _decode(
        self, messages: Sequence[bytes | None], offsets: Sequence[int]
    ) -> tuple[pa.StructArray, list[str | None]]:
        parse = self.cls.FromString
        errors: list[str | None] = [None] * len(messages)
        failed: npt.NDArray[np.bool_] | None = None
        try:  # the common case, every body whole and parsing, in one pass; else row by row
            bodies = cast("Sequence[bytes]", messages)
            if offsets and (min(offsets) < 0 or not all(map(le, offsets, map(len, bodies)))):
                raise ValueError("an offset outside its message")
            decoded = [parse(data[offset:]) for data, offset in zip(bodies, offsets, strict=True)]
        except (DecodeError, TypeError, ValueError):
            decoded, failed = self._parse_each(messages, offsets, errors)
        try:
            return self._build(decoded, failed), errors
        except (ValueError, ArithmeticError):
            # A value with no Arrow form (a Timestamp past 9999): find its rows and null them.
            failed = self._drop_unbuildable(decoded, failed, errors)
            return self._build(decoded, failed), errors

    def _parse_each(
        self, messages: Sequence[bytes | None], offsets: Sequence[int], errors: list[str | None]
    ) -> tuple[list[Any], npt.NDArray[np.bool_]]:
        parse = self.cls.FromString
        decoded: list[Any] = []
        failed = np.zeros(len(messages), dtype=bool)
        name = self.cls.DESCRIPTOR.full_name
        for i, (data, offset) in enumerate(zip(messages, offsets, strict=True)):
            message = self._empty
            if data is None:
                failed[i] = True
            elif not isinstance(data, bytes | bytearray | memoryview):
                failed[i] = True
                errors[i] = f"expected bytes, got {type(data).__name__}"
            elif not 0 <= offset <= len(data):
                failed[i] = True
                errors[i] = f"offset {offset} is outside the {len(data)}-byte message"
            else:
                try:
                    message = parse(data[offset:])
                except (DecodeError, ValueError) as exc:
                    failed[i] = True
                    errors[i] = f"not a {name} message ({len(data) - offset} bytes): {exc}"
            decoded.append(message)
        return decoded, failed

    def _drop_unbuildable(
        self, decoded: list[Any], failed: npt.NDArray[np.bool_] | None, errors: list[str | None]
    ) -> npt.NDArray[np.bool_]:
        """Bisect the batch down to the rows that do not build; replace them by empty rows."""
        failed = np.zeros(len(decoded), dtype=bool) if failed is None else failed
        pending = [(0, len(decoded))]
        while pending:
            start, stop = pending.pop()
            try:
                self._build(decoded[start:stop], failed[start:stop])
            except (ValueError, ArithmeticError) as exc:
                if stop - start == 1:
                    errors[start] = str(exc)
                    failed[start] = True
                    decoded[start] = self._empty
                else:
                    middle = (start + stop) // 2
                    pending += [(start, middle), (middle, stop)]
        return failed


class ProtobufBatchEncoder:
    """Rows of an Arrow struct array (a message's Spark type) -> message bodies."""

    def __init__(self, cls: type[Message]):
        self.cls = cls
        self.arrow_type: pa.StructType = arrow_type(cls.DESCRIPTOR)
        self._fix = _arrow_fixer(cls.DESCRIPTOR)

    def encode(self, array: pa.StructArray) -> tuple[list[bytes | None], list[str | None]]:
        """One body per row (None for a null row) and, per row, why it has none."""
        if not pa.types.is_struct(array.type):
            raise TypeError(f"expected a struct array, got {array.type}")
        bodies: list[bytes | None] = []
        errors: list[str | None] = []
        for row in array.to_pylist():
            if row is None:
                bodies.append(None)
                errors.append(None)
                continue
            try:
                if self._fix is not None:
                    self._fix(row)
                bodies.append(from_dict(row, self.cls).SerializeToString())
                errors.append(None)
            except ValueError as exc:  # SchemaError from from_dict, VariantError from a variant
                bodies.append(None)
                errors.append(str(exc))
        return bodies, errors


# --- decoding: one builder per field, made once per message class ---------------------------


def _timestamps_in_range(array: pa.Array) -> bool:
    """Whether every Timestamp inside ``array`` lies in years 1..9999, as Python reads them."""
    type_ = array.type
    if pa.types.is_timestamp(type_):
        low, high = pc.min_max(array.cast(pa.int64())).values()
        return low.as_py() is None or (
            low.as_py() >= MIN_SECONDS * 1_000_000 and high.as_py() < (MAX_SECONDS + 1) * 1_000_000
        )
    if pa.types.is_struct(type_):
        return all(_timestamps_in_range(array.field(i)) for i in range(type_.num_fields))
    if pa.types.is_map(type_):
        return _timestamps_in_range(array.keys) and _timestamps_in_range(array.items)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return _timestamps_in_range(array.flatten())
    return True


def _struct_values(
    descriptor: Descriptor, type_: pa.StructType, path: str, exact: bool = False
) -> _Values:
    """messages -> the struct array of their fields (``exact``: a Timestamp with nanoseconds
    past its microseconds is a :class:`_FieldError`, not cut)."""
    fields = list(type_)
    builders = [
        _field(fd, type_.field(fd.name).type, f"{path}.{fd.name}" if path else fd.name, exact)
        for fd in descriptor.fields
    ]

    def build(messages: list[Any], mask: _Mask) -> pa.Array:
        children = [field(messages) for field in builders]
        null = None if mask is None or not mask.any() else pa.array(mask, pa.bool_())
        return pa.StructArray.from_arrays(children, fields=fields, mask=null)

    return build


class _FieldError(ValueError):
    """A value of a field has no Arrow form; the message starts with the field's path."""


def _field(fd: FieldDescriptor, type_: pa.DataType, path: str, exact: bool) -> _Field:
    build = _field_unnamed(fd, type_, path, exact)

    def build_named(parents: list[Any]) -> pa.Array:
        try:
            return build(parents)
        except _FieldError:
            raise
        except (ValueError, ArithmeticError) as exc:  # Arrow's own words, without a place
            raise _FieldError(f"{path}: {exc}") from None

    return build_named


def _field_unnamed(fd: FieldDescriptor, type_: pa.DataType, path: str, exact: bool) -> _Field:
    get = attrgetter(fd.name)
    if pa.types.is_map(type_):
        entry = fd.message_type
        keys = _values(entry.fields_by_name["key"], type_.key_type, f"{path}.key", exact)
        items = _values(entry.fields_by_name["value"], type_.item_type, f"{path}.value", exact)

        def build_map(parents: list[Any]) -> pa.Array:
            maps = list(map(get, parents))
            pairs = list(chain.from_iterable(m.items() for m in maps))
            return pa.MapArray.from_arrays(
                _offsets(maps),
                keys([k for k, _ in pairs], None),
                items([v for _, v in pairs], None),
                type=type_,
            )

        return build_map
    if pa.types.is_list(type_):
        element = _values(fd, type_.value_type, path, exact)

        def build_list(parents: list[Any]) -> pa.Array:
            # Slicing copies a repeated field into a list in C; iterating it is far slower.
            lists = list(map(_ALL, map(get, parents)))
            flat = list(chain.from_iterable(lists))
            return pa.ListArray.from_arrays(_offsets(lists), element(flat, None), type=type_)

        return build_list
    values = _values(fd, type_, path, exact)
    if not fd.has_presence:
        return lambda parents: values(list(map(get, parents)), None)
    # The class's own method, mapped over the parents: a third of methodcaller's time.
    has, names = GetMessageClass(fd.containing_type).HasField, repeat(fd.name)

    def build_present(parents: list[Any]) -> pa.Array:
        present = np.fromiter(map(has, parents, names), dtype=bool, count=len(parents))
        return values(list(map(get, parents)), None if present.all() else ~present)

    return build_present


def _offsets(containers: list[Any]) -> pa.Array:
    offsets = np.zeros(len(containers) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, containers), np.int32, len(containers)), out=offsets[1:])
    return pa.array(offsets)


def _values(fd: FieldDescriptor, type_: pa.DataType, path: str, exact: bool) -> _Values:
    """The builder of an array of ``type_`` from values of ``fd`` (one element each)."""
    if fd.type == _FD.TYPE_ENUM:
        return _enum_values(fd, type_)
    if fd.type not in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP):
        return _scalar_values(fd.type, type_)
    name = fd.message_type.full_name
    if name == TIMESTAMP:
        return _timestamp_values(type_, path, exact)
    if name in WRAPPERS:
        inner = _scalar_values(WRAPPERS[name], type_)
        unwrap = attrgetter("value")
        return lambda values, mask: inner(list(map(unwrap, values)), mask)
    if name in JSON_TYPES:
        return _variant_values(type_, path)
    return _struct_values(fd.message_type, type_, path, exact)


def _scalar_values(field_type: int, type_: pa.DataType) -> _Values:
    if field_type in _UNSIGNED_64:  # decimal(20,0) in Spark: exact through uint64
        return lambda values, mask: pa.array(values, pa.uint64(), mask=mask).cast(type_)
    return lambda values, mask: pa.array(values, type_, mask=mask)


def _enum_values(fd: FieldDescriptor, type_: pa.DataType) -> _Values:
    numbers = pa.array(list(fd.enum_type.values_by_number), pa.int32())
    names = pa.array([v.name for v in fd.enum_type.values_by_number.values()], pa.string())

    def build(values: list[Any], mask: _Mask) -> pa.Array:
        given = pa.array(values, pa.int32())
        named = pc.take(names, pc.index_in(given, value_set=numbers))
        if named.null_count:  # numbers the schema does not name: their text
            named = pc.coalesce(named, pc.cast(given, pa.string()))
        if mask is not None:
            named = pc.if_else(pa.array(mask), pa.scalar(None, type_), named)
        return named

    return build


def _timestamp_values(type_: pa.DataType, path: str, exact: bool) -> _Values:
    seconds, nanos = attrgetter("seconds"), attrgetter("nanos")

    def build(values: list[Any], mask: _Mask) -> pa.Array:
        count = len(values)
        secs = np.fromiter(map(seconds, values), np.int64, count)
        ns = np.fromiter(map(nanos, values), np.int64, count)
        bad = (secs < MIN_SECONDS) | (secs > MAX_SECONDS) | (ns < 0) | (ns >= 10**9)
        if bad.any():
            first = int(np.argmax(bad))
            raise _FieldError(
                f"{path}: Timestamp {secs[first]}s {ns[first]}ns is outside years 1..9999"
            )
        if exact and (ns % 1000).any():
            first = int(np.argmax(ns % 1000))
            raise _FieldError(f"{path}: Timestamp {secs[first]}s {ns[first]}ns has nanoseconds")
        return pa.array(secs * 1_000_000 + ns // 1000, type_, mask=mask)

    return build


def _variant_values(type_: pa.DataType, path: str) -> _Values:
    fields = list(type_)

    def build(values: list[Any], mask: _Mask) -> pa.Array:
        encoded: list[bytes] = []
        metadata: list[bytes] = []
        for i, message in enumerate(values):
            if mask is not None and mask[i]:
                value, meta = b"", b""  # placeholders under a null
            else:
                value, meta = to_variant(json_value(message))
            encoded.append(value)
            metadata.append(meta)
        null = None if mask is None else pa.array(mask, pa.bool_())
        children = [pa.array(encoded, pa.binary()), pa.array(metadata, pa.binary())]
        return pa.StructArray.from_arrays(children, fields=fields, mask=null)

    return build


# --- encoding: Arrow's Python values -> what from_dict takes --------------------------------

_Fixer: TypeAlias = Callable[[dict[str, Any]], None]


def _arrow_fixer(descriptor: Descriptor, _seen: tuple[str, ...] = ()) -> _Fixer | None:
    """In place: decimals -> ints, map pairs -> dicts, variants -> values; None if none needed."""
    steps: list[tuple[str, Callable[[Any], Any]]] = []
    for fd in descriptor.fields:
        convert = _element_fixer(fd, _seen)
        if (
            fd.is_repeated
            and fd.message_type is not None
            and fd.message_type.GetOptions().map_entry
        ):
            value_fix = _element_fixer(fd.message_type.fields_by_name["value"], _seen)
            if value_fix is None:
                steps.append((fd.name, _pairs_to_dict))
            else:
                steps.append((fd.name, _map_fixer(value_fix)))
        elif convert is not None and fd.is_repeated:
            steps.append((fd.name, _list_fixer(convert)))
        elif convert is not None:
            steps.append((fd.name, convert))
    if not steps:
        return None

    def fix(row: dict[str, Any]) -> None:
        for name, convert in steps:
            value = row.get(name)
            if value is not None:
                row[name] = convert(value)

    return fix


def _pairs_to_dict(pairs: Any) -> Any:
    return dict(pairs) if isinstance(pairs, list) else pairs


def _map_fixer(value_fix: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda pairs: {k: None if v is None else value_fix(v) for k, v in pairs}


def _list_fixer(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda items: [None if v is None else convert(v) for v in items]


def _element_fixer(fd: FieldDescriptor, seen: tuple[str, ...]) -> Callable[[Any], Any] | None:
    if fd.type in _UNSIGNED_64:
        return _exact_int
    if fd.type == _FD.TYPE_ENUM:
        return _enum_text
    if fd.type != _FD.TYPE_MESSAGE:
        return None
    name = fd.message_type.full_name
    if name == "google.protobuf.UInt64Value":
        return _exact_int
    if name in JSON_TYPES:
        return _variant_python
    if name == TIMESTAMP or name in WRAPPERS or name in seen:
        return None
    nested = _arrow_fixer(fd.message_type, (*seen, name))
    if nested is None:
        return None

    def fix_nested(row: Any) -> Any:
        if isinstance(row, dict):
            nested(row)
        return row

    return fix_nested


def _exact_int(value: Any) -> Any:
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    return value  # from_dict says what is wrong with it


def _enum_text(value: Any) -> Any:
    """The decoder writes unnamed enum numbers as their text: read them back as numbers."""
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value


def _variant_python(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"value", "metadata"}:
        return _json_numbers(from_variant(value["value"], value["metadata"]))
    return value


def _json_numbers(value: Any) -> Any:
    """Variant decimals -> ints or floats, as Struct numbers (doubles) hold them."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _json_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_numbers(v) for v in value]
    return value
