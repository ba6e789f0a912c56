"""Avro bodies <-> one Arrow struct array, built column by column.

:class:`AvroBatchDecoder` reads a batch of Avro binary bodies (after a Confluent
header or none) with fastavro into one ``StructArray`` of
``arrow_type(avro_to_spark(schema))``, the type Spark accepts for the schema
(:mod:`cdc_connectors.spark.avro_types`). :class:`AvroBatchEncoder` writes such
rows back. Logical types are stripped from the schemas fastavro sees: it hands
back raw longs and two's complement bytes, and Arrow turns whole columns into
timestamps and decimals, which is cheaper than a ``datetime`` or ``Decimal`` per
value.

The encoder writes a record whose fields are all of boolean, int, long, float,
double, string, bytes, a decimal on bytes that Spark holds, an enum, the int
and long logical types, or a ``[null, T]`` / ``[T, null]`` union of those
without fastavro: each column becomes its Avro bytes per row in numpy, and the
rows are cut from one buffer. The bytes are those fastavro writes; a row that
does not fit takes the fastavro path, which says why. Other schemas (arrays, maps, nested records,
fixed, other unions, a decimal of text), and a batch with a decimal column of
another scale, take the fastavro path. A decimal of text is written from its text
(or any column that casts to one) exactly: text that is no decimal number, has
more decimal places than the scale or more digits than the precision is a row
error, never rounded.

Bad input never raises and is never a silently wrong row: a body that does not
decode, is truncated or has bytes left over after the record, and a row that
does not fit (a null where the Avro type is not nullable, a decimal beyond its
precision) is a null row with its reason in the errors list at that index.
Rows that are null because of an error hold placeholder values below them
(zero, empty), so non-nullable Arrow fields stay free of nulls; drop them
(``array.filter(valid)``) before handing the batch to Spark.

Schema resolution (a reader schema besides the writer's) is Avro's: fields by
name or alias, added fields take their defaults, removed ones are skipped,
``int -> long -> float -> double`` and ``string <-> bytes`` promote. A reader
field the writer lacks and that has no default, or a type no promotion reaches,
makes every row an error naming both types. Logical types are compared too:

- the reader's logical type applies to a writer value without one (as in Avro);
- ``decimal(p, s)`` read as ``decimal(p', s')`` is rescaled exactly; a value
  that does not fit ``p'`` digits or loses digits at scale ``s'`` is a row error.
  This holds for decimals Spark has no type for too (``decimal(65, 30)``, a
  negative scale: a ``string`` column of each number's exact text at the reader's
  scale, :mod:`cdc_connectors.spark.avro_types`), so a decimal widened across 38
  digits (version 1 ``decimal(20, 2)``, version 2 ``decimal(65, 30)``) reads every
  version as the text of the reader's scale (``"1.50"`` written by version 1 is
  ``"1.500000000000000000000000000000"``), and read with version 1 a value of
  version 2 that fits ``decimal(20, 2)`` is a decimal, one that does not a row error;
- ``timestamp-millis`` and ``-micros`` (and the ``local-`` pair) read as each
  other keep their instant (Spark timestamps are microseconds);
  ``time-millis`` read as ``time-micros`` is multiplied by 1000;
- any other change (``timestamp-*`` read as ``local-timestamp-*``, ``date`` as a
  timestamp, a decimal read as a string) makes every row an error.

Limits: the decoder refuses (:class:`ValueError` at construction) a writer union
that maps to ``member<i>`` fields and has both an ``int`` and a ``long`` (or
``float`` and ``double``) branch among others, since fastavro's values do not
tell them apart. A corrupt block count in an array whose items take no bytes
(``null``, an empty record) makes fastavro count through it, which can take long.
"""

from __future__ import annotations

import io
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from itertools import accumulate, chain, repeat
from operator import itemgetter, setitem
from typing import Any

import fastavro
import fastavro.write
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import DataType, DecimalType, StructType

from cdc_connectors.schema.avro_resolution import PROMOTIONS, ResolutionError, for_reading
from cdc_connectors.spark.avro_types import (
    AvroNode,
    arrow_type,
    expand,
    is_member_union,
    is_text_decimal,
    load,
    non_null,
    spark_type,
    without_logical_types,
)
from cdc_connectors.spark.decimal_text import (
    MAX_TEXT_DIGITS,
    beyond_scale,
    text_unscaled,
    unscaled_text,
)

Schema = dict[str, Any]
#: Python values (fastavro's, logical types stripped) -> one Arrow array, and the
#: positions that do not fit with their reasons.
Convert = Callable[[list[Any]], tuple[pa.Array, dict[int, str]]]
#: One Arrow array -> fastavro's Python values, and the positions that do not fit.
Extract = Callable[[pa.Array], tuple[list[Any], dict[int, str]]]

#: Block size after which the encoder starts a new buffer (fastavro's tell() is 32-bit).
_BLOCK_BYTES = 1 << 28
_UNIT = {"millis": 1000, "micros": 1}  # to Spark's microseconds
_INSTANTS = frozenset({"timestamp-millis", "timestamp-micros"})
_LOCALS = frozenset({"local-timestamp-millis", "local-timestamp-micros"})
# The Python type fastavro returns for each Avro type without a name.
_PY_TYPES: dict[str, type] = {
    "boolean": bool,
    "int": int,
    "long": int,
    "float": float,
    "double": float,
    "bytes": bytes,
    "string": str,
    "array": list,
    "map": dict,
}
_NAMED_PY_TYPES: dict[str, type] = {"record": dict, "enum": str, "fixed": bytes}


class _Incompatible(Exception):
    """The writer schema cannot be read with the reader schema (every row fails)."""


def _describe(node: AvroNode) -> str:
    if node.type == "union":
        return "[" + ", ".join(_describe(b) for b in node.branches) + "]"
    base = node.name or node.type
    if node.logical == "decimal":
        return f"{base} (decimal({node.precision},{node.scale}))"
    return f"{base} ({node.logical})" if node.logical else base


def _short(name: str | None) -> str:
    return (name or "").rsplit(".", 1)[-1]


def _matches(writer: AvroNode, reader: AvroNode) -> bool:
    """Whether Avro resolution pairs a (non-union) writer type with a reader type."""
    if reader.type == "union":
        return any(_matches(writer, b) for b in reader.branches)
    if writer.type in PROMOTIONS:
        return reader.type in PROMOTIONS[writer.type]
    if writer.type != reader.type:
        return False
    if writer.name is None:
        return True
    names = {reader.name, _short(reader.name), *reader.aliases}
    same = writer.name in names or _short(writer.name) in names
    return same and (writer.type != "fixed" or writer.size == reader.size)


def _placeholder(node: AvroNode) -> Any:
    """A value of the node's type, as fastavro returns it, for rows that failed."""
    kind = node.type
    if kind == "record":
        return {f.name: _placeholder(f.node) for f in node.fields}
    if kind == "union":
        rest = non_null(node)
        if len(rest) != len(node.branches) or not rest:
            return None
        first = _placeholder(rest[0])
        return (rest[0].name, first) if rest[0].name and is_member_union(node) else first
    return {
        "null": None,
        "boolean": False,
        "int": 0,
        "long": 0,
        "float": 0.0,
        "double": 0.0,
        "bytes": b"",
        "string": "",
        "enum": node.symbols[0] if node.symbols else "",
        "fixed": bytes(node.size),
        "array": [],
        "map": {},
    }[kind]


