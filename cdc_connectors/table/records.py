"""OpenCDC records -> a batch of changes for a table (:mod:`.layout`), and the records that
cannot be one.

A record's row is its ``after`` image (a delete's ``before``, or its key alone), with the
key's fields; its key columns are ``keyColumns`` or the fields of its structured key. The
order of a change is :func:`~.order.order_of`'s (the database log's position, the
record's, or its arrival). Columns an image does not carry are unset: the value
Debezium writes for a column it did not read (``__debezium_unavailable_value``, a TOAST
column; an array of it alone, a TOAST array), and in an update, a column other changes of
the batch carry (YDB's updates mode).

Column types are the registered schema's, when ``types`` names one for the record (a
decimal stays ``decimal(p,s)``, ISO text becomes a timestamp or a date); else they are
inferred from the values (text stays text), or, where the table holds the column and the
values inferred are of a type it cannot take, the table's. A record refused (no key, an
operation that is no change, a position without an order, a value that does not fit its
column) is kept with its reason for the dead-letter output; the others go on.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.opencdc import Operation, Record, keys
from cdc_connectors.opencdc.json_codec import json_default
from cdc_connectors.schema.connect.writers import write_time_of_day
from cdc_connectors.table.evolve import BatchTypes, numeric, takes
from cdc_connectors.table.layout import AT, OFFSET, OP, STREAM, TIME, UNSET, UNSET_OTHERS
from cdc_connectors.table.order import (
    AUTO,
    POSITION,
    auto_order,
    in_streams,
    log_position,
    numbered,
    order_of,
)

__all__ = [
    "PLACEHOLDER",
    "ChangeBatch",
    "RecordParts",
    "Refusal",
    "RowTypes",
    "column_of",
]

#: Metadata of a record whose after image carries only the columns that changed (YDB).
_PARTIAL = "ydb.partial"
#: What Debezium writes for a column whose value it did not read (a TOAST column).
PLACEHOLDER = "__debezium_unavailable_value"
_PLACEHOLDERS = (PLACEHOLDER, base64.b64encode(PLACEHOLDER.encode()).decode(), PLACEHOLDER.encode())
_OPERATIONS = {
    Operation.CREATE: "create",
    Operation.UPDATE: "update",
    Operation.DELETE: "delete",
    Operation.SNAPSHOT: "snapshot",
}
_CHANGES = frozenset(_OPERATIONS.values())
#: The row schema a record's registered schema gives (from its metadata), or ``None``.
RowTypes = Callable[[Mapping[str, str]], pa.Schema | None]


@dataclass(frozen=True, slots=True)
class RecordParts:
    """What a table takes of a record: its operation's name, position, metadata, key and
    images (read from a :class:`Record`, or straight from its OpenCDC JSON)."""

    operation: str
    position: bytes
    metadata: Mapping[str, str]
    key: Any
    before: Any
    after: Any

    @classmethod
    def of(cls, record: Record) -> RecordParts:
        name = _OPERATIONS.get(record.operation) or record.operation.name.lower()
        payload = record.payload
        return cls(
            name, bytes(record.position), record.metadata, record.key, payload.before, payload.after
        )


@dataclass(frozen=True)
class Refusal:
    """A record that is no change for the table, and why: ``origin`` is the record, or its
    OpenCDC JSON."""

    origin: Record | bytes
    reason: str
    position: bytes = b""


def _time(metadata: Mapping[str, str]) -> int | None:
    """When the change happened (``opencdc.createdAt``, else ``readAt``), in microseconds."""
    for key in (keys.CREATED_AT, keys.READ_AT):
        value = metadata.get(key)
        if value is not None and value.isdigit() and int(value) < 2**63:
            return int(value) // 1000
    return None


def _unavailable(value: Any) -> bool:
    """Debezium's placeholder for a value it did not read: itself, or the one item of an
    array (a TOAST array column)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return isinstance(value, str | bytes) and value in _PLACEHOLDERS


