"""Lines read straight into Arrow columns are the messages the per-message reading gives."""

from __future__ import annotations

import functools
import gzip
import io
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.connectors import files_plan
from cdc_connectors.connectors.files import Settings
from cdc_connectors.connectors.files_plan import raw_batches
from cdc_connectors.convert import line_chunks as line_chunks_module
from cdc_connectors.convert.line_chunks import line_chunks
from cdc_connectors.convert.streams import BOM, read_messages
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from tests.hypothesis_profiles import examples

# Bytes that make lines interesting: endings, whitespace of every kind, a brace, non-UTF-8.
_PIECES = st.sampled_from(
    [b"\n", b"\r", b"\r\n", b" ", b"\t", b"\x0b", b"\x0c", b"{", b"x", b"\xff", b"\xc3\xa9", BOM]
)
_STREAMS = st.lists(_PIECES | st.binary(max_size=6), max_size=60).map(b"".join)


def _per_message(data: bytes) -> list[tuple[bytes | None, str]]:
    messages = read_messages(io.BytesIO(data), DebeziumJsonFormat, source="in.jsonl")
    return [(m.value, m.where) for m in messages]  # type: ignore[union-attr]


def _columns(data: bytes, size: int, max_bytes: int, block: int) -> list[tuple[bytes, str]]:
    found = []
    for chunk in line_chunks(io.BytesIO(data), "in.jsonl", size, max_bytes, block):
        assert 0 < len(chunk) <= size
        values = chunk.values.to_pylist()
        assert len(chunk) == 1 or sum(len(v) for v in values) <= max_bytes
        places = [p.decode() for p in chunk.places().to_pylist()]
        assert [chunk[i].value for i in range(len(chunk))] == values
        assert [chunk[i].where for i in range(len(chunk))] == places
        found += list(zip(values, places, strict=True))
    return found


@settings(max_examples=examples(300), deadline=None)
@given(
    data=_STREAMS,
    size=st.integers(1, 5),
    max_bytes=st.integers(1, 12),
    block=st.integers(1, 16),
    long_line=st.sampled_from([0, 10**9]),
    piece=st.integers(1, 24),
)
def test_lines_as_columns_are_the_messages_of_the_per_message_reading(
    data: bytes, size: int, max_bytes: int, block: int, long_line: int, piece: int
) -> None:
    # both ways of finding line ends: one by one (0), every byte at once (10**9); blocks
    # split into pieces of a few bytes
    with (
        mock.patch.object(line_chunks_module, "_LONG_LINE", long_line),
        mock.patch.object(line_chunks_module, "PIECE", piece),
    ):
        assert _columns(data, size, max_bytes, block) == _per_message(data)


@pytest.mark.parametrize("block", [1, 2, 1 << 20])
def test_a_byte_order_mark_at_the_start_is_no_part_of_the_first_line(block: int) -> None:
    """Windows tools start a UTF-8 text file with one; JSON's RFC lets a reader ignore it.
    Anywhere else it is the line's own (and no JSON)."""
    data = BOM + b'{"a":1}\n' + BOM + b'{"b":2}\n'
    expected = [(b'{"a":1}', "in.jsonl:1"), (BOM + b'{"b":2}', "in.jsonl:2")]
    assert _columns(data, 10, 1 << 20, block) == expected == _per_message(data)
    assert _columns(BOM, 10, 1 << 20, block) == [] == _per_message(BOM)
    assert _columns(BOM[:2] + b"x\n", 10, 1 << 20, block) == [(BOM[:2] + b"x", "in.jsonl:1")]


def test_windows_endings_blank_lines_and_a_last_line_without_an_ending() -> None:
    data = b'{"a":1}\r\n\r\n  \t\n{"b":2}\r\r\n x \n\n{"c":3}'
    assert _columns(data, 10, 1 << 20, 1 << 20) == [
        (b'{"a":1}', "in.jsonl:1"),
        (b'{"b":2}', "in.jsonl:4"),
        (b" x ", "in.jsonl:5"),
        (b'{"c":3}', "in.jsonl:7"),
    ]
    assert _columns(data, 10, 1 << 20, 1 << 20) == _per_message(data)


