"""Debezium JSON messages -> the ``avro`` destination's rows, from Arrow columns.

:class:`DebeziumToAvroRows` writes what ``DebeziumJsonFormat.decode`` (with a registry,
which names each row's and key's Avro schema) then ``AvroFormat.encode`` give, for the
messages the columns take exactly:

- the value: the ``after`` image of the typed columns
  (:class:`~cdc_connectors.spark.debezium_typed.TypedDebeziumDecoder`, one per envelope
  schema, as for OpenCDC) written with the row schema the block names, registered under the
  destination's subject (:class:`~cdc_connectors.columnar.avro_rows.AvroRows`); a delete
  is a tombstone;
- the key: a Kafka key with a ``schema`` block, read into typed columns
  (:class:`~cdc_connectors.spark.debezium_typed.TypedKeyReader`), named as the per-message
  way names it and written likewise; no key, no key.

Every other message goes the per-message way: other keys (raw, without a schema block, a
run of 19 digits), rows the named schema does not hold, and what the typed columns leave.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.avro_rows import AvroRows, Encoded
from cdc_connectors.columnar.debezium_opencdc import (
    Columnar,
    DebeziumToOpenCDC,
    Envelope,
    topics_of,
)
from cdc_connectors.columnar.schema_block import learn_key, rows_by_prefix
from cdc_connectors.formats.avro import AvroFormat
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.debezium.row_schemas import RowSchema
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc import keys as metadata_keys
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.schema import framing
from cdc_connectors.schema.connect import ConnectSchema
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder, TypedKeyReader, two_documents

__all__ = ["DebeziumToAvroRows", "ReadKeys", "lookup", "names_schemas_for"]

#: Key schemas kept readers for; the least recently used goes first.
MAX_KEY_SCHEMAS = 32
_KEY_LOOKS_PER_BATCH = 8
# The per-message way refuses an integer beyond 64 bits even in a key: such keys go its way.
_LONG_INTEGER = "[0-9]{19}"


class DebeziumToAvroRows(DebeziumToOpenCDC):
    """Debezium JSON -> Confluent-framed Avro rows, column by column (module docstring)."""

    destination: AvroFormat

    def __init__(
        self,
        fmt: DebeziumJsonFormat,
        destination: AvroFormat,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        """``topic``: a Kafka topic template's parts (as for OpenCDC)."""
        self.topic = None if topic is None else tuple(topic)
        self.fmt = fmt
        self.destination = destination
        self._values = AvroRows(destination, "payload")
        self._key_rows = AvroRows(destination, "key")
        self._envelopes: OrderedDict[bytes, Envelope | None] = OrderedDict()
        self._inferred_envelopes: OrderedDict[bytes, Envelope | None] = OrderedDict()
        self._key_schemas: OrderedDict[bytes, tuple[TypedKeyReader, RowSchema] | None] = (
            OrderedDict()
        )

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Debezium JSON dialects described by their envelope alone, without ``key.fields``,
        naming schemas in the registry the ``avro`` destination writes with (the same URL),
        which has no schema files and no ``raw.keys``."""
        return (
            type(destination) is AvroFormat
            and names_schemas_for(source, destination)
            and not destination.raw_keys
            and all(text is None for text in destination.schema_files.values())
        )

    def _schemaless(
        self, values: pa.Array, found: list[tuple[Envelope, np.ndarray]]
    ) -> list[tuple[Envelope, np.ndarray, pa.Array | None]]:
        return []  # with a registry, events without a block go the per-message way

    def _envelope(self, schema: dict[str, object], prefix: bytes) -> Envelope | None:
        try:
            decoder = TypedDebeziumDecoder(self.fmt, schema, spelled=prefix, floats_as_doubles=True)
        except CodecError:
            return None
        return Envelope(decoder, None)

    def _write(
        self,
        envelope: Envelope,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        matched: np.ndarray,
        read: pa.Array | None = None,
    ) -> Columnar | None:
        # (``read`` is always None: events without a schema block go the per-message way)
        # The order of the per-message way, whose registrations the columns make alike:
        # the key read (a key it refuses registers nothing), the row's schema named, the
        # key's, then the destination's value and key schemas for the rows written.
        read = self._read_keys(None if keys is None else keys.take(pa.array(matched)), len(matched))
        if not read.eligible.any():
            return None
        if not read.eligible.all():
            matched, read = matched[read.eligible], read.only(read.eligible)
        if len(matched) < len(values):
            taken = pa.array(matched)
            values, places = values.take(taken), places.take(taken)
        batch, local = envelope.decoder.decode_fast(values, places)
        if not len(local):
            return None
        rows = matched[local]
        metadata = batch.column("metadata")
        collections = lookup(metadata, metadata_keys.COLLECTION)
        encoded_keys, bad_keys = self._encode_keys(read, local, collections)
        encoded_values = self._encode_values(
            batch, metadata, collections, envelope.decoder.row.connect
        )
        keep = ~(encoded_values.refused | bad_keys)
        topics = None
        if self.topic is not None:
            topics, no_topic = topics_of(self.topic, metadata)
            keep &= ~no_topic
        written_values, refused = self._values.framed(encoded_values, keep)
        keep &= ~refused
        written_keys = pa.nulls(len(rows), pa.binary())
        if encoded_keys is not None:
            written_keys, refused = self._key_rows.framed(encoded_keys, keep)
            keep &= ~refused
        if not keep.all():
            kept = pa.array(keep)
            return Columnar(
                rows[keep],
                written_values.filter(kept),
                written_keys.filter(kept),
                None if topics is None else topics.filter(kept),
            )
        return Columnar(rows, written_values, written_keys, topics)

    def _encode_values(
        self,
        batch: pa.RecordBatch,
        metadata: pa.MapArray,
        collections: pa.Array,
        row: ConnectSchema,
    ) -> Encoded:
        """The value bodies of the decoded rows (``row``: the Connect schema of their
        images), grouped by the schema registered for them (:meth:`AvroRows.framed`
        registers them): the ``after`` image; a delete has none."""
        after = batch.column("after")
        present = wire.valid(after) & ~wire.mask(pc.equal(batch.column("operation"), "delete"))
        subject_key, version_key = framing.CONDUIT_KEYS["payload"]
        subjects, versions = lookup(metadata, subject_key), lookup(metadata, version_key)
        return self._values.encode(after, present, subjects, versions, collections)

    # --- keys -------------------------------------------------------------------------------

    def _read_keys(self, keys: pa.Array | None, count: int) -> ReadKeys:
        """The keys of a schema block the columns read, typed, and which messages the
        columns may take: those without a key and those whose key is read here."""
        if keys is None or keys.null_count == count:
            return ReadKeys(np.ones(count, dtype=bool), [], keys is not None)
        if keys.type != pa.binary():
            keys = keys.cast(pa.binary())
        eligible = ~wire.valid(keys)
        candidates = ~eligible & ~wire.mask(pc.match_substring_regex(keys, _LONG_INTEGER))
        candidates &= ~two_documents(keys)
        groups = []
        for (reader, row), rows in self._key_groups(keys, candidates):
            try:
                typed, bad = reader.read(keys.take(pa.array(rows)))
            except ValueError:
                continue
            eligible[rows[~bad]] = True
            groups.append(_KeyGroup(row, rows[~bad], typed.filter(pa.array(~bad))))
        return ReadKeys(eligible, groups, True)

    def _encode_keys(
        self, read: ReadKeys, local: np.ndarray, collections: pa.Array
    ) -> tuple[Encoded | None, np.ndarray]:
        """The Avro bodies of the message keys of the decoded rows (``local``: their places
        among the keys read), each key's schema named as the per-message way names it; and
        the rows whose key the per-message way must write."""
        count = len(local)
        if not read.keyed:
            return None, np.zeros(count, dtype=bool)
        encoded = Encoded([None] * count, np.zeros(count, dtype=bool))
        where = np.full(len(read.eligible), -1, dtype=np.int64)
        where[local] = np.arange(count)
        for group in read.groups:
            decoded = where[group.rows] >= 0
            if not decoded.any():
                continue
            at = where[group.rows[decoded]]
            named = self._key_names(group.row, collections.take(pa.array(at)))
            if named is None:
                encoded.refused[at] = True
                continue
            typed = group.typed.filter(pa.array(decoded))
            found = self._key_rows.encode(typed, np.ones(len(at), dtype=bool), *named)
            encoded.refused[at[found.refused]] = True
            for index in np.flatnonzero(~found.refused).tolist():
                encoded.bodies[int(at[index])] = found.bodies[index]
            for rows, text, collection, full_name in found.groups:
                encoded.groups.append((at[rows], text, collection, full_name))
        return encoded, encoded.refused

    def _key_groups(
        self, keys: pa.Array, candidates: np.ndarray
    ) -> list[tuple[tuple[TypedKeyReader, RowSchema], np.ndarray]]:
        """Each known key schema with the rows (of ``candidates``) that start with its block."""
        return rows_by_prefix(
            keys,
            np.flatnonzero(candidates),
            self._key_schemas,
            self._learn_key,
            _KEY_LOOKS_PER_BATCH,
        )

    def _learn_key(self, key: bytes | None) -> bytes | None:
        """The schema block prefix of a sample key, its reader now known (see
        :func:`~cdc_connectors.columnar.schema_block.learn_key`)."""
        return learn_key(self.fmt, key, self._key_schemas, self._key_schema, MAX_KEY_SCHEMAS)

    def _key_schema(
        self, block: dict[str, object], connect: ConnectSchema, prefix: bytes
    ) -> tuple[TypedKeyReader, RowSchema] | None:
        """A key schema's reader and row schema, or ``None`` when the columns do not take it."""
        try:
            return TypedKeyReader(block, connect, prefix), self.fmt.key_schema(block)
        except (CodecError, ValueError):
            return None

    def _key_names(
        self, row: RowSchema, collections: pa.Array
    ) -> tuple[pa.Array, pa.Array, pa.Array] | None:
        """The subject and version each key's schema is named by (registered once per
        collection, as the per-message way names it), and the collections; ``None`` when
        the schema cannot be named (the per-message way says why)."""
        names: dict[str | None, tuple[str, str]] = {}
        for collection in pc.unique(collections).to_pylist():
            metadata = Metadata()
            try:
                self.fmt.name_schema(metadata, "key", row, collection)
                named = framing.conduit_schema(metadata, "key")
            except CodecError:
                return None
            assert named is not None  # just set
            names[collection] = (named[0], str(named[1]))
        every = collections.to_pylist()
        return (
            pa.array([names[c][0] for c in every], pa.string()),
            pa.array([names[c][1] for c in every], pa.string()),
            collections,
        )


