"""``convert`` on a stream that pauses (a pipe, a terminal): the columns convert what has
arrived without waiting for a whole chunk, and pass it on at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from cdc_connectors.convert.columnar_stream import live_chunks
from cdc_connectors.formats.base import Message
from cdc_connectors.opencdc import CodecError
from tests.conftest import ROOT

LINE = (
    b'{"position":"cDE=","operation":"create","metadata":{"opencdc.collection":"t"},'
    b'"key":{"id":1},"payload":{"before":null,"after":{"id":1,"name":"x"}}}\n'
)


CONVERT = ["--from", "opencdc-json", "--to", "opencdc-proto"]


def test_a_chunk_ends_when_the_stream_pauses() -> None:
    go_on = threading.Event()

    def items() -> Iterator[Message | CodecError]:
        yield from (Message(b"%d" % n) for n in range(3))
        go_on.wait(30)
        yield Message(b"3")

    chunks = live_chunks(items(), 100, linger=0.01)
    first = next(chunks)  # would wait for the fourth message if chunks waited to be full
    assert [m.value for m in first] == [b"0", b"1", b"2"]  # type: ignore[union-attr]
    go_on.set()
    assert [[m.value for m in chunk] for chunk in chunks] == [[b"3"]]  # type: ignore[union-attr]


def test_a_full_chunk_does_not_wait() -> None:
    chunks = list(live_chunks((Message(b"x") for _ in range(7)), 3, linger=5))
    assert [len(chunk) for chunk in chunks] == [3, 3, 1]


def test_the_readers_error_is_raised_where_the_chunks_are_taken() -> None:
    def items() -> Iterator[Message | CodecError]:
        yield Message(b"x")
        raise OSError("cannot read <stdin>")

    with pytest.raises(OSError, match="cannot read"):
        list(live_chunks(items(), 100, linger=0.01))


def test_convert_passes_on_what_has_arrived_before_the_stream_ends() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "cdc_connectors.cli", "convert", *CONVERT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(LINE * 3)
        process.stdin.flush()
        first = process.stdout.read1(1 << 16)  # the stream is still open
        deadline = time.monotonic() + 60
        while first.count(b"\x10\x01") < 3 and time.monotonic() < deadline:
            first += process.stdout.read1(1 << 16)
        assert first.count(b"\x10\x01") == 3  # three creates, written from columns
        process.stdin.close()
        assert process.stdout.read() == b""
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