def test_long_runs_of_returns_and_blank_lines_are_read_as_the_per_message_way_reads_them() -> None:
    data = b"\n" * 5000 + b"a" + b"\r" * 3000 + b"\n" + b"\r" * 2000 + b"\n \r\n" + b"b\r\r"
    assert _columns(data, 4096, 1 << 20, 1 << 20) == [
        (b"a", "in.jsonl:5001"),
        (b"b", "in.jsonl:5004"),
    ]
    assert _columns(data, 4096, 1 << 20, 1 << 20) == _per_message(data)


def test_a_line_longer_than_a_block_and_a_chunk_is_one_message() -> None:
    long = b"y" * 1000
    data = b"a\n" + long + b"\nb\n"
    assert _columns(data, 3, 10, 7) == [
        (b"a", "in.jsonl:1"),
        (long, "in.jsonl:2"),
        (b"b", "in.jsonl:3"),
    ]


def test_an_empty_stream_and_one_of_blank_lines_give_no_chunk() -> None:
    assert list(line_chunks(io.BytesIO(b""), "in", 4, 100)) == []
    assert list(line_chunks(io.BytesIO(b"\n \n\r\n"), "in", 4, 100)) == []


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("batch", [1, 2, 1000])
def test_a_files_pipeline_reads_a_file_as_the_per_message_reading_does(
    tmp_path: Path, gzipped: bool, batch: int
) -> None:
    data = b'{"a":1}\r\n\n  \n{"b":2}\n\xff\xfe\n{"c":3}'
    file = tmp_path / ("in.jsonl.gz" if gzipped else "in.jsonl")
    file.write_bytes(gzip.compress(data) if gzipped else data)
    settings = Settings.parse(
        {"path": str(tmp_path), "format": "debezium-json", "maxRecordsPerBatch": str(batch)}
    )
    rows = [
        row
        for found in raw_batches(settings, str(file))
        for row in found.to_pylist()  # type: ignore[union-attr]
    ]
    expected = read_messages(io.BytesIO(data), DebeziumJsonFormat, source=str(file))
    assert rows == [
        {"key": None, "value": m.value, "place": m.where}  # type: ignore[union-attr]
        for m in expected
    ]


@pytest.mark.parametrize("ending", [b"\n", b""], ids=["ended", "last-unended"])
def test_a_line_longer_than_a_column_holds_is_a_bad_message_with_its_bytes(
    monkeypatch: pytest.MonkeyPatch, ending: bytes
) -> None:
    """A line of 2 GiB or more fits no Arrow binary column: it is a message of its own that
    fails with its bytes (a dead letter), in its place, and the lines around it are read."""
    monkeypatch.setattr(line_chunks_module, "MAX_LINE", 40)
    long = b'{"payload":"' + b"x" * 60 + b'"}'
    blank = b" " * 50
    data = b"a\n" + long + b"\n" + blank + b"\nb\n" + long + ending
    chunks = list(line_chunks(io.BytesIO(data), "in.jsonl", 10, 1 << 20, 16))
    items = [chunk[i] for chunk in chunks for i in range(len(chunk))]
    assert [getattr(item, "value", None) for item in items] == [b"a", None, b"b", None]
    errors = [item for item in items if not hasattr(item, "value")]
    assert [(e.where, e.data) for e in errors] == [("in.jsonl:2", long), ("in.jsonl:5", long)]
    assert "a line of 74 bytes: longer than the 40 bytes" in errors[0].reason
    assert items[2].where == "in.jsonl:4"  # the blank line 3 counted, not read


