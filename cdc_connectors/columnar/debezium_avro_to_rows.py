"""Debezium Avro messages -> the ``avro`` destination's rows, from Arrow columns.

:class:`DebeziumAvroToAvroRows` writes what ``DebeziumAvroFormat.decode`` then
``AvroFormat.encode`` give (Debezium's change events unwrapped to rows, as Kafka Connect's
``ExtractNewRecordState`` does), for the messages the columns take exactly:

- per envelope writer schema, the bodies are decoded into typed columns as for OpenCDC
  (:class:`~cdc_connectors.columnar.debezium_avro_opencdc.DebeziumAvroToOpenCDC`);
- the value is the ``after`` image, written with the row schema the source names (the
  writer's ``after`` record under Conduit's subject) and registered under the destination's
  subject (:class:`~cdc_connectors.columnar.avro_rows.AvroRows`); a delete is a tombstone;
- the key, an Avro record in Confluent's wire format, is decoded into typed columns and
  written likewise with the key schema the source names; no key, no key.

Every other message goes the per-message way: what the OpenCDC converter leaves, raw keys
and keys of no Avro record, and rows the named schema does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.avro_rows import AvroRows, Encoded
from cdc_connectors.columnar.confluent_frames import SchemaKeys, frames
from cdc_connectors.columnar.debezium_avro_opencdc import DebeziumAvroToOpenCDC, ValueSchema
from cdc_connectors.columnar.debezium_opencdc import Columnar, topics_of
from cdc_connectors.formats.avro import AvroFormat
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.registry.store import Resolved
from cdc_connectors.schema import framing
from cdc_connectors.schema.subjects import Part
from cdc_connectors.spark.envelope_columns import mask, metadata_map

__all__ = ["AvroKeys", "DebeziumAvroToAvroRows", "ReadAvroKeys"]


class DebeziumAvroToAvroRows(DebeziumAvroToOpenCDC):
    """Debezium Avro -> Confluent-framed Avro rows, column by column (module docstring)."""

    destination: AvroFormat

    def __init__(
        self,
        fmt: DebeziumAvroFormat,
        destination: AvroFormat,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        """``topic``: a Kafka topic template's parts, as for OpenCDC."""
        super().__init__(fmt, destination, topic, layout="json")
        self.destination = destination
        self._values = AvroRows(destination, "payload")
        self._key_rows = AvroRows(destination, "key")

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """``debezium-avro`` itself, without ``key.fields``, to ``avro`` rows written with
        the registry the source names its schemas in (the same URL), with no schema files
        and no ``raw.keys``."""
        return (
            type(source) is DebeziumAvroFormat
            and not source.key_fields
            and type(destination) is AvroFormat
            and bool(source.registry_url)
            and destination.registry_url == source.registry_url
            and not destination.raw_keys
            and all(text is None for text in destination.schema_files.values())
        )

    def records_writer(self, row: Any, row_type: pa.StructType) -> Any:
        return None  # rows are written by AvroRows, not as OpenCDC records

    def write(
        self,
        schema: ValueSchema,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        rows: np.ndarray,
    ) -> Columnar | None:
        count = len(rows)
        taken = pa.array(rows)
        events = self.events(schema, values.take(taken))
        before, after, columns, bad = events.before, events.after, events.columns, events.bad
        read = AvroKeys(self.keys).read(None if keys is None else keys.take(taken), count)
        bad |= read.refused
        collection = columns["collection"]
        # The schemas named as the per-message way names them (the row's, then the key's),
        # then written under the destination's subjects (the value's, then the key's).
        # Only the rows the columns write: the per-message way names the others' schemas
        # itself, or fails before it names any.
        with_image = mask(pc.or_(pc.is_valid(before), pc.is_valid(after)))
        payload = [(np.flatnonzero(with_image & ~bad), schema.writer)]
        keyed = [(rows[~bad[rows]], writer) for rows, writer in read.writers]
        named = self._named_columns(payload, keyed, collection, bad)
        payload_subjects, payload_versions, key_subjects, key_versions = named
        present = wire.valid(after) & ~wire.mask(pc.equal(columns["operation"], "delete"))
        encoded_values = self._encode_values(
            schema, after, present & ~bad, (payload_subjects, payload_versions), collection
        )
        encoded_keys = self._encode_keys(read, (key_subjects, key_versions), collection, bad)
        keep = ~(bad | encoded_values.refused | encoded_keys.refused)
        topics = None
        if self.topic is not None:
            topics, no_topic = topics_of(self.topic, metadata_map(columns, count, []))
            keep &= ~no_topic
        written_values, refused = self._values.framed(encoded_values, keep)
        keep &= ~refused
        written_keys, refused = self._key_rows.framed(encoded_keys, keep)
        keep &= ~refused
        return Columnar.kept(rows, keep, written_values, written_keys, topics)

    def _named_columns(
        self,
        payload: list[tuple[np.ndarray, Resolved]],
        key: list[tuple[np.ndarray, Resolved]],
        collection: pa.Array,
        bad: np.ndarray,
    ) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
        """Subject and version of each row's row schema and key schema (null where it has
        none), registered under Conduit's subjects; the rows the registry refused are
        marked ``bad``."""
        count = len(collection)
        refused = np.zeros(count, dtype=bool)
        columns = []
        parts: tuple[tuple[Part, list[tuple[np.ndarray, Resolved]]], ...] = (
            ("payload", payload),
            ("key", key),
        )
        for part, groups in parts:
            entries = dict(self._named(part, groups, collection, refused))
            subject_key, version_key = framing.CONDUIT_KEYS[part]
            nothing = pa.nulls(count, pa.string())
            columns += [entries.get(subject_key, nothing), entries.get(version_key, nothing)]
        bad |= refused
        return columns[0], columns[1], columns[2], columns[3]

    def _encode_values(
        self,
        schema: ValueSchema,
        after: pa.Array,
        present: np.ndarray,
        names: tuple[pa.Array, pa.Array],
        collection: pa.Array,
    ) -> Any:
        """The bodies of the ``after`` images where ``present`` (``names``: the subject and
        version each row's schema is named by)."""
        return self._values.encode(after, present, *names, collection)

    def _encode_keys(
        self,
        read: ReadAvroKeys,
        names: tuple[pa.Array, pa.Array],
        collection: pa.Array,
        bad: np.ndarray,
    ) -> Any:
        """The Avro bodies of the keys read, each key schema's rows encoded together."""
        subjects, versions = names
        count = len(collection)
        encoded = Encoded([None] * count, np.zeros(count, dtype=bool))
        for rows, typed in read.typed:
            wanted = ~bad[rows]
            if not wanted.any():
                continue
            rows, typed = rows[wanted], typed.filter(pa.array(wanted))
            at = pa.array(rows)
            found = self._key_rows.encode(
                typed,
                np.ones(len(rows), dtype=bool),
                subjects.take(at),
                versions.take(at),
                collection.take(at),
            )
            encoded.refused[rows[found.refused]] = True
            for index in np.flatnonzero(~found.refused).tolist():
                encoded.bodies[int(rows[index])] = found.bodies[index]
            for group, text, name, full_name in found.groups:
                encoded.groups.append((rows[group], text, name, full_name))
        return encoded


