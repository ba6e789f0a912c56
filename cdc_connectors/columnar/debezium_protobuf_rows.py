"""Debezium JSON messages -> the ``protobuf`` destination's rows, from Arrow columns.

:class:`DebeziumToProtobufRows` writes what ``DebeziumJsonFormat.decode`` (with a registry)
then ``ProtobufFormat.encode`` give, for the messages the columns take exactly: the value is
the ``after`` image of the typed columns (as for ``avro``,
:class:`~cdc_connectors.columnar.debezium_avro_rows.DebeziumToAvroRows`), written as the
message of the destination's schema for the row's collection
(:class:`~cdc_connectors.columnar.protobuf_rows.ProtobufRows`); a delete is a tombstone. A
key with a ``schema`` block is read into typed columns and written likewise.

Every other message goes the per-message way: what the ``avro`` rows leave of the keys,
and rows or collections the Protobuf columns do not write (see
:mod:`~cdc_connectors.columnar.protobuf_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.debezium_avro_rows import (
    DebeziumToAvroRows,
    ReadKeys,
    names_schemas_for,
)
from cdc_connectors.columnar.protobuf_rows import Bodies, ProtobufRows
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.protobuf import ProtobufFormat
from cdc_connectors.schema.connect import ConnectSchema

__all__ = ["DebeziumToProtobufRows", "times_as_text"]


class DebeziumToProtobufRows(DebeziumToAvroRows):
    """Debezium JSON -> Confluent-framed Protobuf rows, column by column (module docstring)."""

    destination: ProtobufFormat  # type: ignore[assignment]

    def __init__(
        self,
        fmt: DebeziumJsonFormat,
        destination: ProtobufFormat,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        """``topic``: a Kafka topic template's parts (as for OpenCDC)."""
        super().__init__(fmt, destination, topic)  # type: ignore[arg-type]
        self._values = ProtobufRows(destination, "payload")  # type: ignore[assignment]
        self._key_rows = ProtobufRows(destination, "key")  # type: ignore[assignment]

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Debezium JSON dialects described by their envelope alone, without ``key.fields``,
        with the registry the ``protobuf`` destination writes with (the same URL), which
        has no ``raw.keys``."""
        return (
            type(destination) is ProtobufFormat
            and names_schemas_for(source, destination)
            and not destination.raw_keys
        )

    def _encode_values(  # type: ignore[override]
        self,
        batch: pa.RecordBatch,
        metadata: pa.MapArray,
        collections: pa.Array,
        row: ConnectSchema,
    ) -> Bodies:
        """The value bodies of the decoded rows: the ``after`` image; a delete has none.
        Times of day in ``row`` leave their rows to the per-message way."""
        after = batch.column("after")
        present = wire.valid(after) & ~wire.mask(pc.equal(batch.column("operation"), "delete"))
        values: ProtobufRows = self._values  # type: ignore[assignment]
        return values.encode(after, present, collections, times_as_text(row))

    def _encode_keys(  # type: ignore[override]
        self, read: ReadKeys, local: np.ndarray, collections: pa.Array
    ) -> tuple[Bodies | None, np.ndarray]:
        """The Protobuf bodies of the message keys of the decoded rows (``local``: their
        places among the keys read), each key's source schema named as the per-message
        way's decode names it; and the rows whose key the per-message way must write."""
        count = len(local)
        if not read.keyed:
            return None, np.zeros(count, dtype=bool)
        encoded = Bodies.empty(count)
        where = np.full(len(read.eligible), -1, dtype=np.int64)
        where[local] = np.arange(count)
        keys: ProtobufRows = self._key_rows  # type: ignore[assignment]
        for group in read.groups:
            decoded = where[group.rows] >= 0
            if not decoded.any():
                continue
            at = where[group.rows[decoded]]
            of = collections.take(pa.array(at))
            if self._key_names(group.row, of) is None:
                encoded.refused[at] = True
                continue
            typed = group.typed.filter(pa.array(decoded))
            leave = times_as_text(group.row.connect)
            encoded.place(keys.encode(typed, np.ones(len(at), dtype=bool), of, leave), at)
        return encoded, encoded.refused


def times_as_text(row: ConnectSchema) -> frozenset[str]:
    """The fields of ``row`` whose values the typed columns hold as counts and the
    per-message way as text: times of day, and lists and structs holding one."""
    return frozenset(name for name, field in row.fields if _holds_time_of_day(field))


def _holds_time_of_day(node: ConnectSchema | None) -> bool:
    if node is None:
        return False
    semantic = node.semantic
    columnar = None if semantic is None else semantic.columnar
    if columnar is not None:
        return columnar.kind == "time_of_day"
    return _holds_time_of_day(node.items) or any(
        _holds_time_of_day(field) for _, field in node.fields
    )
