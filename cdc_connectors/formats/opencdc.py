"""OpenCDC itself as a format: ``opencdc-json`` and ``opencdc-proto``.

The whole record travels in the message value; the Kafka key written is the
record key's bytes (raw data as is, structured data as JSON), as Conduit's
Kafka destination does.

| format | value | options |
|---|---|---|
| ``opencdc-json`` | one OpenCDC JSON document | ``raw.as.string``: raw data as plain text |
| ``opencdc-proto`` | one ``opencdc.v1.Record`` message; files are length-delimited | none |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from cdc_connectors.formats.base import Format, Message, SkipMessage
from cdc_connectors.opencdc import Record
from cdc_connectors.opencdc.json_codec import data_to_bytes, record_from_json, record_to_json
from cdc_connectors.opencdc.proto_codec import record_from_proto_bytes, record_to_proto_bytes


class OpenCDCJsonFormat(Format):
    """OpenCDC JSON, exactly as Conduit writes and reads it."""

    name = "opencdc-json"
    whole_records = True
    options: ClassVar[Mapping[str, str]] = {
        "raw.as.string": "write and read raw data as plain UTF-8 strings, not base64"
    }

    def configure(self) -> None:
        self.raw_as_string = self.flag("raw.as.string")

    def decode(self, message: Message) -> list[Record]:
        if message.value is None:
            raise SkipMessage("tombstone")
        return [record_from_json(message.value, raw_as_string=self.raw_as_string)]

    def encode(self, record: Record) -> Message:
        return Message(
            value=record_to_json(record, raw_as_string=self.raw_as_string),
            key=data_to_bytes(record.key),
        )


class OpenCDCProtoFormat(Format):
    """OpenCDC protobuf (``opencdc.v1.Record``), wire-compatible with Conduit."""

    name = "opencdc-proto"
    whole_records = True
    binary = True
    delimited = True

    def decode(self, message: Message) -> list[Record]:
        if message.value is None:
            raise SkipMessage("tombstone")
        return [record_from_proto_bytes(message.value)]

    def encode(self, record: Record) -> Message:
        return Message(value=record_to_proto_bytes(record), key=data_to_bytes(record.key))
