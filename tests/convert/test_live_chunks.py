"""``convert`` on a stream that pauses (a pipe, a terminal): the columns convert what has
arrived without waiting for a whole chunk, and pass it on at once; chunks hold a bounded
number of bytes."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time

import pytest

from cdc_connectors.convert.columnar_stream import chunks as chunks_of
from cdc_connectors.convert.live_input import LiveInput
from cdc_connectors.formats import load_format
from cdc_connectors.formats.base import Message
from tests.conftest import ROOT

LINE = (
    b'{"position":"cDE=","operation":"create","metadata":{"opencdc.collection":"t"},'
    b'"key":{"id":1},"payload":{"before":null,"after":{"id":1,"name":"x"}}}\n'
)


CONVERT = ["--from", "opencdc-json", "--to", "opencdc-proto"]


def test_a_chunk_ends_when_nothing_more_is_waiting() -> None:
    waiting = iter([True, True, False, True, True, True])
    items = (Message(b"%d" % n) for n in range(6))
    chunks = list(chunks_of(items, 100, lambda: next(waiting)))
    assert [[m.value for m in chunk] for chunk in chunks] == [  # type: ignore[union-attr]
        [b"0", b"1", b"2"],
        [b"3", b"4", b"5"],
    ]


def test_a_full_chunk_does_not_wait() -> None:
    chunks = list(chunks_of((Message(b"x") for _ in range(7)), 3, lambda: True))
    assert [len(chunk) for chunk in chunks] == [3, 3, 1]


def test_a_chunk_holds_a_bounded_number_of_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from cdc_connectors.convert import columnar_stream

    monkeypatch.setattr(columnar_stream, "CHUNK_BYTES", 10)  # as imported there
    chunks = list(chunks_of((Message(b"abcd") for _ in range(7)), 100))
    assert [len(chunk) for chunk in chunks] == [3, 3, 1]  # 12 bytes end a chunk


def test_live_input_gives_what_has_arrived_and_tells_whether_more_waits() -> None:
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb") as stream:
            arriving = LiveInput(stream)
            assert not arriving.waiting()
            os.write(write, b"one\ntw")
            assert arriving.waiting()
            lines = iter(arriving)
            assert next(lines) == b"one\n"
            os.write(write, b"o\nthree")
            os.close(write)
            write = -1
            assert list(lines) == [b"two\n", b"three"]
            assert arriving.waiting()  # the end is there to read
            assert arriving.read() == b""
    finally:
        if write >= 0:
            os.close(write)


def test_a_run_that_stops_early_on_an_open_pipe_exits_cleanly() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "cdc_connectors.cli", "convert", *CONVERT, "--fail-fast"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdin is not None and process.stderr is not None
    try:
        process.stdin.write(b"bad\n")
        process.stdin.flush()
        assert process.wait(timeout=60) == 1  # the pipe is still open
        stderr = process.stderr.read()
        assert b"Fatal Python error" not in stderr and b"Traceback" not in stderr
        assert b"errors 1" in stderr
    finally:
        process.stdin.close()
        if process.poll() is None:
            process.kill()
            process.wait()


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
        assert first.count(b"\x10\x01") == 3  # three creates
        process.stdin.close()
        assert process.stdout.read() == b""
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_trickle_goes_the_per_message_way_and_a_burst_the_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The columns cost milliseconds a chunk whatever its size: a live chunk of fewer than
    FEW messages is converted message by message, into the same bytes."""
    from cdc_connectors.convert import columnar_stream, engine

    sizes: list[int] = []
    convert = columnar_stream.ChunkWriter.convert

    def spied(self: columnar_stream.ChunkWriter, chunk: list) -> object:  # type: ignore[type-arg]
        sizes.append(len(chunk))
        return convert(self, chunk)

    monkeypatch.setattr(columnar_stream.ChunkWriter, "convert", spied)
    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "wb") as out:
            for _ in range(3):
                out.write(LINE)
                out.flush()
                time.sleep(0.05)
            out.write(LINE * 20)  # a burst, read as one chunk

    def formats() -> tuple:  # type: ignore[type-arg]
        return load_format("opencdc-json")({}), load_format("opencdc-proto")({})

    whole = io.BytesIO()  # first: what the columns need is imported before the trickle
    engine.convert_stream(io.BytesIO(LINE * 23), whole, *formats())
    sizes.clear()
    feeder = threading.Thread(target=feed)
    feeder.start()
    live = io.BytesIO()
    with os.fdopen(read, "rb") as source:
        stats = engine.convert_stream(source, live, *formats())
    feeder.join()
    assert stats.written == 23
    assert sizes and min(sizes) >= engine.FEW and sum(sizes) <= 20
    assert live.getvalue() == whole.getvalue()
