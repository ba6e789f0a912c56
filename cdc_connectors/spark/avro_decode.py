"""Avro bodies -> one Arrow struct array, built column by column.

:class:`AvroBatchDecoder` reads a batch of Avro binary bodies (after a Confluent
header or none) with fastavro into one ``StructArray`` of
``arrow_type(avro_to_spark(schema))``, the type Spark accepts for the schema
(:mod:`cdc_connectors.spark.avro_types`). Logical types are stripped from the schema
fastavro sees: it hands back raw longs and two's complement bytes, and Arrow turns whole
columns into timestamps and decimals, which is cheaper than a ``datetime`` or ``Decimal``
per value. The decode plan (:class:`_DecodePlan`) builds one converter per reader type
from the writer types read as it. Writing such rows back is
:mod:`cdc_connectors.spark.avro_encode`.

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
from collections.abc import Callable, Sequence
from itertools import accumulate, chain
from operator import itemgetter
from typing import Any

import fastavro
import fastavro.write
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import DataType, DecimalType, StructType

from cdc_connectors.schema.avro_resolution import PROMOTIONS, ResolutionError, for_reading
from cdc_connectors.spark.avro_types import (
    MICROS_PER_UNIT,
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
from cdc_connectors.spark.column_errors import child_errors
from cdc_connectors.spark.decimal_text import (
    MAX_TEXT_DIGITS,
    beyond_scale,
    unscaled_text,
)

__all__ = ["AvroBatchDecoder", "Convert", "Schema"]

Schema = dict[str, Any]
#: Python values (fastavro's, logical types stripped) -> one Arrow array, and the
#: positions that do not fit with their reasons.
Convert = Callable[[list[Any]], tuple[pa.Array, dict[int, str]]]
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
        return array, child_errors(bad, offsets) if bad else {}

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
        return MICROS_PER_UNIT.get(rl.rpartition("-")[2], 1) if "timestamp-" in rl else 1
    elif {wl, rl} <= _INSTANTS or {wl, rl} <= _LOCALS:
        return MICROS_PER_UNIT[wl.rpartition("-")[2]]
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
