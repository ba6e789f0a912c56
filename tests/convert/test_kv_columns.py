"""``--kv`` lines split by columns are the messages and errors the per-message reading gives."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.connectors.files import Settings
from cdc_connectors.connectors.files_plan import raw_batches
from cdc_connectors.convert.kv_columns import kv_columns
from cdc_connectors.convert.line_chunks import line_chunks
from cdc_connectors.convert.streams import kv_pair, read_messages
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError
from tests.hypothesis_profiles import examples

# Member texts: JSON values of every kind, ones holding the separator, broken ones.
_MEMBERS = st.sampled_from(
    [
        b"1", b"null", b'"x"', b'{"id":1}', b'{"a":1,"value":2}', b'[1,"value",{}]', b"1.5e3",
        b'"a,\\"value\\":1"', b"{", b"abc", b"", b" 1", b"1 ", b"\t{}", b'"\xff"', b"\xc3\xa9",
        b"18446744073709551616", b"NaN", b'{"schema":{"type":"int64"},"payload":7}', b"nul",
    ]
)  # fmt: skip
_LAYOUTS = st.sampled_from(
    [
        b'{"key":%s,"value":%s}', b'{"key":%s, "value":%s}', b'{"key":%s,"value" :%s}',
        b'{ "key":%s,"value":%s}', b'{"key":%s,"value":%s} ', b'{"value":%s,"key":%s}',
        b'{"key":%s,"value":%s,"value":1}', b'{"key":%s,"value":%s,"other":1}',
        b'{"key":%s,\x0b"value":%s}', b'{"key":%s,"value":%s}}', b'[%s,%s]', b"%s%s",
    ]
)  # fmt: skip
_LINES = st.builds(lambda layout, k, v: layout % (k, v), _LAYOUTS, _MEMBERS, _MEMBERS)


def _per_line(line: bytes) -> tuple[bytes | None, bytes | None] | str:
    try:
        return kv_pair(line, False)
    except CodecError as exc:
        return str(exc)


@settings(max_examples=examples(300), deadline=None)
@given(lines=st.lists(_LINES | st.binary(max_size=12), min_size=1, max_size=12))
def test_each_line_split_by_columns_is_what_kv_pair_gives(lines: list[bytes]) -> None:
    found = kv_columns(pa.array(lines, pa.binary()))
    for row, line in enumerate(lines):
        if row in found.errors:
            assert str(found.errors[row]) == _per_line(line)
        else:
            pair = (found.values[row].as_py(), found.keys[row].as_py())
            assert pair == _per_line(line)


def _stream_messages(data: bytes) -> list[tuple[object, ...]]:
    items = read_messages(io.BytesIO(data), DebeziumJsonFormat, kv=True, source="in.jsonl")
    return [_said(item) for item in items]


def _said(item: object) -> tuple[object, ...]:
    if isinstance(item, CodecError):
        return ("error", str(item), item.where, item.data)
    return ("message", item.value, item.key, item.where)  # type: ignore[attr-defined]


@settings(max_examples=examples(150), deadline=None)
@given(
    lines=st.lists(_LINES, max_size=10),
    endings=st.lists(st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\n \n"]), min_size=10),
    size=st.integers(1, 4),
)
def test_a_kv_stream_by_columns_gives_the_messages_and_errors_of_the_per_message_reading(
    lines: list[bytes], endings: list[bytes], size: int
) -> None:
    data = b"".join(line + end for line, end in zip(lines, endings, strict=False))
    chunks = [c.split_kv() for c in line_chunks(io.BytesIO(data), "in.jsonl", size, 1 << 20)]
    ours = [_said(chunk[row]) for chunk in chunks for row in range(len(chunk))]
    assert ours == _stream_messages(data)


def test_the_usual_lines_are_split_by_columns_alone() -> None:
    lines = [b'{"key":{"id":%d},"value":{"op":"c","n":%d}}' % (n, n) for n in range(50)]
    lines.append(b'{"key":null,"value":null}')
    found = kv_columns(pa.array(lines, pa.binary()))
    assert not found.errors
    assert found.keys.to_pylist()[:2] == [b'{"id":0}', b'{"id":1}']
    assert found.values[49].as_py() == b'{"op":"c","n":49}'
    assert found.keys[50].as_py() is None and found.values[50].as_py() is None


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("batch", [1, 3, 1000])
def test_a_files_pipeline_reads_kv_lines_as_the_per_message_reading_does(
    tmp_path: Path, gzipped: bool, batch: int
) -> None:
    data = (
        b'{"key":{"id":1},"value":{"a":1}}\r\n\n'
        b"not a kv line\n"
        b'{"value":{"b":2},"key":"k"}\n'
        b'{"key":1,"value":2,"value":3}\n'
        b'{"key":null,"value":null}\n'
        b'{"key":{"id":2},"value":{"c":"\xc3\xa9"}}'
    )
    file = tmp_path / ("in.jsonl.gz" if gzipped else "in.jsonl")
    file.write_bytes(gzip.compress(data) if gzipped else data)
    settings_ = Settings.parse(
        {
            "path": str(tmp_path),
            "format": "debezium-json",
            "kv": "true",
            "maxRecordsPerBatch": str(batch),
        }
    )
    rows: list[tuple[object, ...]] = []
    for found in raw_batches(settings_, str(file)):
        if isinstance(found, CodecError):
            rows.append(("error", str(found), found.where, found.data))
        else:
            rows += [("message", r["value"], r["key"], r["place"]) for r in found.to_pylist()]
    expected = read_messages(io.BytesIO(data), DebeziumJsonFormat, kv=True, source=str(file))
    assert sorted(rows, key=str) == sorted([_said(m) for m in expected], key=str)
    assert [r for r in rows if r[0] == "message"] == [
        _said(m) for m in read_messages(
            io.BytesIO(data), DebeziumJsonFormat, kv=True, source=str(file)
        ) if not isinstance(m, CodecError)
    ]  # fmt: skip