def _child_errors(errors: dict[int, str], offsets: list[int]) -> dict[int, str]:
    """Errors at positions of a flattened child, moved to the positions of their lists."""
    return {bisect_right(offsets, pos) - 1: why for pos, why in errors.items()}


# --- decoding: fastavro values -> Arrow ------------------------------------------


class _DecodePlan:
    """Builds the converters of a reader schema fed by a writer schema (or itself)."""

    def convert(self, reader: AvroNode, feeds: list[AvroNode | None], path: str) -> Convert:
        """The converter of ``reader``; ``feeds`` are the writer types read as it
        (``None`` where the reader's default fills in)."""
        datatype, _ = spark_type(reader, path)
        target = arrow_type(datatype)
        if reader.type == "union":
            return self._union(reader, feeds, path, target)
        resolved: list[AvroNode | None] = []
        for writer in feeds:
            if writer is None:
                resolved.append(None)
                continue
            if writer.type == "union":
                matching = [b for b in writer.branches if _matches(b, reader)]
                if not matching:
                    raise _Incompatible(
                        f"{path}: no branch of writer type {_describe(writer)} "
                        f"can be read as reader type {_describe(reader)}"
                    )
                resolved.extend(matching)
            elif _matches(writer, reader):
                resolved.append(writer)
            else:
                raise _Incompatible(
                    f"{path}: writer type {_describe(writer)} cannot be read as "
                    f"reader type {_describe(reader)} (no Avro promotion)"
                )
        if reader.type == "record":
            return self._record(reader, resolved, path, target)
        if reader.type in ("array", "map"):
            assert reader.items is not None
            items = [w.items if w is not None else None for w in resolved]
            suffix = "[]" if reader.type == "array" else "{}"
            child = self.convert(reader.items, items, path + suffix)
            return _list_converter(child, target, reader.type == "map")
        return _leaf(reader, resolved, path, datatype, target)

    def _record(
        self, reader: AvroNode, feeds: list[AvroNode | None], path: str, target: pa.DataType
    ) -> Convert:
        children = []
        for field in reader.fields:
            where = field.name if path == "<root>" else f"{path}.{field.name}"
            names = {field.name, *field.aliases}
            child_feeds: list[AvroNode | None] = []
            for writer in feeds:
                if writer is None:
                    # The whole record is the reader's default: its fields come with it.
                    child_feeds.append(None)
                    continue
                found = next((f for f in writer.fields if f.name in names), None)
                if found is None and not field.has_default:
                    raise _Incompatible(
                        f"{where}: reader field has no default and writer record "
                        f"{writer.name} has no such field"
                    )
                child_feeds.append(found.node if found is not None else None)
            children.append(self.convert(field.node, child_feeds, where))
        return _record_converter(reader, children, target)

    def _union(
        self, reader: AvroNode, feeds: list[AvroNode | None], path: str, target: pa.DataType
    ) -> Convert:
        rest = non_null(reader)
        per_branch: list[list[AvroNode | None]] = [[] for _ in rest]
        dispatch = False
        for writer in feeds:
            if writer is None:
                # The reader's default, of whichever branch it matches (Avro 1.12): its
                # member is found by its value.
                dispatch = True
                continue
            dispatch = dispatch or writer.type == "union"
            branches = writer.branches if writer.type == "union" else (writer,)
            hits = 0
            for wb in branches:
                # The writer's own type first, then the first promotion (Avro's Java resolver).
                index = next((i for i, rb in enumerate(rest) if rb.type == wb.type), None)
                if index is None or not _matches(wb, rest[index]):
                    index = next((i for i, rb in enumerate(rest) if _matches(wb, rb)), None)
                if index is not None:
                    hits += 1
                    per_branch[index].append(wb)
                elif wb.type == "null" and len(rest) != len(reader.branches):
                    hits += 1
            if not hits:
                raise _Incompatible(
                    f"{path}: writer type {_describe(writer)} cannot be read as "
                    f"reader type {_describe(reader)}"
                )
        if not rest:  # ["null"]: an empty struct, always null
            return lambda values: (pa.nulls(len(values), target), {})
        if not is_member_union(reader) and len(rest) == 2:
            return _plain_converter(target)  # [int, long] or [float, double]: the wider value
        members = []
        for i, rb in enumerate(rest):
            where = f"{path}<member{i}>" if is_member_union(reader) else path
            # A branch no writer type reaches still needs a converter, for its nulls.
            members.append(self.convert(rb, per_branch[i] or [rb], where))
        if not is_member_union(reader):
            return _nullable_converter(members[0], rest[0])
        reached = [i for i, b in enumerate(per_branch) if b]
        if not dispatch and len(reached) == 1:
            return _fixed_member_converter(members, reached[0], target)
        return _member_converter(reader, members, target, path)


