"""Which columnar converter writes a source format's messages in a destination format.

:func:`columns_for` gives the converter of a pair of formats the columns serve (Debezium
JSON dialects described by their envelope, :mod:`~cdc_connectors.columnar.debezium_opencdc`;
``debezium-avro``, :mod:`~cdc_connectors.columnar.debezium_avro_opencdc`; ``avro`` rows,
:mod:`~cdc_connectors.columnar.avro_opencdc`; ``protobuf`` rows,
:mod:`~cdc_connectors.columnar.protobuf_opencdc`; CDL's Debezium JSON,
:mod:`~cdc_connectors.columnar.cdl_opencdc`; YDB's own JSON,
:mod:`~cdc_connectors.columnar.ydb_opencdc`; OpenCDC JSON itself,
:mod:`~cdc_connectors.columnar.opencdc_json_opencdc`, and protobuf,
:mod:`~cdc_connectors.columnar.opencdc_proto_opencdc`; each to OpenCDC protobuf or JSON; and
Debezium JSON to ``avro`` rows, :mod:`~cdc_connectors.columnar.debezium_avro_rows`, and
``debezium-avro`` likewise, :mod:`~cdc_connectors.columnar.debezium_avro_to_rows` (and to
``protobuf`` rows, :mod:`~cdc_connectors.columnar.debezium_avro_protobuf_rows`); Debezium
JSON to ``debezium-avro``, :mod:`~cdc_connectors.columnar.debezium_avro_envelopes`, and to
Confluent ``protobuf`` rows, :mod:`~cdc_connectors.columnar.debezium_protobuf_rows`; CDL's
Debezium JSON to each of those and to Debezium JSON,
:mod:`~cdc_connectors.columnar.cdl_debezium`), else ``None``: the per-message way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa

from cdc_connectors.columnar.avro_opencdc import AvroToOpenCDC
from cdc_connectors.columnar.cdl_debezium import (
    CdlToAvroRows,
    CdlToDebeziumAvro,
    CdlToDebeziumJson,
    CdlToProtobufRows,
)
from cdc_connectors.columnar.cdl_opencdc import CdlToOpenCDC
from cdc_connectors.columnar.debezium_avro_envelopes import DebeziumToDebeziumAvro
from cdc_connectors.columnar.debezium_avro_opencdc import DebeziumAvroToOpenCDC
from cdc_connectors.columnar.debezium_avro_protobuf_rows import DebeziumAvroToProtobufRows
from cdc_connectors.columnar.debezium_avro_rows import DebeziumToAvroRows
from cdc_connectors.columnar.debezium_avro_to_rows import DebeziumAvroToAvroRows
from cdc_connectors.columnar.debezium_opencdc import Columnar, DebeziumToOpenCDC
from cdc_connectors.columnar.debezium_protobuf_rows import DebeziumToProtobufRows
from cdc_connectors.columnar.opencdc_json_opencdc import OpenCDCJsonToOpenCDC
from cdc_connectors.columnar.opencdc_proto_opencdc import OpenCDCProtoToOpenCDC
from cdc_connectors.columnar.protobuf_opencdc import ProtobufToOpenCDC
from cdc_connectors.columnar.ydb_opencdc import YdbToOpenCDC
from cdc_connectors.formats.base import Format

__all__ = ["ColumnarConverter", "checks_values", "columns_for", "serves"]


class ColumnarConverter(Protocol):
    """Raw messages -> the destination's messages of the rows the columns take."""

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar: ...


#: Each converter, the first that serves a pair of formats taking it (the Avro and CDL
#: formats are Debezium JSON's subclasses, so they come before it).
CONVERTERS: tuple[Any, ...] = (
    DebeziumAvroToAvroRows,
    DebeziumAvroToProtobufRows,
    DebeziumAvroToOpenCDC,
    CdlToOpenCDC,
    CdlToAvroRows,
    CdlToProtobufRows,
    CdlToDebeziumAvro,
    CdlToDebeziumJson,
    ProtobufToOpenCDC,
    AvroToOpenCDC,
    OpenCDCJsonToOpenCDC,
    OpenCDCProtoToOpenCDC,
    YdbToOpenCDC,
    DebeziumToAvroRows,
    DebeziumToDebeziumAvro,
    DebeziumToProtobufRows,
    DebeziumToOpenCDC,
)


def serves(source: Format, destination: Format) -> bool:
    """Whether the columns write what ``source.decode`` then ``destination.encode`` do."""
    return any(converter.serves(source, destination) for converter in CONVERTERS)


def checks_values(source: Format, destination: Format) -> bool:
    """Whether the columns of ``source`` to ``destination`` take only messages whose value
    is one JSON value, exactly as the per-message way reads it, and leave every other to
    that way, so that a reader of kv lines may leave the values unchecked
    (:func:`~cdc_connectors.convert.kv_columns.kv_columns`). Not with a schema registry on
    either side: the columns register the schemas of the rows they take before the
    per-message way registers the others', so the rows they take must be those they
    took when the values were checked (a value that is no JSON value takes up the columns'
    attempts at a batch, which then take fewer rows)."""
    if getattr(source, "registry_url", None) or getattr(destination, "registry_url", None):
        return False
    for converter in CONVERTERS:
        if converter.serves(source, destination):
            return bool(getattr(converter, "checks_values", False))
    return False


def columns_for(
    source: Format,
    destination: Format,
    topic: Sequence[tuple[str, str | None]] | None = None,
) -> ColumnarConverter | None:
    """The converter of ``source`` to ``destination`` (``topic``: a Kafka topic template's
    parts, rendered per message), or ``None`` when the columns do not serve them."""
    for converter in CONVERTERS:
        if converter.serves(source, destination):
            found: ColumnarConverter = converter(source, destination, topic)
            return found
    return None
