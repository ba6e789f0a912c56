"""``--kv`` lines split by columns are the messages and errors the per-message reading gives."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.connectors.files import Settings
from cdc_connectors.connectors.files_plan import raw_batches
from cdc_connectors.convert.deadletter import DeadLetterWriter
from cdc_connectors.convert.engine import convert_stream
from cdc_connectors.convert.kv_columns import (
    CHECKED_AFTER_BAD,
    ValueChecks,
    compact_line,
    kv_columns,
    reread,
)
from cdc_connectors.convert.line_chunks import line_chunks
from cdc_connectors.convert.streams import kv_pair, read_messages
from cdc_connectors.formats import load_format
from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError
from tests.columnar.debezium_batches import id_event
from tests.hypothesis_profiles import examples

# Member texts: JSON values of every kind, ones holding the separator, broken ones.
_MEMBERS = st.sampled_from(
    [
        b"1", b"null", b'"x"', b'{"id":1}', b'{"a":1,"value":2}', b'[1,"value",{}]', b"1.5e3",
        b'"a,\\"value\\":1"', b"{", b"abc", b"", b" 1", b"1 ", b"\t{}", b'"\xff"', b"\xc3\xa9",
        b"18446744073709551616", b"NaN", b'{"schema":{"type":"int64"},"payload":7}', b"nul",
        b'{"a":1}x', b'{"a":1} {}', b'1,"value":2', b'{"a":1},"key":2', b'"\\ud800"',
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
    assert found.unchecked is None
    for row, line in enumerate(lines):
        if row in found.errors:
            assert str(found.errors[row]) == _per_line(line)
        else:
            pair = (found.values[row].as_py(), found.keys[row].as_py())
            assert pair == _per_line(line)
            # what a row left to the per-message way is read again as
            assert reread(found.keys[row].as_py(), found.values[row].as_py()) == pair


@settings(max_examples=examples(300), deadline=None)
@given(lines=st.lists(_LINES | st.binary(max_size=12), min_size=1, max_size=12))
def test_values_left_unchecked_are_read_again_as_kv_pair_reads_their_lines(
    lines: list[bytes],
) -> None:
    """Without checking values, a line split at the writers' layout keeps whatever value it
    holds (one JSON value or not), and its key and value make that line again: read again,
    it is what :func:`kv_pair` makes of it. Every other line is what checking gives."""
    found = kv_columns(pa.array(lines, pa.binary()), check_values=False)
    checked = kv_columns(pa.array(lines, pa.binary()))
    assert found.unchecked is not None
    for row, line in enumerate(lines):
        if row in found.errors:
            assert str(found.errors[row]) == _per_line(line)
            continue
        key, value = found.keys[row].as_py(), found.values[row].as_py()
        assert _per_line(compact_line(key, value)) == _per_line(line)  # what reread reads
        if found.unchecked[row]:
            assert compact_line(key, value) == line
        else:
            assert (value, key) == (checked.values[row].as_py(), checked.keys[row].as_py())


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
    expected = _stream_messages(data)
    for checks in (None, ValueChecks(allowed=True)):
        chunks = [
            c.split_kv(checks) for c in line_chunks(io.BytesIO(data), "in.jsonl", size, 1 << 20)
        ]
        ours = [_said(chunk[row]) for chunk in chunks for row in range(len(chunk))]
        assert ours == expected


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


def _unread(lines: bytes) -> list[object]:
    """OpenCDC JSON lines without the time they were read."""
    found = [orjson.loads(line) for line in lines.splitlines()]
    for record in found:
        del record["metadata"]["opencdc.readAt"]
    return found


def test_convert_leaves_kv_values_to_columns_that_check_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``convert --kv`` to a destination whose columns check each value leaves the values
    unchecked; a line they leave to the per-message way is read again whole: the output
    and the dead letters are those of checking each value first."""
    from cdc_connectors.columnar import choose

    lines = [b'{"key":{"id":%d},"value":%s}' % (n, id_event(n)) for n in range(40)]
    broken = [
        b"{not json",
        id_event(1) + b"x",
        id_event(2) + b" {}",
        id_event(3)[:-1] + b',"x":NaN}',
        id_event(4) + b',"value":1',
        id_event(5)[:-1] + b',"x":"\\ud800"}',
        b"null",
    ]
    for at, value in enumerate(broken):
        lines[2 + 5 * at] = b'{"key":{"id":%d},"value":%s}' % (at, value)
    lines[38] = b"no kv line"
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    fmt_in, fmt_out = DebeziumJsonFormat(), load_format("opencdc-json")()
    assert choose.checks_values(fmt_in, fmt_out)

    def converted() -> tuple[list[object], list[object], str]:
        out, letters = io.BytesIO(), io.BytesIO()
        with source.open("rb") as stream:
            stats = convert_stream(
                stream, out, fmt_in, fmt_out, kv_in=True,
                dead_letters=DeadLetterWriter(letters, "convert"), source_name=str(source),
            )  # fmt: skip
        said = f"{stats.messages} {stats.written} {stats.errors} {stats.skipped}"
        return _unread(out.getvalue()), _unread(letters.getvalue()), said

    unchecked = converted()
    monkeypatch.setattr(choose, "checks_values", lambda *_: False)
    assert unchecked == converted()
    assert unchecked[2].split()[:3] == ["40", "32", "7"]  # a null value: a tombstone, skipped


