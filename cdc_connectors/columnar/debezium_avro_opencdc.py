"""Debezium Avro messages -> OpenCDC protobuf or JSON messages, from Arrow columns.

:class:`DebeziumAvroToOpenCDC` takes a batch of raw ``debezium-avro`` messages (what
Confluent's AvroConverter writes: a magic byte, a schema id, the Avro body) and writes the
``opencdc-proto`` or ``opencdc-json`` message of every one it can take exactly, byte for
byte what :meth:`DebeziumAvroFormat.decode` then the destination's ``encode`` give:

- per envelope schema id (the writer schema, fetched once from the registry), the bodies
  are decoded into one Arrow struct column
  (:class:`~cdc_connectors.spark.avro_decode.AvroBatchDecoder`);
- the envelope's fields become the operation and metadata columns
  (:class:`~cdc_connectors.spark.envelope_columns.EnvelopeColumns`, shared with Debezium
  JSON), the row and key schemas are named (``opencdc.payload.schema.*``,
  ``opencdc.key.schema.*``) as registered once per writer schema and collection;
- the images are written by the same record writers as Debezium JSON's
  (:class:`~cdc_connectors.columnar.proto_records.ProtoRecordWriter`,
  :class:`~cdc_connectors.columnar.json_records.JsonRecordWriter`), typed by the Avro
  schema alone (its logical types; ``connect.name`` does not change a value the
  per-message way reads, so a ``MicroTimestamp`` stays the integer it is);
- Avro keys of a record schema are decoded and written likewise, raw keys as they are.

Every other message is left to the caller, for the per-message way: a tombstone, a body
that is not Confluent-framed or whose schema id is in a header (``__value_schema_id``), an
id the registry does not know, a body that does not decode, a GUID-framed or non-record
key, and any row the columns cannot write exactly (an integer or decimal a double would
change, an unknown op, a change without the image it needs).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar.confluent_frames import (
    HEADER,
    SchemaKeys,
    frames,
    has_logical,
    naive_times,
    non_finite,
    odd_uuids,
    out_of_range,
    plain,
    schema_headers,
    together,
    uuid_fields,
)
from cdc_connectors.columnar.debezium_keys import Layout
from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of, topics_of
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.proto_records import NotColumnar, ProtoRecordWriter
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import avro_to_connect
from cdc_connectors.formats.debezium_avro import DebeziumAvroFormat
from cdc_connectors.opencdc import CodecError
from cdc_connectors.registry.store import Resolved
from cdc_connectors.schema import avro_values, framing
from cdc_connectors.schema.connect import ConnectSchema, parse_connect_schema
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.subjects import Part
from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.debezium_typed import doubles_for_floats, output_schema
from cdc_connectors.spark.envelope_columns import EnvelopeColumns, mask, metadata_map
from cdc_connectors.spark.envelope_columns import NotColumnar as EnvelopeNotColumnar

__all__ = ["DebeziumAvroToOpenCDC"]

#: Writer schemas kept decoders for; the least recently used goes first.
MAX_SCHEMAS = 32
_IMAGES = ("before", "after")


@dataclass
class _Value:
    """One envelope writer schema: its decoder, envelope fields and record writer."""

    writer: Resolved
    decoder: AvroBatchDecoder
    envelope: EnvelopeColumns
    row_type: pa.StructType
    records: ProtoRecordWriter | JsonRecordWriter
    #: The paths of the row's ``uuid`` strings (:func:`confluent_frames.odd_uuids`).
    uuids: list[tuple[str, ...]]
    row: ConnectSchema


class DebeziumAvroToOpenCDC:
    """Debezium Avro -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    def __init__(
        self,
        fmt: DebeziumAvroFormat,
        destination: Format,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        """``topic``: a Kafka topic template's parts, as
        :class:`~cdc_connectors.columnar.debezium_opencdc.DebeziumToOpenCDC` takes them."""
        layout = layout_of(destination)
        assert layout is not None, "see serves()"
        self.fmt = fmt
        self.layout: Layout = layout
        self.topic = None if topic is None else tuple(topic)
        self._values: OrderedDict[int, _Value | None] = OrderedDict()
        self._keys = SchemaKeys(fmt, layout)

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        ``debezium-avro`` itself, without ``key.fields``, to OpenCDC protobuf or JSON."""
        return (
            type(source) is DebeziumAvroFormat
            and not source.key_fields
            and layout_of(destination) is not None
        )

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the rows the columns take; the others are the caller's.
        ``values``, ``keys`` (or ``None``) and ``places`` are binary columns of one row per
        message; ``headers`` (Kafka's ``list<struct<key, value>>``, or ``None``) tells the
        messages whose schema id is in a header, which go the per-message way."""
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        framed, ids = frames(values)
        if headers is not None:
            framed &= ~schema_headers(headers)
        parts: list[Columnar] = []
        for schema_id in np.unique(ids[framed]):
            value = self._value(int(schema_id))
            if value is None:
                continue
            rows = np.flatnonzero(framed & (ids == schema_id))
            try:
                found = self._write(value, values, keys, places, rows)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, NotColumnar):
                found = None  # a batch the kernels refuse (a time beyond 64 bits of ns)
            if found is not None:
                parts.append(found)
        return together(parts, self.topic is not None)

    # --- schemas ------------------------------------------------------------------------

    def _value(self, schema_id: int) -> _Value | None:
        if schema_id in self._values:
            self._values.move_to_end(schema_id)
            return self._values[schema_id]
        found = None
        try:
            found = self._learn_value(schema_id)
        except (CodecError, SchemaError, NotColumnar, EnvelopeNotColumnar):
            found = None
        except (ValueError, TypeError, KeyError):
            found = None  # a writer schema the typed columns have no reading of
        self._values[schema_id] = found
        while len(self._values) > MAX_SCHEMAS:
            self._values.popitem(last=False)
        return found

    def _learn_value(self, schema_id: int) -> _Value | None:
        writer = self.fmt.store.by_id(schema_id)
        if writer.schema_type != "AVRO":
            return None
        shape = avro_values.standalone(writer)
        if not isinstance(shape, dict) or shape.get("type") != "record":
            return None
        fields = {f.get("name"): f for f in shape.get("fields", []) if isinstance(f, dict)}
        row = _image_row(fields.get("before"), fields.get("after"))
        if row is None or not row.get("fields"):
            return None
        envelope_block = avro_to_connect(plain(shape), "value")
        row_connect = parse_connect_schema(avro_to_connect(plain(row), "value.after"))
        envelope = EnvelopeColumns(envelope_block, row_connect, self.fmt)
        decoder = AvroBatchDecoder(shape)
        decoded = decoder.arrow_type
        row_type = decoded.field("after").type
        if decoded.field("before").type != row_type or naive_times(row_type):
            return None
        uuids = uuid_fields(row)
        if decoded.field("op").type != pa.string() or uuids is None:
            return None
        for field in envelope.fields()[1:]:
            # Metadata as the per-message way writes it: text, integers and booleans as they
            # are (an Avro logical type makes a value of its own, a cast would change it).
            index = decoded.get_field_index(field.name)
            if index >= 0 and not _reads_as(decoded.field(index).type, field.type):
                return None
            if has_logical(fields.get(field.name)):
                return None
        widened = doubles_for_floats(row_type)
        assert isinstance(widened, pa.StructType)
        records: ProtoRecordWriter | JsonRecordWriter = (
            ProtoRecordWriter(row_connect, widened)
            if self.layout == "proto"
            else JsonRecordWriter(row_connect, widened)
        )
        return _Value(writer, decoder, envelope, widened, records, uuids, row_connect)

    # --- writing ------------------------------------------------------------------------

    def _write(
        self,
        value: _Value,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        rows: np.ndarray,
    ) -> Columnar | None:
        count = len(rows)
        taken = pa.array(rows)
        bodies = values.take(taken).to_pylist()
        decoded, problems = value.decoder.decode(bodies, [HEADER] * count)
        bad = np.array([p is not None for p in problems], dtype=bool)
        payload = _payload(decoded, value.envelope)
        before = decoded.field("before").cast(value.row_type)
        after = decoded.field("after").cast(value.row_type)
        columns, refused = value.envelope.columns(payload, before, after)
        bad |= refused | non_finite(before) | non_finite(after)
        bad |= odd_uuids(before, value.uuids) | odd_uuids(after, value.uuids)
        bad |= out_of_range(value.row, before) | out_of_range(value.row, after)
        message_keys, key_schemas = self._keys.write(
            None if keys is None else keys.take(taken), count
        )
        bad |= message_keys.refused
        more, unnamed = self._schema_entries(
            value, columns["collection"], before, after, key_schemas
        )
        bad |= unnamed
        batch = pa.RecordBatch.from_arrays(
            [
                places.take(taken),
                columns["operation"],
                metadata_map(columns, count, more),
                pa.nulls(count, output_schema(value.row_type).field("key").type),
                before,
                after,
            ],
            schema=output_schema(value.row_type),
        )
        records, unwritten = value.records.write(batch, message_keys.fields)
        bad |= unwritten
        topics = None
        if self.topic is not None:
            topics, no_topic = topics_of(self.topic, batch.column("metadata"))
            bad |= no_topic
        keep = ~bad
        if not keep.any():
            return None
        kept = pa.array(keep)
        return Columnar(
            rows[keep],
            records.filter(kept),
            message_keys.message_keys.filter(kept),
            None if topics is None else topics.filter(kept),
        )

    def _schema_entries(
        self,
        value: _Value,
        collection: pa.Array,
        before: pa.Array,
        after: pa.Array,
        keys: list[tuple[np.ndarray, Resolved]],
    ) -> tuple[list[tuple[str, pa.Array]], np.ndarray]:
        """``opencdc.payload.schema.*`` of each row with an image and
        ``opencdc.key.schema.*`` of each row with an Avro key: the row and key schemas as
        registered under Conduit's subjects, once per writer schema and collection; and
        the rows whose schema the registry refused (the per-message way says so)."""
        refused = np.zeros(len(collection), dtype=bool)
        with_image = mask(pc.or_(pc.is_valid(before), pc.is_valid(after)))
        payload = [(np.flatnonzero(with_image), value.writer)]
        entries = self._named("payload", payload, collection, refused)
        return entries + self._named("key", keys, collection, refused), refused

    def _named(
        self,
        part: Part,
        groups: list[tuple[np.ndarray, Resolved]],
        collection: pa.Array,
        refused: np.ndarray,
    ) -> list[tuple[str, pa.Array]]:
        count = len(collection)
        subjects: list[str | None] = [None] * count
        versions: list[str | None] = [None] * count
        names = collection.to_pylist()
        for rows, writer in groups:
            found: dict[str | None, tuple[str, int] | None] = {}
            for row in rows.tolist():
                name = names[row]
                if name not in found:
                    try:
                        found[name] = self.fmt.registered_row(part, writer, name)
                    except CodecError:
                        found[name] = None
                        refused[[r for r in rows.tolist() if names[r] == name]] = True
                named = found[name]
                if named is not None:
                    subjects[row], versions[row] = named[0], str(named[1])
        if all(s is None for s in subjects):
            return []
        subject_key, version_key = framing.CONDUIT_KEYS[part]
        return [
            (subject_key, pa.array(subjects, pa.string())),
            (version_key, pa.array(versions, pa.string())),
        ]


