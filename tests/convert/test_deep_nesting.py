"""Records nested deeper than a record may be are dead letters, however deep: Arrow's JSON
reader is never given a document deep enough to overflow its stack (it ends the process
some ten thousand levels down), and nothing walks a deep table by recursion."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from cdc_connectors.spark.json_blocks import SAFE_LEVELS, read_lines, too_deep, type_depth
from tests.cli_runner import run_cli, run_cli_process


def _nested(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def _record(after: bytes, n: int) -> bytes:
    return (
        b'{"position":"' + base64.b64encode(b"%d" % n) + b'","operation":"create","metadata":{},'
        b'"key":{"id":' + str(n).encode() + b'},"payload":{"before":null,"after":' + after + b"}}"
    )


def _event(after: bytes) -> bytes:
    return b'{"op":"c","source":{"db":"d","table":"t"},"after":' + after + b"}"


def _converted(tmp_path: Path, lines: list[bytes], *options: str, process: bool = False) -> Any:
    source, target, letters = tmp_path / "in.jsonl", tmp_path / "out", tmp_path / "dl.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    run = run_cli_process if process else run_cli
    done = run("convert", *options, str(source), "-o", str(target), "--errors", str(letters))
    return done, target, [orjson.loads(line) for line in letters.read_bytes().splitlines()]


@pytest.mark.parametrize("levels", [300, 1_000, 5_000])
def test_deep_records_are_dead_letters_among_good_ones(tmp_path: Path, levels: int) -> None:
    good = [_record(b'{"id":%d,"x":{"y":[1,2]}}' % n, n) for n in range(10)]
    lines = [*good[:5], _record(_nested(levels), 99), *good[5:]]
    done, target, letters = _converted(
        tmp_path, lines, "--from", "opencdc-json", "--to", "opencdc-json"
    )
    assert done.returncode == 1, done.stderr
    assert b"Traceback" not in done.stderr
    assert b"nested too deeply" in done.stderr or b"depth limit" in done.stderr
    assert len(target.read_bytes().splitlines()) == 10
    assert [base64.b64decode(letter["position"])[-2:] for letter in letters] == [b":6"]


def test_a_stack_deep_event_or_key_is_a_dead_letter_not_a_crash(tmp_path: Path) -> None:
    deep = _nested(30_000)

    def line(key: bytes, value: bytes) -> bytes:
        return b'{"key":' + key + b',"value":' + value + b"}"

    good = [line(b'{"id":%d}' % n, _event(b'{"id":%d}' % n)) for n in range(10)]
    lines = [*good[:5], line(b'{"id":5}', _event(deep)), line(deep, good[0]), *good[5:]]
    done, target, letters = _converted(
        tmp_path,
        lines,
        *("--from", "debezium-json", "--kv", "--to", "opencdc-proto"),
        process=True,
    )
    assert done.returncode == 1, done.stderr  # not -11: the process lives
    assert b"Traceback" not in done.stderr
    assert len(letters) == 2 and target.stat().st_size > 0


def test_reading_refuses_tables_deeper_than_a_record() -> None:
    with pytest.raises(pa.ArrowInvalid, match="deeper than 254"):
        read_lines(b'{"x":' + _nested(300) + b"}\n")
    assert type_depth(read_lines(b'{"x":{"y":[{"z":1}]}}\n').schema) == 4
    values = pa.array([b"{}", b"[" * (SAFE_LEVELS + 1), b'{"a":1}' * SAFE_LEVELS, None])
    assert too_deep(values).tolist() == [False, True, False, False]


def test_a_text_full_of_brackets_leaves_the_columns_alone_not_its_batch(tmp_path: Path) -> None:
    from cdc_connectors.columnar.opencdc_json_columns import RecordColumnsReader

    brackets = b'{"id":99,"doc":"' + b"[" * (SAFE_LEVELS + 1) + b'"}'
    lines = [_record(b'{"id":%d}' % n, n) for n in range(10)] + [_record(brackets, 99)]
    read = RecordColumnsReader().read(pa.array(lines), pa.array([b""] * len(lines)))
    assert read is not None and read.rows.tolist() == list(range(10))  # the others: columns
    done, target, letters = _converted(
        tmp_path, lines, "--from", "opencdc-json", "--to", "opencdc-proto"
    )
    assert done.returncode == 0, done.stderr
    assert target.stat().st_size > 11 * 30 and not letters
