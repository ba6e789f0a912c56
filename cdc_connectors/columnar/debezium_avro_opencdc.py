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

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar.confluent_frames import (
    HEADER,
    has_logical,
    naive_times,
    non_finite,
    odd_uuids,
    out_of_range,
    plain,
    uuid_fields,
)
from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of
from cdc_connectors.columnar.framed_converter import FramedToOpenCDC
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.proto_records import ProtoRecordWriter
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import avro_to_connect
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.opencdc import CodecError
from cdc_connectors.registry.store import Resolved
from cdc_connectors.schema import avro_values, framing
from cdc_connectors.schema.connect import ConnectSchema, parse_connect_schema
from cdc_connectors.schema.subjects import Part
from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.debezium_typed import doubles_for_floats, output_schema
from cdc_connectors.spark.envelope_columns import EnvelopeColumns, mask, metadata_map

__all__ = ["DebeziumAvroToOpenCDC", "Events", "ValueSchema", "envelope_payload"]

_IMAGES = ("before", "after")


@dataclass
class ValueSchema:
    """One envelope writer schema: its decoder, envelope fields and record writer."""

    writer: Resolved
    decoder: AvroBatchDecoder
    envelope: EnvelopeColumns
    row_type: pa.StructType
    records: ProtoRecordWriter | JsonRecordWriter
    #: The paths of the row's ``uuid`` strings (:func:`confluent_frames.odd_uuids`).
    uuids: list[tuple[str, ...]]
    row: ConnectSchema


@dataclass
class Events:
    """A batch of change events of one writer schema as typed columns."""

    before: pa.Array
    after: pa.Array
    #: The envelope's columns (operation, collection, metadata), by name.
    columns: dict[str, Any]
    #: The events the columns cannot write exactly.
    bad: np.ndarray


class DebeziumAvroToOpenCDC(FramedToOpenCDC):
    """Debezium Avro -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    fmt: DebeziumAvroFormat

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        ``debezium-avro`` itself, without ``key.fields``, to OpenCDC protobuf or JSON."""
        return (
            type(source) is DebeziumAvroFormat
            and not source.key_fields
            and layout_of(destination) is not None
        )

    def learn(self, schema_id: int) -> ValueSchema | None:
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
        records = self.records_writer(row_connect, widened)
        return ValueSchema(writer, decoder, envelope, widened, records, uuids, row_connect)

    # --- writing ------------------------------------------------------------------------

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
        message_keys, key_schemas = self.keys.write(
            None if keys is None else keys.take(taken), count
        )
        more, unnamed = self._schema_entries(
            schema, columns["collection"], before, after, key_schemas
        )
        bad |= unnamed
        batch = pa.RecordBatch.from_arrays(
            [
                places.take(taken),
                columns["operation"],
                metadata_map(columns, count, more),
                pa.nulls(count, output_schema(schema.row_type).field("key").type),
                before,
                after,
            ],
            schema=output_schema(schema.row_type),
        )
        return self.written(rows, batch, schema.records, message_keys, bad)

    def events(self, schema: ValueSchema, bodies: pa.Array) -> Events:
        """The change events of framed ``bodies`` (all of ``schema``) as typed columns, and
        the rows the columns cannot write exactly."""
        decoded, problems = schema.decoder.decode(bodies.to_pylist(), [HEADER] * len(bodies))
        bad = np.array([p is not None for p in problems], dtype=bool)
        payload = envelope_payload(decoded, schema.envelope)
        before = decoded.field("before").cast(schema.row_type)
        after = decoded.field("after").cast(schema.row_type)
        columns, refused = schema.envelope.columns(payload, before, after)
        bad |= refused | non_finite(before) | non_finite(after)
        bad |= odd_uuids(before, schema.uuids) | odd_uuids(after, schema.uuids)
        bad |= out_of_range(schema.row, before) | out_of_range(schema.row, after)
        return Events(before, after, columns, bad)

    def _schema_entries(
        self,
        value: ValueSchema,
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


def envelope_payload(decoded: pa.StructArray, envelope: EnvelopeColumns) -> pa.StructArray:
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
