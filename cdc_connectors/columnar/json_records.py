"""Typed OpenCDC batches -> OpenCDC JSON documents, column by column.

:class:`JsonRecordWriter` writes each row of a typed batch (the layout of
:mod:`cdc_connectors.spark.debezium_typed`) as the bytes
:func:`cdc_connectors.opencdc.json_codec.record_to_json` gives for the record the
per-message Debezium reading makes of the same message: the record's keys in their order,
metadata and images with sorted keys, compact. Images are written by
:func:`cdc_connectors.columnar.json_text.struct_text`; a row it cannot write exactly is
flagged for the per-message way.
"""

from __future__ import annotations

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import base64text, maps
from cdc_connectors.columnar.json_text import image_texts, joined, quoted, struct_text
from cdc_connectors.columnar.proto_records import NotColumnar
from cdc_connectors.schema.connect import ConnectSchema

__all__ = ["JsonRecordWriter"]

_COMMA = pa.scalar(b",", pa.binary())


class JsonRecordWriter:
    """Typed batches of one row schema -> OpenCDC JSON documents (module docstring)."""

    def __init__(self, row: ConnectSchema, row_type: pa.StructType):
        try:
            self._image = struct_text(row, row_type)
        except ValueError as exc:
            raise NotColumnar(str(exc)) from None

    def write(self, batch: pa.RecordBatch, key_texts: pa.Array) -> tuple[pa.Array, np.ndarray]:
        """The document of each row of ``batch`` and the rows to write the per-message way
        instead. ``key_texts`` holds each row's ``key`` as JSON text (``null`` for none)."""
        images, bad = image_texts(batch, self._image)
        documents = joined(
            b'{"position":"',
            base64text.encode(batch.column("position")),
            b'","operation":"',
            batch.column("operation").cast(pa.binary()),
            b'","metadata":',
            metadata_text(batch.column("metadata")),
            b',"key":',
            key_texts,
            b',"payload":{"before":',
            images[0],
            b',"after":',
            images[1],
            b"}}",
        )
        return documents, bad


def metadata_text(metadata: pa.MapArray) -> pa.Array:
    """Each row's metadata as a JSON object, keys sorted."""
    entries = maps.sorted_entries(metadata)
    count = entries.count
    if entries.uniform is not None:
        if not entries.uniform:
            return pa.array([b"{}"] * count, pa.binary())
        parts: list[pa.Array | bytes] = []
        for n, (name, values) in enumerate(entries.uniform):
            label = (b"{" if n == 0 else b",") + orjson.dumps(name.decode("utf-8")) + b":"
            parts += [label, quoted(values)]
        return joined(*parts, b"}")
    assert entries.names is not None and entries.items is not None
    assert entries.offsets is not None
    pairs = joined(quoted(entries.names), b":", quoted(entries.items))
    lists = pa.ListArray.from_arrays(pa.array(entries.offsets.astype(np.int32)), pairs)
    return joined(b"{", pc.binary_join(lists, _COMMA), b"}")
