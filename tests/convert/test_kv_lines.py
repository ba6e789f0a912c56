"""--kv lines: exactly {"key": ..., "value": ...}, their members passed on as written."""

from __future__ import annotations

import io

import orjson
import pytest

from cdc_connectors.convert import DeadLetterWriter, MessageWriter, convert_stream, read_messages
from cdc_connectors.formats.base import Message
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
from cdc_connectors.opencdc import CodecError, record_from_json
from tests.conftest import run_cli

BIG = b'{"operation":"create","payload":{"after":{"b":18446744073709551616}}}'


def _read(data: bytes, fmt: type = OpenCDCJsonFormat) -> list[Message | CodecError]:
    return list(read_messages(io.BytesIO(data), fmt, kv=True, source="in"))


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"operation":"create","payload":{"after":{"a":1}}}', "'operation'"),
        (b'{"key":"k"}', 'no "value" member'),
        (b"{}", 'no "value" member'),
        (b'{"key":1,"value":null,"headers":[]}', "'headers'"),
        (b'{"value":1,"key":2,"value":3}', "two 'value' members"),
        (b'{"key":1,"value":2,"value":3}', "two 'value' members"),
        (b"[1]", "not an array"),
        (b'"x"', "not a string"),
    ],
)
def test_a_line_that_is_not_exactly_key_and_value_is_an_error_naming_it(line, reason):
    (item,) = _read(line + b"\n")
    assert isinstance(item, CodecError)
    assert item.where == "in:1"
    assert reason in item.reason
    assert item.data == line


def test_plain_opencdc_lines_read_as_kv_are_errors_not_tombstones():
    lines = b'{"operation":"create","payload":{"after":{"a":1}}}\n' * 3
    stats = convert_stream(
        io.BytesIO(lines), io.BytesIO(), OpenCDCJsonFormat(), OpenCDCJsonFormat(), kv_in=True
    )
    assert (stats.errors, sum(stats.skipped.values()), stats.written) == (3, 0, 0)


def test_an_explicit_null_value_is_a_tombstone_and_the_key_may_be_left_out():
    items = _read(b'{"key":"k","value":null}\n{"value":{"a":1}}\n')
    assert [(m.key, m.value) for m in items] == [(b'"k"', None), (None, b'{"a":1}')]


@pytest.mark.parametrize(
    "line",
    [
        b'{"key":{"id":18446744073709551616},"value":%s}',
        b'{ "key" : {"id":18446744073709551616} , "value" : %s }',
        b'{"value":%s,"key":{"id":18446744073709551616}}',
        b'{"k\\u0065y":{"id":18446744073709551616},"value":%s}',
        b'{"key":{"x":1,"value":2,"id":18446744073709551616},"value":%s}',
    ],
)
def test_members_reach_the_format_as_written(line):
    (item,) = _read(line.replace(b"%s", BIG) + b"\n")
    assert isinstance(item, Message)
    assert item.value == BIG
    assert b"18446744073709551616" in (item.key or b"")


def test_integers_beyond_64_bits_in_a_kv_value_are_error_records_with_the_original_bytes():
    line = b'{"value":' + BIG + b"}\n"
    dead = io.BytesIO()
    out = io.BytesIO()
    stats = convert_stream(
        io.BytesIO(line),
        out,
        OpenCDCJsonFormat(),
        OpenCDCJsonFormat(),
        kv_in=True,
        kv_out=True,
        dead_letters=DeadLetterWriter(dead, "convert"),
    )
    assert (stats.errors, stats.written, out.getvalue()) == (1, 0, b"")
    assert "does not fit in 64 bits" in stats.first_errors[0]
    assert record_from_json(dead.getvalue()).payload.after == BIG


def test_the_cli_refuses_integers_beyond_64_bits_in_kv_lines():
    result = run_cli(
        "convert", "--from", "opencdc-json", "--to", "opencdc-json", "--kv",
        stdin=b'{"value":' + BIG + b"}\n",
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stdout == b""
    assert b"errors 1" in result.stderr
    assert b"1.8446744073709552e+19" not in result.stderr


def test_a_written_kv_line_keeps_json_keys_as_written_on_one_line():
    out = io.BytesIO()
    writer = MessageWriter(out, OpenCDCJsonFormat, kv=True)
    writer.write(Message(b'{"a":1}', key=b"18446744073709551616"))
    writer.write(Message(b'{"a":1}', key=b'{\r\n  "id": 1.10\n}'))
    first, second = out.getvalue().splitlines()
    assert first == b'{"key":18446744073709551616,"value":{"a":1}}'
    assert orjson.loads(second)["key"] == {"id": 1.1}
    assert b"1.10" in second


def test_binary_kv_members_are_base64_strings_or_null():
    items = _read(b'{"key":null,"value":"AAE="}\n{"value":5}\n', OpenCDCProtoFormat)
    assert isinstance(items[0], Message) and items[0].value == b"\x00\x01"
    assert isinstance(items[1], CodecError) and "base64 string or null" in items[1].reason
