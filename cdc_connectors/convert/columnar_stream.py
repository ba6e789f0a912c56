"""``convert``'s columnar path: chunks of messages of the formats the columns serve, as
OpenCDC protobuf or JSON (or Debezium JSON) from Arrow columns
(:func:`~cdc_connectors.columnar.choose.columns_for`).

The convert loop goes through a chunk in message order: each run of messages the columns
wrote is passed on at once (:meth:`WrittenChunk.write_run`), any other message goes the
per-message way; so the stream gets the same bytes in the same order, and a failing
message (``--fail-fast``) stops the run where it would anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.convert.line_chunks import LineChunk
from cdc_connectors.convert.streams import CHUNK_BYTES, MessageWriter, json_as_is
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.opencdc import CodecError

if TYPE_CHECKING:
    from cdc_connectors.columnar.choose import ColumnarConverter
    from cdc_connectors.columnar.debezium_opencdc import Columnar

__all__ = ["ChunkWriter", "WrittenChunk", "chunks", "serves"]

Item = Message | CodecError
_NO_MESSAGE = Message(None)  # stands for a broken item: nothing to write from columns


def _place(message: Message) -> bytes | None:
    try:
        return message.where.encode("utf-8")
    except UnicodeEncodeError:
        return None


def _headers(messages: list[Message]) -> pa.Array | None:
    """The messages' Kafka headers as Arrow's ``list<struct<key, value>>``; ``None`` for
    none."""
    if not any(m.headers for m in messages):
        return None
    type_ = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    rows = [[{"key": k, "value": v} for k, v in m.headers or ()] for m in messages]
    return pa.array(rows, type_)


def serves(decoder: Format, encoder: Format) -> bool:
    """Whether the columns write what ``decoder`` then ``encoder`` write."""
    from cdc_connectors.formats.avro import AvroFormat, SchemaRowFormat
    from cdc_connectors.formats.debezium import DebeziumJsonFormat
    from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
    from cdc_connectors.formats.debezium.cdl import CdlJsonFormat
    from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
    from cdc_connectors.formats.protobuf import ProtobufFormat
    from cdc_connectors.formats.ydb import YdbJsonFormat

    if not isinstance(
        decoder,
        DebeziumJsonFormat
        | SchemaRowFormat
        | CdlJsonFormat
        | YdbJsonFormat
        | OpenCDCJsonFormat
        | OpenCDCProtoFormat,
    ) or type(encoder) not in (
        OpenCDCProtoFormat,
        OpenCDCJsonFormat,
        DebeziumJsonFormat,
        AvroFormat,
        DebeziumAvroFormat,
        ProtobufFormat,
    ):
        return False  # no need to load the columnar machinery (it brings pyspark's types)
    from cdc_connectors.columnar import choose

    return choose.serves(decoder, encoder)


def chunks(
    items: Iterable[Item], size: int, waiting: Callable[[], bool] | None = None
) -> Iterator[list[Item]]:
    """``items`` in lists of at most ``size`` messages and
    :data:`~cdc_connectors.convert.streams.CHUNK_BYTES` bytes; with
    ``waiting`` (a stream that may pause: a pipe, a terminal), a list also ends as soon as
    nothing more is waiting, so that what has arrived is written without waiting for the
    rest."""
    chunk: list[Item] = []
    held = 0
    for item in items:
        chunk.append(item)
        held += _size(item)
        if len(chunk) >= size or held >= CHUNK_BYTES or (waiting is not None and not waiting()):
            yield chunk
            chunk = []
            held = 0
    if chunk:
        yield chunk


def _size(item: Item) -> int:
    if isinstance(item, Message):
        return len(item.value or b"") + len(item.key or b"")
    return len(item.data or b"")


class ChunkWriter:
    """Writes the messages of chunks the columns take to ``writer``'s stream."""

    def __init__(self, decoder: Format, encoder: Format, writer: MessageWriter):
        from cdc_connectors.columnar.choose import columns_for

        columns = columns_for(decoder, encoder)
        assert columns is not None, "see serves()"
        self.columns: ColumnarConverter = columns
        self.writer = writer

    def convert(self, chunk: list[Item] | LineChunk) -> WrittenChunk:
        """The messages of ``chunk`` written from columns, ready to be passed on."""
        if isinstance(chunk, LineChunk):  # lines read as columns: no message objects
            values, keys, places = chunk.without_errors()
            found = self.columns.convert(values, keys, places, None)
            if chunk.errors:  # rows of the lines that are messages -> rows of the chunk
                kept = np.flatnonzero(~np.isin(np.arange(len(chunk)), list(chunk.errors)))
                found.rows = kept[found.rows]
        else:
            found = self._convert_messages(chunk)
        rendered, refused = self._rendered(found)
        rows = found.rows
        if refused.any():  # the per-message way makes them dead letters, saying why
            kept = pa.array(~refused)
            rows, rendered = rows[~refused], rendered.filter(kept)
        return WrittenChunk(self.writer, rows, len(chunk), rendered)

    def _convert_messages(self, chunk: list[Item]) -> Columnar:
        messages = [item if isinstance(item, Message) else _NO_MESSAGE for item in chunk]
        values = [m.value for m in messages]
        keys = [m.key for m in messages]
        try:
            places = pa.array([m.where for m in messages], pa.string()).cast(pa.binary())
        except (UnicodeEncodeError, pa.ArrowInvalid):
            # A place that is no text: its message goes the per-message way, which says
            # what becomes of it.
            encoded = [_place(m) for m in messages]
            values = [None if p is None else v for v, p in zip(values, encoded, strict=True)]
            places = pa.array([p or b"" for p in encoded], pa.binary())
        return self.columns.convert(
            pa.array(values, pa.binary()),
            None if all(k is None for k in keys) else pa.array(keys, pa.binary()),
            places,
            _headers(messages),
        )

    def _rendered(self, found: Columnar) -> tuple[pa.Array, np.ndarray]:
        """Each written message as the stream's layout holds it (:meth:`MessageWriter.render`),
        and those it cannot hold (a raw key that is neither JSON nor UTF-8 in a text line)."""
        from cdc_connectors.columnar import base64text, wire
        from cdc_connectors.columnar.json_text import joined

        layout = self.writer.layout
        refused = np.zeros(len(found.rows), dtype=bool)
        if layout == "delimited":
            values = wire.Pieces.of(found.values)
            return (wire.segments([wire.varint(values.sizes)]) + values).joined(), refused
        if layout == "lines":
            return joined(found.values, b"\n"), refused
        null = pa.scalar(b"null", pa.binary())
        if self.writer.fmt.binary:
            keys = pc.fill_null(joined(b'"', base64text.encode(found.keys), b'"'), null)
            keys = pc.if_else(found.keys.is_valid(), keys, null)
            values = pc.fill_null(joined(b'"', base64text.encode(found.values), b'"'), null)
            values = pc.if_else(found.values.is_valid(), values, null)  # a tombstone
            return joined(b'{"key":', keys, b',"value":', values, b"}\n"), refused
        keyed = np.asarray(found.keys.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        # A text format's keys are written as JSON where they are JSON: as they are where
        # that writes them unchanged, one by one where it would change them.
        as_is = keyed.copy()
        present = found.keys.filter(pa.array(keyed)).to_pylist()
        for at, key in zip(np.flatnonzero(keyed).tolist(), present, strict=True):
            as_is[at] = json_as_is(key)
        keys = pc.if_else(pa.array(as_is), found.keys, pa.scalar(b"null", pa.binary()))
        lines = joined(b'{"key":', keys, b',"value":', found.values, b"}\n")
        rest = np.flatnonzero(keyed & ~as_is)
        if len(rest):
            taken = pa.array(rest)
            one_by_one: list[bytes | None] = []
            for row, value, key in zip(
                rest.tolist(),
                found.values.take(taken).to_pylist(),
                found.keys.take(taken).to_pylist(),
                strict=True,
            ):
                try:
                    one_by_one.append(self.writer.render(Message(value, key)))
                except CodecError:
                    one_by_one.append(None)
                    refused[row] = True
            mask = np.zeros(len(lines), dtype=bool)
            mask[rest] = True
            lines = pc.replace_with_mask(lines, pa.array(mask), pa.array(one_by_one, pa.binary()))
        return lines, refused


class WrittenChunk:
    """The bytes of a chunk's messages written from columns, passed on in runs."""

    def __init__(self, writer: MessageWriter, rows: np.ndarray, count: int, rendered: pa.Array):
        self.stream = writer.stream
        self.slot = np.full(count, -1, dtype=np.int64)
        self.slot[rows] = np.arange(len(rows))
        self.missing = np.flatnonzero(self.slot < 0)
        offsets = rendered.buffers()[1]
        self.offsets = np.frombuffer(offsets, dtype=np.int32)[
            rendered.offset : rendered.offset + len(rendered) + 1
        ]
        data = rendered.buffers()[2]
        self.data = memoryview(data) if data is not None else memoryview(b"")

    def run_end(self, index: int) -> int:
        """The end of the run of messages written from columns that starts at ``index``
        (``index`` itself when that message was not)."""
        at = int(np.searchsorted(self.missing, index))
        return int(self.missing[at]) if at < len(self.missing) else len(self.slot)

    def write_run(self, start: int, end: int) -> None:
        """Pass on the messages ``start`` to ``end`` (a run of :meth:`run_end`)."""
        first, last = int(self.slot[start]), int(self.slot[end - 1])
        self.stream.write(self.data[self.offsets[first] : self.offsets[last + 1]])  # no copy