def _image_row(before: Any, after: Any) -> dict[str, Any] | None:
    """The record type of the images (``["null", record]`` in both), or ``None``."""
    rows = []
    for field in (before, after):
        kind = field.get("type") if isinstance(field, dict) else None
        members = [m for m in kind if m != "null"] if isinstance(kind, list) else []
        if len(members) != 1 or not isinstance(members[0], dict):
            return None
        if members[0].get("type") != "record":
            return None
        rows.append(members[0])
    return rows[1] if rows[0] == rows[1] else None


def _reads_as(decoded: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether a decoded column of type ``decoded`` holds what :class:`EnvelopeColumns`
    reads as ``wanted`` without a cast changing a value (an ``int`` as 64 bits)."""
    if pa.types.is_struct(wanted):
        return pa.types.is_struct(decoded) and all(
            decoded.get_field_index(field.name) >= 0
            and _reads_as(decoded.field(field.name).type, field.type)
            for field in wanted
        )
    if pa.types.is_integer(wanted):
        return bool(pa.types.is_integer(decoded))
    return bool(decoded == wanted)


def _payload(decoded: pa.StructArray, envelope: EnvelopeColumns) -> pa.StructArray:
    """The decoded envelopes with the fields :class:`EnvelopeColumns` reads, typed as it
    reads them (an Avro ``int`` as a 64-bit integer)."""
    fields = [pa.field("before", decoded.type.field("before").type)]
    fields.append(pa.field("after", decoded.type.field("after").type))
    arrays = [decoded.field("before"), decoded.field("after")]
    for field in envelope.fields():
        index = decoded.type.get_field_index(field.name)
        if index < 0:
            arrays.append(pa.nulls(len(decoded), field.type))
        else:
            arrays.append(decoded.field(index).cast(field.type))
        fields.append(field)
    return pa.StructArray.from_arrays(arrays, fields=fields)
