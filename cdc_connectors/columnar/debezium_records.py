"""Typed OpenCDC batches -> Debezium JSON change events, column by column.

:class:`DebeziumRecordWriter` writes each row of a typed batch (the layout of
:mod:`cdc_connectors.spark.debezium_typed`) as the bytes ``DebeziumJsonFormat.encode``
gives for the record the per-message reading makes of the same message, without schema
blocks (``schemas.enable`` off):

- ``before``, ``after``: the images, members in the schema's order (:func:`struct_text`);
- ``source``: ``<prefix>.source.*`` metadata in name order, each value as JSON (an
  integer text as the number, other text as a string; the members Debezium declares as
  strings always as strings); without any, the whole metadata as strings (Conduit's way);
- ``op``: the operation's letter;
- ``transaction``: ``<prefix>.transaction.*`` metadata as ``source``'s, else ``null``;
- ``ts_ms``, ``ts_us``, ``ts_ns``: ``opencdc.readAt`` in milli-, micro- and nanoseconds
  (rounded down), else ``null``;
- any other ``<prefix>.<name>``: a member ``<name>`` after those, unless one has the name.

Rows of one batch may differ in which metadata they hold (an optional ``source`` field
left out): each set of names is written as a group. A row is flagged for the
per-message way where the columns would not write what it does: a metadata value that is
a JSON object or array (written there as parsed), ``-0``, a ``readAt`` that is no plain
integer, an image the text writer refuses, and rows of more than :data:`MAX_GROUPS` sets
of names.
"""

from __future__ import annotations

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.json_text import image_texts, joined, quoted, struct_text
from cdc_connectors.columnar.maps import entry_columns
from cdc_connectors.columnar.proto_records import NotColumnar
from cdc_connectors.formats.debezium.envelope import (
    CONNECTOR_TEXT_MEMBERS,
    TEXT_MEMBERS,
    TIME_FIELDS,
)
from cdc_connectors.opencdc import keys
from cdc_connectors.schema.connect import ConnectSchema

__all__ = ["MAX_GROUPS", "DebeziumRecordWriter"]

#: Sets of metadata names one batch writes from columns; rows of others go the other way.
MAX_GROUPS = 16
_OPERATIONS = ("create", "update", "delete", "snapshot")
_LETTERS = (b"c", b"u", b"d", b"r")
# Integer texts the per-message way writes as the number as spelt (no sign on zero, no
# leading zeros, 64 bits: of 19 digits, those past the bounds are written as text).
_INTEGER = "^(0|-?[1-9][0-9]{0,18})$"
_NINETEEN_DIGITS = "^-?[1-9][0-9]{18}$"
_LARGEST, _SMALLEST = str(2**63 - 1), str(-(2**63))
_READ_AT = "^-?[0-9]{1,19}$"
# Members of the envelope before any other: a metadata name may not take their place.
_OWN_MEMBERS = frozenset(("before", "after", "source", "op", "transaction", *TIME_FIELDS))