class ChangeBatch:
    """Changes gathered from records, as one Arrow table."""

    def __init__(
        self,
        key_columns: Iterable[str] | None = None,
        order_by: str = AUTO,
        types: RowTypes | None = None,
        keys_given: bool | None = None,
        held: pa.Schema | None = None,
    ):
        """``keys_given``: whether ``key_columns`` were set by the user (else, as the key
        of an earlier record, every record's key must name them); ``held``: the columns of
        the table the changes go to, if it exists."""
        self.key_columns = list(key_columns) if key_columns else None
        self.keys_given = self.key_columns is not None if keys_given is None else keys_given
        self.order_by = order_by
        self.types = types
        self.held = held
        self.rows: list[dict[str, Any]] = []
        self.records: list[tuple[Record | bytes, bytes]] = []
        self.meta: list[tuple[str, str, int, int | None]] = []
        #: Changes whose image carries only the columns it has (YDB's updates mode).
        self.partial: set[int] = set()
        #: Of each change in ``auto`` order: its log position, and its stream (in_streams).
        self.logs: list[str | None] = []
        self.streams: list[str | None] = []
        #: The columns' registered types (and any two schemas of the batch type apart).
        self.typed = BatchTypes()
        self._last_schema: pa.Schema | None = None
        self.refused: list[Refusal] = []
        #: Records refused for lacking a key column (not holding a null: no such column).
        self.keyless = 0
        #: Records refused for lacking the metadata key ``order_by`` names.
        self.unordered = 0

    def add(self, record: Record) -> None:
        """Take ``record`` as a change, or refuse it."""
        self.add_parts(RecordParts.of(record), record)

    def add_parts(self, parts: RecordParts, origin: Record | bytes) -> None:
        """Take a record (its ``parts``; ``origin``, the record or its OpenCDC JSON, kept
        for a refusal) as a change, or refuse it."""
        try:
            row, op = self._row(parts)
            log = place = None
            if self.order_by == AUTO:  # (kept for in_streams, read once)
                log, place = log_position(parts.metadata), numbered(bytes(parts.position))
                stream, offset = auto_order(log, place, len(self.rows))
            else:
                if self.order_by != POSITION and self.order_by not in parts.metadata:
                    self.unordered += 1
                stream, offset = order_of(
                    bytes(parts.position), parts.metadata, self.order_by, len(self.rows)
                )
            schema = self.types(parts.metadata) if self.types is not None else None
        except ValueError as exc:
            self.refused.append(Refusal(origin, str(exc), parts.position))
            return
        if schema is not None and schema is not self._last_schema:
            self._last_schema = schema  # (records of one schema in a row: taken once)
            for field in schema:
                self.typed.add(field.name, field.type)
        self.rows.append(row)
        self.records.append((origin, parts.position))
        self.meta.append((op, stream, offset, _time(parts.metadata)))
        if parts.metadata.get(_PARTIAL) == "true":
            self.partial.add(len(self.rows) - 1)
        if self.order_by == AUTO:
            self.logs.append(log)
            self.streams.append(None if place is None else place[0])

    def _row(self, parts: RecordParts) -> tuple[dict[str, Any], str]:
        op = parts.operation
        if op not in _CHANGES:
            raise ValueError(f"operation {op!r} is no change of a row")
        key = parts.key
        if isinstance(key, bytes | bytearray | memoryview):
            key = _json_object(bytes(key))
        image = parts.before if op == "delete" else parts.after
        if isinstance(image, bytes | bytearray | memoryview):
            raw, image = image, _json_object(bytes(image))
            if image is None and raw and op != "delete":  # a delete needs its key alone
                raise ValueError(
                    "payload.after is raw data that is no JSON object (schema-encoded "
                    "bytes, Avro or Protobuf, say: decode them to structured data first)"
                )
        row = dict(image) if isinstance(image, dict) else {}
        if isinstance(key, dict):
            for name, value in key.items():
                row.setdefault(name, value)
        names = self.key_columns or (list(key) if isinstance(key, dict) else [])
        if not names:
            raise ValueError("the record has no key (a structured key, or set keyColumns)")
        if self.key_columns is None:
            self.key_columns = names
        elif not self.keys_given and isinstance(key, dict) and list(key) != self.key_columns:
            raise ValueError(
                f"the key's fields {list(key)} are not those of the batch's first key "
                f"{self.key_columns} (set keyColumns)"
            )
        own = [n for n in row if n.startswith("_cdc_")]
        if own:
            raise ValueError(f"column(s) {own}: names starting with _cdc_ are the table's own")
        unnamed = [n for n in row if not n.strip() or "." in n]
        if unnamed:  # (Delta's merge reads a dot as a path)
            raise ValueError(
                f"column(s) {unnamed}: a table column's name is not blank and holds no dot"
            )
        missing = [n for n in self.key_columns if row.get(n) is None]
        if missing:
            if any(n not in row for n in missing):
                self.keyless += 1
            raise ValueError(f"the record has no value for key column(s) {missing}")
        for name in self.key_columns:
            if isinstance(row[name], dict | list):
                kind = "an object" if isinstance(row[name], dict) else "an array"
                raise ValueError(
                    f"key column {name!r} holds {kind}: a key is an integer, text, a decimal, "
                    "a time or bytes"
                )
        return row, op

    def table(self) -> pa.Table:
        """The changes gathered (records refused meanwhile are in :attr:`refused`)."""
        names: dict[str, Any] = {}
        for row in self.rows:
            names.update(row)  # (only the names count)
        for name in self.typed.types:
            names.setdefault(name, None)
        count = len(self.rows)
        updates = np.fromiter((m[0] == "update" for m in self.meta), bool, count)
        unset: dict[str, np.ndarray] = {}
        columns: dict[str, pa.Array] = {}
        bad: dict[int, str] = {}
        for name in names:
            values, gone = _unset_values([row.get(name, _MISSING) for row in self.rows], updates)
            if gone is not None:
                unset[name] = gone
            columns[name] = self._typed(name, values, bad)
        keep = [i for i in range(count) if i not in bad]
        for index, reason in sorted(bad.items()):
            origin, position = self.records[index]
            self.refused.append(Refusal(origin, reason, position))
        ops, streams, offsets, ats = zip(*self.meta, strict=True) if self.meta else ((), (), (), ())
        if self.order_by == AUTO and self.meta:
            streams, offsets = zip(
                *in_streams(list(zip(streams, offsets, strict=True)), self.logs, self.streams),
                strict=True,
            )
        columns[OP] = pa.array(ops, pa.string())
        columns[STREAM] = pa.array(streams, pa.string())
        columns[OFFSET] = pa.array(offsets, pa.int64())
        columns[AT] = pc.cast(pa.array(ats, pa.int64()), TIME)
        lists = _unset_lists(unset, count)
        for index in self.partial:  # any other column too, one the table may not hold yet
            lists[index] = [*(lists[index] or ()), UNSET_OTHERS]
        columns[UNSET] = pa.array(lists, pa.list_(pa.string()))
        table = pa.table(columns) if columns else pa.table({})
        return table.take(pa.array(keep, pa.int64())) if bad else table

    def _typed(self, name: str, values: list[Any], bad: dict[int, str]) -> pa.Array:
        """The column of ``name``: of its registered type; else of the type its values
        make, unless the table cannot take that type (text where it holds numbers): then
        of the table's type, each value that does not fit it refused."""
        wanted = self.typed.get(name)
        column = _column(name, values, wanted, bad)
        if wanted is None and self.held is not None and name in self.held.names:
            held = self.held.field(name).type
            if not takes(held, column.type):
                column = _held_column(name, values, held, bad)
        return column


