from __future__ import annotations

import io

import pytest

from cdc_connectors.opencdc import (
    CodecError,
    Record,
    read_delimited_records,
    record_from_json,
    record_from_proto_bytes,
    record_to_proto,
    record_to_proto_bytes,
    write_delimited_records,
)
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2
from cdc_connectors.opencdc.proto_codec import delimit

from .canonical import CANONICAL


@pytest.mark.parametrize("doc", CANONICAL)
def test_canonical_records_round_trip_through_protobuf(doc):
    record = record_from_json(doc)
    assert record_from_proto_bytes(record_to_proto_bytes(record)) == record


def test_message_fields_are_set_as_conduit_expects():
    record = Record.new("delete", position=b"p", key=b"k", before={"id": 1}, collection="t")
    msg = record_to_proto(record)
    assert msg.operation == opencdc_pb2.OPERATION_DELETE
    assert msg.key.WhichOneof("data") == "raw_data"
    assert msg.payload.before.WhichOneof("data") == "structured_data"
    assert not msg.payload.HasField("after")
    assert msg.metadata["opencdc.collection"] == "t"


def test_absent_and_empty_raw_data_are_distinct():
    record = Record.new("create", key=b"", after=None)
    back = record_from_proto_bytes(record_to_proto_bytes(record))
    assert back.key == b""
    assert back.payload.after is None


def test_struct_numbers_are_doubles_integral_ones_come_back_as_int():
    record = Record.new("create", after={"i": 7, "f": 1.5, "nested": {"l": [1, 2.25, None, True]}})
    back = record_from_proto_bytes(record_to_proto_bytes(record)).payload.after
    assert back == {"i": 7, "f": 1.5, "nested": {"l": [1, 2.25, None, True]}}
    assert type(back["i"]) is int


def test_delimited_stream_round_trips_many_records():
    records = [Record.new("create", position=str(i).encode(), after={"i": i}) for i in range(50)]
    buffer = io.BytesIO()
    assert write_delimited_records(buffer, records) == 50
    buffer.seek(0)
    assert list(read_delimited_records(buffer)) == records


def test_truncated_delimited_stream_names_message_and_offset():
    one = delimit(record_to_proto_bytes(Record.new("create", after={"a": 1})))
    two = delimit(record_to_proto_bytes(Record.new("update", after={"a": 2})))
    reader = read_delimited_records(io.BytesIO(one + two[:-3]))
    assert next(reader).payload.after == {"a": 1}
    with pytest.raises(CodecError, match=rf"message 2, byte {len(one)}: truncated message"):
        next(reader)


def test_garbage_protobuf_is_a_codec_error():
    with pytest.raises(CodecError, match=r"invalid opencdc\.v1\.Record protobuf"):
        record_from_proto_bytes(b"\x0a\xff\xff\xff")


def test_unknown_operation_number_on_the_wire_is_a_codec_error():
    msg = opencdc_pb2.Record(operation=9)
    with pytest.raises(CodecError, match="unknown operation number 9"):
        record_from_proto_bytes(msg.SerializeToString())


def test_empty_structured_data_stays_structured():
    back = record_from_proto_bytes(record_to_proto_bytes(Record.new("create", after={})))
    assert back.payload.after == {}
