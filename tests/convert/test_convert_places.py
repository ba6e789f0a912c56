"""`convert`'s files and standard streams: every path checked before any file is touched,
an existing output never truncated by a run that fails, and one line, never a traceback."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from cdc_connectors.convert import dead_letter, files
from cdc_connectors.convert.files import Output
from cdc_connectors.formats.base import Message
from cdc_connectors.opencdc import record_from_json
from tests.conftest import ROOT, run_cli
from tests.opencdc.canonical import CANONICAL, CONDUIT_TEST_RECORD

GOOD = b"\n".join(CANONICAL) + b"\n"
BAD = b'{"operation":"bogus"}\n'
J2J = ("convert", "--from", "opencdc-json", "--to", "opencdc-json")


def _one_line_error(result: subprocess.CompletedProcess[bytes], code: int, *parts: str) -> None:
    stderr = result.stderr.decode()
    assert result.returncode == code, stderr
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    for part in parts:
        assert part in lines[0], stderr


def _shell(script: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``cdc-connectors`` (as "$0") under sh, to close or redirect standard streams."""
    return subprocess.run(
        ["sh", "-c", f'"$0" -m cdc_connectors.cli {script}', sys.executable, *args],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(GOOD)
    return path


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink", "hardlink"])
def test_output_that_is_the_input_is_refused_and_the_input_kept(src, spelling):
    out = {
        "same": str(src),
        "dotted": f"{src.parent}/./{src.name}",
        "symlink": str(src.parent / "link.jsonl"),
        "hardlink": str(src.parent / "hard.jsonl"),
    }[spelling]
    if spelling == "symlink":
        os.symlink(src, out)
    if spelling == "hardlink":
        os.link(src, out)
    result = run_cli(*J2J, str(src), "-o", out)
    _one_line_error(result, 2, "-o", "same file as IN")
    assert src.read_bytes() == GOOD


def test_errors_file_that_is_the_output_or_the_input_is_refused(src, tmp_path):
    out = tmp_path / "out.jsonl"
    both = run_cli(*J2J, str(src), "-o", str(out), "--errors", f"{tmp_path}/./out.jsonl")
    _one_line_error(both, 2, "--errors", "same file as -o")
    assert not out.exists()
    into_input = run_cli(*J2J, str(src), "--errors", str(src))
    _one_line_error(into_input, 2, "--errors", "same file as IN")
    assert src.read_bytes() == GOOD


def test_redirected_standard_streams_count_as_the_files_they_are(src, tmp_path):
    stdin_is_out = _shell('convert --from opencdc-json --to opencdc-json -o "$1" < "$1"', str(src))
    _one_line_error(stdin_is_out, 2, "-o", "same file as standard input")
    assert src.read_bytes() == GOOD
    out = tmp_path / "out.jsonl"
    stdout_is_errors = _shell(
        'convert --from opencdc-json --to opencdc-json "$1" --errors "$2" > "$2"',
        str(src),
        str(out),
    )
    _one_line_error(stdout_is_errors, 2, "--errors", "same file as standard output")


def test_an_errors_path_that_cannot_be_created_leaves_the_existing_output_alone(src, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"precious\n")
    result = run_cli(*J2J, str(src), "-o", str(out), "--errors", str(tmp_path / "no" / "dlq"))
    _one_line_error(result, 2, "--errors", "no such directory")
    assert out.read_bytes() == b"precious\n"


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        (("-o", "{tmp}/missing/out.jsonl"), ("-o", "missing/out.jsonl", "no such directory")),
        (("-o", "{tmp}"), ("-o", "is a directory")),
        (("-o", "/proc/cdc-out.jsonl"), ("-o /proc/cdc-out.jsonl",)),  # no one may write there
        (("--errors", "{tmp}/missing/dlq"), ("--errors", "no such directory")),
    ],
)
def test_unusable_output_places_are_usage_errors_naming_the_path(src, tmp_path, args, parts):
    args = tuple(a.format(tmp=tmp_path) for a in args)
    result = run_cli(*J2J, str(src), *args)
    _one_line_error(result, 2, *parts)
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("path", "part"), [("{tmp}/nope.jsonl", "no such file"), ("{tmp}", "is a directory")]
)
def test_an_input_that_cannot_be_read_is_one_line(tmp_path, path, part):
    result = run_cli(*J2J, path.format(tmp=tmp_path), "-o", str(tmp_path / "out"))
    _one_line_error(result, 2, "IN", part)
    assert not (tmp_path / "out").exists()


