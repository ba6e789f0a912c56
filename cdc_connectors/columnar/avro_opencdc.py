"""Confluent-framed Avro rows -> OpenCDC protobuf or JSON messages, from Arrow columns.

:class:`AvroToOpenCDC` takes a batch of raw ``avro`` messages (rows as Kafka's Avro
serializers write them: a magic byte, a schema id, the body) and writes the
``opencdc-proto`` or ``opencdc-json`` message of every one it can take exactly, byte for
byte what :meth:`AvroFormat.decode` then the destination's ``encode`` give: a ``create``
whose ``after`` is the row, the key as the record's key, ``opencdc.collection`` the
``topic`` option when set. Per writer schema id the bodies are decoded into one struct
column (:class:`~cdc_connectors.spark.avro_decode.AvroBatchDecoder`) and written by the
record writers Debezium's columns use, typed by Avro alone; keys as
:class:`~cdc_connectors.columnar.confluent_frames.SchemaKeys` reads them.

Every other message is left to the caller, for the per-message way: a tombstone (a delete),
a body whose schema id is in a header, an id the registry does not know, a body that does
not decode, a row schema with a union of several types (its branches travel in metadata),
a map or a local timestamp, a ``uuid`` not spelled as it reads back, a NaN, a time Python
does not hold, a GUID-framed key, and a writer schema the ``reader`` schema cannot read.
With ``reader=latest`` (or a version) each writer version is decoded into the reader's
columns (Avro schema resolution), as the per-message way reads it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from cdc_connectors.columnar.confluent_frames import (
    HEADER,
    SchemaKeys,
    frames,
    naive_times,
    non_finite,
    odd_uuids,
    out_of_range,
    plain,
    same_logical_types,
    schema_headers,
    together,
    uuid_fields,
)
from cdc_connectors.columnar.debezium_keys import Layout
from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of, topics_of
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.proto_records import NotColumnar, ProtoRecordWriter
from cdc_connectors.formats.avro import AvroFormat
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import avro_to_connect
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc import keys as metadata_keys
from cdc_connectors.schema import avro_values
from cdc_connectors.schema.connect import ConnectSchema, parse_connect_schema
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.debezium_typed import doubles_for_floats, output_schema
from cdc_connectors.spark.envelope_columns import map_column

__all__ = ["AvroToOpenCDC"]

#: Writer schemas kept decoders for; the least recently used goes first.
MAX_SCHEMAS = 32


@dataclass
class _Row:
    """One row writer schema: its decoder, typed row and record writer."""

    decoder: AvroBatchDecoder
    row_type: pa.StructType
    records: ProtoRecordWriter | JsonRecordWriter
    uuids: list[tuple[str, ...]]
    connect: ConnectSchema


class AvroToOpenCDC:
    """Avro rows -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    def __init__(
        self,
        fmt: AvroFormat,
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
        self._rows: OrderedDict[int, _Row | None] = OrderedDict()
        self._keys = SchemaKeys(fmt, layout, raw=fmt.raw_keys)

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        ``avro`` itself (any ``reader``), to OpenCDC protobuf or JSON."""
        return type(source) is AvroFormat and layout_of(destination) is not None

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the rows the columns take; the others are the caller's (as
        :meth:`DebeziumAvroToOpenCDC.convert`)."""
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        framed, ids = frames(values)
        if headers is not None:
            framed &= ~schema_headers(headers)
        parts: list[Columnar] = []
        for schema_id in np.unique(ids[framed]):
            row = self._row(int(schema_id))
            if row is None:
                continue
            rows = np.flatnonzero(framed & (ids == schema_id))
            try:
                found = self._write(row, values, keys, places, rows)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, NotColumnar):
                found = None
            if found is not None:
                parts.append(found)
        return together(parts, self.topic is not None)

    def _row(self, schema_id: int) -> _Row | None:
        if schema_id in self._rows:
            self._rows.move_to_end(schema_id)
            return self._rows[schema_id]
        try:
            found = self._learn(schema_id)
        except (CodecError, SchemaError, NotColumnar, ValueError, TypeError, KeyError):
            found = None  # a writer schema the columns have no reading of
        self._rows[schema_id] = found
        while len(self._rows) > MAX_SCHEMAS:
            self._rows.popitem(last=False)
        return found

    def _learn(self, schema_id: int) -> _Row | None:
        writer = self.fmt.store.by_id(schema_id)
        if writer.schema_type != "AVRO":
            return None
        written = avro_values.standalone(writer)
        rows = self.fmt.record_decoder
        reader = rows.reader_of(writer, "payload")  # the ``reader`` option's, as decode's
        if reader is not None and reader.schema_id == writer.schema_id:
            reader = None
        if reader is not None and rows.resolvable(writer, reader) is not None:
            return None  # a dead letter saying why, the per-message way
        shape = written if reader is None else avro_values.standalone(reader)
        if reader is not None and not same_logical_types(written, shape):
            return None  # fastavro keeps the writer's logical types: the per-message way
        if not isinstance(shape, dict) or shape.get("type") != "record" or not shape.get("fields"):
            return None
        uuids = uuid_fields(shape)
        if uuids is None:
            return None
        connect = parse_connect_schema(avro_to_connect(plain(shape), "value"))
        decoder = AvroBatchDecoder(written, None if reader is None else shape)
        if naive_times(decoder.arrow_type):
            return None
        row_type = doubles_for_floats(decoder.arrow_type)
        assert isinstance(row_type, pa.StructType)
        records: ProtoRecordWriter | JsonRecordWriter = (
            ProtoRecordWriter(connect, row_type)
            if self.layout == "proto"
            else JsonRecordWriter(connect, row_type)
        )
        return _Row(decoder, row_type, records, uuids, connect)

    def _write(
        self,
        row: _Row,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        rows: np.ndarray,
    ) -> Columnar | None:
        count = len(rows)
        taken = pa.array(rows)
        decoded, problems = row.decoder.decode(values.take(taken).to_pylist(), [HEADER] * count)
        bad = np.array([p is not None for p in problems], dtype=bool)
        after = decoded.cast(row.row_type)
        bad |= non_finite(after) | odd_uuids(after, row.uuids) | out_of_range(row.connect, after)
        message_keys, _ = self._keys.write(None if keys is None else keys.take(taken), count)
        bad |= message_keys.refused
        version = pa.array([metadata_keys.OPENCDC_VERSION] * count, pa.string())
        entries = [(metadata_keys.VERSION, version)]
        if self.fmt.topic is not None:
            entries.append(
                (metadata_keys.COLLECTION, pa.array([self.fmt.topic] * count, pa.string()))
            )
        schema = output_schema(row.row_type)
        batch = pa.RecordBatch.from_arrays(
            [
                places.take(taken),
                pa.array(["create"] * count, pa.string()),
                map_column(entries, count),
                pa.nulls(count, schema.field("key").type),
                pa.nulls(count, row.row_type),
                after,
            ],
            schema=schema,
        )
        records, unwritten = row.records.write(batch, message_keys.fields)
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
