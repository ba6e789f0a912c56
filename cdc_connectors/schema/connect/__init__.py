"""Kafka Connect schemas as Avro: the ``schema`` block of a JSON envelope, and its values.

Debezium, CDL and Arcion write Kafka Connect's JSON envelope,
``{"schema": ..., "payload": ...}``. ``connect_to_avro`` turns the ``schema`` block into
the Avro schema Confluent's AvroConverter (``AvroData.fromConnectSchema``, default
settings) registers for it: the same records, names, unions, defaults and
``connect.*`` properties. ``connect_value`` turns a ``payload`` value into the Python
values fastavro writes for that schema.

Semantic types (a schema ``name`` such as ``io.debezium.time.MicroTimestamp``) live in
one table, ``SEMANTIC_TYPES``: the Avro type a consumer gets and the value converter.
Where AvroData leaves a Debezium or vendor type as its bare base type, the table adds
the Avro logical type that says what the number or string means, so Avro readers
(fastavro, Spark) get dates, timestamps and decimals.

Two deliberate departures from AvroData, both for readers that follow the Avro
specification (fastavro, confluent-kafka-python): a dotless record name that occurs
more than once inside a namespaced record inherits that namespace (AvroData writes a
bare reference that only Java's parser resolves), and ``VariableScaleDecimal`` is the
exact decimal text (an Avro decimal needs one scale for all values).

One module per job: ``types`` holds the table, ``readers`` and ``writers`` the value
conversions it names, ``avrodata`` AvroData's names and parameters; ``parse`` checks a
``schema`` block into ``ConnectSchema`` nodes (``node``), ``convert`` and ``values`` read
``payload`` values through them, ``avro`` and ``avro_defaults`` spell the Avro schema.
"""

from cdc_connectors.schema.connect.avro import connect_to_avro
from cdc_connectors.schema.connect.avrodata import (
    DEFAULT_DECIMAL_PRECISION,
    DEFAULT_RECORD_NAME,
    MAP_ENTRY_NAME,
    NAMESPACE,
)
from cdc_connectors.schema.connect.node import ConnectSchema
from cdc_connectors.schema.connect.parse import parse_connect_schema
from cdc_connectors.schema.connect.readers import Params
from cdc_connectors.schema.connect.types import (
    AVRO_LOGICAL_CONNECT,
    SEMANTIC_TYPES,
    Columnar,
    SemanticType,
    semantic_type,
)
from cdc_connectors.schema.connect.values import connect_value

__all__ = [
    "AVRO_LOGICAL_CONNECT",
    "DEFAULT_DECIMAL_PRECISION",
    "DEFAULT_RECORD_NAME",
    "MAP_ENTRY_NAME",
    "NAMESPACE",
    "SEMANTIC_TYPES",
    "Columnar",
    "ConnectSchema",
    "Params",
    "SemanticType",
    "connect_to_avro",
    "connect_value",
    "parse_connect_schema",
    "semantic_type",
]