@pytest.mark.parametrize("kv", [False, True], ids=["lines", "kv"])
def test_a_files_source_gives_a_line_too_long_as_a_dead_letter_with_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kv: bool
) -> None:
    monkeypatch.setattr(line_chunks_module, "MAX_LINE", 40)
    # small blocks, so that the long line spans them as a line of 2 GiB spans 32 MiB ones
    monkeypatch.setattr(files_plan, "line_chunks", functools.partial(line_chunks, block=16))
    short = b'{"key":null,"value":{"a":1}}' if kv else b'{"a":1}'
    long = b'{"key":null,"value":"' + b"x" * 60 + b'"}'
    file = tmp_path / "in.jsonl"
    file.write_bytes(short + b"\n" + long + b"\n" + short + b"\n")
    settings = Settings.parse(
        {"path": str(tmp_path), "format": "debezium-json", "kv": str(kv).lower()}
    )
    found = list(raw_batches(settings, str(file)))
    errors = [item for item in found if not isinstance(item, pa.RecordBatch)]
    rows = [row for item in found if isinstance(item, pa.RecordBatch) for row in item.to_pylist()]
    assert [(e.where, e.data) for e in errors] == [(f"{file}:2", long)]
    assert [row["place"] for row in rows] == [f"{file}:1", f"{file}:3"]


@pytest.mark.parametrize("kv", [False, True], ids=["lines", "kv"])
def test_convert_writes_a_line_too_long_as_a_dead_letter_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, kv: bool
) -> None:
    from cdc_connectors.convert.deadletter import DeadLetterWriter
    from cdc_connectors.convert.engine import convert_stream
    from cdc_connectors.formats import load_format
    from cdc_connectors.opencdc import record_from_json

    monkeypatch.setattr(line_chunks_module, "MAX_LINE", 80)
    monkeypatch.setattr(line_chunks_module, "line_chunks", functools.partial(line_chunks, block=16))
    event = b'{"payload":{"op":"c","after":{"id":1},"source":{}}}'
    short = b'{"key":null,"value":' + event + b"}" if kv else event
    long = b'{"key":null,"value":"' + b"x" * 100 + b'"}'
    out, dead = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(short + b"\n" + long + b"\n" + short + b"\n"),
        out,
        load_format("debezium-json")({}),
        load_format("opencdc-json")({}),
        kv_in=kv,
        dead_letters=DeadLetterWriter(dead, "convert"),
        source_name="in.jsonl",
    )
    assert (stats.written, stats.errors) == (2, 1)
    (letter,) = [record_from_json(line) for line in dead.getvalue().splitlines()]
    assert letter.payload.after == long and letter.position == b"in.jsonl:2"


@pytest.mark.parametrize("kv", [False, True])
@pytest.mark.parametrize(
    "to", [{}, {"schemas.enable": "true"}], ids=["from columns", "the per-message way"]
)
def test_a_file_starting_with_a_byte_order_mark_converts_as_one_without(
    kv: bool, to: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_connectors.convert import convert_stream
    from cdc_connectors.convert.deadletter import DeadLetterWriter

    monkeypatch.setattr("time.time_ns", lambda: 1_700_000_000_000_000_000)
    data = Path("examples/debezium/orders.kv.jsonl").read_bytes()
    if not kv:
        data = b"".join(
            line[line.index(b'"value":') + 8 : -2] + b"\n"
            for line in data.splitlines(keepends=True)
            if b'"value":null' not in line
        )
    found = []
    for text in (data, BOM + data):
        out, letters = io.BytesIO(), io.BytesIO()
        stats = convert_stream(
            io.BytesIO(text),
            out,
            DebeziumJsonFormat({}),
            DebeziumJsonFormat(to),
            kv_in=kv,
            kv_out=kv,
            dead_letters=DeadLetterWriter(letters, "convert"),
            source_name="orders.jsonl",
        )
        found.append((out.getvalue(), letters.getvalue(), stats.errors))
    assert found[0] == found[1] and found[0][2] == 0 and found[0][0]
