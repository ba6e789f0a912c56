"""What Confluent's AvroData names and reads: its namespace, the names it gives what Connect
leaves unnamed, the parameters that shape an Avro type, the Avro type of each Connect primitive."""

from __future__ import annotations

__all__ = [
    "DEFAULT_DECIMAL_PRECISION",
    "DEFAULT_RECORD_NAME",
    "FIELD_DEFAULT_FLAG",
    "FIELD_DOC_PREFIX",
    "FIXED_SIZE",
    "MAP_ENTRY_NAME",
    "NAMESPACE",
    "PRIMITIVE_AVRO",
    "RECORD_DOC",
    "SHAPING_PARAMETERS",
    "UNION",
]

#: Namespace and record names AvroData gives what Connect leaves unnamed.
NAMESPACE = "io.confluent.connect.avro"
DEFAULT_RECORD_NAME = "ConnectDefault"
MAP_ENTRY_NAME = "MapEntry"
#: AvroData's precision when a Connect Decimal does not carry one.
DEFAULT_DECIMAL_PRECISION = 64

PRIMITIVE_AVRO = {
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "long",
    "float32": "float",
    "float64": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}
# AvroData's parameters: these shape the Avro schema instead of being copied as data.
FIELD_DOC_PREFIX = NAMESPACE + ".field.doc."
RECORD_DOC = NAMESPACE + ".record.doc"
FIELD_DEFAULT_FLAG = NAMESPACE + ".field.default"
FIXED_SIZE = "connect.fixed.size"
UNION = NAMESPACE + ".Union"
# Parameters that change a named type's Avro definition beyond its properties: a fixed size,
# AvroData's docs and default flag, ``avro*`` copied as they are. Others are data about the
# column (Debezium's ``__debezium.source.column.type``), which a shared definition need not
# agree on.
SHAPING_PARAMETERS = (FIXED_SIZE, NAMESPACE + ".", "avro")
