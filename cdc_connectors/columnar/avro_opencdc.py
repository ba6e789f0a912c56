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

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from cdc_connectors.columnar.confluent_frames import (
    HEADER,
    naive_times,
    non_finite,
    odd_uuids,
    out_of_range,
    plain,
    same_logical_types,
    uuid_fields,
)
from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of
from cdc_connectors.columnar.framed_converter import FramedToOpenCDC, created
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.proto_records import ProtoRecordWriter
from cdc_connectors.formats.avro import AvroFormat
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import avro_to_connect
from cdc_connectors.schema import avro_values
from cdc_connectors.schema.connect import ConnectSchema, parse_connect_schema
from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.debezium_typed import doubles_for_floats

__all__ = ["AvroToOpenCDC"]


@dataclass
class _Row:
    """One row writer schema: its decoder, typed row and record writer."""

    decoder: AvroBatchDecoder
    row_type: pa.StructType
    records: ProtoRecordWriter | JsonRecordWriter
    uuids: list[tuple[str, ...]]
    connect: ConnectSchema


class AvroToOpenCDC(FramedToOpenCDC):
    """Avro rows -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    fmt: AvroFormat

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        ``avro`` itself (any ``reader``), to OpenCDC protobuf or JSON."""
        return type(source) is AvroFormat and layout_of(destination) is not None

    def learn(self, schema_id: int) -> _Row | None:
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
        records = self.records_writer(connect, row_type)
        return _Row(decoder, row_type, records, uuids, connect)

    def write(
        self,
        schema: _Row,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        rows: np.ndarray,
    ) -> Columnar | None:
        count = len(rows)
        taken = pa.array(rows)
        decoded, problems = schema.decoder.decode(values.take(taken).to_pylist(), [HEADER] * count)
        bad = np.array([p is not None for p in problems], dtype=bool)
        after = decoded.cast(schema.row_type)
        bad |= non_finite(after) | odd_uuids(after, schema.uuids)
        bad |= out_of_range(schema.connect, after)
        message_keys, _ = self.keys.write(None if keys is None else keys.take(taken), count)
        batch = created(places.take(taken), after, schema.row_type, self.fmt.topic)
        return self.written(rows, batch, schema.records, message_keys, bad)