def _held_column(name: str, values: list[Any], held: pa.DataType, bad: dict[int, str]) -> pa.Array:
    """Values for the table's column of type ``held``, each one of a kind it takes (a
    number for a number, text for text: never true as 1, a number as a time, text parsed
    as a number) and kept exactly; any other is refused. A decimal column takes numbers of
    more digits at its scale (the table widens to them)."""
    decimal = pa.types.is_decimal(held)
    target = pa.decimal128(38, held.scale) if decimal else held
    said = f"does not fit {held}" + (f" (nor more digits at scale {held.scale})" if decimal else "")
    kept = []
    for index, value in enumerate(values):
        fitted = _held_value(value, target)
        if fitted is _REFUSED:
            bad.setdefault(index, f"column {name!r}: value {repr(value)[:60]} {said}")
            fitted = None
        kept.append(fitted)
    column = pa.array(kept, target)
    if not decimal:
        return column
    largest = pc.max(pc.abs(column)).as_py()
    digits = len(str(int(largest.scaleb(held.scale)))) if largest else 0
    return column.cast(pa.decimal128(max(held.precision, digits), held.scale))


#: What :func:`_held_value` gives for a value its column does not take.
_REFUSED = object()


def _held_value(value: Any, target: pa.DataType) -> Any:
    """``value`` as a value of ``target`` when it is of a kind the type takes and keeps it
    exactly, else :data:`_REFUSED`."""
    if value is None:
        return None
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return _as_text(value)  # as a batch of several kinds makes it (:func:`_mixed`)
    if isinstance(value, dict | list):
        return _REFUSED
    if type(value) is float and pa.types.is_decimal(target):
        value = Decimal(repr(value))  # a double read from JSON: the decimal it prints as
    if isinstance(value, str) and _binary(target):  # bytes as JSON holds them
        try:
            value = base64.b64decode(value, validate=True)
        except ValueError:
            return _REFUSED
    try:
        single = pa.array([value])
        numbers = numeric(single.type) and numeric(target)
        if not (numbers or takes(target, single.type)):
            return _REFUSED
        cast = pc.cast(single, target)
        if numbers and not pc.all(pc.equal(pc.cast(cast, single.type), single)).as_py():
            return _REFUSED
        return cast[0].as_py()
    except (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        pa.ArrowNotImplementedError,
        TypeError,
        OverflowError,  # an integer past 64 bits
    ):
        return _REFUSED


