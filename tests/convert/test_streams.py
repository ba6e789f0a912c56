"""Length-delimited streams: protobuf's varint prefixes, and every way a stream can break."""

from __future__ import annotations

import io

import pytest
from google.protobuf.internal.encoder import _VarintBytes

from cdc_connectors.convert import (
    delimit,
    iter_delimited,
    read_delimited_records,
    read_messages,
    write_delimited_records,
)
from cdc_connectors.formats.opencdc import OpenCDCProtoFormat
from cdc_connectors.opencdc import CodecError, Record, record_to_proto_bytes


def _two() -> tuple[bytes, bytes]:
    one = delimit(record_to_proto_bytes(Record.new("create", after={"a": 1})))
    two = delimit(record_to_proto_bytes(Record.new("update", after={"a": 2})))
    return one, two


def test_delimited_stream_round_trips_many_records():
    records = [Record.new("create", position=str(i).encode(), after={"i": i}) for i in range(50)]
    buffer = io.BytesIO()
    assert write_delimited_records(buffer, records) == 50
    buffer.seek(0)
    assert list(read_delimited_records(buffer)) == records


def test_prefixes_are_protobufs_varints_and_a_message_larger_than_a_read_chunk_survives():
    big = b"x" * 300_000  # several read chunks
    stream = delimit(b"") + delimit(b"a" * 300) + delimit(big)
    assert stream[:4] == b"\x00" + bytes([0xAC, 0x02]) + b"a"  # 300 = 0xAC 0x02
    assert [m for _, m in iter_delimited(io.BytesIO(stream))] == [b"", b"a" * 300, big]
    assert [o for o, _ in iter_delimited(io.BytesIO(stream))] == [0, 1, 303]


def test_non_canonical_varint_prefixes_are_read_as_protobuf_reads_them():
    padded = bytes([0x83, 0x80, 0x00]) + b"abc"  # 3, written with padding bytes
    assert list(iter_delimited(io.BytesIO(padded))) == [(0, b"abc")]


def test_truncated_message_names_message_and_offset_and_keeps_the_tail():
    one, two = _two()
    reader = read_delimited_records(io.BytesIO(one + two[:-3]), source="in.pb")
    assert next(reader).payload.after == {"a": 1}
    with pytest.raises(CodecError) as caught:
        next(reader)
    assert caught.value.where == f"in.pb: message 2, byte {len(one)}"
    assert caught.value.reason.startswith("truncated message: the length prefix says")
    assert caught.value.data == two[:-3]  # prefix and all, from the broken message's offset on


@pytest.mark.parametrize(
    ("prefix", "reason"),
    [
        (_VarintBytes(2**31), "beyond protobuf's 2 GiB message limit"),
        (_VarintBytes(2**63), "beyond protobuf's 2 GiB message limit"),
        (_VarintBytes(2**64 - 1), "beyond protobuf's 2 GiB message limit"),
        (b"\xff" * 9 + b"\x7f", "more than 64 bits"),  # would be masked to 2**64 - 1 silently
        (b"\xff" * 11, "not a varint"),
        (b"\x80\x80", "ends inside a length prefix"),
        (_VarintBytes(2**31 - 1), "truncated message"),  # allowed size, but not there
    ],
)
def test_broken_length_prefix_is_a_codec_error_with_offset_and_tail(prefix, reason):
    one, _ = _two()
    tail = prefix + b"rest of the stream"
    if reason == "ends inside a length prefix":
        tail = prefix
    messages = iter_delimited(io.BytesIO(one + tail))
    assert next(messages)[1] == one[1:]
    with pytest.raises(CodecError, match=reason) as caught:
        next(messages)
    assert caught.value.where == f"message 2, byte {len(one)}"
    assert caught.value.data == tail


def test_a_huge_length_prefix_reads_only_what_is_there():
    # 2**31 - 1 would be 2 GiB if read at once; only the bytes present are held
    stream = io.BytesIO(_VarintBytes(2**31 - 1) + b"tiny")
    with pytest.raises(CodecError, match="the stream holds 4"):
        list(iter_delimited(stream))


def test_convert_stream_yields_the_broken_tail_as_one_located_error():
    one, two = _two()
    items = list(read_messages(io.BytesIO(one + two[:-3]), OpenCDCProtoFormat, source="s.pb"))
    assert items[0].where == "s.pb: message 1, byte 0"
    error = items[1]
    assert isinstance(error, CodecError)
    assert error.where == f"s.pb: message 2, byte {len(one)}"
    assert error.data == two[:-3]


@pytest.mark.parametrize("kv", [False, True])
def test_bulk_chunks_hold_a_bounded_number_of_bytes(kv: bool) -> None:
    from cdc_connectors.convert.streams import Chunk, read_chunks
    from cdc_connectors.formats.opencdc import OpenCDCJsonFormat

    line = b'{"key":null,"value":{"a":1}}\n' if kv else b'{"a":1}\n'
    found = list(read_chunks(io.BytesIO(line * 7), OpenCDCJsonFormat, kv=kv, max_bytes=21))
    assert all(isinstance(chunk, Chunk) for chunk in found)
    assert [len(chunk.values) for chunk in found] == [3, 3, 1]  # type: ignore[union-attr]
