"""Arrow rows -> Avro bodies: :class:`AvroBatchEncoder`.

It encodes rows of ``arrow_type(avro_to_spark(schema))`` (the type
:class:`~cdc_connectors.spark.avro_decode.AvroBatchDecoder` builds) two ways. A record
whose fields are all of boolean, int, long, float, double, string, bytes, a decimal on
bytes that Spark holds, an enum, the int and long logical types, or a ``[null, T]`` /
``[T, null]`` union of those is written without fastavro, column by column in numpy
(:mod:`cdc_connectors.spark.avro_columnar`); the bytes are those fastavro writes, and a
row that does not fit takes the row path, which says why. Other schemas (arrays, maps,
nested records, fixed, other unions, a decimal of text), and a batch with a decimal
column of another scale, take the row path: the row extractors here turn each Arrow
column into fastavro's Python values (logical types stripped), and fastavro writes them.
A decimal of text is written from its text (or any column that casts to one) exactly:
text that is no decimal number, has more decimal places than the scale or more digits
than the precision is a row error, never rounded.
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable
from functools import partial
from itertools import repeat
from operator import setitem
from typing import Any

import fastavro
import fastavro.write
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import DecimalType, StructType

from cdc_connectors.spark.avro_columnar import Columnar, Piece, assemble, column_encoder, validity
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
from cdc_connectors.spark.column_errors import cast_column, child_errors
from cdc_connectors.spark.decimal_text import (
    MAX_TEXT_DIGITS,
    text_unscaled,
)

__all__ = ["AvroBatchEncoder", "Extract"]

Schema = dict[str, Any]
#: One Arrow array -> fastavro's Python values, and the positions that do not fit.
Extract = Callable[[pa.Array], tuple[list[Any], dict[int, str]]]

#: Block size after which the encoder starts a new buffer (fastavro's tell() is 32-bit).
_BLOCK_BYTES = 1 << 28


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
        factor = MICROS_PER_UNIT.get((node.logical or "").rpartition("-")[2], 1)
        return _integer_extractor(target, storage, factor, path)
    return _plain_extractor(target, path)


def _plain_extractor(target: pa.DataType, path: str) -> Extract:
    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        return cast_column(array, target, path).to_pylist(), {}

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


def _nulls_extractor(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
    return [None] * len(array), {}


def _integer_extractor(
    target: pa.DataType, storage: pa.DataType, factor: int, path: str
) -> Extract:
    def extract(array: pa.Array) -> tuple[list[Any], dict[int, str]]:
        values = cast_column(array, target, path).view(storage).to_pylist()
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
        for row, text in enumerate(cast_column(array, pa.string(), path).to_pylist()):
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
            array = cast_column(array, pa.decimal128(precision, scale), path)
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
        errors = child_errors(bad, local) if bad else {}
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
        self._columns: list[tuple[str, Columnar, bool]] | None = []
        for field in node.fields:
            encoder = column_encoder(field.node, field.name)
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
        self, array: pa.StructArray | pa.RecordBatch, columns: list[tuple[str, Columnar, bool]]
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
        fits = validity(array) if array.null_count else np.ones(count, dtype=np.bool_)
        pieces: list[Piece] = []
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
                fits &= validity(column)
        if fits.all():
            self.columnar_rows += count
            return list(assemble(pieces, count, self._prefix)), [None] * count
        good = np.flatnonzero(fits)
        misfits = np.flatnonzero(~fits)
        bodies: list[bytes | None] = [None] * count
        errors: list[str | None] = [None] * count
        written = assemble([p.take(good) for p in pieces], len(good), self._prefix)
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