#: A column a record's row does not have.
_MISSING = object()


def _unset_values(values: list[Any], updates: np.ndarray) -> tuple[list[Any], np.ndarray | None]:
    """A column's values with placeholders and missing values as nulls, and which rows
    leave it unset (a placeholder; missing from an update), or ``None`` for none."""
    gone: np.ndarray | None = None
    if _MISSING in values:
        missing = np.fromiter((v is _MISSING for v in values), bool, len(values))
        values = [None if v is _MISSING else v for v in values]
        gone = missing & updates
    if any(p in values or [p] in values for p in _PLACEHOLDERS):
        hit = np.fromiter((_unavailable(v) for v in values), bool, len(values))
        values = [None if h else v for v, h in zip(values, hit, strict=True)]
        gone = hit if gone is None else gone | hit
    return values, gone if gone is not None and gone.any() else None


def _unset_lists(unset: dict[str, np.ndarray], count: int) -> list[list[str] | None]:
    """Each row's unset columns (``None``: none)."""
    lists: list[list[str] | None] = [None] * count
    if unset:
        rows = np.zeros(count, dtype=bool)
        for mask in unset.values():
            rows |= mask
        for index in np.flatnonzero(rows):
            lists[index] = [name for name, mask in unset.items() if mask[index]]
    return lists


