"""The convert engine: a stream of one format converted to another, without Spark.

- :mod:`.streams`: how files and stdin hold messages (lines, kv lines,
  length-delimited), and length-delimited ``opencdc.v1.Record`` streams
  (:func:`read_delimited_records`, :func:`write_delimited_records`);
- :mod:`.engine`: the convert loop, its counts and fail-fast;
- :mod:`.deadletter`: messages that failed, kept whole with their reason;
- :mod:`.files`: the command's files and standard streams, checked before
  anything is touched, written whole or not at all.
"""

from cdc_connectors.convert.deadletter import DeadLetterWriter, dead_letter
from cdc_connectors.convert.engine import ConvertStats, FailFast, convert_stream
from cdc_connectors.convert.streams import (
    MessageWriter,
    delimit,
    iter_delimited,
    layout_of,
    read_delimited_records,
    read_messages,
    write_delimited_records,
)

__all__ = [
    "ConvertStats",
    "DeadLetterWriter",
    "FailFast",
    "MessageWriter",
    "convert_stream",
    "dead_letter",
    "delimit",
    "iter_delimited",
    "layout_of",
    "read_delimited_records",
    "read_messages",
    "write_delimited_records",
]
