"""Confluent-framed Protobuf rows -> OpenCDC protobuf or JSON messages, from Arrow columns.

:class:`ProtobufToOpenCDC` takes a batch of raw ``protobuf`` messages (rows as Kafka's
Protobuf serializers write them: a magic byte, a schema id, the message-index path, the
body) and writes the ``opencdc-proto`` or ``opencdc-json`` message of every one it can take
exactly, byte for byte what :meth:`ProtobufFormat.decode` then the destination's ``encode``
give: a ``create`` whose ``after`` is the message as structured data (every field; unset
proto3 scalars their defaults, unset presence fields null; enums by name; Timestamps as
ISO 8601 text; wrappers their value), ``opencdc.collection`` the ``topic`` option when set.
Per writer schema id the bodies of the file's first message (index path ``[0]``, what a
serializer of a one-message file writes) are parsed into one struct column
(:class:`~cdc_connectors.spark.protobuf_batch.ProtobufBatchDecoder`, ptars) and written by
the record writers Debezium's columns use.

Every other message is left to the caller, for the per-message way: a tombstone, another
message of the file, a schema id in a header, a body that does not parse, a message with
a real ``oneof`` (only its set member is written), a map, ``Struct``/``Value``/``Any`` or
another well-known type but ``Timestamp`` and the wrappers, a proto2 group, an enum with
aliases, a message without fields (anywhere), an enum number the schema does not name (the
per-message way writes the number), a NaN, and every Protobuf-framed key (raw keys are
written as they are). A schema ptars cannot read (it panics, as on an ``edition`` file)
goes the per-message way too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from cdc_connectors.columnar.confluent_frames import non_finite
from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of
from cdc_connectors.columnar.framed_converter import FramedToOpenCDC, created
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.proto_records import ProtoRecordWriter
from cdc_connectors.columnar.protobuf_shapes import (
    FIRST_MESSAGE,
    connect_block,
    first_message,
    readable,
    unnamed_enums,
)
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.protobuf import ProtobufFormat
from cdc_connectors.schema.connect import parse_connect_schema
from cdc_connectors.schema.protobuf import message_class
from cdc_connectors.spark.debezium_typed import doubles_for_floats
from cdc_connectors.spark.protobuf_batch import ProtobufBatchDecoder

__all__ = ["ProtobufToOpenCDC"]


@dataclass
class _Row:
    """One writer schema's first message: its decoder, typed row and record writer."""

    decoder: ProtobufBatchDecoder
    row_type: pa.StructType
    records: ProtoRecordWriter | JsonRecordWriter


class ProtobufToOpenCDC(FramedToOpenCDC):
    """Protobuf rows -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    fmt: ProtobufFormat

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        ``protobuf`` itself, to OpenCDC protobuf or JSON."""
        return type(source) is ProtobufFormat and layout_of(destination) is not None

    def framed(self, values: pa.Array) -> np.ndarray:
        return first_message(values)

    def learn(self, schema_id: int) -> _Row | None:
        writer = self.fmt.store.by_id(schema_id)
        if writer.schema_type != "PROTOBUF":
            return None
        cls = message_class(writer.text, writer.references, (0,))
        if not readable(cls.DESCRIPTOR):
            return None
        decoder = ProtobufBatchDecoder(cls, exact=True)  # nanoseconds: the per-message way
        row_type = doubles_for_floats(decoder.arrow_type)
        assert isinstance(row_type, pa.StructType)
        connect = parse_connect_schema(connect_block(row_type, "value"))
        records = self.records_writer(connect, row_type)
        return _Row(decoder, row_type, records)

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
        decoded, problems = schema.decoder.decode(
            values.take(taken).to_pylist(), [FIRST_MESSAGE] * count
        )
        bad = np.array([p is not None for p in problems], dtype=bool)
        bad |= unnamed_enums(schema.decoder.cls.DESCRIPTOR, decoded)
        after = decoded.cast(schema.row_type)
        bad |= non_finite(after)
        message_keys, _ = self.keys.write(None if keys is None else keys.take(taken), count)
        batch = created(places.take(taken), after, schema.row_type, self.fmt.topic)
        return self.written(rows, batch, schema.records, message_keys, bad)