def _json_object(data: bytes) -> dict[str, Any] | None:
    """Raw data that is a JSON object, as one (else ``None``)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _column(
    name: str, values: list[Any], wanted: pa.DataType | None, bad: dict[int, str]
) -> pa.Array:
    """The Arrow column of ``values`` (of type ``wanted`` when given); a value that does not
    fit marks its row in ``bad``."""
    if wanted is not None:
        if pa.types.is_decimal(wanted):  # a double read from JSON: the decimal it prints as
            values = [Decimal(repr(v)) if type(v) is float else v for v in values]
        if pa.types.is_nested(wanted) and _holds_bytes(wanted):
            values = _bytes_decoded(name, values, wanted, bad)
        if (
            (pa.types.is_integer(wanted) and any(map(_fraction, values)))
            or (_binary(wanted) and any(isinstance(v, str) for v in values))
            or (pa.types.is_string(wanted) and any(map(_number, values)))
            or (_listy(wanted) and any(isinstance(v, str | bytes) for v in values))
        ):
            # Arrow would cut 1.5 to 1, take base64 text (bytes as JSON holds them) for its
            # UTF-8, and print a number as it likes: such values go one by one
            return pa.array(
                [_fitted(name, i, v, wanted, bad) for i, v in enumerate(values)], wanted
            )
        try:
            return pa.array(values, wanted)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            pass
        try:  # ISO text to a time or a date, numbers to a decimal: one cast for the column
            if not (pa.types.is_timestamp(wanted) and wanted.tz is None):
                found = pa.array(values)
                if _cast_keeps(found, values, wanted):
                    return pc.cast(found, wanted)
        except (
            pa.ArrowInvalid,
            pa.ArrowTypeError,
            pa.ArrowNotImplementedError,
            TypeError,
            OverflowError,  # an integer past 64 bits: looked at alone below
        ):
            pass
        return pa.array([_fitted(name, i, v, wanted, bad) for i, v in enumerate(values)], wanted)
    if any(isinstance(v, dict | list) for v in values):
        return _mixed(values)  # objects and arrays without a schema: their JSON text
    try:
        inferred = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return _mixed(values)
    if pa.types.is_floating(inferred.type) and any(
        isinstance(v, int | Decimal) and not isinstance(v, bool) for v in values
    ):
        return _mixed(values)  # integers among doubles: kept exact
    if pa.types.is_decimal256(inferred.type):  # past 38 digits: no table type holds it
        return _mixed([None if v is None else str(v) for v in values])
    return inferred  # all nulls: a null column, which adds no column to a table


def _cast_keeps(found: pa.Array, values: list[Any], wanted: pa.DataType) -> bool:
    """Whether ``found`` (``values`` as Arrow infers them) holds every value as it is, and
    a cast to ``wanted`` keeps them: not true as 1, nor an integer past 2**53 among doubles,
    nor text as a double (each such value is looked at alone)."""
    if pa.types.is_boolean(found.type):
        return False
    if pa.types.is_floating(wanted) and not pa.types.is_floating(found.type):
        return False
    return not (
        pa.types.is_floating(found.type) and any(type(v) is int and abs(v) > 2**53 for v in values)
    )


def column_of(name: str, values: list[Any]) -> pa.Array:
    """The column a batch's values of ``name`` make without a registered type."""
    bad: dict[int, str] = {}
    return _column(name, values, None, bad)


def _mixed(values: list[Any]) -> pa.Array:
    """Values of several kinds: exact decimals when all are numbers (a double as the
    decimal it prints as), else JSON text."""
    numbers = [v for v in values if v is not None]
    if numbers and all(
        isinstance(v, int | float | Decimal) and not isinstance(v, bool) for v in numbers
    ):
        try:
            found = pa.array([None if v is None else Decimal(str(v)) for v in values])
            if not pa.types.is_decimal256(found.type):
                return found
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    return pa.array([None if v is None else _as_text(v) for v in values], pa.string())