class DebeziumRecordWriter:
    """Typed batches of one row schema -> Debezium JSON events (module docstring)."""

    def __init__(self, row: ConnectSchema, row_type: pa.StructType, prefix: str):
        try:
            self._image = struct_text(row, row_type, ordered=True)
        except ValueError as exc:
            raise NotColumnar(str(exc)) from None
        self.prefix = prefix

    def write(self, batch: pa.RecordBatch, key_texts: pa.Array) -> tuple[pa.Array, np.ndarray]:
        """The event of each row of ``batch`` and the rows to write the per-message way
        instead (``key_texts`` are not part of the event: its key is the message's)."""
        images, bad = image_texts(batch, self._image)
        letters = pa.array(_LETTERS, pa.binary()).take(
            pc.index_in(batch.column("operation"), pa.array(_OPERATIONS, pa.string()))
        )
        source, rest, refused = self._metadata(batch.column("metadata"))
        bad |= refused
        events = joined(
            b'{"before":',
            images[0],
            b',"after":',
            images[1],
            b',"source":',
            source,
            b',"op":"',
            letters,
            rest,
        )
        return events, bad | ~wire.valid(letters)

    def _metadata(self, metadata: pa.MapArray) -> tuple[pa.Array, pa.Array, np.ndarray]:
        """Each row's ``source`` object, and what follows ``op``'s letter to the end of the
        event; the rows refused."""
        count = len(metadata)
        sources: list[pa.Array] = []
        rests: list[pa.Array] = []
        order: list[np.ndarray] = []
        refused = np.ones(count, dtype=bool)
        for rows, entries in _groups(metadata)[:MAX_GROUPS]:
            source, rest, bad = self._group(entries, len(rows))
            sources.append(source)
            rests.append(rest)
            order.append(rows)
            refused[rows] = bad
        left = np.flatnonzero(refused & ~_covered(order, count))
        if len(left):
            none = pa.nulls(len(left), pa.binary())
            sources.append(none)
            rests.append(none)
            order.append(left)
        if not order:
            none = pa.nulls(count, pa.binary())
            return none, none, refused
        place = np.empty(count, dtype=np.int64)
        place[np.concatenate(order)] = np.arange(count)
        take = pa.array(place)
        return (
            pa.concat_arrays(sources).take(take),
            pa.concat_arrays(rests).take(take),
            refused,
        )

    def _group(
        self, entries: list[tuple[str, pa.Array]], count: int
    ) -> tuple[pa.Array, pa.Array, np.ndarray]:
        """The ``source`` and the rest of the events of rows with the metadata ``entries``
        (name, each row's value); the rows refused."""
        bad = np.zeros(count, dtype=bool)
        source_prefix = f"{self.prefix}.source."
        transaction_prefix = f"{self.prefix}.transaction."
        own = (source_prefix, transaction_prefix, f"{self.prefix}.unavailable.")
        source: list[tuple[str, pa.Array]] = []
        transaction: list[tuple[str, pa.Array]] = []
        more: list[tuple[str, pa.Array]] = []
        read_at = None
        taken = set(_OWN_MEMBERS)
        entries = sorted(entries, key=lambda entry: entry[0])  # (metadata is a map)
        for name, values in entries:
            if name.startswith(source_prefix):
                source.append((name[len(source_prefix) :], values))
            elif name.startswith(transaction_prefix):
                transaction.append((name[len(transaction_prefix) :], values))
            elif name.startswith(f"{self.prefix}.") and not name.startswith(own):
                member = name[len(self.prefix) + 1 :]
                if member not in taken:
                    taken.add(member)
                    more.append((member, values))
            if name == keys.READ_AT:
                read_at = values
        # without source metadata, Conduit's way: the whole metadata, as text
        if source:
            source_text = _object(source, bad, texts=_source_texts(dict(source)))
        else:
            source_text = _object(entries, bad, as_text=True)
        parts: list[pa.Array | bytes] = [b'","transaction":']
        if transaction:
            parts.append(_object(transaction, bad, texts=_texts(TEXT_MEMBERS["transaction"])))
        else:
            parts.append(b"null")
        if read_at is None:
            parts.append(b',"ts_ms":null,"ts_us":null,"ts_ns":null')
        else:
            nanos = _nanos(read_at, bad)
            for name, per in (("ts_ms", 1_000_000), ("ts_us", 1_000), ("ts_ns", 1)):
                parts += [f',"{name}":'.encode(), _digits(np.floor_divide(nanos, per))]
        for member, values in more:
            parts += [b"," + orjson.dumps(member) + b":", _values(values, bad)]
        parts.append(b"}")
        return source_text, joined(*_full(parts, count)), bad


def _groups(metadata: pa.MapArray) -> list[tuple[np.ndarray, list[tuple[str, pa.Array]]]]:
    """The rows of ``metadata`` grouped by their names in order, most rows first: each
    group's rows and its entries (name, the rows' values)."""
    names, items, offsets = entry_columns(metadata)
    sizes = np.diff(offsets)
    encoded = pc.dictionary_encode(names)
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    distinct = encoded.dictionary.to_pylist()
    groups: list[tuple[np.ndarray, list[tuple[str, pa.Array]]]] = []
    for width in np.unique(sizes):
        rows = np.flatnonzero(sizes == width)
        if not width:
            groups.append((rows, []))
            continue
        places = offsets[rows][:, None] + np.arange(width)[None, :]
        signatures, which = np.unique(codes[places], axis=0, return_inverse=True)
        for n, signature in enumerate(signatures):
            members = rows[which.reshape(-1) == n]
            at = places[which.reshape(-1) == n]
            entries = [
                (distinct[code], items.take(pa.array(at[:, j]))) for j, code in enumerate(signature)
            ]
            groups.append((members, entries))
    groups.sort(key=lambda group: -len(group[0]))
    return groups


#: Per member name, which rows write it as text whatever it looks like (``None``: all).
_Texts = dict[str, np.ndarray | None]