def _null_converter(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
    return pa.nulls(len(values)), {}


def _nullable_converter(inner: Convert, node: AvroNode) -> Convert:
    if node.name is None:
        return inner

    def convert(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
        # fastavro names the branch of a named type read from a union: (name, value).
        return inner([v[1] if type(v) is tuple else v for v in values])

    return convert


def _record_converter(node: AvroNode, children: list[Convert], target: pa.DataType) -> Convert:
    names = [f.name for f in node.fields]
    getter = itemgetter(*names) if names else None
    fields = list(target)
    blank = _placeholder(node)

    def convert(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
        original = values
        mask = None
        if None in values:
            nulls = [v is None for v in values]
            mask = pa.array(nulls, pa.bool_())
            values = [blank if v is None else v for v in values]
        if getter is None or not values:
            return pa.array([None if v is None else {} for v in original], target), {}
        # itemgetter of several names gives tuples: zip(*...) turns rows into columns in C.
        columns = (
            zip(*map(getter, values), strict=True)
            if len(names) > 1
            else [list(map(getter, values))]
        )
        arrays = []
        errors: dict[int, str] = {}
        for child, column in zip(children, columns, strict=True):
            array, bad = child(list(column))
            arrays.append(array)
            errors.update(bad)
        return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask), errors

    return convert


def _list_converter(child: Convert, target: pa.DataType, is_map: bool) -> Convert:
    def convert(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
        mask = None
        if None in values:
            nulls = [v is None for v in values]
            mask = pa.array(nulls, pa.bool_())
            values = [({} if is_map else []) if v is None else v for v in values]
        offsets = [0, *accumulate(map(len, values))]
        offsets_array = pa.array(offsets, pa.int32())
        if is_map:
            keys = pa.array(list(chain.from_iterable(values)), pa.string())
            items, bad = child(list(chain.from_iterable(v.values() for v in values)))
            array = pa.MapArray.from_arrays(offsets_array, keys, items, type=target, mask=mask)
        else:
            items, bad = child(list(chain.from_iterable(values)))
            array = pa.ListArray.from_arrays(offsets_array, items, type=target, mask=mask)
        return array, _child_errors(bad, offsets) if bad else {}

    return convert


def _fixed_member_converter(members: list[Convert], index: int, target: pa.DataType) -> Convert:
    """Every value is of one member: the writer type is not a union."""
    fields = list(target)

    def convert(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
        values = [v[1] if type(v) is tuple else v for v in values]
        nulls = [v is None for v in values]
        arrays = []
        errors: dict[int, str] = {}
        for i, member in enumerate(members):
            array, bad = member(values if i == index else [None] * len(values))
            arrays.append(array)
            errors.update(bad)
        mask = pa.array(nulls, pa.bool_()) if any(nulls) else None
        return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask), errors

    return convert


def _member_converter(
    node: AvroNode, members: list[Convert], target: pa.DataType, path: str
) -> Convert:
    """Values of a union read from a writer union: the member by name or Python type."""
    rest = non_null(node)
    by_name: dict[str, int] = {}
    by_type: dict[type, int] = {}
    taken: dict[type, list[int]] = {}
    for i, branch in enumerate(rest):
        if branch.name is not None:
            by_name[branch.name] = by_name[_short(branch.name)] = i
            py = _NAMED_PY_TYPES[branch.type]
        else:
            py = _PY_TYPES[branch.type]
        taken.setdefault(py, []).append(i)
    for py, indexes in taken.items():
        unnamed = [i for i in indexes if rest[i].name is None]
        if len(unnamed) > 1:
            raise ValueError(
                f"{path}: union {_describe(node)} has branches "
                f"{' and '.join(rest[i].type for i in unnamed)} among others: "
                "their values cannot be told apart"
            )
        # A plain value goes to the unnamed branch of its type, else to the only named one.
        if unnamed or len(indexes) == 1:
            by_type[py] = unnamed[0] if unnamed else indexes[0]
    fields = list(target)
    count = len(rest)

    def convert(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
        columns: list[list[Any]] = [[None] * len(values) for _ in range(count)]
        nulls = [False] * len(values)
        errors: dict[int, str] = {}
        for row, value in enumerate(values):
            if value is None:
                nulls[row] = True
                continue
            if type(value) is tuple:
                index = by_name.get(value[0])
                value = value[1]
            else:
                index = by_type.get(type(value))
            if index is None:
                errors[row] = f"{path}: a {type(value).__name__} value fits no member of the union"
                continue
            columns[index][row] = value
        arrays = []
        for member, column in zip(members, columns, strict=True):
            array, bad = member(column)
            arrays.append(array)
            errors.update(bad)
        mask = pa.array(nulls, pa.bool_()) if any(nulls) else None
        return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask), errors

    return convert


def _logical_change(writer: AvroNode, reader: AvroNode, path: str) -> int | tuple[int, int]:
    """How a writer value becomes the reader's: a factor (times), or decimal (precision,
    scale) of the writer; :class:`_Incompatible` when the meaning would change."""
    wl = None if writer.logical == "uuid" else writer.logical
    rl = None if reader.logical == "uuid" else reader.logical
    if rl == "decimal":
        if wl == "decimal":
            return (writer.precision, writer.scale)
        if wl is None and writer.type != "string":
            return (reader.precision, reader.scale)
    elif rl is None:
        if wl != "decimal" or reader.type != "string":
            return 1
    elif wl is None or wl == rl:
        return _UNIT.get(rl.rpartition("-")[2], 1) if "timestamp-" in rl else 1
    elif {wl, rl} <= _INSTANTS or {wl, rl} <= _LOCALS:
        return _UNIT[wl.rpartition("-")[2]]
    elif (wl, rl) == ("time-millis", "time-micros"):
        return 1000
    raise _Incompatible(
        f"{path}: writer type {_describe(writer)} cannot be read as reader type "
        f"{_describe(reader)}: the logical types differ"
    )


def _leaf(
    reader: AvroNode,
    feeds: list[AvroNode | None],
    path: str,
    datatype: DataType,
    target: pa.DataType,
) -> Convert:
    changes = {_logical_change(w or reader, reader, path) for w in feeds} or {
        _logical_change(reader, reader, path)
    }
    if len(changes) > 1:
        raise _Incompatible(
            f"{path}: the writer's branches read as reader type {_describe(reader)} need "
            "different conversions, which their values do not tell apart"
        )
    change = changes.pop()
    if isinstance(datatype, DecimalType):
        assert isinstance(change, tuple)
        return _decimal_converter(change[1], reader.precision, reader.scale, target, path)
    if is_text_decimal(reader):
        assert isinstance(change, tuple)
        return _decimal_text_converter(change[1], reader.precision, reader.scale, path)
    assert isinstance(change, int)
    if target == pa.null():
        return _null_converter
    if pa.types.is_timestamp(target) or pa.types.is_date(target):
        storage = pa.int64() if pa.types.is_timestamp(target) else pa.int32()
        return _integer_converter(storage, change, target, path)
    if change != 1:
        return _integer_converter(target, change, target, path)
    return _plain_converter(target)


def _plain_converter(target: pa.DataType) -> Convert:
    def convert(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
        return pa.array(values, target), {}

    return convert


def _integer_converter(
    storage: pa.DataType, factor: int, target: pa.DataType, path: str
) -> Convert:
    def convert(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
        array = pa.array(values, storage)
        errors: dict[int, str] = {}
        if factor != 1:
            try:
                array = pc.multiply_checked(array, pa.scalar(factor, storage))
            except pa.ArrowInvalid:
                limit = 2 ** (storage.bit_width - 1) // factor
                scaled = []
                for row, value in enumerate(values):
                    if value is not None and not -limit <= value < limit:
                        errors[row] = f"{path}: {value} x {factor} does not fit {storage}"
                        value = 0
                    scaled.append(None if value is None else value * factor)
                array = pa.array(scaled, storage)
        return (array.view(target) if storage != target else array), errors

    return convert


def _decimal_converter(
    writer_scale: int, precision: int, scale: int, target: pa.DataType, path: str
) -> Convert:
    """Two's complement big-endian bytes -> decimal128, rescaled exactly."""
    limit = 10**precision
    up = 10 ** max(scale - writer_scale, 0)
    down = 10 ** max(writer_scale - scale, 0)
    zero = bytes(16)
    from_bytes = int.from_bytes

    def convert(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
        errors: dict[int, str] = {}
        validity = None
        if None in values:
            valid = [v is not None for v in values]
            validity = pa.array(valid, pa.bool_()).buffers()[1]
            values = [b"" if v is None else v for v in values]
        numbers = [from_bytes(b, "big", signed=True) for b in values]
        if up != 1:
            numbers = [n * up for n in numbers]
        if down != 1:
            exact = []
            for row, n in enumerate(numbers):
                whole, rest = divmod(n, down)
                if rest:
                    errors[row] = (
                        f"{path}: {n}e-{writer_scale} has more than {scale} decimal places"
                    )
                    whole = 0
                exact.append(whole)
            numbers = exact
        if numbers and (max(numbers) >= limit or min(numbers) <= -limit):
            for row, n in enumerate(numbers):
                if not -limit < n < limit:
                    errors[row] = f"{path}: {n}e-{scale} has more than {precision} digits"
                    numbers[row] = 0
        data = b"".join([n.to_bytes(16, "little", signed=True) for n in numbers]) or zero
        array = pa.Array.from_buffers(target, len(values), [validity, pa.py_buffer(data)])
        return array, errors

    return convert


def _decimal_text_converter(writer_scale: int, precision: int, scale: int, path: str) -> Convert:
    """Two's complement big-endian bytes -> the exact text of a decimal Spark has no type
    for, at the reader's scale (rescaled exactly, as :func:`_decimal_converter` does)."""
    digits = min(precision, MAX_TEXT_DIGITS)  # Python writes no int of more digits
    limit = 10**digits
    up = 10 ** max(scale - writer_scale, 0)
    down = 10 ** max(writer_scale - scale, 0)
    from_bytes = int.from_bytes

    def convert(values: list[Any]) -> tuple[pa.Array, dict[int, str]]:
        errors: dict[int, str] = {}
        texts: list[str | None] = []
        for row, raw in enumerate(values):
            if raw is None:
                texts.append(None)
                continue
            n = from_bytes(raw, "big", signed=True) * up
            if down != 1:
                n, rest = divmod(n, down)
                if rest:
                    errors[row] = f"{path}: the value has {beyond_scale(scale)}"
                    texts.append("")
                    continue
            if not -limit < n < limit:
                errors[row] = (
                    f"{path}: the value has more than {digits} digits "
                    f"(decimal({precision},{scale}))"
                )
                texts.append("")
                continue
            texts.append(unscaled_text(n, scale))
        return pa.array(texts, pa.string()), errors

    return convert


class AvroBatchDecoder:
    """Decodes batches of Avro bodies written with ``writer``, read as ``reader``.

    :attr:`arrow_type` is the struct type of every batch:
    ``arrow_type(avro_to_spark(reader or writer))``.
    """

    def __init__(self, writer: Schema, reader: Schema | None = None) -> None:
        writer_data = load(writer)
        reader_data = writer_data if reader is None else load(reader)
        if reader_data == writer_data:
            reader = None  # no resolution: fastavro's plain read is twice as fast
        writer_node = expand(writer_data)
        reader_node = writer_node if reader is None else expand(reader_data)
        if reader_node.type != "record":
            raise ValueError(f"the reader schema must be a record, not {reader_node.type}")
        self.spark_type: StructType = spark_type(reader_node)[0]  # type: ignore[assignment]
        self.arrow_type: pa.StructType = arrow_type(self.spark_type)
        self._writer = fastavro.parse_schema(without_logical_types(writer_data))
        self._reader = (
            None if reader is None else fastavro.parse_schema(without_logical_types(reader_data))
        )
        self._names = (_describe(writer_node), _describe(reader_node))
        self._blank = _placeholder(reader_node)
        problem = None
        if self._reader is not None:
            try:
                self._writer, self._reader = for_reading(
                    self._writer, self._reader, named_types=True
                )
            except ResolutionError as exc:
                problem = str(exc)
        plan = _DecodePlan()
        try:
            self._convert = plan.convert(reader_node, [writer_node], "<root>")
        except _Incompatible as exc:
            problem = str(exc)
            self._convert = plan.convert(reader_node, [reader_node], "<root>")
        self._incompatible = problem and (
            f"writer schema {self._names[0]} cannot be read as reader schema "
            f"{self._names[1]}: {problem}"
        )

    def decode(
        self, messages: Sequence[bytes], offsets: Sequence[int]
    ) -> tuple[pa.StructArray, list[str | None]]:
        """One struct array of the messages' records, and per message None or why it is a
        null row. ``offsets[i]`` is where message ``i``'s Avro body starts (5 after a
        Confluent header, 0 for a bare body)."""
        if len(offsets) != len(messages):
            raise ValueError(f"{len(messages)} messages but {len(offsets)} offsets")
        count = len(messages)
        if self._incompatible is not None:
            return self._build([None] * count, [self._incompatible] * count)
        rows: list[Any] = []
        errors: list[str | None] = [None] * count
        # One buffer for the batch: a body that reads past its end shows in tell().
        buffer = io.BytesIO(b"".join(messages))
        seek, tell, read = buffer.seek, buffer.tell, fastavro.schemaless_reader
        writer, reader = self._writer, self._reader
        start = 0
        for index, message in enumerate(messages):
            end = start + len(message)
            begin = start + offsets[index]
            start = end
            if not 0 <= begin <= end:
                errors[index] = (
                    f"offset {offsets[index]} is outside the {len(message)}-byte message"
                )
                rows.append(None)
                continue
            seek(begin)
            try:
                rows.append(read(buffer, writer, reader, return_named_type=True))
            except Exception as exc:  # any malformed body is that row's error, not the batch's
                where = tell()
                errors[index] = (
                    f"Avro body is truncated or corrupt: it reads past its {end - begin} bytes "
                    f"({type(exc).__name__}: {exc})"
                    if where > end or isinstance(exc, EOFError)
                    else f"Avro body does not decode ({type(exc).__name__}: {exc})"
                )
                rows.append(None)
                continue
            where = tell()
            if where != end:
                errors[index] = (
                    f"Avro body is truncated or corrupt: the record reads past its "
                    f"{end - begin} bytes"
                    if where > end
                    else f"{end - where} bytes left over after the record"
                )
                rows[-1] = None
        return self._build(rows, errors)

    def _build(
        self, rows: list[Any], errors: list[str | None]
    ) -> tuple[pa.StructArray, list[str | None]]:
        blank = self._blank
        filled = [blank if r is None else r for r in rows]
        try:
            array, bad = self._convert(filled)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            # A value no converter foresaw: find the rows that carry it, one by one, so
            # that one value fails its row and not the batch.
            array, bad = self._convert_rows(filled, exc)
        for index, why in bad.items():
            if errors[index] is None:
                errors[index] = why
        if any(e is not None for e in errors):
            mask = pa.array([e is not None for e in errors], pa.bool_())
            array = pa.StructArray.from_arrays(
                array.flatten(), fields=list(self.arrow_type), mask=mask
            )
        return array, errors

    def _convert_rows(self, rows: list[Any], failure: Exception) -> tuple[pa.Array, dict[int, str]]:
        bad: dict[int, str] = {}
        good: list[Any] = []
        for index, row in enumerate(rows):
            try:
                self._convert([row])
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                bad[index] = f"a value does not fit its Spark type ({type(exc).__name__}: {exc})"
                row = self._blank
            good.append(row)
        if not bad:  # only the batch as a whole fails: no row to blame
            raise failure
        array, more = self._convert(good)
        return array, {**more, **bad}


# --- encoding: Arrow -> fastavro values -------------------------------------------


def _not_null(array: pa.Array, parent: pa.Array | None, path: str, errors: dict[int, str]) -> None:
    """Errors where ``array`` is null but the Avro type is not (and ``parent``, the
    validity of the enclosing struct, says the row is there)."""
    if not array.null_count:
        return
    missing = array.is_null()
    if parent is not None:
        missing = pc.and_(missing, parent)
    for row in pc.indices_nonzero(missing).to_pylist():
        errors.setdefault(row, f"{path} is null but its Avro type is not nullable")


def _extractor(node: AvroNode, path: str) -> Extract:
    """The extractor of one Avro type (positions where the Arrow value is null give None)."""
    datatype, _ = spark_type(node, path)
    target = arrow_type(datatype)
    if node.type == "union":
        rest = non_null(node)
        if not is_member_union(node):
            if not rest:
                return _nulls_extractor
            # [int, long] and [float, double] hold the wider type; Spark ignores logical types.
            branch = (
                rest[-1]
                if len(rest) == 1
                else next(b for b in rest if b.type in ("long", "double"))
            )
            inner = _extractor(branch, path) if len(rest) == 1 else _plain_extractor(target, path)
            return _tagged(inner, branch.name or branch.type)
        return _member_extractor(
            node, [_extractor(b, f"{path}<member{i}>") for i, b in enumerate(rest)], path
        )
    if node.type == "record":
        return _record_extractor(node, path, target)
    if node.type in ("array", "map"):
        assert node.items is not None
        suffix = "[]" if node.type == "array" else "{}"
        items = _extractor(node.items, path + suffix)
        nullable = spark_type(node.items)[1]
        return _list_extractor(items, nullable, node.type == "map", path + suffix)
    if isinstance(datatype, DecimalType):
        return _decimal_extractor(node, path)
    if is_text_decimal(node):
        return _decimal_text_extractor(node, path)
    if target == pa.null():
        return _nulls_extractor
    if pa.types.is_timestamp(target) or pa.types.is_date(target):
        storage = pa.int64() if pa.types.is_timestamp(target) else pa.int32()
        factor = _UNIT.get((node.logical or "").rpartition("-")[2], 1)
        return _integer_extractor(target, storage, factor, path)
    return _plain_extractor(target, path)


def _plain_extractor(target: pa.DataType, path: str) -> Extract:
    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        return _cast(array, target, path).to_pylist(), {}

    return extract


def _tagged(inner: Extract, branch: str) -> Extract:
    """Values of a [null, T] union as fastavro's tuple notation: the branch is named, not
    found by checking the value against each branch (much slower)."""

    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        values, errors = inner(array)
        if not array.null_count:
            return list(zip(repeat(branch), values)), errors
        return [None if v is None else (branch, v) for v in values], errors

    return extract


def _cast(array: pa.Array, target: pa.DataType, path: str) -> pa.Array:
    if array.type == target:
        return array
    try:
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"{path}: column of type {array.type} is not {target}: {exc}") from None


def _nulls_extractor(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
    return [None] * len(array), {}


def _integer_extractor(
    target: pa.DataType, storage: pa.DataType, factor: int, path: str
) -> Extract:
    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        values = _cast(array, target, path).view(storage).to_pylist()
        errors: dict[int, str] = {}
        if factor != 1:
            for row, value in enumerate(values):
                if value is not None:
                    whole, rest = divmod(value, factor)
                    if rest:
                        errors[row] = f"{path}: {value} microseconds is not whole milliseconds"
                    values[row] = whole
        return values, errors

    return extract


def _twos_complement(n: int, size: int) -> bytes:
    """Two's complement, big-endian: ``size`` bytes (fixed), else the fewest (as Java writes)."""
    return n.to_bytes(size or (n if n >= 0 else ~n).bit_length() // 8 + 1, "big", signed=True)


def _decimal_text_extractor(node: AvroNode, path: str) -> Extract:
    """Text of a decimal Spark has no type for -> its Avro bytes, exactly (a row error for
    text that is no such number)."""
    precision, scale = node.precision, node.scale
    digits = min(precision, MAX_TEXT_DIGITS)  # as the decoder reads them back
    size = node.size if node.type == "fixed" else 0

    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        out: list[Any] = []
        errors: dict[int, str] = {}
        for row, text in enumerate(_cast(array, pa.string(), path).to_pylist()):
            if text is None:
                out.append(None)
                continue
            try:
                out.append(_twos_complement(text_unscaled(text, scale, digits), size))
            except ValueError as exc:
                errors[row] = f"{path}: {exc} (decimal({precision},{scale}))"
                out.append(None)
        return out, errors

    return extract


def _decimal_extractor(node: AvroNode, path: str) -> Extract:
    precision, scale = node.precision, node.scale
    limit = 10**precision
    size = node.size if node.type == "fixed" else 0

    def avro_bytes(numbers: list[int | None]) -> list[bytes | None]:
        return [None if n is None else _twos_complement(n, size) for n in numbers]

    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        kind = array.type
        if not pa.types.is_decimal(kind) or kind.byte_width != 16:
            array = _cast(array, pa.decimal128(precision, scale), path)
            kind = array.type
        count, first = len(array), array.offset
        words = np.frombuffer(array.buffers()[1], dtype="<i8", count=2 * (first + count))
        low, high = words[2 * first :: 2], words[2 * first + 1 :: 2]
        valid = array.is_valid().to_numpy(zero_copy_only=False) if array.null_count else None
        if kind.scale == scale and precision <= 18:
            # Every value fits 64 bits: one vectorised range check, no per-value int parsing.
            fits = (high == (low >> 63)) & (low > -limit) & (low < limit)
            if valid is not None:
                fits |= ~valid
            if fits.all():
                numbers: list[Any] = low.tolist()
                if valid is not None:
                    numbers = [
                        n if ok else None for n, ok in zip(numbers, valid.tolist(), strict=True)
                    ]
                return avro_bytes(numbers), {}
        return _rescaled(array, precision, scale, path, avro_bytes)

    return extract


def _rescaled(
    array: pa.Array,
    precision: int,
    scale: int,
    path: str,
    avro_bytes: Callable[[list[int | None]], list[bytes | None]],
) -> tuple[list[Any], dict[int, str]]:
    """Decimals one by one: rescaled exactly to ``scale``, checked against ``precision``."""
    shift = scale - array.type.scale
    limit = 10**precision
    raw = array.buffers()[1].to_pybytes()
    nulls = array.is_null().to_pylist()
    numbers: list[int | None] = []
    errors: dict[int, str] = {}
    for row in range(len(array)):
        if nulls[row]:
            numbers.append(None)
            continue
        at = 16 * (array.offset + row)
        n = int.from_bytes(raw[at : at + 16], "little", signed=True)
        if shift >= 0:
            n *= 10**shift
        else:
            n, rest = divmod(n, 10**-shift)
            if rest:
                errors[row] = f"{path}: has more than {scale} decimal places"
        if not -limit < n < limit:
            errors[row] = f"{path}: {n}e-{scale} has more than {precision} digits"
        numbers.append(None if row in errors else n)
    return avro_bytes(numbers), errors


def _record_extractor(node: AvroNode, path: str, target: pa.DataType) -> Extract:
    children = []
    for field in node.fields:
        where = field.name if path == "<root>" else f"{path}.{field.name}"
        children.append((field.name, _extractor(field.node, where), spark_type(field.node)[1]))

    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        if isinstance(array, pa.RecordBatch):
            array = pa.StructArray.from_arrays(array.columns, fields=list(array.schema))
        if not pa.types.is_struct(array.type):
            raise ValueError(f"{path}: column of type {array.type} is not a struct")
        present = {array.type.field(i).name: i for i in range(array.type.num_fields)}
        parent = array.is_valid() if array.null_count else None
        flat = array.flatten()
        errors: dict[int, str] = {}
        rows: list[Any] = [{} for _ in range(len(array))]
        for name, child, nullable in children:
            where = name if path == "<root>" else f"{path}.{name}"
            if name not in present:
                raise ValueError(f"{where}: no such column among {sorted(present)}")
            column = flat[present[name]]
            values, bad = child(column)
            if not nullable:
                _not_null(column, parent, where, bad)
            errors.update(bad)
            # Filling the row dicts column by column keeps the loop in C.
            deque(map(setitem, rows, repeat(name), values), maxlen=0)
        if parent is not None:
            rows = [row if ok else None for row, ok in zip(rows, parent.to_pylist(), strict=True)]
        return rows, errors

    return extract


def _list_extractor(items: Extract, nullable: bool, is_map: bool, path: str) -> Extract:
    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        offsets = array.offsets.to_pylist()
        start, stop = offsets[0], offsets[-1]
        child = (array.items if is_map else array.values).slice(start, stop - start)
        values, bad = items(child)
        if not nullable:
            _not_null(child, None, path, bad)
        keys = array.keys.slice(start, stop - start).to_pylist() if is_map else []
        local = [o - start for o in offsets]
        errors = _child_errors(bad, local) if bad else {}
        valid = array.is_valid().to_pylist() if array.null_count else None
        out: list[Any] = []
        for row in range(len(array)):
            lo, hi = local[row], local[row + 1]
            if valid is not None and not valid[row]:
                out.append(None)
            elif is_map:
                out.append(dict(zip(keys[lo:hi], values[lo:hi], strict=True)))
            else:
                out.append(values[lo:hi])
        return out, errors

    return extract


def _member_extractor(node: AvroNode, members: list[Extract], path: str) -> Extract:
    rest = non_null(node)
    # fastavro's tuple notation picks a union branch by name: no guessing by value.
    branch_names = [b.name or b.type for b in rest]
    nullable = len(rest) != len(node.branches)

    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        flat = array.flatten()
        valid = array.is_valid().to_pylist() if array.null_count else None
        errors: dict[int, str] = {}
        columns = []
        for member, child in zip(members, flat, strict=True):
            values, bad = member(child)
            errors.update(bad)
            columns.append(values)
        out: list[Any] = []
        for row, cells in enumerate(zip(*columns, strict=True) if columns else []):
            if valid is not None and not valid[row]:
                out.append(None)
                continue
            set_ = [i for i, v in enumerate(cells) if v is not None]
            if len(set_) == 1:
                out.append((branch_names[set_[0]], cells[set_[0]]))
                continue
            out.append(None)
            if len(set_) > 1:
                errors[row] = f"{path}: more than one union member is set"
            elif not nullable:
                errors[row] = f"{path}: no union member is set and the union has no null"
        if not columns:
            out = [None] * len(array)
        return out, errors

    return extract


# --- encoding: Arrow columns -> Avro bytes, no Python value per cell -------------------

_Ints = npt.NDArray[np.int64]
_Bytes = npt.NDArray[np.uint8]
_Bools = npt.NDArray[np.bool_]
#: 2**7, 2**14, ... 2**63: a zigzag value at or above the i-th needs i + 2 varint bytes.
_VARINT_STEPS = np.array([1 << (7 * i) for i in range(1, 10)], dtype=np.uint64)
_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)
_COLUMNS = np.arange(16)
#: Rows assembled at once: the index arrays of a chunk stay tens of megabytes at most.
_CHUNK_ROWS = 1 << 15
#: Longer string or bytes values are copied one by one, not through a per-byte index.
_SHORT_RUN = 64


class _Block:
    """Per row, ``length`` bytes of a row of ``block`` starting at column ``begin``."""

    def __init__(self, block: _Bytes, length: _Ints | None = None, begin: _Ints | None = None):
        self.block = block
        self.full = length is None and begin is None  # every row is the block's whole width
        self.length = np.full(len(block), block.shape[1]) if length is None else length
        self.begin = begin

    def masked(self, keep: _Bools) -> _Block:
        return _Block(self.block, np.where(keep, self.length, 0), self.begin)

    def take(self, rows: _Ints | slice) -> _Block:
        if self.full:
            return _Block(self.block[rows])
        begin = None if self.begin is None else self.begin[rows]
        return _Block(self.block[rows], self.length[rows], begin)

    def write(self, out: _Bytes, cursor: _Ints) -> None:
        width = self.block.shape[1]
        columns = _COLUMNS[:width] if width <= len(_COLUMNS) else np.arange(width)
        if self.full:
            out[cursor[:, None] + columns] = self.block
            return
        begin = 0 if self.begin is None else self.begin[:, None]
        keep = columns < self.length[:, None] + begin
        if self.begin is not None:
            keep &= columns >= begin
        out[((cursor[:, None] - begin) + columns)[keep]] = self.block[keep]


class _Spans:
    """Per row, ``length`` bytes of ``data`` from ``start`` (a string or bytes column)."""

    def __init__(self, data: _Bytes, start: _Ints, length: _Ints):
        self.data, self.start, self.length = data, start, length

    def masked(self, keep: _Bools) -> _Spans:
        return _Spans(self.data, self.start, np.where(keep, self.length, 0))

    def take(self, rows: _Ints | slice) -> _Spans:
        return _Spans(self.data, self.start[rows], self.length[rows])

    def write(self, out: _Bytes, cursor: _Ints) -> None:
        length = self.length
        long = length > _SHORT_RUN
        if long.any():
            target, source = out.data, self.data.data
            for at, start, size in zip(
                cursor[long].tolist(), self.start[long].tolist(), length[long].tolist(), strict=True
            ):
                target[at : at + size] = source[start : start + size]
            length = np.where(long, 0, length)
        total = int(length.sum())
        if not total:
            return
        # Byte k of all runs laid end to end belongs to row r: k - before[r] into its run.
        before = np.cumsum(length) - length
        at = np.arange(total)
        skew = self.start - before
        if (skew == skew[0]).all():  # the runs are one stretch of the buffer
            first = int(skew[0])
            data = self.data[first : first + total]
        else:
            data = self.data[at + np.repeat(skew, length)]
        out[at + np.repeat(cursor - before, length)] = data


_Piece = _Block | _Spans
#: One column -> its pieces (its bytes per row) and where rows do not fit (None: all do).
_Leaf = Callable[[pa.Array], tuple[list[_Piece], _Bools | None]]
#: As :data:`_Leaf`, or None when this batch's column needs the row path (a decimal of
#: another scale).
_Columnar = Callable[[pa.Array], tuple[list[_Piece], _Bools | None] | None]


def _values(array: pa.Array, dtype: str) -> npt.NDArray[Any]:
    """The value buffer of a fixed-width array (whatever lies under its nulls)."""
    first = array.offset
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=first + len(array))[first:]


def _valid(array: pa.Array) -> _Bools:
    return array.is_valid().to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def _zigzag(values: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    wide = values.astype(np.int64, copy=False)
    # int64 shifts wrap, which is what zigzag wants at the extremes.
    return ((wide << 1) ^ (wide >> 63)).view(np.uint64)


def _varints(zigzag: npt.NDArray[np.uint64]) -> _Block:
    """Avro's varints of zigzag-encoded values: 7 bits a byte, low first, high bit = more."""
    length = np.searchsorted(_VARINT_STEPS, zigzag, side="right").astype(np.int64) + 1
    width = int(length.max(initial=1))
    block = ((zigzag[:, None] >> _SHIFTS[:width]) & 0x7F).astype(np.uint8)
    block |= (_COLUMNS[:width] < (length - 1)[:, None]).view(np.uint8) << 7
    return _Block(block, length)


def _integers(dtype: str, factor: int) -> _Leaf:
    def encode(array: pa.Array) -> tuple[list[_Piece], _Bools | None]:
        values = _values(array, dtype)
        bad = None
        if factor != 1:  # microseconds written as milliseconds: only whole ones fit
            whole, rest = np.divmod(values, factor)
            bad = rest != 0
            values = whole
        return [_varints(_zigzag(values))], bad

    return encode


def _boolean(array: pa.Array) -> tuple[list[_Piece], _Bools | None]:
    bits = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    first = array.offset
    flags = np.unpackbits(bits, bitorder="little")[first : first + len(array)]
    return [_Block(flags[:, None])], None


def _float(array: pa.Array) -> tuple[list[_Piece], _Bools | None]:
    # Through double and back, as the row path's Python floats go: NaN bits match (a
    # signalling NaN comes out quiet there too, which numpy would warn about).
    with np.errstate(invalid="ignore"):
        values = _values(array, "<f4").astype(np.float64).astype("<f4")
    return [_Block(values.view(np.uint8).reshape(-1, 4))], None


def _double(array: pa.Array) -> tuple[list[_Piece], _Bools | None]:
    return [_Block(_values(array, "<f8").view(np.uint8).reshape(-1, 8))], None


def _binary(array: pa.Array) -> tuple[list[_Piece], _Bools | None]:
    first = array.offset
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype="<i4", count=first + len(array) + 1)[first:]
    start = offsets[:-1].astype(np.int64)
    length = np.diff(offsets).astype(np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer else np.empty(0, np.uint8)
    return [_varints(_zigzag(length)), _Spans(data, start, length)], None


def _enum(symbols: tuple[str, ...]) -> _Leaf:
    known = pa.array(symbols, pa.string())

    def encode(array: pa.Array) -> tuple[list[_Piece], _Bools | None]:
        index = pc.index_in(array, value_set=known)
        bad = _valid(array) & ~_valid(index) if index.null_count else None
        values = _values(pc.fill_null(index, 0) if index.null_count else index, "<i4")
        return [_varints(_zigzag(values))], bad

    return encode


def _decimal(precision: int, scale: int, path: str) -> _Columnar:
    limit = 10**precision
    below = (limit >> 64, limit & (2**64 - 1))  # the limit's high and low words
    above = ((-limit) >> 64, (-limit) & (2**64 - 1))

    def encode(array: pa.Array) -> tuple[list[_Piece], _Bools | None] | None:
        kind = array.type
        if not pa.types.is_decimal(kind) or kind.byte_width != 16:
            array = _cast(array, pa.decimal128(precision, scale), path)
        if array.type.scale != scale:
            return None  # rescaling, and its per-row errors, are the row path's
        first, count = array.offset, len(array)
        raw = np.frombuffer(array.buffers()[1], dtype=np.uint8, count=16 * (first + count))
        little = raw[16 * first :].reshape(count, 16)
        words = little.view("<i8")
        low, high = words[:, 0].view(np.uint64), words[:, 1]
        # -limit < value < limit, compared as 128-bit (high, unsigned low) pairs.
        fits = ((high < below[0]) | ((high == below[0]) & (low < np.uint64(below[1])))) & (
            (high > above[0]) | ((high == above[0]) & (low > np.uint64(above[1])))
        )
        big = little[:, ::-1]
        # The fewest bytes of two's complement (as Java's BigInteger writes): a leading
        # byte goes while it only repeats the sign bit of the byte after it.
        negative = high < 0
        sign = np.where(negative, 0xFF, 0).astype(np.uint8)[:, None]
        spare = (big[:, :15] == sign) & ((big[:, 1:] >> 7) == negative[:, None])
        leading = np.cumprod(spare, axis=1).sum(axis=1)
        length = 16 - leading
        header = (2 * length).astype(np.uint8)[:, None]  # zigzag varint of 1..16: one byte
        return [_Block(header), _Block(big, length, leading)], ~fits

    return encode


def _nullable(inner: _Columnar, branch: int) -> _Columnar:
    """A [null, T] or [T, null] union: the branch index, then T's bytes unless null."""
    present = np.uint8(2 * branch)  # zigzag of the index
    absent = np.uint8(2 * (1 - branch))

    def encode(array: pa.Array) -> tuple[list[_Piece], _Bools | None] | None:
        encoded = inner(array)
        if encoded is None:
            return None
        pieces, bad = encoded
        if not array.null_count:
            index = np.full((len(array), 1), present)
            return [_Block(index), *pieces], bad
        valid = _valid(array)
        index = np.where(valid, present, absent)[:, None]
        return [_Block(index), *(p.masked(valid) for p in pieces)], None if bad is None else (
            bad & valid
        )

    return encode


def _columnar(node: AvroNode, path: str) -> _Columnar | None:
    """The vectorised encoder of a field type, or None for a type only the row path writes."""
    if node.type == "union":
        rest = non_null(node)
        if len(node.branches) != 2 or len(rest) != 1:
            return None
        inner = _columnar(rest[0], path)
        return None if inner is None else _nullable(inner, node.branches.index(rest[0]))
    datatype, _ = spark_type(node, path)
    target = arrow_type(datatype)
    leaf: _Leaf
    if node.logical == "decimal":
        if node.type != "bytes" or not isinstance(datatype, DecimalType):
            return None  # fixed, or a decimal of text: the row path
        return _decimal(node.precision, node.scale, path)
    if node.type in ("int", "long"):
        factor = 1
        if pa.types.is_timestamp(target):
            factor = _UNIT[(node.logical or "").rpartition("-")[2]]
        leaf = _integers("<i4" if node.type == "int" else "<i8", factor)
    elif node.type == "enum":
        leaf = _enum(node.symbols)
    else:
        simple: dict[str, _Leaf] = {
            "boolean": _boolean,
            "float": _float,
            "double": _double,
            "string": _binary,
            "bytes": _binary,
        }
        if node.type not in simple:
            return None
        leaf = simple[node.type]

    def encode(array: pa.Array) -> tuple[list[_Piece], _Bools | None]:
        return leaf(_cast(array, target, path))

    return encode


def _assemble(pieces: list[_Piece], count: int, prefix: bytes) -> list[bytes]:
    """Each row's bytes: the prefix, then its run of every piece in turn."""
    bodies: list[bytes] = []
    for first in range(0, count, _CHUNK_ROWS):
        rows = slice(first, min(first + _CHUNK_ROWS, count))
        bodies += _assemble_chunk([p.take(rows) for p in pieces], rows.stop - first, prefix)
    return bodies


def _assemble_chunk(pieces: list[_Piece], count: int, prefix: bytes) -> list[bytes]:
    lengths = np.full(count, len(prefix), dtype=np.int64)
    for piece in pieces:
        lengths += piece.length
    ends = np.cumsum(lengths)
    starts = ends - lengths
    out = np.empty(int(ends[-1]) if count else 0, dtype=np.uint8)
    cursor = starts.copy()
    if prefix:
        _Block(np.broadcast_to(np.frombuffer(prefix, np.uint8), (count, len(prefix)))).write(
            out, cursor
        )
        cursor += len(prefix)
    for piece in pieces:
        piece.write(out, cursor)
        cursor += piece.length
    data = out.tobytes()
    return list(map(data.__getitem__, map(slice, starts.tolist(), ends.tolist())))


class AvroBatchEncoder:
    """Encodes rows of ``arrow_type(avro_to_spark(schema))`` (or a batch with those
    columns) as Avro bodies; ``prefix`` (a Confluent header, say) starts every body.

    :attr:`columnar_rows` counts the rows written without fastavro (module docstring)."""

    def __init__(self, schema: Schema, *, prefix: bytes = b"") -> None:
        data = load(schema)
        node = expand(data)
        if node.type != "record":
            raise ValueError(f"the schema must be a record, not {node.type}")
        self.spark_type: StructType = spark_type(node)[0]  # type: ignore[assignment]
        self.arrow_type: pa.StructType = arrow_type(self.spark_type)
        self._schema = fastavro.parse_schema(without_logical_types(data))
        self._extract = _record_extractor(node, "<root>", self.arrow_type)
        self._prefix = prefix
        #: Rows written by the columnar path so far (the rest went through fastavro).
        self.columnar_rows = 0
        self._columns: list[tuple[str, _Columnar, bool]] | None = []
        for field in node.fields:
            encoder = _columnar(field.node, field.name)
            if encoder is None:
                self._columns = None
                break
            self._columns.append((field.name, encoder, spark_type(field.node)[1]))

    def encode(
        self, array: pa.StructArray | pa.RecordBatch
    ) -> tuple[list[bytes | None], list[str | None]]:
        """Per row the Avro body, or None and why the row does not fit the schema.

        :class:`ValueError` when a column is missing or of a type that does not cast."""
        if self._columns is not None and len(array):
            encoded = self._encode_columns(array, self._columns)
            if encoded is not None:
                return encoded
        return self._encode_rows(array)

    def _encode_columns(
        self, array: pa.StructArray | pa.RecordBatch, columns: list[tuple[str, _Columnar, bool]]
    ) -> tuple[list[bytes | None], list[str | None]] | None:
        """The columnar path: every column encoded at once, then cut into rows. Rows that
        do not fit take the row path, for its reasons; None when a column needs it all."""
        if isinstance(array, pa.RecordBatch):
            array = pa.StructArray.from_arrays(array.columns, fields=list(array.schema))
        if not pa.types.is_struct(array.type):
            raise ValueError(f"<root>: column of type {array.type} is not a struct")
        count = len(array)
        present = {array.type.field(i).name: i for i in range(array.type.num_fields)}
        flat = array.flatten()
        fits = _valid(array) if array.null_count else np.ones(count, dtype=np.bool_)
        pieces: list[_Piece] = []
        for name, encoder, nullable in columns:
            if name not in present:
                raise ValueError(f"{name}: no such column among {sorted(present)}")
            column = flat[present[name]]
            encoded = encoder(column)
            if encoded is None:
                return None
            column_pieces, bad = encoded
            pieces.extend(column_pieces)
            if bad is not None:
                fits &= ~bad
            if not nullable and column.null_count:
                fits &= _valid(column)
        if fits.all():
            self.columnar_rows += count
            return list(_assemble(pieces, count, self._prefix)), [None] * count
        good = np.flatnonzero(fits)
        misfits = np.flatnonzero(~fits)
        bodies: list[bytes | None] = [None] * count
        errors: list[str | None] = [None] * count
        written = _assemble([p.take(good) for p in pieces], len(good), self._prefix)
        for index, written_body in zip(good.tolist(), written, strict=True):
            bodies[index] = written_body
        self.columnar_rows += len(good)
        # The row path says why (or, should a check here be stricter, writes the row).
        row_bodies, row_errors = self._encode_rows(array.take(misfits))
        for index, row_body, why in zip(misfits.tolist(), row_bodies, row_errors, strict=True):
            bodies[index], errors[index] = row_body, why
        return bodies, errors

    def _encode_rows(
        self, array: pa.StructArray | pa.RecordBatch
    ) -> tuple[list[bytes | None], list[str | None]]:
        """The row path: fastavro writes the rows the extractors build."""
        rows, bad = self._extract(array)
        errors: list[str | None] = [None] * len(rows)
        for index, why in bad.items():
            errors[index] = why
        bodies: list[bytes | None] = [None] * len(rows)
        todo = [i for i, row in enumerate(rows) if row is not None and errors[i] is None]
        for i, row in enumerate(rows):
            if row is None and errors[i] is None:
                errors[i] = "the row is null"
        while todo:
            todo = self._write(rows, todo, bodies, errors)
        return bodies, errors

    def _write(
        self,
        rows: list[Any],
        todo: list[int],
        bodies: list[bytes | None],
        errors: list[str | None],
    ) -> list[int]:
        """Writes rows into one in-memory block and cuts it at each row's end; returns the
        rows left when the block grows past :data:`_BLOCK_BYTES`."""
        # fastavro's Writer appends records to a block buffer: cheaper per row than a
        # schemaless_writer call, and its tell() marks where each record ends.
        writer = fastavro.write.Writer(io.BytesIO(), self._schema, sync_interval=2**62)
        block: Any = writer.io  # the compiled Writer's in-memory block (typed loosely upstream)
        write: Callable[[Any], None] = writer.write
        if not hasattr(block, "tell"):  # fastavro without its compiled extension
            block, schema = io.BytesIO(), self._schema
            write = partial(fastavro.schemaless_writer, block, schema)
        tell = block.tell
        ends: list[int] = []  # where each row's record (or a failed partial one) ends
        failed: dict[int, str] = {}
        rest: list[int] = []
        for at, index in enumerate(todo):
            try:
                write(rows[index])
            except Exception as exc:  # a value fastavro rejects fails its row only
                failed[at] = f"row does not fit the Avro schema ({type(exc).__name__}: {exc})"
            ends.append(tell())
            if ends[-1] > _BLOCK_BYTES:
                rest = todo[at + 1 :]
                break
        data = block.getvalue()
        prefix = self._prefix
        start = 0
        for at, end in enumerate(ends):
            index = todo[at]
            if at in failed:
                errors[index] = failed[at]  # its partial record stays in the block, unused
            else:
                bodies[index] = prefix + data[start:end] if prefix else data[start:end]
            start = end
        return rest