def test_closed_standard_streams_are_one_line():
    no_stdin = _shell("convert --from opencdc-json --to opencdc-json <&-")
    _one_line_error(no_stdin, 2, "standard input is closed")
    no_stdout = _shell("convert --from opencdc-json --to opencdc-json >&-")
    _one_line_error(no_stdout, 2, "standard output is closed")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_one_line_for_every_output(src, tmp_path):
    as_output = run_cli(*J2J, str(src), "-o", "/dev/full")
    _one_line_error(as_output, 1, "cannot write -o /dev/full", "No space left")
    as_stdout = _shell('convert --from opencdc-json --to opencdc-json "$1" > /dev/full', str(src))
    _one_line_error(as_stdout, 1, "cannot write standard output", "No space left")
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"precious\n")
    src.write_bytes(GOOD + BAD)
    as_errors = run_cli(*J2J, str(src), "-o", str(out), "--errors", "/dev/full")
    _one_line_error(as_errors, 1, "cannot write --errors /dev/full")
    assert out.read_bytes() == b"precious\n"  # the failed run left the output as it was
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "out.jsonl"]


def test_a_reader_that_goes_away_is_one_line():
    # `| head -c 0`: the pipe closes before the output is written
    result = _shell(
        'convert --from opencdc-json --to opencdc-json < "$1" | head -c 0',
        str(ROOT / "examples" / "opencdc" / "orders.jsonl"),
    )
    assert b"Traceback" not in result.stderr
    assert b"Exception ignored" not in result.stderr


def test_a_finished_run_replaces_the_output_keeping_its_mode(src, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"old\n")
    out.chmod(0o640)
    result = run_cli(*J2J, str(src), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert [record_from_json(x) for x in out.read_bytes().splitlines()] == [
        record_from_json(x) for x in CANONICAL
    ]
    assert out.stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "out.jsonl"]


def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(src, tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_bytes(b"old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    result = run_cli(*J2J, str(src), "-o", str(link))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink()
    assert len(real.read_bytes().splitlines()) == len(CANONICAL)


def test_fail_fast_leaves_an_existing_output_unchanged(src, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"precious\n")
    src.write_bytes(CONDUIT_TEST_RECORD + b"\n" + BAD)
    result = run_cli(*J2J, "--fail-fast", str(src), "-o", str(out))
    assert result.returncode == 1
    assert b"Traceback" not in result.stderr
    assert f"-o {out} unchanged".encode() in result.stderr
    assert b"read 2 messages, wrote 1 record, skipped 0, errors 1" in result.stderr
    assert out.read_bytes() == b"precious\n"


def test_errors_are_appended_to_an_existing_dead_letter_file(src, tmp_path):
    errors = tmp_path / "dlq.jsonl"
    errors.write_bytes(b"earlier\n")
    src.write_bytes(BAD)
    result = run_cli(*J2J, str(src), "-o", "/dev/null", "--errors", str(errors))
    assert result.returncode == 1
    lines = errors.read_bytes().splitlines()
    assert lines[0] == b"earlier" and len(lines) == 2


def test_output_to_dev_stdout_through_a_pipe_is_written_directly(src):
    result = _shell(
        'convert --from opencdc-json --to opencdc-json "$1" -o /dev/stdout | cat', str(src)
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(CANONICAL)


@pytest.mark.parametrize("fmt", ["opencdc-json", "opencdc-proto"])
@pytest.mark.parametrize("kv", [False, True])
def test_junk_input_is_counted_as_errors_never_a_traceback(fmt, kv, tmp_path):
    junk = bytes(random.Random(7).randrange(256) for _ in range(4000)) + b"\n{}\n[1]\n\xff\n"
    errors = tmp_path / "dlq.jsonl"
    args = ["convert", "--from", fmt, "--to", "opencdc-json", "--errors", str(errors)]
    result = run_cli(*args, *(["--kv"] if kv else []), stdin=junk)
    assert b"Traceback" not in result.stderr
    assert result.returncode == 1
    assert b"errors 0" not in result.stderr
    assert errors.read_bytes()  # the junk is kept


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        (("{src}", "-o", "{src}/"), ("-o", "in.jsonl is not a directory")),
        (("{src}", "-o", "{other}/"), ("-o", "other.txt is not a directory")),
        (("{src}", "-o", "{other}/x.jsonl"), ("-o", "other.txt is not a directory")),
        (("{src}", "-o", "{src}/.."), ("-o", "in.jsonl is not a directory")),
        (("{src}", "-o", "{tmp}/new/"), ("-o", "no such directory")),
        (("{src}", "--errors", "{other}/"), ("--errors", "other.txt is not a directory")),
        (("{src}/", "-o", "{tmp}/out.jsonl"), ("IN", "in.jsonl is not a directory")),
    ],
)
def test_a_file_used_as_a_directory_is_refused_and_nothing_touched(src, tmp_path, args, parts):
    other = tmp_path / "other.txt"
    other.write_bytes(b"precious\n")
    args = tuple(a.format(src=src, other=other, tmp=tmp_path) for a in args)
    result = run_cli(*J2J, *args)
    _one_line_error(result, 2, *parts)
    assert src.read_bytes() == GOOD
    assert other.read_bytes() == b"precious\n"
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "other.txt"]