def _texts(names: frozenset[str]) -> _Texts:
    return dict.fromkeys(names)


def _source_texts(source: dict[str, pa.Array]) -> _Texts:
    """Debezium's string members of ``source``: always, or in rows of the connector that
    declares them so (:data:`~cdc_connectors.formats.debezium.envelope.TEXT_MEMBERS`)."""
    texts = _texts(TEXT_MEMBERS["source"])
    connectors = source.get("connector")
    if connectors is not None:
        for connector, names in CONNECTOR_TEXT_MEMBERS.items():
            rows = wire.mask(pc.equal(connectors, connector))
            if rows.any():
                texts.update(dict.fromkeys(names, rows))
    return texts


def _object(
    entries: list[tuple[str, pa.Array]],
    bad: np.ndarray,
    as_text: bool = False,
    texts: _Texts | None = None,
) -> pa.Array:
    """A JSON object per row of ``entries`` (member name, each row's metadata value): a
    value as text when ``as_text`` or ``texts`` names its member (for its rows), else as
    :func:`_values` reads it."""
    if not entries:
        return pa.array([b"{}"] * len(bad), pa.binary())
    texts = texts or {}
    parts: list[pa.Array | bytes] = []
    for n, (name, values) in enumerate(entries):
        parts.append((b"{" if n == 0 else b",") + orjson.dumps(name) + b":")
        if as_text or (name in texts and texts[name] is None):
            parts.append(quoted(values))
            continue
        rows = texts.get(name)
        if rows is None:
            parts.append(_values(values, bad))
            continue
        read = np.zeros(len(bad), dtype=bool)
        parts.append(pc.if_else(pa.array(rows), quoted(values), _values(values, read)))
        bad |= read & ~rows
    return joined(*parts, b"}")


def _values(texts: pa.Array, bad: np.ndarray) -> pa.Array:
    """Metadata values as the per-message way writes them back: an integer text as the
    number, any other text as a string; ``bad`` gets the rows it would write otherwise."""
    integer = wire.mask(pc.match_substring_regex(texts, _INTEGER))
    nineteen = integer & wire.mask(pc.match_substring_regex(texts, _NINETEEN_DIGITS))
    if nineteen.any():  # texts of one length: compared as text, as numbers
        negative = wire.mask(pc.starts_with(texts, "-"))
        past = np.where(
            negative,
            wire.mask(pc.greater(texts, _SMALLEST)),
            wire.mask(pc.greater(texts, _LARGEST)),
        )
        integer &= ~(nineteen & past)
    first = pc.utf8_slice_codeunits(texts, 0, 1)
    bad |= wire.mask(pc.is_in(first, pa.array(["{", "["])))
    bad |= wire.mask(pc.equal(texts, "-0"))
    if integer.all():
        return texts.cast(pa.binary())
    out = quoted(texts)
    if integer.any():
        out = pc.if_else(pa.array(integer), texts.cast(pa.binary()), out)
    return out


def _nanos(texts: pa.Array, bad: np.ndarray) -> np.ndarray:
    """``opencdc.readAt`` (nanoseconds as text) as numbers; ``bad`` marks the rows whose
    text is no plain 64-bit integer."""
    plain = wire.mask(pc.match_substring_regex(texts, _READ_AT))
    digits = pc.if_else(pa.array(plain), texts, "0")
    try:
        nanos: np.ndarray = digits.cast(pa.int64()).to_numpy()
    except pa.ArrowInvalid:  # beyond 64 bits: the per-message way says so
        wide = [int(text) for text in digits.to_pylist()]
        plain &= np.array([-(2**63) <= n < 2**63 for n in wide], dtype=bool)
        nanos = np.array([n if -(2**63) <= n < 2**63 else 0 for n in wide], dtype=np.int64)
    bad |= ~plain
    return nanos


def _digits(numbers: np.ndarray) -> pa.Array:
    """Each number as its decimal text (binary)."""
    return pa.array(numbers).cast(pa.string()).cast(pa.binary())


def _full(parts: list[pa.Array | bytes], count: int) -> list[pa.Array | bytes]:
    """``parts`` with at least one column of ``count`` rows (a constant needs one)."""
    if any(isinstance(part, pa.Array) for part in parts):
        return parts
    return [pa.array([b""] * count, pa.binary()), *parts]


def _covered(groups: list[np.ndarray], count: int) -> np.ndarray:
    covered = np.zeros(count, dtype=bool)
    for rows in groups:
        covered[rows] = True
    return covered
