"""What the converters of Confluent-framed messages share: the loop over schema ids, the
decoders learnt once per id, and the records written from a typed batch.

A subclass says how it learns a writer schema (:meth:`FramedToOpenCDC.learn`: its decoder
and writers, or ``None`` for a schema the columns do not take) and how it writes the rows of
one schema (:meth:`FramedToOpenCDC.write`); :meth:`FramedToOpenCDC.written` and
:func:`created` build what the record writers take.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from cdc_connectors.columnar.confluent_frames import SchemaKeys, frames, schema_headers, together
from cdc_connectors.columnar.debezium_keys import Keys, Layout
from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of, topics_of
from cdc_connectors.columnar.json_records import JsonRecordWriter
from cdc_connectors.columnar.proto_records import ProtoRecordWriter
from cdc_connectors.formats.base import Format
from cdc_connectors.opencdc import keys as metadata_keys
from cdc_connectors.schema.connect import ConnectSchema
from cdc_connectors.spark.debezium_typed import output_schema
from cdc_connectors.spark.envelope_columns import map_column

__all__ = ["MAX_SCHEMAS", "FramedToOpenCDC", "created"]

#: Writer schemas kept decoders for; the least recently used goes first.
MAX_SCHEMAS = 32
_STOPS = (KeyboardInterrupt, SystemExit, GeneratorExit)


class FramedToOpenCDC:
    """Confluent-framed messages -> OpenCDC protobuf or JSON, one writer schema at a time."""

    def __init__(
        self,
        fmt: Any,
        destination: Format,
        topic: Sequence[tuple[str, str | None]] | None = None,
        layout: Layout | None = None,
    ):
        """``topic``: a Kafka topic template's parts, as
        :class:`~cdc_connectors.columnar.debezium_opencdc.DebeziumToOpenCDC` takes them;
        ``layout``: the OpenCDC layout of the record keys read (the destination's, unless
        a subclass writes another format)."""
        layout = layout or layout_of(destination)
        assert layout is not None, "see serves()"
        self.fmt = fmt
        self.layout: Layout = layout
        self.topic = None if topic is None else tuple(topic)
        self._schemas: OrderedDict[int, Any] = OrderedDict()
        #: The record keys of the messages' Kafka keys (raw ones all raw with ``raw.keys``).
        self.keys = SchemaKeys(fmt, layout, raw=getattr(fmt, "raw_keys", False))

    def records_writer(
        self, row: ConnectSchema, row_type: pa.StructType
    ) -> ProtoRecordWriter | JsonRecordWriter:
        """The writer of this destination's records for rows of ``row`` typed ``row_type``."""
        if self.layout == "proto":
            return ProtoRecordWriter(row, row_type)
        return JsonRecordWriter(row, row_type)

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
        framed &= self.framed(values)
        if headers is not None:
            framed &= ~schema_headers(headers)
        parts: list[Columnar] = []
        for schema_id in np.unique(ids[framed]):
            schema = self._schema(int(schema_id))
            if schema is None:
                continue
            rows = np.flatnonzero(framed & (ids == schema_id))
            try:
                found = self.write(schema, values, keys, places, rows)
            except Exception:  # a batch the kernels refuse: the per-message way says why
                found = None
            except BaseException as exc:  # ptars panics (PanicException) on what it cannot read
                if isinstance(exc, _STOPS):
                    raise
                found = None
            if found is not None:
                parts.append(found)
        return together(parts, self.topic is not None)

    def framed(self, values: pa.Array) -> np.ndarray:
        """Which framed values this converter reads (all of them, unless a format says)."""
        return np.ones(len(values), dtype=bool)

    def learn(self, schema_id: int) -> Any:
        """The decoder and writers of a writer schema, or ``None`` for one the columns do
        not take."""
        raise NotImplementedError

    def write(
        self,
        schema: Any,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        rows: np.ndarray,
    ) -> Columnar | None:
        """The messages of ``rows`` (all of ``schema``) the columns take."""
        raise NotImplementedError

    def _schema(self, schema_id: int) -> Any:
        if schema_id in self._schemas:
            self._schemas.move_to_end(schema_id)
            return self._schemas[schema_id]
        try:
            found = self.learn(schema_id)
        except Exception:  # a writer schema the columns have no reading of
            found = None
        except BaseException as exc:  # ptars panics (PanicException) on what it cannot read
            if isinstance(exc, _STOPS):
                raise
            found = None
        self._schemas[schema_id] = found
        while len(self._schemas) > MAX_SCHEMAS:
            self._schemas.popitem(last=False)
        return found

    def written(
        self,
        rows: np.ndarray,
        batch: pa.RecordBatch,
        records: ProtoRecordWriter | JsonRecordWriter,
        message_keys: Keys,
        bad: np.ndarray,
    ) -> Columnar | None:
        """The messages of a typed batch (of ``rows``) but its ``bad`` rows, those the
        writer or the topic template refuse; ``None`` when none is left."""
        values, unwritten = records.write(batch, message_keys.fields)
        bad = bad | unwritten | message_keys.refused
        topics = None
        if self.topic is not None:
            topics, no_topic = topics_of(self.topic, batch.column("metadata"))
            bad |= no_topic
        return Columnar.kept(rows, ~bad, values, message_keys.message_keys, topics)


def created(
    places: pa.Array, after: pa.StructArray, row_type: pa.StructType, collection: str | None
) -> pa.RecordBatch:
    """The typed batch of rows read as ``create`` records of ``after`` (what a row format
    reads): position, operation, metadata (the OpenCDC version, and ``collection``)."""
    count = len(after)
    version = pa.array([metadata_keys.OPENCDC_VERSION] * count, pa.string())
    entries = [(metadata_keys.VERSION, version)]
    if collection is not None:
        entries.append((metadata_keys.COLLECTION, pa.array([collection] * count, pa.string())))
    schema = output_schema(row_type)
    return pa.RecordBatch.from_arrays(
        [
            places,
            pa.array(["create"] * count, pa.string()),
            map_column(entries, count),
            pa.nulls(count, schema.field("key").type),
            pa.nulls(count, row_type),
            after,
        ],
        schema=schema,
    )