@dataclass
class _KeyGroup:
    """The keys of one schema block read: its row schema, their places, their columns."""

    row: RowSchema
    rows: np.ndarray
    typed: pa.Array


@dataclass
class ReadKeys:
    """The keys of a batch read as columns (:meth:`DebeziumToAvroRows._read_keys`)."""

    #: The messages the columns may take: no key, or a key read here.
    eligible: np.ndarray
    groups: list[_KeyGroup]
    #: Whether any message has a key.
    keyed: bool

    def only(self, rows: np.ndarray) -> ReadKeys:
        """The keys of the messages of ``rows`` (a mask), renumbered."""
        place = np.cumsum(rows) - 1
        groups = [
            _KeyGroup(group.row, place[group.rows], group.typed)
            for group in self.groups
            if len(group.rows)
        ]
        return ReadKeys(np.ones(int(rows.sum()), dtype=bool), groups, self.keyed)


def names_schemas_for(source: Format, destination: Format) -> bool:
    """Whether ``source`` is a Debezium JSON dialect described by its envelope alone, without
    ``key.fields``, naming its schemas in the registry ``destination`` writes with."""
    return (
        isinstance(source, DebeziumJsonFormat)
        and not source.binary
        and type(source).described_by_envelope()
        and not source.key_fields
        and bool(source.registry_url)
        and destination.registry_url == source.registry_url
    )


def lookup(metadata: pa.MapArray, key: str) -> pa.Array:
    """Each row's metadata value of ``key`` (null where it has none)."""
    return pc.map_lookup(metadata, pa.scalar(key, pa.string()), "first")
