"""Debezium Avro messages -> the ``protobuf`` destination's rows, from Arrow columns.

:class:`DebeziumAvroToProtobufRows` writes what ``DebeziumAvroFormat.decode`` then
``ProtobufFormat.encode`` give, for the messages the columns take exactly: the change events
decoded and their schemas named as for ``avro`` rows
(:class:`~cdc_connectors.columnar.debezium_avro_to_rows.DebeziumAvroToAvroRows`), the
``after`` image written as the message of the destination's schema for the row's
collection (:class:`~cdc_connectors.columnar.protobuf_rows.ProtobufRows`), a delete as a
tombstone, an Avro record key likewise.

Every other message goes the per-message way: what the ``avro`` rows leave of the events
and keys, times of day (text the per-message way), and rows or collections the Protobuf
columns do not write (see :mod:`~cdc_connectors.columnar.protobuf_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from cdc_connectors.columnar.debezium_avro_opencdc import ValueSchema
from cdc_connectors.columnar.debezium_avro_to_rows import DebeziumAvroToAvroRows, ReadAvroKeys
from cdc_connectors.columnar.debezium_protobuf_rows import times_as_text
from cdc_connectors.columnar.protobuf_rows import Bodies, ProtobufRows
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.formats.protobuf import ProtobufFormat

__all__ = ["DebeziumAvroToProtobufRows"]


class DebeziumAvroToProtobufRows(DebeziumAvroToAvroRows):
    """Debezium Avro -> Confluent-framed Protobuf rows, column by column (module docstring)."""

    destination: ProtobufFormat  # type: ignore[assignment]

    def __init__(
        self,
        fmt: DebeziumAvroFormat,
        destination: ProtobufFormat,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        """``topic``: a Kafka topic template's parts, as for OpenCDC."""
        super().__init__(fmt, destination, topic)  # type: ignore[arg-type]
        self._values = ProtobufRows(destination, "payload")  # type: ignore[assignment]
        self._key_rows = ProtobufRows(destination, "key")  # type: ignore[assignment]

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """``debezium-avro`` itself, without ``key.fields``, to ``protobuf`` rows written
        with the registry the source names its schemas in (the same URL), without
        ``raw.keys``."""
        return (
            type(source) is DebeziumAvroFormat
            and not source.key_fields
            and type(destination) is ProtobufFormat
            and bool(source.registry_url)
            and destination.registry_url == source.registry_url
            and not destination.raw_keys
        )

    def _encode_values(
        self,
        schema: ValueSchema,
        after: pa.Array,
        present: np.ndarray,
        names: tuple[pa.Array, pa.Array],
        collection: pa.Array,
    ) -> Bodies:
        values: ProtobufRows = self._values  # type: ignore[assignment]
        return values.encode(after, present, collection, times_as_text(schema.row))

    def _encode_keys(
        self,
        read: ReadAvroKeys,
        names: tuple[pa.Array, pa.Array],
        collection: pa.Array,
        bad: np.ndarray,
    ) -> Bodies:
        """The Protobuf bodies of the keys read, each key schema's rows encoded together;
        a key holding a time of day is left to the per-message way."""
        encoded = Bodies.empty(len(collection))
        keys: ProtobufRows = self._key_rows  # type: ignore[assignment]
        for rows, typed in read.typed:
            wanted = ~bad[rows]
            if not wanted.any():
                continue
            rows, typed = rows[wanted], typed.filter(pa.array(wanted))
            leave = frozenset(f.name for f in typed.type if _holds_time(f.type))
            of = collection.take(pa.array(rows))
            encoded.place(keys.encode(typed, np.ones(len(rows), dtype=bool), of, leave), rows)
        return encoded


def _holds_time(type_: pa.DataType) -> bool:
    """Whether ``type_`` is or holds a time of day."""
    if pa.types.is_time(type_):
        return True
    if pa.types.is_struct(type_):
        return any(_holds_time(type_.field(i).type) for i in range(type_.num_fields))
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return _holds_time(type_.value_type)
    return False
