"""Debezium-shaped formats: Debezium's change events and the dialects written like them.

- :mod:`.json_format`: ``debezium-json``, :class:`DebeziumJsonFormat` and its decoding
  (the mapping to OpenCDC is its module docstring); :mod:`.envelope`: what a dialect
  writes, as data (:class:`Envelope`); :mod:`.reading`: the parts of reading one event;
  :mod:`.kafka_keys`: a record's key; :mod:`.row_schemas`: the row schemas of ``schema``
  blocks, parsed once and registered; :mod:`.encode`: writing events, with the Connect
  schema blocks of :mod:`.connect_blocks`.
- :mod:`.avro_format`: ``debezium-avro``, the same events as Confluent-framed Avro.
- Dialects: :mod:`.arcion` (``arcion-json``), :mod:`.lindorm` (``lindorm-json``, with the
  HBase rows of :mod:`.hbase_rows`), :mod:`.ydb` (``ydb-debezium-json``) and :mod:`.cdl`
  (``cdl-json``).
"""

from __future__ import annotations

from cdc_connectors.formats.debezium.connect_blocks import avro_to_connect
from cdc_connectors.formats.debezium.envelope import UNAVAILABLE_VALUE, Envelope
from cdc_connectors.formats.debezium.json_format import DebeziumJsonFormat
from cdc_connectors.formats.debezium.reading import parse_kafka_key, unwrap
from cdc_connectors.opencdc.jsonkinds import json_kind

__all__ = [
    "UNAVAILABLE_VALUE",
    "DebeziumJsonFormat",
    "Envelope",
    "avro_to_connect",
    "json_kind",
    "parse_kafka_key",
    "unwrap",
]
