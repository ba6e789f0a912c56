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

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from cdc_connectors.columnar.confluent_frames import (
    SchemaKeys,
    frames,
    non_finite,
    schema_headers,
    together,
)
from cdc_connectors.columnar.debezium_keys import Layout
from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of, topics_of
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.proto_records import NotColumnar, ProtoRecordWriter
from cdc_connectors.columnar.protobuf_shapes import (
    FIRST_MESSAGE,
    connect_block,
    first_message,
    readable,
    unnamed_enums,
)
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.protobuf import ProtobufFormat
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc import keys as metadata_keys
from cdc_connectors.schema.connect import parse_connect_schema
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.protobuf import message_class
from cdc_connectors.spark.debezium_typed import doubles_for_floats, output_schema
from cdc_connectors.spark.envelope_columns import map_column
from cdc_connectors.spark.protobuf_batch import ProtobufBatchDecoder

__all__ = ["ProtobufToOpenCDC"]

#: Writer schemas kept decoders for; the least recently used goes first.
MAX_SCHEMAS = 32


@dataclass
class _Row:
    """One writer schema's first message: its decoder, typed row and record writer."""

    decoder: ProtobufBatchDecoder
    row_type: pa.StructType
    records: ProtoRecordWriter | JsonRecordWriter


class ProtobufToOpenCDC:
    """Protobuf rows -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    def __init__(
        self,
        fmt: ProtobufFormat,
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
        ``protobuf`` itself, to OpenCDC protobuf or JSON."""
        return type(source) is ProtobufFormat and layout_of(destination) is not None

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the rows the columns take; the others are the caller's (as
        :meth:`DebeziumToOpenCDC.convert`)."""
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        framed, ids = frames(values)
        framed &= first_message(values)
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
            except BaseException as exc:  # a ptars panic: the per-message way reads them
                if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
                    raise
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
        except BaseException as exc:  # ptars panics (a PanicException) on what it cannot read
            if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
                raise
            found = None
        self._rows[schema_id] = found
        while len(self._rows) > MAX_SCHEMAS:
            self._rows.popitem(last=False)
        return found

    def _learn(self, schema_id: int) -> _Row | None:
        writer = self.fmt.store.by_id(schema_id)
        if writer.schema_type != "PROTOBUF":
            return None
        cls = message_class(writer.text, writer.references, (0,))
        if not readable(cls.DESCRIPTOR):
            return None
        decoder = ProtobufBatchDecoder(cls)
        row_type = doubles_for_floats(decoder.arrow_type)
        assert isinstance(row_type, pa.StructType)
        connect = parse_connect_schema(connect_block(row_type, "value"))
        records: ProtoRecordWriter | JsonRecordWriter = (
            ProtoRecordWriter(connect, row_type)
            if self.layout == "proto"
            else JsonRecordWriter(connect, row_type)
        )
        return _Row(decoder, row_type, records)

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
        decoded, problems = row.decoder.decode(
            values.take(taken).to_pylist(), [FIRST_MESSAGE] * count
        )
        bad = np.array([p is not None for p in problems], dtype=bool)
        bad |= unnamed_enums(row.decoder.cls.DESCRIPTOR, decoded)
        after = decoded.cast(row.row_type)
        bad |= non_finite(after)
        message_keys, _ = self._keys.write(None if keys is None else keys.take(taken), count)
        bad |= message_keys.refused
        version = pa.array([metadata_keys.OPENCDC_VERSION] * count, pa.string())
        entries = [(metadata_keys.VERSION, version)]
        if self.fmt.topic is not None:
            topic = pa.array([self.fmt.topic] * count, pa.string())
            entries.append((metadata_keys.COLLECTION, topic))
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
