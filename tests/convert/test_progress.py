"""A long `convert` shows its counts on a terminal as it goes, and only there.

The command runs with its standard error on a pseudo-terminal (``os.openpty``) and its input
fed through a pipe in bursts with pauses between them, so the run lasts a few seconds while
using next to no processor.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from cdc_connectors.convert.engine import ConvertStats, ProgressLine
from tests.conftest import ROOT

LINE = (
    b'{"position":"cDE=","operation":"create","metadata":{"opencdc.collection":"t"},'
    b'"key":{"id":1},"payload":{"before":null,"after":{"id":1,"name":"x"}}}\n'
)
BURST = 100  # messages per burst: more than one look at the clock each
PAUSE = 2.2  # seconds between bursts: more than the line's interval
PROGRESS = re.compile(
    rb"\rread \d+ messages?, wrote \d+ records?, skipped \d+, errors \d+ \(\d+ messages/s\)"
)
CLEAR = b"\r\x1b[K"


def _drain(fd: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: every writer of the terminal is gone
            return
        if not chunk:
            return
        into.extend(chunk)


def _convert_slowly(
    tmp_path: Path,
    *,
    stderr_terminal: bool,
    stdout_terminal: bool = False,
    bursts: int = 3,
    until_shown: int = 0,
) -> tuple[int, bytes, bytes]:
    """Run convert on bursts of input: exit status, what reached the terminal, stderr.

    With ``until_shown``, bursts go on (up to 20) until the terminal has shown that many
    progress lines: on a busy machine the command may start after several bursts wait."""
    master, slave = os.openpty()
    output = tmp_path / "out.jsonl"
    args = [sys.executable, "-m", "cdc_connectors.cli", "convert"]
    args += ["--from", "opencdc-json", "--to", "opencdc-json"]
    if not stdout_terminal:
        args += ["-o", str(output)]
    process = subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=slave if stdout_terminal else subprocess.DEVNULL,
        stderr=slave if stderr_terminal else subprocess.PIPE,
        cwd=ROOT,
    )
    os.close(slave)
    seen = bytearray()
    reader = threading.Thread(target=_drain, args=(master, seen), daemon=True)
    reader.start()
    stderr = b""
    try:
        assert process.stdin is not None
        sent = 0
        while sent < bursts or (
            until_shown and len(PROGRESS.findall(bytes(seen))) < until_shown and sent < 20
        ):
            if sent:
                time.sleep(PAUSE)
            process.stdin.write(LINE * BURST)
            process.stdin.flush()
            sent += 1
        process.stdin.close()
        if process.stderr is not None:
            stderr = process.stderr.read()
        process.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    if not stdout_terminal:
        assert len(output.read_bytes().splitlines()) == BURST * sent
    return process.returncode, bytes(seen), stderr


def test_a_long_run_shows_its_counts_on_the_terminal_and_clears_them(tmp_path: Path):
    code, terminal, _ = _convert_slowly(tmp_path, stderr_terminal=True, bursts=2, until_shown=2)
    assert code == 0
    shown = PROGRESS.findall(terminal)
    assert len(shown) >= 2, terminal  # rewritten in place as the run goes on
    found = re.search(  # the summary: the counts without a rate
        rb"read (?P<n>\d+) messages, wrote (?P=n) records, skipped 0, errors 0(?! \()", terminal
    )
    assert found is not None, terminal
    summary = found.start()
    # the last progress line is wiped before the summary, which stands alone on its line
    assert terminal.rindex(CLEAR) < summary
    assert terminal[terminal.rindex(CLEAR) + len(CLEAR) : summary] == b""
    assert PROGRESS.search(terminal[summary:]) is None


def test_nothing_but_the_counts_when_stderr_is_no_terminal(tmp_path: Path):
    code, _, stderr = _convert_slowly(tmp_path, stderr_terminal=False, bursts=2)
    assert code == 0
    assert stderr == (
        b"read 200 messages, wrote 200 records, skipped 0, errors 0, 0 the per-message way\n"
    )


def test_no_progress_line_between_records_shown_on_the_terminal(tmp_path: Path):
    code, terminal, _ = _convert_slowly(
        tmp_path, stderr_terminal=True, stdout_terminal=True, bursts=2
    )
    assert code == 0
    assert PROGRESS.search(terminal) is None and CLEAR not in terminal
    assert terminal.count(b'"operation":"create"') == 200


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_waits_a_second_speaks_in_the_singular_and_fits_the_width():
    clock, stream = _Clock(), io.StringIO()
    line = ProgressLine(stream, clock=clock)
    stats = ConvertStats(messages=1, written=1)
    line(stats)
    assert stream.getvalue() == ""  # not before a second has passed
    clock.now += 1.0
    line(stats)
    assert (
        stream.getvalue()
        == "\rread 1 message, wrote 1 record, skipped 0, errors 0 (1 messages/s)\x1b[K"
    )
    clock.now += 0.5
    line(stats)  # at most once a second
    assert stream.getvalue().count("\r") == 1
    line.clear()
    line.clear()  # once
    assert stream.getvalue().endswith("\x1b[K\r\x1b[K") and stream.getvalue().count("\r") == 2


def test_a_line_never_shown_is_not_cleared():
    stream = io.StringIO()
    line = ProgressLine(stream, clock=_Clock())
    line.clear()
    assert stream.getvalue() == ""