def test_a_stream_checks_its_values_for_a_while_once_one_was_no_json_value() -> None:
    """Values the columns refuse cost more than checking them: once a line read again was
    not what its unchecked split said, the stream's next chunks are checked for a while;
    a value that does not look like an object at its ends is checked in any chunk."""
    good = b'{"key":1,"value":{"a":1}}'
    checks = ValueChecks(allowed=True)
    lines = [good, good, b'{"key":1,"value":{"a":1,}}', good]
    lines += [good] * (2 * CHECKED_AFTER_BAD) + [b'{"key":1,"value":{"a":1}x}', good]
    data = b"\n".join(lines) + b"\n"
    chunks = line_chunks(io.BytesIO(data), "in.jsonl", 2, 1 << 20)
    first = next(chunks).split_kv(checks)
    assert first.unchecked is not None and first.unchecked.all()
    assert isinstance(first[0], Message) and not checks.left  # read again: as split
    second = next(chunks).split_kv(checks)
    assert second.unchecked is not None and second.unchecked.all()  # {"a":1,} unchecked
    assert isinstance(second[0], CodecError) and checks.left == CHECKED_AFTER_BAD
    after = [next(chunks).split_kv(checks) for _ in range(CHECKED_AFTER_BAD)]
    assert all(chunk.unchecked is None for chunk in after)  # checked
    last = next(chunks).split_kv(checks)  # unchecked again, but what is no object at its ends
    assert last.unchecked is not None and last.unchecked.tolist() == [False, True]
    assert 0 in last.errors and not checks.left
    assert ValueChecks().next_chunk()  # columns that do not check values: always checked


def test_values_are_checked_first_where_a_registry_names_schemas(tmp_path: Path) -> None:
    """The columns register the schemas of the rows they take before the per-message way
    registers the others': with a registry on either side, the rows they take must be
    those they took when values were checked first (a value that is no JSON value would
    take up their attempts at a batch, and a schema could get another version)."""
    from cdc_connectors.columnar import choose

    url = f"sqlite:///{tmp_path / 'registry.db'}"
    plain, named = DebeziumJsonFormat(), DebeziumJsonFormat(registry=url)
    to_json, to_avro = load_format("opencdc-json")(), load_format("avro")(registry=url)
    assert choose.checks_values(plain, to_json)
    assert not choose.checks_values(named, to_json)
    assert not choose.checks_values(named, to_avro)
    assert not choose.checks_values(plain, load_format("opencdc-json")(registry=url))