def _as_text(value: Any) -> str:
    """A value as a text column holds it: text as it is, a number as its digits, anything
    else as its JSON text."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return _digits(value)
    return _json_text(value)


def _digits(number: int | float | Decimal) -> str:
    """A number's exact digits, with no exponent (``1e16`` as ``10000000000000000``; a
    double as the decimal it prints as)."""
    exact = Decimal(repr(number)) if isinstance(number, float) else Decimal(number)
    return format(exact, "f") if exact.is_finite() else str(number)


def _json_text(value: Any) -> str:
    """A value as JSON text: decimals as their exact numbers, bytes as base64."""
    try:
        return orjson.dumps(value, default=json_default).decode()
    except TypeError:
        return orjson.dumps(value, default=str).decode()


def _fraction(value: Any) -> bool:
    """Whether ``value`` is a number with a fraction (no integer column holds it)."""
    if type(value) is float:
        return not value.is_integer()
    if isinstance(value, Decimal):
        return value.is_finite() and value != value.to_integral_value()
    return False


_TIME_OF_DAY = re.compile(r"\d\d:\d\d:\d\d(\.\d{1,6})?")


def _number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def _holds_bytes(datatype: pa.DataType) -> bool:
    """Whether a nested type has bytes anywhere in it."""
    if _binary(datatype):
        return True
    if pa.types.is_struct(datatype):
        return any(_holds_bytes(f.type) for f in datatype)
    if pa.types.is_list(datatype) or pa.types.is_large_list(datatype):
        return _holds_bytes(datatype.value_type)
    if pa.types.is_map(datatype):
        return _holds_bytes(datatype.item_type)
    return False


def _bytes_decoded(
    name: str, values: list[Any], wanted: pa.DataType, bad: dict[int, str]
) -> list[Any]:
    """``values`` of a nested type with the base64 text at each of its bytes places decoded
    (a struct's field, a list's items, a map's values); a row holding text that is no
    base64 there is marked in ``bad``."""
    found = []
    for index, value in enumerate(values):
        try:
            found.append(_decoded(value, wanted))
        except ValueError:
            bad.setdefault(index, f"column {name!r}: a value holds text that is no base64 of bytes")
            found.append(None)
    return found


def _decoded(value: Any, datatype: pa.DataType) -> Any:
    if value is None:
        return None
    if _binary(datatype):
        return base64.b64decode(value, validate=True) if isinstance(value, str) else value
    if pa.types.is_struct(datatype) and isinstance(value, dict):
        types = {f.name: f.type for f in datatype}
        return {k: _decoded(v, types[k]) if k in types else v for k, v in value.items()}
    if (pa.types.is_list(datatype) or pa.types.is_large_list(datatype)) and isinstance(value, list):
        return [_decoded(v, datatype.value_type) for v in value]
    if pa.types.is_map(datatype):
        if isinstance(value, dict):
            return {k: _decoded(v, datatype.item_type) for k, v in value.items()}
        if isinstance(value, list):
            return [(k, _decoded(v, datatype.item_type)) for k, v in value]
    return value


def _listy(datatype: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(datatype)
        or pa.types.is_large_list(datatype)
        or pa.types.is_fixed_size_list(datatype)
    )


def _binary(datatype: pa.DataType) -> bool:
    return bool(
        pa.types.is_binary(datatype)
        or pa.types.is_large_binary(datatype)
        or pa.types.is_fixed_size_binary(datatype)
    )


#: What Arrow and Python raise for a value that is not of a type.
_NOT_OF_TYPE = (
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
    TypeError,
    ValueError,
    OverflowError,
)


def _fitted(name: str, index: int, value: Any, wanted: pa.DataType, bad: dict[int, str]) -> Any:
    """``value`` as a scalar of ``wanted`` (ISO text as a time, text or numbers as a
    decimal, base64 text as bytes), or ``None`` with its row marked bad."""
    if value is None:
        return None
    if pa.types.is_integer(wanted) and _fraction(value):
        bad.setdefault(index, f"column {name!r}: value {repr(value)[:60]} does not fit {wanted}")
        return None
    if _number(value) and pa.types.is_string(wanted):
        # a decimal wider than a table's (the registered type's exact text): its digits
        return _digits(value)
    if (
        isinstance(value, str)
        and wanted in (pa.int32(), pa.int64())
        and _TIME_OF_DAY.fullmatch(value)
    ):
        # a time of day (Connect's Time, Debezium's MicroTime: a count past midnight, of
        # milliseconds in 32 bits, of microseconds in 64), which records hold as ISO text
        try:
            micros = write_time_of_day(1_000_000)(value, {})
        except ValueError:
            micros = None
        per = 1000 if wanted.bit_width == 32 else 1  # microseconds a count holds
        if micros is not None and micros % per == 0:
            return micros // per
    if isinstance(value, str | bytes) and _listy(wanted):
        bad.setdefault(index, f"column {name!r}: value {value[:60]!r} is no array of {wanted}")
        return None
    if isinstance(value, str) and _binary(wanted):
        try:
            decoded = base64.b64decode(value, validate=True)
            return pa.array([decoded], wanted)[0].as_py()
        except (ValueError, pa.ArrowInvalid):
            bad.setdefault(index, f"column {name!r}: value {value[:60]!r} is no base64 of {wanted}")
            return None
    try:
        return pa.array([value], wanted)[0].as_py()
    except _NOT_OF_TYPE:
        pass
    try:
        if isinstance(value, str | int | Decimal) and not isinstance(value, bool):
            source = pa.array([value if isinstance(value, str) else str(value)], pa.string())
            if pa.types.is_timestamp(wanted) and wanted.tz is None:
                parsed = dt.datetime.fromisoformat(str(value))
                if parsed.tzinfo is not None:  # a local time column takes no zone
                    raise ValueError("a time with a zone")
                return parsed
            cast = pc.cast(source, wanted)[0].as_py()
            if pa.types.is_floating(wanted) and Decimal(repr(cast)) != Decimal(str(value)):
                raise ValueError("a double changes it")
            return cast
    except _NOT_OF_TYPE:
        pass
    shown = repr(value)
    bad.setdefault(index, f"column {name!r}: value {shown[:60]} does not fit {wanted}")
    return None
