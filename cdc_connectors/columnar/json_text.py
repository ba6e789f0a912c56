"""JSON text of typed Arrow columns: for each row, the bytes orjson writes for the value the
per-message Debezium reading makes of it (``DebeziumJsonFormat.decode``, then
``record_to_json`` / ``data_to_bytes``: sorted keys, compact).

:func:`struct_text` writes a struct column as JSON objects, each typed column as the
per-message value is written:

| typed column | per-message value | JSON |
|---|---|---|
| integers | int | the number |
| ``double`` | float | orjson's shortest text (``1.0``, ``1e-7``), from the whole column at once |
| ``decimal(p, s)`` | Decimal | its exact text (``12.30``, ``1E-10``), Arrow's as Python's |
| a decimal held as text | Decimal | that text, where Python writes no exponent |
| ``date`` / ``time`` / ``timestamp`` | date / time / datetime | ISO 8601 text |
| ``binary`` | bytes | base64 text |
| ``string`` | str | the string, escaped as orjson escapes it |
| struct | dict | an object |
| list (Connect array) | list | an array of its items' texts |
| map (Connect map of string keys) | dict | an object of its entries |

A row the columns cannot write exactly is flagged for the per-message way: a ``float``
column, a decimal Python writes with an exponent (an integer decimal beyond 64 bits, a
decimal held as text at a negative scale or below a millionth). A ``-0.0`` is the
message's own: the decoder sends a message that says ``-0`` (the integer, 0 the per-message
way) that way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import base64text, isotext, maps, wire
from cdc_connectors.columnar.kinds import column_kind
from cdc_connectors.opencdc.structured import decimal_problem
from cdc_connectors.schema.connect import ConnectSchema
from cdc_connectors.spark.arrow_lists import item_rows, list_offsets, list_sizes

__all__ = ["StructText", "TextColumn", "image_texts", "joined", "quoted", "struct_text"]

#: A column -> the JSON text of each row (``null`` for nulls) and the rows refused.
TextColumn = Callable[[pa.Array], tuple[pa.Array, np.ndarray]]
#: A struct column -> each row's JSON object (null where the struct is null) and the rows
#: refused.
StructText = TextColumn

_NULL = pa.scalar(b"null", pa.binary())
# Python writes a Decimal in plain notation down to a millionth: the decimal places a text
# of that many may have before its first nonzero digit (zero itself is 0E-7 at scale 7).
_PLAIN_PLACES = 6
_BELOW_A_MILLIONTH = f"^-?0\\.0{{{_PLAIN_PLACES}}}"
# Integer texts this long (a sign counted) may be beyond 64 bits: each is looked at.
_LONG_INTEGER = 19
_INT64 = (-(2**63), 2**63 - 1)
# Decimal texts no longer than this are within a double's range (10**308 down to 10**-307).
_WITHIN_DOUBLES = 300
_COMMA = pa.scalar(b",", pa.binary())
_QUOTE = pa.scalar(b'"', pa.binary())
_NOTHING = pa.scalar(b"", pa.binary())
# What orjson escapes in a string: quotes, backslashes and control characters.
_ESCAPED = np.zeros(256, dtype=bool)
_ESCAPED[:0x20] = _ESCAPED[ord('"')] = _ESCAPED[ord("\\")] = True
# Of those, what orjson writes otherwise than with a backslash before it.
_CONTROL = np.zeros(256, dtype=bool)
_CONTROL[:0x20] = True


def joined(*parts: pa.Array | bytes) -> pa.Array:
    """Binary columns and constant bytes concatenated row by row (a null is no bytes)."""
    return pc.binary_join_element_wise(
        *[pa.scalar(p, pa.binary()) if isinstance(p, bytes) else p for p in parts],
        _NOTHING,
        null_handling="replace",
        null_replacement="",
    )


def quoted(texts: pa.Array) -> pa.Array:
    """Each value of a string column as a JSON string (orjson's escapes); nulls stay null."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if texts.type != pa.string():
        texts = texts.cast(pa.string())
    out = pc.binary_join_element_wise(_QUOTE, texts.cast(pa.binary()), _QUOTE, _NOTHING)
    escaped = wire.rows_holding(texts, _ESCAPED)
    if not escaped.any():
        return out
    control = wire.rows_holding(texts, _CONTROL)
    plain = escaped & ~control
    if plain.any():  # quotes and backslashes alone (JSON text in text): a kernel each
        some = texts.filter(pa.array(plain))
        some = pc.replace_substring(pc.replace_substring(some, "\\", "\\\\"), '"', '\\"')
        fixed = pc.binary_join_element_wise(_QUOTE, some.cast(pa.binary()), _QUOTE, _NOTHING)
        out = pc.replace_with_mask(out, pa.array(plain), fixed)
    if control.any():  # rare: those strings are written one by one
        rows = np.flatnonzero(control)
        fixed = pa.array([orjson.dumps(t) for t in texts.take(pa.array(rows)).to_pylist()])
        out = pc.replace_with_mask(out, pa.array(control), fixed)
    return out


def image_texts(batch: pa.RecordBatch, image: StructText) -> tuple[list[pa.Array], np.ndarray]:
    """The JSON text of the ``before`` and ``after`` images of a typed batch (``null`` for
    none) written by ``image``, and the rows it refuses."""
    count = batch.num_rows
    bad = np.zeros(count, dtype=bool)
    images = []
    for name in ("before", "after"):
        column = batch.column(name)
        if not wire.valid(column).any():
            images.append(pa.array([b"null"] * count, pa.binary()))
            continue
        text, refused = image(column)
        bad |= refused
        images.append(pc.fill_null(text, _NULL))
    return images, bad


def _or_null(text: pa.Array, valid: np.ndarray) -> pa.Array:
    if valid.all():
        return text
    return pc.if_else(pa.array(valid), text, _NULL)


def struct_text(node: ConnectSchema, type_: pa.DataType, *, ordered: bool = False) -> StructText:
    """How a struct column of Connect schema ``node`` becomes JSON objects (module
    docstring), members in key order, or in the schema's order when ``ordered`` (as orjson
    writes a struct read the per-message way without sorting: Debezium JSON);
    :class:`ValueError` for a schema the columns do not write."""
    if node.type != "struct" or not pa.types.is_struct(type_):
        raise ValueError(f"{node.path}: {node.type} as {type_}")
    children = node.fields if ordered else sorted(node.fields, key=lambda pair: pair[0])
    writers: list[tuple[bytes, TextColumn, int]] = []
    for n, (name, child) in enumerate(children):
        index = type_.get_field_index(name)
        if index < 0:
            raise ValueError(f"{child.path}: not a column of {type_}")
        label = (b"{" if n == 0 else b",") + orjson.dumps(name) + b":"
        writers.append((label, _value_text(child, type_.field(index).type, ordered), index))

    def write(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
        valid = wire.valid(array)
        bad = np.zeros(len(array), dtype=bool)
        if not writers:
            text = pa.array([b"{}"] * len(array), pa.binary())
        else:
            parts: list[pa.Array | bytes] = []
            for label, value_of, index in writers:
                value, refused = value_of(array.field(index))
                bad |= refused
                parts += [label, value]
            text = joined(*parts, b"}")
        if not valid.all():
            text = pc.if_else(pa.array(valid), text, pa.scalar(None, pa.binary()))
        return text, bad & valid

    return write


def _value_text(node: ConnectSchema, type_: pa.DataType, ordered: bool) -> TextColumn:
    """How one column becomes JSON text (module docstring)."""
    kind = column_kind(node, type_)
    if kind is None:
        raise ValueError(f"{node.path}: {node.type} as {type_}")
    if kind.name == "struct":
        inner = struct_text(node, type_, ordered=ordered)

        def nested(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
            text, bad = inner(array)
            return pc.fill_null(text, _NULL), bad

        return nested
    if kind.name == "list":
        assert node.items is not None
        return _list_text(_value_text(node.items, type_.value_type, ordered))
    if kind.name == "map":
        assert node.values is not None
        return _map_text(_value_text(node.values, type_.item_type, ordered), ordered)
    if kind.name == "time_of_day":
        per_unit = kind.unit
        return _iso(lambda counts: isotext.times(counts * per_unit))
    if kind.name == "decimal":
        return _decimals(kind.unit)
    if kind.name == "decimal_text":
        return _decimal_texts(kind.unit)
    return {
        "date": _iso(isotext.dates),
        "timestamp": _iso(isotext.timestamps),
        "refused": _refused,
        "string": _strings,
        "binary": _base64,
        "integer": _integers,
        "double": _doubles,
        "boolean": _booleans,
    }[kind.name]


def _list_text(item: TextColumn) -> TextColumn:
    """A list column as JSON arrays of its items' texts."""

    def write(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
        valid = wire.valid(array)
        sizes = list_sizes(array)
        rows = item_rows(sizes)
        texts, refused = item(pc.list_flatten(array))
        lists = pa.ListArray.from_arrays(list_offsets(sizes), texts.cast(pa.binary()))
        text = joined(b"[", pc.binary_join(lists, _COMMA), b"]")
        bad = np.zeros(len(array), dtype=bool)
        bad[rows[refused]] = True
        return _or_null(text, valid), bad & valid

    return write


def _map_text(item: TextColumn, ordered: bool) -> TextColumn:
    """A map column (string keys) as JSON objects: its entries in key order, or in their
    own order when ``ordered`` (a dict read the per-message way, written unsorted)."""

    def write(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
        valid = wire.valid(array)
        count = len(array)
        if ordered:
            names, items, offsets = maps.entry_columns(array)
        else:
            entries = maps.sorted_entries(array, uniform=False)
            assert entries.names is not None and entries.items is not None
            assert entries.offsets is not None
            names, items, offsets = entries.names, entries.items, entries.offsets
        rows = np.repeat(np.arange(count), np.diff(offsets))
        texts, refused = item(items)
        pairs = joined(quoted(names), b":", texts.cast(pa.binary()))
        lists = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pairs)
        text = joined(b"{", pc.binary_join(lists, _COMMA), b"}")
        bad = np.zeros(count, dtype=bool)
        bad[rows[refused]] = True
        return _or_null(text, valid), bad & valid

    return write


def _refused(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
    return pa.array([b"null"] * len(array), pa.binary()), wire.valid(array)


def _strings(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
    return pc.fill_null(quoted(array), _NULL), np.zeros(len(array), dtype=bool)


def _base64(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
    text = joined(b'"', base64text.encode(array), b'"')
    return _or_null(text, wire.valid(array)), np.zeros(len(array), dtype=bool)


def _integers(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
    text = pc.cast(array, pa.string()).cast(pa.binary())
    return pc.fill_null(text, _NULL), np.zeros(len(array), dtype=bool)


def _booleans(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
    text = pc.if_else(array, pa.scalar(b"true"), pa.scalar(b"false"))
    return pc.fill_null(text, _NULL), np.zeros(len(array), dtype=bool)


def _doubles(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
    count = len(array)
    valid = wire.valid(array)
    numbers = np.asarray(pc.fill_null(array, 0.0).to_numpy(), dtype=np.float64)
    bad = np.zeros(len(valid), dtype=bool)  # -0.0 is the message's (see the decoder)
    if not count:
        return pa.array([], pa.binary()), bad
    # One call writes the whole column as a JSON array; its items are the texts.
    listed = orjson.dumps(numbers, option=orjson.OPT_SERIALIZE_NUMPY)
    text = pc.split_pattern(pa.array([listed[1:-1]], pa.binary()), b",").values
    return _or_null(text, valid), bad


def _decimals(scale: int) -> TextColumn:
    """Arrow's text of a decimal is Python's (``str``), but for integers beyond 64 bits,
    which the per-message way writes with an exponent."""

    def write(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
        valid = wire.valid(array)
        bad = np.zeros(len(array), dtype=bool)
        if scale <= 0:
            words = np.frombuffer(array.buffers()[1], dtype=np.int64)
            words = words[2 * array.offset : 2 * (array.offset + len(array))].reshape(-1, 2)
            bad = valid & ((words[:, 1] != (words[:, 0] >> 63)) | (scale < 0))
        text = pc.cast(array, pa.string()).cast(pa.binary())
        return pc.fill_null(text, _NULL), bad

    return write


def _decimal_texts(scale: int) -> TextColumn:
    """A decimal held as its plain text at ``scale`` (:mod:`~cdc_connectors.spark.decimal_text`)
    is the text the per-message way writes for its ``Decimal`` (Python's, ``json_number``),
    but where that has an exponent: at a negative scale (``1.23E+4``), beyond six places
    for a value below a millionth (``1.2E-7``, ``0E-8``), at scale 0 for an integer beyond
    64 bits (``1.8446744073709551616E+19``): those rows are refused, as is a number
    beyond a double's range (that way refuses a fraction, and writes a kv line of a whole
    number with its record as text)."""

    def write(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
        valid = wire.valid(array)
        if scale < 0:
            bad = valid
        elif scale > _PLAIN_PLACES:
            bad = valid & wire.mask(pc.match_substring_regex(array, _BELOW_A_MILLIONTH))
        elif scale == 0:  # an integer: beyond 64 bits, written with an exponent
            bad = valid & (np.asarray(pc.fill_null(pc.utf8_length(array), 0)) >= _LONG_INTEGER)
            for row in np.flatnonzero(bad):
                bad[row] = not _INT64[0] <= int(array[int(row)].as_py()) <= _INT64[1]
        else:
            bad = np.zeros(len(array), dtype=bool)
        # Beyond a double's range a fraction is no JSON number a reader takes (refused
        # there), and a whole number one a double reader does not (a kv line holds such a
        # record as text there): only a text this long can be either.
        long = valid & (np.asarray(pc.fill_null(pc.utf8_length(array), 0)) > _WITHIN_DOUBLES)
        for row in np.flatnonzero(long & ~bad):
            value = Decimal(array[int(row)].as_py())
            bad[row] = bool(decimal_problem(value)) or not math.isfinite(float(value))
        return pc.fill_null(array.cast(pa.binary()), _NULL), bad

    return write


def _iso(text_of: Callable[[np.ndarray], wire.Segment]) -> TextColumn:
    def write(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
        valid = wire.valid(array)
        integers = array.cast(pa.int32() if pa.types.is_date32(array.type) else pa.int64())
        counts = np.asarray(pc.fill_null(integers, 0).to_numpy(), dtype=np.int64)
        matrix, sizes = text_of(counts)
        framed = np.empty((len(array), matrix.shape[1] + 2), dtype=np.uint8)
        framed[:, 0] = ord('"')
        framed[:, 1:-1] = matrix
        framed[np.arange(len(array)), sizes + 1] = ord('"')
        text = wire.segments([(framed, sizes + 2)]).joined()
        return _or_null(text, valid), np.zeros(len(array), dtype=bool)

    return write