def test_the_output_file_refuses_a_path_ending_in_a_slash(src):
    with pytest.raises(NotADirectoryError):
        Output(f"{src}/")
    assert src.read_bytes() == GOOD
    assert sorted(os.listdir(src.parent)) == ["in.jsonl"]


def test_a_file_name_that_is_not_utf8_is_shown_escaped_in_places_and_messages(tmp_path):
    src = tmp_path / os.fsdecode(b"bad\xff.jsonl")
    src.write_bytes(GOOD + b"junk\n")
    errors = tmp_path / "dlq.jsonl"
    result = run_cli(*J2J, str(src), "--errors", str(errors), "-o", os.devnull)
    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr
    assert "Traceback" not in stderr
    where = f"{tmp_path}/bad\\xff.jsonl:{len(CANONICAL) + 1}"
    assert f"error: {where}: invalid JSON" in stderr
    (dead,) = [record_from_json(line) for line in errors.read_bytes().splitlines()]
    assert dead.position == where.encode()
    assert dead.payload.after == b"junk"
    refused = run_cli(*J2J, str(src), "-o", f"{src}/")
    _one_line_error(refused, 2, "bad\\xff.jsonl is not a directory")


def test_a_dead_letter_position_is_utf8_whatever_the_place_holds():
    message = Message(b"x", where=os.fsdecode(b"s\xfe.jsonl") + ":1 \ud800")
    assert dead_letter(message, "bad", "convert").position == b"s\\xfe.jsonl:1 \\ud800"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # (a shell's background job ignores it)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_mid_run_removes_the_partial_output_and_is_one_line(tmp_path, signum):
    """Ctrl-C too: one line and 130, not click's blank line, ``Aborted!`` and 1; the dead
    letters' file the run made, empty, goes with the partial output."""
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"precious\n")
    errors = tmp_path / "dead.jsonl"
    run = subprocess.Popen(
        [sys.executable, "-m", "cdc_connectors.cli", *J2J, "-o", str(out), "--errors", str(errors)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        preexec_fn=_default_sigint,
    )
    assert run.stdin is not None
    run.stdin.write(GOOD)
    run.stdin.flush()  # the run now waits for more input, its partial file in place
    deadline = time.monotonic() + 60
    while not [p for p in os.listdir(tmp_path) if p.endswith(".partial")]:
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.02)
    run.send_signal(signum)
    _, stderr = run.communicate(timeout=60)
    name = signal.Signals(signum).name
    assert run.returncode == 128 + signum, stderr
    assert stderr.decode().splitlines() == [f"Error: stopped by {name}"]
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl"]
    assert out.read_bytes() == b"precious\n"


def test_a_run_killed_outright_leaves_a_partial_the_next_run_removes(tmp_path, src):
    """SIGKILL gives no chance to clean up: the killed run's temporary output stays until
    the next run to the same output, which removes those whose process is gone on this
    machine, and leaves another run's, still writing, and any other file."""
    out = tmp_path / "out.jsonl"
    run = subprocess.Popen(
        [sys.executable, "-m", "cdc_connectors.cli", *J2J, "-o", str(out)],
        stdin=subprocess.PIPE,
        cwd=ROOT,
    )
    assert run.stdin is not None
    run.stdin.write(GOOD)
    run.stdin.flush()  # the run now waits for more input, its partial file in place
    deadline = time.monotonic() + 60
    while not (killed := [p for p in os.listdir(tmp_path) if p.endswith(".partial")]):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.02)
    run.kill()
    run.wait()
    host = files._HOST
    running = tmp_path / f".out.jsonl.{host}-{os.getpid()}.abc.partial"  # this process lives
    elsewhere = tmp_path / f".out.jsonl.other-host-{run.pid}.abc.partial"
    older = tmp_path / ".out.jsonl.abc.partial"  # no owner named: not ours to judge
    for kept in (running, elsewhere, older):
        kept.write_bytes(b"x")
    assert killed[0] in os.listdir(tmp_path) and f"-{run.pid}." in killed[0]
    result = run_cli(*J2J, str(src), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["out.jsonl", running.name, elsewhere.name, older.name]
        + ([src.name] if src.parent == tmp_path else [])
    )
    assert len(out.read_bytes().splitlines()) == len(CANONICAL)


