"""The OpenCDC record (Conduit's record format) and its JSON and protobuf codecs.

One small module per concept: ``operation``, ``data``, ``metadata``,
``record``, ``keys`` (standard metadata key names, read from the .proto),
``structured`` (what structured data may hold), ``json_codec``,
``proto_codec``. Nothing here knows of Spark. Streams of protobuf records
(length-delimited) are read and written by :mod:`cdc_connectors.convert`.
"""

from cdc_connectors.errors import CodecError
from cdc_connectors.opencdc import keys
from cdc_connectors.opencdc.data import Change, Data, RawData, StructuredData
from cdc_connectors.opencdc.json_codec import (
    read_json_lines,
    record_from_json,
    record_to_json,
    write_json_lines,
)
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.opencdc.proto_codec import (
    record_from_proto,
    record_from_proto_bytes,
    record_to_proto,
    record_to_proto_bytes,
)
from cdc_connectors.opencdc.record import Record

__all__ = [
    "Change",
    "CodecError",
    "Data",
    "Metadata",
    "Operation",
    "RawData",
    "Record",
    "StructuredData",
    "keys",
    "read_json_lines",
    "record_from_json",
    "record_from_proto",
    "record_from_proto_bytes",
    "record_to_json",
    "record_to_proto",
    "record_to_proto_bytes",
    "write_json_lines",
]