class ReadAvroKeys:
    """The Avro record keys of a batch, typed per key schema."""

    def __init__(self, count: int):
        #: The messages whose key the per-message way must write.
        self.refused = np.zeros(count, dtype=bool)
        #: (rows, key writer) of each key schema, for naming it.
        self.writers: list[tuple[np.ndarray, Resolved]] = []
        #: (rows, typed keys) of each key schema.
        self.typed: list[tuple[np.ndarray, pa.StructArray]] = []


class AvroKeys:
    """Kafka keys -> typed Avro record keys (:class:`SchemaKeys`' readers): a raw key, a
    GUID-framed one, one of an unknown schema, of a Protobuf message or that does not
    decode is refused (the per-message way)."""

    def __init__(self, keys: SchemaKeys):
        self.keys = keys

    def read(self, keys: pa.Array | None, count: int) -> ReadAvroKeys:
        read = ReadAvroKeys(count)
        if keys is None:
            return read
        if keys.type != pa.binary():
            keys = keys.cast(pa.binary())
        valid = wire.valid(keys)
        framed, ids = frames(keys)
        framed &= valid
        read.refused |= valid & ~framed
        for schema_id in np.unique(ids[framed]):
            rows = np.flatnonzero(framed & (ids == schema_id))
            key = self.keys.key_of(int(schema_id))
            if key is None or key.protobuf:
                read.refused[rows] = True
                continue
            typed, bad = key.read(keys.take(pa.array(rows)).to_pylist())
            read.refused[rows[bad]] = True
            good = rows[~bad]
            if len(good):
                read.writers.append((good, key.writer))
                read.typed.append((good, typed.filter(pa.array(~bad))))
        return read