def test_a_dash_is_standard_input_and_standard_output(src):
    result = _shell('convert --from opencdc-json --to opencdc-json - -o - < "$1"', str(src))
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(CANONICAL)


def test_an_output_no_temporary_file_can_sit_beside_says_it_cannot_be_written_there(src):
    result = run_cli(*J2J, str(src), "-o", "/proc/version")
    _one_line_error(result, 2, "-o /proc/version: cannot be written there", "/proc")


def test_writing_into_the_pipe_being_read_is_refused_not_a_hang(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(GOOD)
    piped = subprocess.run(
        ["sh", "-c", f'cat "$1" | "$0" -m cdc_connectors.cli {" ".join(J2J)} -o /dev/stdin',
         sys.executable, str(src)],
        capture_output=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    _one_line_error(piped, 2, "-o /dev/stdin is the same file as standard input")
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    _one_line_error(run_cli(*J2J, str(fifo), "-o", str(fifo)), 2, "is the same file as IN")


def test_errors_dash_is_standard_output_when_o_names_a_file(tmp_path):
    out = tmp_path / "out.jsonl"
    result = run_cli(*J2J, "-o", str(out), "--errors", "-", stdin=GOOD + b"junk\n")
    assert result.returncode == 1
    assert len(out.read_bytes().splitlines()) == len(CANONICAL)
    dead = [record_from_json(line) for line in result.stdout.splitlines()]
    assert [d.payload.after for d in dead] == [b"junk"]
    refused = run_cli(*J2J, "--errors", "-", stdin=GOOD)
    _one_line_error(refused, 2, "standard output already holds the output")
    assert not (ROOT / "-").exists()


def test_a_gzip_input_is_read_decompressed_as_a_files_source_reads_it(tmp_path):
    import gzip

    plain, packed = tmp_path / "in.jsonl", tmp_path / "in.jsonl.gz"
    plain.write_bytes(GOOD)
    packed.write_bytes(gzip.compress(GOOD))
    outs = []
    for source in (plain, packed):
        out = tmp_path / f"{source.name}.out"
        result = run_cli(*J2J, str(source), "-o", str(out))
        assert result.returncode == 0, result.stderr
        outs.append([record_from_json(line) for line in out.read_bytes().splitlines()])
    assert outs[0] == [record_from_json(line) for line in CANONICAL] == outs[1]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (lambda whole: whole[: len(whole) // 2], "not a whole gzip file"),
        (lambda whole: b"plain text\n", "Not a gzipped file"),
    ],
    ids=["cut-short", "not-gzip"],
)
def test_a_gzip_input_that_cannot_be_read_is_one_line_and_no_output(tmp_path, data, reason):
    import gzip

    packed = tmp_path / "in.jsonl.gz"
    packed.write_bytes(data(gzip.compress(GOOD * 50)))
    out = tmp_path / "out.jsonl"
    result = run_cli(*J2J, str(packed), "-o", str(out))
    _one_line_error(result, 1, f"cannot read IN {packed}", reason)
    assert not out.exists()


def test_a_stop_signal_during_an_import_is_put_off_until_the_import_is_done(tmp_path, monkeypatch):
    """Raised inside the import machinery, the stop would leave a module lock held (a
    KeyError at the next import) or be lost (the run then kept its output); it comes
    once the import is done, at the latest before the output is kept."""
    from contextlib import ExitStack

    from cdc_connectors import cli

    monkeypatch.setattr(cli, "_AGAIN_SECONDS", 30.0)  # acted on below, not redelivered
    (tmp_path / "stops_itself.py").write_text(
        "import signal\nsignal.raise_signal(signal.SIGHUP)\nDONE = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reached = []
    with pytest.raises(cli._HungUp), ExitStack() as stack:
        cli._stop_on_signals(stack)
        import stops_itself  # noqa: F401

        reached.append(sys.modules["stops_itself"].DONE)
        cli._stop_if_signalled()
        reached.append("kept")
    assert reached == [True]
    assert cli._put_off.signum is None and cli._put_off.again is None
    __import__("json.tool")  # the import machinery is whole


def test_a_fifo_as_the_output_waits_for_its_reader_but_not_past_a_stop(src, tmp_path):
    """Opening a FIFO waits for a reader: SIGTERM must end that wait (one line)."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    run = subprocess.Popen(
        [sys.executable, "-m", "cdc_connectors.cli", *J2J, str(src), "-o", str(fifo)],
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while _waits_in(run.pid) != "wait_for_partner":  # in the FIFO's open
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=30)
    finally:
        run.kill()
    assert run.returncode == 128 + signal.SIGTERM, stderr
    assert stderr.decode().splitlines() == ["Error: stopped by SIGTERM"]


def _waits_in(pid: int) -> str:
    """The kernel function a process sleeps in (Linux)."""
    try:
        with open(f"/proc/{pid}/wchan") as found:
            return found.read()
    except OSError:
        return ""


def test_a_stop_signal_ignored_by_who_started_the_run_stays_ignored(tmp_path):
    """nohup ignores SIGHUP, a shell's background job SIGINT: the run keeps to that."""
    out = tmp_path / "out.jsonl"

    def ignore_hangups() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    run = subprocess.Popen(
        [sys.executable, "-m", "cdc_connectors.cli", *J2J, "-o", str(out)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        preexec_fn=ignore_hangups,
    )
    assert run.stdin is not None
    try:
        run.stdin.write(GOOD)
        run.stdin.flush()
        deadline = time.monotonic() + 60
        while not [p for p in os.listdir(tmp_path) if p.endswith(".partial")]:
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.02)
        run.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert run.poll() is None  # not stopped
        run.stdin.close()
        assert run.wait(timeout=60) == 0
    finally:
        run.kill()
    assert out.read_bytes() == GOOD


@pytest.mark.parametrize("where", ["-o", "--errors", "-o journal", "-o new store"])
def test_an_output_that_is_the_registry_store_is_refused_and_the_store_kept(src, tmp_path, where):
    """The registry's SQLite file is a place of the run too: an output there would replace
    every schema the store holds."""
    from confluent_kafka.schema_registry import Schema

    from cdc_connectors.registry import open_registry

    store = tmp_path / "registry.db"
    registry = open_registry(f"sqlite:///{store}")
    registry.register_schema("kept", Schema('{"type":"record","name":"r","fields":[]}', "AVRO"))
    registry.close()
    held = store.read_bytes()
    url = f"sqlite:///{store}"
    target = {
        "-o": ["-o", str(store)],
        "--errors": ["-o", str(tmp_path / "out.jsonl"), "--errors", f"{tmp_path}/./registry.db"],
        "-o journal": ["-o", f"{store}-wal"],
        "-o new store": ["-o", str(tmp_path / "new.db")],
    }[where]
    if where == "-o new store":
        url = f"sqlite:///{tmp_path}/new.db"
    result = run_cli(*J2J, "--registry", url, str(src), *target)
    label = "the journal of --registry" if "journal" in where else "--registry"
    _one_line_error(result, 2, where.split()[0], f"same file as {label}")
    assert store.read_bytes() == held
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "registry.db"]


def test_a_dead_letters_file_made_by_a_failed_run_goes_one_there_before_stays(src, tmp_path):
    """A run that fails (here: its input is no gzip) removes the --errors file it made and
    left empty; an --errors file that was there before is never removed."""
    import gzip

    broken = tmp_path / "in.jsonl.gz"
    broken.write_bytes(gzip.compress(GOOD)[:-12])
    dead = tmp_path / "dead.jsonl"
    result = run_cli(*J2J, str(broken), "-o", str(tmp_path / "out.jsonl"), "--errors", str(dead))
    assert result.returncode == 1, result.stderr
    assert not dead.exists() and not (tmp_path / "out.jsonl").exists()
    dead.write_bytes(b"")
    again = run_cli(*J2J, str(broken), "-o", str(tmp_path / "out.jsonl"), "--errors", str(dead))
    assert again.returncode == 1 and dead.exists()


def test_the_journal_of_a_registry_reached_through_a_symlink_is_refused_too(src, tmp_path):
    """SQLite names the journal after the file itself, not after the link."""
    store = tmp_path / "reg.db"
    store.write_bytes(b"")
    (tmp_path / "link.db").symlink_to(store)
    result = run_cli(
        *J2J, "--registry", f"sqlite:///{tmp_path}/link.db", str(src), "-o", f"{store}-wal"
    )
    _one_line_error(result, 2, "-o", "same file as the journal of --registry")
