"""Debezium JSON messages -> OpenCDC protobuf or JSON messages, from Arrow columns.

:class:`DebeziumToOpenCDC` takes a batch of raw Debezium JSON messages (values, keys and
places as binary columns) of any dialect described by its envelope alone
(:meth:`~cdc_connectors.formats.debezium.DebeziumJsonFormat.described_by_envelope`) and
writes the ``opencdc-proto``, ``opencdc-json`` or ``debezium-json`` (without schema blocks,
:class:`~cdc_connectors.columnar.debezium_records.DebeziumRecordWriter`) message of every
one it can take exactly:
those that start with a ``{"schema": ...,`` block (spelt with or without spaces) it
has a decoder for
(:class:`~cdc_connectors.spark.debezium_typed.TypedDebeziumDecoder`, one per envelope
schema, built from the first message that carries it) and that the typed columns, the
record writer (:class:`~cdc_connectors.columnar.proto_records.ProtoRecordWriter`,
:class:`~cdc_connectors.columnar.json_records.JsonRecordWriter`) and the key columns
(:class:`~cdc_connectors.columnar.debezium_keys.KeyColumns`) take exactly. Each message it
writes is byte for byte what the format's ``decode`` then the destination's ``encode``
give; every other message (bad ones, tombstones, other schemas, values a double would
change) is left to the caller, for the per-message way, so its dead letter or skip stays
what it is there.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.debezium_keys import KeyColumns, Layout
from cdc_connectors.columnar.debezium_records import DebeziumRecordWriter
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.maps import with_entries
from cdc_connectors.columnar.proto_records import NotColumnar, ProtoRecordWriter
from cdc_connectors.columnar.schema_block import leading_block
from cdc_connectors.columnar.schemaless import infer_envelope
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc import keys as keys_module
from cdc_connectors.schema import framing
from cdc_connectors.spark.debezium_typed import (
    TypedDebeziumDecoder,
    one_json_value,
    two_documents,
)

__all__ = [
    "Columnar",
    "DebeziumToOpenCDC",
    "Envelope",
    "envelope_layout",
    "layout_of",
    "merged_columnar",
    "topics_of",
]

#: Envelope schemas kept decoders for; the least recently used goes first.
MAX_DECODERS = 32
# Messages of unknown shape looked at per batch before the rest go the per-message way.
_LOOKS_PER_BATCH = 16
# Every message with a leading schema block starts so (spaces may follow).
_OBJECT_START = b"{"
_SCHEMA_BLOCK_START = '^\\{[ \\t\\n\\r]*"schema"[ \\t\\n\\r]*:'
_EMPTY_SCHEMA_START = _SCHEMA_BLOCK_START + "[ \\t\\n\\r]*\\{[ \\t\\n\\r]*\\}[ \\t\\n\\r]*,"


@dataclass
class Columnar:
    """The messages written from columns: their rows in the batch (ascending), their
    values (``opencdc.v1.Record`` bytes or OpenCDC JSON documents) and keys (binary, null
    for none)."""

    rows: np.ndarray
    values: pa.Array
    keys: pa.Array
    #: Each message's topic, when a topic template routes them (else ``None``).
    topics: pa.Array | None = None

    @classmethod
    def kept(
        cls,
        rows: np.ndarray,
        keep: np.ndarray,
        values: pa.Array,
        keys: pa.Array,
        topics: pa.Array | None,
    ) -> Columnar | None:
        """The messages of ``rows`` to ``keep`` (``values``, ``keys`` and ``topics`` have a
        row each); ``None`` when none is kept."""
        if not keep.any():
            return None
        kept = pa.array(keep)
        return cls(
            rows[keep],
            values.filter(kept),
            keys.filter(kept),
            None if topics is None else topics.filter(kept),
        )


def envelope_layout(source: Format, destination: Format) -> Layout | None:
    """What the columns write of Debezium JSON ``source`` for ``destination``: what
    :func:`layout_of` says, or Debezium JSON itself, without schema blocks (``"debezium"``:
    :class:`~cdc_connectors.columnar.debezium_records.DebeziumRecordWriter`; with a registry
    too, whose schema names the records carry are written as the per-message way writes
    them: in ``source`` only where an event has none of its own)."""
    if type(destination) is DebeziumJsonFormat and not destination.schemas_enable:
        return "debezium"
    return layout_of(destination)


def layout_of(destination: Format) -> Layout | None:
    """What the columns write for ``destination``: OpenCDC protobuf, OpenCDC JSON (raw data
    as base64), or nothing (``None``)."""
    if type(destination) is OpenCDCProtoFormat:
        return "proto"
    if type(destination) is OpenCDCJsonFormat and not destination.raw_as_string:
        return "json"
    return None


@dataclass
class Envelope:
    """One envelope schema's decoder and the writer of its records (``None``: a converter
    that writes its rows its own way)."""

    decoder: TypedDebeziumDecoder
    writer: ProtoRecordWriter | JsonRecordWriter | DebeziumRecordWriter | None


class DebeziumToOpenCDC:
    """Debezium JSON -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    #: Every value goes through Arrow's JSON reader (:meth:`TypedDebeziumDecoder.
    #: decode_fast`), which takes none the per-message way refuses as JSON: one that is no
    #: JSON value is left to that way (:func:`~cdc_connectors.columnar.choose.checks_values`).
    checks_values = True

    def __init__(
        self,
        fmt: DebeziumJsonFormat,
        destination: Format,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        """``topic``: a Kafka topic template's parts, each a literal text or (``""``, a
        metadata key) whose value is put there; each message is then given its topic, and
        a record without one of those values is left to the per-message way (where it is a
        dead letter saying so)."""
        layout = envelope_layout(fmt, destination)
        assert layout is not None, "see serves()"
        self.topic = None if topic is None else tuple(topic)
        self.fmt = fmt
        self.layout: Layout = layout
        self.destination = destination
        if isinstance(destination, DebeziumJsonFormat) and layout == "debezium":
            self._keys = KeyColumns(fmt, layout, destination.message_key)
        else:
            self._keys = KeyColumns(fmt, layout)
        self._envelopes: OrderedDict[bytes, Envelope | None] = OrderedDict()
        self._inferred_envelopes: OrderedDict[bytes, Envelope | None] = OrderedDict()

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        a Debezium JSON dialect described by its envelope alone, without ``key.fields``, to
        OpenCDC protobuf or JSON, or to Debezium JSON (:func:`envelope_layout`)."""
        return (
            isinstance(source, DebeziumJsonFormat)
            and not source.binary
            and type(source).described_by_envelope()
            and not source.key_fields
            and envelope_layout(source, destination) is not None
        )

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the rows the columns take (:class:`Columnar`); the others are
        the caller's. ``values``, ``keys`` (or ``None``) and ``places`` (each record's
        position) are binary columns of one row per message; ``headers`` do not change
        what Debezium JSON reads."""
        rows: list[np.ndarray] = []
        written: list[pa.Array] = []
        written_keys: list[pa.Array] = []
        topics: list[pa.Array] = []
        blocks = self._envelopes_of(values)
        found_envelopes: list[tuple[Envelope, np.ndarray, pa.Array | None]] = [
            (envelope, matched, None) for envelope, matched in blocks
        ]
        found_envelopes += self._schemaless(values, blocks)
        for envelope, matched, read in found_envelopes:
            found = self._write(envelope, values, keys, places, matched, read)
            if found is not None:
                rows.append(found.rows)
                written.append(found.values)
                written_keys.append(found.keys)
                if found.topics is not None:
                    topics.append(found.topics)
        return merged_columnar(
            [
                Columnar(part, values, keys, part_topics)
                for part, values, keys, part_topics in zip(
                    rows,
                    written,
                    written_keys,
                    topics if self.topic is not None else [None] * len(rows),
                    strict=True,
                )
            ],
            routed=self.topic is not None,
        )

    # --- envelope schemas ---------------------------------------------------------------

    def _envelopes_of(self, values: pa.Array) -> list[tuple[Envelope, np.ndarray]]:
        """Each known envelope schema with the rows that start with its block; schemas
        met first in this batch are learnt from a sample message."""
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        unmatched = wire.mask(pc.starts_with(values, _OBJECT_START))
        found: list[tuple[Envelope, np.ndarray]] = []
        for prefix in list(self._envelopes):
            if not unmatched.any():
                break
            unmatched = self._match(prefix, values, unmatched, found)
        for _ in range(_LOOKS_PER_BATCH):
            if not unmatched.any():
                break
            row = int(np.argmax(unmatched))
            learnt = self._learn(values[row].as_py())
            if learnt is None:
                unmatched[row] = False
                continue
            prefix = learnt
            unmatched = self._match(prefix, values, unmatched, found)
            unmatched[row] = False
        return found

    def _schemaless(
        self, values: pa.Array, found: list[tuple[Envelope, np.ndarray]]
    ) -> list[tuple[Envelope, np.ndarray, pa.Array | None]]:
        """The events of the batch without a schema block, typed by the envelope Arrow
        infers from them (:mod:`~cdc_connectors.columnar.schemaless`), but those its types
        would not give exactly: bare or in the ``{"payload": ...}`` wrapper, and, where the
        dialect says an empty block is none (Lindorm), after a ``{"schema": {},`` block;
        with each event's payload as the inference read it."""
        if self.fmt.registry_url or self.layout == "debezium":
            # (Debezium JSON writes an image's members in the order each event has them,
            # which one type Arrow infers for all of them does not keep)
            return []
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        taken = np.zeros(len(values), dtype=bool)
        for _, matched in found:
            taken[matched] = True
        groups = []
        bare = wire.mask(pc.starts_with(values, _OBJECT_START))
        bare &= ~wire.mask(pc.match_substring_regex(values, _SCHEMA_BLOCK_START)) & ~taken
        rows = np.flatnonzero(bare)
        group = self._inferred(values, rows, b"")
        if group is not None:
            groups.append(group)
        left = rows if group is None else np.setdiff1d(rows, group[1], assume_unique=True)
        if len(left) >= _TABLES_FROM:
            # events of several tables: one type for all fits none of them
            for part in tables_of(values, left):
                group = self._inferred(values, part, b"")
                if group is not None:
                    groups.append(group)
        if self.fmt.envelope.empty_schema_is_none:
            empty = wire.mask(pc.match_substring_regex(values, _EMPTY_SCHEMA_START)) & ~taken
            if empty.any():
                spelled = leading_block(values[int(np.argmax(empty))].as_py() or b"")
                if spelled is not None:
                    empty &= wire.mask(pc.starts_with(values, spelled[0]))
                    group = self._inferred(values, np.flatnonzero(empty), spelled[0])
                    if group is not None:
                        groups.append(group)
        return groups

    def _inferred(
        self, values: pa.Array, rows: np.ndarray, prefix: bytes
    ) -> tuple[Envelope, np.ndarray, pa.Array | None] | None:
        """``rows`` (each starting with ``prefix``, an empty schema block as spelt, or
        nothing) typed by the envelope Arrow infers from what follows the prefix."""
        if not len(rows):
            return None
        # (every row, in order, as a batch of one table mostly is: no copy)
        every = len(rows) == len(values) and bool(rows[0] == 0 and rows[-1] == len(rows) - 1)
        some = values if every else values.take(pa.array(rows))
        if prefix:
            rest = pc.binary_slice(some, len(prefix), 2**31 - 1)
            some = pc.binary_join_element_wise(_OBJECT_START, rest, b"")
        # Arrow reads the joined batch as documents, not lines: a message holding the
        # start of another document after its own would give others its rows
        apart = two_documents(some)
        if apart.any():
            rows, some = rows[~apart], some.filter(pa.array(~apart))
            if not len(rows):
                return None
        inferred = infer_envelope(some)
        if inferred is None and len(rows) > 1:
            # Arrow reads the batch together: one message that is no JSON value (cut short,
            # say) would keep the others from the columns
            whole = one_json_value(some)
            if not whole.all() and whole.any():
                rows, some = rows[whole], some.filter(pa.array(whole))
                inferred = infer_envelope(some)
        if inferred is None:
            return None
        name = orjson.dumps([inferred.block, inferred.wrapped], option=orjson.OPT_SORT_KEYS)
        name += prefix
        if name not in self._inferred_envelopes:
            # The decoder reads what follows its prefix with "{" put back in front: a
            # wrapped event's text as it is, a bare one inside {"payload": ...}.
            spelled = prefix or (_OBJECT_START if inferred.wrapped else b"")
            self._inferred_envelopes[name] = self._envelope(inferred.block, spelled)
            while len(self._inferred_envelopes) > MAX_DECODERS:
                self._inferred_envelopes.popitem(last=False)
        self._inferred_envelopes.move_to_end(name)
        envelope = self._inferred_envelopes[name]
        if envelope is None:
            return None
        fits = ~inferred.misfits(some, exact_kinds=self.layout == "json")
        if not fits.any():
            return None
        # What Arrow read is the decoder's payload where the decoder puts a bare event in
        # {"payload": ...} (no prefix) or reads a wrapped one; after a prefix, a bare
        # event's members sit beside "schema" (the decoder leaves that to the per-message way)
        read = inferred.payloads if not prefix or inferred.wrapped else None
        if read is not None and not fits.all():
            read = read.filter(pa.array(fits))
        return envelope, rows[fits], read

    def _match(
        self,
        prefix: bytes,
        values: pa.Array,
        unmatched: np.ndarray,
        found: list[tuple[Envelope, np.ndarray]],
    ) -> np.ndarray:
        hits = unmatched & wire.mask(pc.starts_with(values, prefix))
        if hits.any():
            self._envelopes.move_to_end(prefix)
            envelope = self._envelopes[prefix]
            if envelope is not None:
                found.append((envelope, np.flatnonzero(hits)))
        left: np.ndarray = unmatched & ~hits
        return left

    def _learn(self, value: bytes | None) -> bytes | None:
        """The schema block prefix of a sample message as it is spelt, its decoder now
        known (``None`` stands for a schema the columns do not take); ``None`` for a
        message whose text does not start with a schema block."""
        found = leading_block(value or b"")
        if found is None:
            return None
        prefix, schema = found
        if prefix not in self._envelopes:
            self._envelopes[prefix] = self._envelope(schema, prefix)
            while len(self._envelopes) > MAX_DECODERS:
                self._envelopes.popitem(last=False)
        return prefix

    def _envelope(self, schema: dict[str, object], prefix: bytes) -> Envelope | None:
        try:
            decoder = TypedDebeziumDecoder(self.fmt, schema, spelled=prefix, floats_as_doubles=True)
            writer: ProtoRecordWriter | JsonRecordWriter | DebeziumRecordWriter
            if self.layout == "proto":
                writer = ProtoRecordWriter(decoder.row.connect, decoder.row_type)
            elif self.layout == "json":
                writer = JsonRecordWriter(decoder.row.connect, decoder.row_type)
            else:
                assert isinstance(self.destination, DebeziumJsonFormat)
                writer = DebeziumRecordWriter(
                    decoder.row.connect, decoder.row_type, self.destination.prefix
                )
        except (CodecError, NotColumnar):
            return None
        return Envelope(decoder, writer)

    # --- writing ------------------------------------------------------------------------

    def _write(
        self,
        envelope: Envelope,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        matched: np.ndarray,
        read: pa.Array | None = None,
    ) -> Columnar | None:
        """The messages of the ``matched`` rows written (``read``: their payloads as Arrow
        read them already, one per row, or ``None``)."""
        # Keys first: a message whose key the per-message way refuses is left to it before
        # its row's schema is named (with a registry, that way names nothing for it).
        keys_of_matched = self._keys.write(
            None if keys is None else keys.take(pa.array(matched)), len(matched), True
        )
        if keys_of_matched.refused.any():
            good = np.flatnonzero(~keys_of_matched.refused)
            if not len(good):
                return None
            matched, keys_of_matched = matched[good], keys_of_matched.take(good)
            read = None if read is None else read.take(pa.array(good))
        if len(matched) < len(values):
            taken = pa.array(matched)
            values, places = values.take(taken), places.take(taken)
        # (every row starts with the decoder's prefix: matched by it, or by "{" and none)
        batch, local = envelope.decoder.decode_fast(values, places, read, prefixed=True)
        if not len(local):
            return None
        rows = matched[local]
        keys_of_rows = keys_of_matched.take(local)
        if self.fmt.registry_url:  # key schemas named per collection, as decode names them
            collections = pc.map_lookup(
                batch.column("metadata"), pa.scalar(keys_module.COLLECTION, pa.string()), "first"
            )
            keys_of_rows = self._keys.name(keys_of_rows, collections)
        if keys_of_rows.names is not None:
            subject_key, version_key = framing.CONDUIT_KEYS["key"]
            named = with_entries(
                batch.column("metadata"),
                [(subject_key, keys_of_rows.names[0]), (version_key, keys_of_rows.names[1])],
            )
            batch = batch.set_column(batch.schema.get_field_index("metadata"), "metadata", named)
        assert envelope.writer is not None, "see _envelope()"
        records, refused = envelope.writer.write(batch, keys_of_rows.fields)
        keep = ~(keys_of_rows.refused | refused)
        topics = None
        if self.topic is not None:
            topics, no_topic = topics_of(self.topic, batch.column("metadata"))
            keep &= ~no_topic
        if not keep.all():
            kept = pa.array(keep)
            return Columnar(
                rows[keep],
                records.filter(kept),
                keys_of_rows.message_keys.filter(kept),
                None if topics is None else topics.filter(kept),
            )
        return Columnar(rows, records, keys_of_rows.message_keys, topics)


#: Events without a schema block one type does not take before they are told apart by
#: table (:func:`tables_of`), and the most tables a batch is told apart into.
_TABLES_FROM = 16
_MOST_TABLES = 8
_SOURCE_BLOCK = '"source"[ \\t\\n\\r]*:[ \\t\\n\\r]*\\{(?P<source>[^{}]*)\\}'
_SOURCE_NAMES = ("db", "schema", "table", "collection")


def tables_of(values: pa.Array, rows: np.ndarray) -> list[np.ndarray]:
    """``rows`` of ``values`` (change events without a schema block) by the table their
    ``source`` block names (database, schema, table or collection), when they name more
    than one: the :data:`_MOST_TABLES` with the most events, each of two events or more;
    an empty list for events of one table."""
    source = pc.extract_regex(values.take(pa.array(rows)), _SOURCE_BLOCK).field("source")
    names = []
    for name in _SOURCE_NAMES:
        pattern = f'"{name}"[ \\t\\n\\r]*:[ \\t\\n\\r]*"(?P<v>[^"\\\\]*)"'
        names.append(pc.fill_null(pc.extract_regex(source, pattern).field("v"), b""))
    table = pc.binary_join_element_wise(*names, b"\x00")
    codes = np.asarray(pc.fill_null(table.dictionary_encode().indices, -1))
    counts = np.bincount(codes[codes >= 0]) if (codes >= 0).any() else np.zeros(0, np.int64)
    if len(counts) < 2:
        return []
    largest = np.argsort(-counts, kind="stable")[:_MOST_TABLES]
    return [rows[codes == code] for code in largest if counts[code] >= 2]


def merged_columnar(parts: Sequence[Columnar], routed: bool | None = None) -> Columnar:
    """The messages of several parts of one batch, in the order of their rows (``routed``:
    each has its topic; by default, whether the first part's messages have)."""
    if routed is None:
        routed = bool(parts) and parts[0].topics is not None
    parts = [part for part in parts if len(part.rows)]
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        none = pa.array([], pa.binary())
        return Columnar(empty, none, none, pa.array([], pa.string()) if routed else None)
    if len(parts) == 1:
        return parts[0]
    every = np.concatenate([part.rows for part in parts])
    order = np.argsort(every, kind="stable")
    take = pa.array(order)
    return Columnar(
        every[order],
        pa.concat_arrays([part.values for part in parts]).take(take),
        pa.concat_arrays([part.keys for part in parts]).take(take),
        pa.concat_arrays([part.topics for part in parts]).take(take) if routed else None,
    )


def topics_of(
    parts: Sequence[tuple[str, str | None]], metadata: pa.MapArray
) -> tuple[pa.Array, np.ndarray]:
    """Each row's topic from a template's parts, and the rows without a value it needs
    (missing or empty, as the template refuses it)."""
    count = len(metadata)
    missing = np.zeros(count, dtype=bool)
    pieces: list[pa.Array | pa.Scalar] = []
    for literal, key in parts:
        if key is None:
            if literal:
                pieces.append(pa.scalar(literal, pa.string()))
            continue
        value = pc.map_lookup(metadata, pa.scalar(key, pa.string()), "first")
        missing |= ~wire.mask(pc.and_(pc.is_valid(value), pc.not_equal(value, "")))
        pieces.append(pc.fill_null(value, ""))
    if not pieces:
        return pa.array([""] * count, pa.string()), missing
    topics = pc.binary_join_element_wise(*pieces, pa.scalar("", pa.string()))
    if isinstance(topics, pa.Scalar):  # every part a literal
        topics = pa.array([topics.as_py()] * count, pa.string())
    return topics, missing
