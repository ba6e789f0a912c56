"""Dead-letter records: a message that could not be converted, kept whole with its reason.

A dead-letter record is an OpenCDC record, written as OpenCDC JSON: its
``position`` is the place of the message (``file:line``, ``file: message N,
byte B``, ``topic/partition/offset``), ``key`` and ``payload.after`` are the
original key and value bytes (raw data; for a broken length-delimited stream,
every byte from the broken message to the end), and the metadata carries
Conduit's DLQ keys ``conduit.dlq.nack.error`` (the reason) and
``conduit.dlq.nack.node.id`` (which step failed).
"""

from __future__ import annotations

import time

from cdc_connectors.convert.streams import ByteWriter
from cdc_connectors.formats.base import Message
from cdc_connectors.opencdc import Operation, Record, keys
from cdc_connectors.opencdc.json_codec import record_to_json
from cdc_connectors.text import printable


def dead_letter(message: Message, reason: str, node_id: str) -> Record:
    """The dead-letter record of ``message``, which failed at ``node_id`` because of ``reason``."""
    return Record.new(
        Operation.CREATE,
        position=printable(message.where).encode("utf-8"),
        key=message.key,
        after=message.value,
        metadata={
            keys.CONDUIT_DLQ_NACK_ERROR: printable(reason),
            keys.CONDUIT_DLQ_NACK_NODE_ID: printable(node_id),
        },
        read_at=time.time_ns(),
    )


class DeadLetterWriter:
    """Appends dead-letter records to a stream as OpenCDC JSON lines."""

    def __init__(self, stream: ByteWriter, node_id: str):
        self.stream = stream
        self.node_id = node_id
        self.count = 0

    def write(self, message: Message, reason: str) -> None:
        self.stream.write(record_to_json(dead_letter(message, reason, self.node_id)) + b"\n")
        self.count += 1
