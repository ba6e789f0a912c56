"""Every command of the CLI misused: bad arguments, bad paths, closed streams, junk input.

Whatever happens, no traceback (nor Python's "Exception ignored" noise at exit)
reaches the user. A usage error is exit 2, one error line and nothing on stdout.
When the output cannot be written, the command says so in one error line: exit 2 for a
stream closed before it ran (misuse), 1 for a full one (/dev/full).

A case that closes or fills a standard stream runs as a user runs it, in a subprocess
started through bash so that the stream can really be closed (``<&-``, ``>&-``), not merely
empty; the others run in this process through click's ``CliRunner``, their exit status,
stdout and stderr as the process gives them (a sample is run both ways and must agree).
All cases run first; each is then checked by its own test.
"""

from __future__ import annotations

import os
import random
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cdc_connectors import plugins
from cdc_connectors.formats import load_format
from tests.cli_runner import run_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "opencdc" / "orders.jsonl"
CLI = (sys.executable, "-m", "cdc_connectors.cli")
FORMATS = sorted(plugins.available(plugins.FORMATS))
ERROR_LINE = re.compile(r"^\s*error\b", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    """One run of the command and what must hold of it."""

    args: tuple[str, ...]
    usage: bool = False  # a usage error: exit 2, one error line, nothing on stdout
    stdin: bytes | None = b""  # None: stdin closed
    stdout: str = "pipe"  # "pipe", "closed" or "full" (/dev/full)
    stderr_closed: bool = False  # then only the exit status can be checked
    lost_output: bool = False  # output could not be written: non-zero, one error line
    exits: tuple[int, ...] = (0,)  # allowed exit statuses when neither of the above
    unchanged: tuple[str, ...] = ()  # files (in the work dir) the run must leave as they were
    env: tuple[tuple[str, str], ...] = field(default=())

    @property
    def needs_a_process(self) -> bool:
        """A standard stream closed or full: only a process of its own has that."""
        return self.stdin is None or self.stdout != "pipe" or self.stderr_closed


@dataclass
class Outcome:
    returncode: int
    stdout: bytes
    stderr: str
    changed: list[str]


def _junk(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


JUNK = {
    "random-1": _junk(1, 1),
    "random-100": _junk(2, 100),
    "random-64k": _junk(3, 65536),
    "newlines": b"\n\n\r\n\n",
    "nul-bytes": b"\x00" * 1000,
    "huge-varint": b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01abc",
    "length-past-end": b"\x7f" + b"x" * 10,
    "deep-json": b"[" * 100_000 + b"\n",
    "deep-object": b'{"payload":{"after":' * 5000 + b"\n",
    "bad-utf8-json": b'{"position":"\xff\xfe","operation":"create"}\n',
    "json-scalars": b'1\nnull\n"x"\ntrue\n[]\n',
    "huge-number": b'{"position":"cA==","operation":"create","payload":{"after":{"n":'
    + b"9" * 5000
    + b"}}}\n",
}


def cases() -> dict[str, Case]:
    valid = EXAMPLE.read_bytes()
    c: dict[str, Case] = {
        # the top level
        "no-arguments": Case((), exits=(0, 2)),
        "help": Case(("--help",)),
        "short-help": Case(("-h",)),
        "version": Case(("--version",)),
        "unknown-command": Case(("nope",), usage=True),
        "unknown-option": Case(("--nope",), usage=True),
        "help-of-convert": Case(("convert", "--help")),
        "help-of-registry": Case(("registry", "--help")),
        "help-of-serve": Case(("registry", "serve", "--help")),
        "help-of-plugins": Case(("plugins", "--help")),
        "help-of-formats": Case(("formats", "--help")),
        "formats": Case(("formats",)),
        "formats-unknown-format": Case(("formats", "nope"), usage=True),
        "formats-unknown-option": Case(("formats", "--nope"), usage=True),
        "help-of-run": Case(("run", "--help")),
        "help-of-submit": Case(("submit", "--help")),
        # pipelines
        "run-without-file": Case(("run",), usage=True),
        "run-missing-file": Case(("run", "missing.yaml"), usage=True),
        "run-not-yaml": Case(("run", "input.jsonl"), usage=True),
        "run-a-directory": Case(("run", "a-dir"), usage=True),
        "submit-missing-file": Case(("submit", "missing.yaml"), usage=True),
        "submit-unknown-option": Case(("submit", "x.yaml", "--nope"), usage=True),
        # plugins
        "plugins": Case(("plugins",)),
        "plugins-extra-argument": Case(("plugins", "extra"), usage=True),
        "plugins-unknown-option": Case(("plugins", "--nope"), usage=True),
        # registry
        "registry-alone": Case(("registry",), exits=(0, 2)),
        "registry-unknown-command": Case(("registry", "nope"), usage=True),
        "serve-unknown-option": Case(("registry", "serve", "--nope"), usage=True),
        "serve-port-not-a-number": Case(("registry", "serve", "--port", "abc"), usage=True),
        "serve-port-missing-value": Case(("registry", "serve", "--port"), usage=True),
        "serve-port-out-of-range": Case(("registry", "serve", "--port", "70000"), usage=True),
        "serve-unknown-store-scheme": Case(
            ("registry", "serve", "--port", "0", "--store", "nope://x"), usage=True
        ),
        "serve-store-is-a-directory": Case(
            ("registry", "serve", "--port", "0", "--store", "sqlite:///a-dir"), usage=True
        ),
        "serve-store-not-a-database": Case(
            ("registry", "serve", "--port", "0", "--store", "sqlite:///input.jsonl"),
            usage=True,
            unchanged=("input.jsonl",),
        ),
        "serve-store-under-a-file": Case(
            ("registry", "serve", "--port", "0", "--store", "sqlite:///input.jsonl/r.db"),
            usage=True,
        ),
        "serve-empty-basic-auth": Case(
            ("registry", "serve", "--port", "0", "--basic-auth", ""), usage=True
        ),
        "serve-empty-env-token": Case(
            ("registry", "serve", "--port", "0"), usage=True, env=(("CDC_REGISTRY_TOKEN", ""),)
        ),
        "serve-cert-without-key": Case(
            ("registry", "serve", "--port", "0", "--tls-cert", "input.jsonl"), usage=True
        ),
        "serve-missing-tls-files": Case(
            ("registry", "serve", "--port", "0", "--tls-cert", "no.pem", "--tls-key", "no.key"),
            usage=True,
        ),
        "serve-misuse-with-closed-streams": Case(
            ("registry", "serve", "--port", "0", "--store", "nope://x"),
            usage=True,
            stdin=None,
            stdout="closed",
        ),
        # convert: arguments
        "convert-no-options": Case(("convert",), usage=True),
        "convert-missing-to": Case(("convert", "--from", "opencdc-json"), usage=True),
        "convert-unknown-format": Case(
            ("convert", "--from", "nope", "--to", "opencdc-json"), usage=True
        ),
        "convert-unknown-output-format": Case(
            ("convert", "--from", "opencdc-json", "--to", "nope"), usage=True
        ),
        "convert-opt-not-name-value": Case(
            ("convert", "--from", "opencdc-json", "--to", "opencdc-json", "--opt", "x"),
            usage=True,
        ),
        "convert-unknown-opt": Case(
            ("convert", "--from", "opencdc-json", "--to", "opencdc-json", "--opt", "x=1"),
            usage=True,
        ),
        "convert-extra-argument": Case(
            ("convert", "--from", "opencdc-json", "--to", "opencdc-json", "input.jsonl", "more"),
            usage=True,
        ),
        "convert-unknown-registry-scheme": Case(
            ("convert", "--from", "opencdc-json", "--to", "opencdc-json", "--registry", "no://x"),
            usage=True,
        ),
        "convert-opt-twice": Case(
            (
                *("convert", "--from", "opencdc-json", "--to", "opencdc-json"),
                *("--opt", "raw.as.string=true", "--opt", "raw.as.string=false"),
            ),
            usage=True,
        ),
        "convert-unknown-option": Case(
            ("convert", "--from", "opencdc-json", "--to", "opencdc-json", "--nope"), usage=True
        ),
    }
    # convert: paths
    base = ("convert", "--from", "opencdc-json", "--to", "opencdc-json")
    path_cases = {
        "missing-input": ("missing.jsonl",),
        "input-is-a-directory": ("a-dir",),
        "output-in-missing-directory": ("input.jsonl", "-o", "no/such/dir/out.jsonl"),
        "output-under-a-file": ("input.jsonl", "-o", "input.jsonl/out.jsonl"),
        "output-is-the-input-with-a-slash": ("input.jsonl", "-o", "input.jsonl/"),
        "output-is-a-file-with-a-slash": ("input.jsonl", "-o", "existing.jsonl/"),
        "input-with-a-slash": ("input.jsonl/", "-o", "existing.jsonl"),
        "errors-is-a-file-with-a-slash": ("input.jsonl", "--errors", "existing.jsonl/"),
        "output-is-a-directory": ("input.jsonl", "-o", "a-dir"),
        "output-unwritable": ("input.jsonl", "-o", "/proc/version"),
        "output-is-the-input": ("input.jsonl", "-o", "input.jsonl"),
        "output-is-the-input-by-another-name": ("input.jsonl", "-o", "./a-dir/../input.jsonl"),
        "errors-in-missing-directory": (
            "input.jsonl",
            "-o",
            "existing.jsonl",
            "--errors",
            "no/such/dir/e.jsonl",
        ),
        "errors-is-the-output": (
            "input.jsonl",
            "-o",
            "existing.jsonl",
            "--errors",
            "existing.jsonl",
        ),
        "errors-is-the-input": ("input.jsonl", "-o", "out.jsonl", "--errors", "input.jsonl"),
        "errors-is-a-directory": ("input.jsonl", "-o", "existing.jsonl", "--errors", "a-dir"),
        "errors-unwritable": ("input.jsonl", "-o", "existing.jsonl", "--errors", "/proc/version"),
    }
    for name, args in path_cases.items():
        c[f"convert-{name}"] = Case(
            (*base, *args), usage=True, unchanged=("input.jsonl", "existing.jsonl")
        )
    # closed and full standard streams
    c["convert-stdin-closed"] = Case(base, stdin=None, lost_output=True)
    c["convert-stdout-closed"] = Case(base, stdin=valid, stdout="closed", lost_output=True)
    c["convert-stdout-full"] = Case(base, stdin=valid, stdout="full", lost_output=True)
    c["convert-output-full"] = Case(
        (*base, "input.jsonl", "-o", "/dev/full"), lost_output=True, unchanged=("input.jsonl",)
    )
    c["convert-errors-full"] = Case(
        (*base, "-o", "out.jsonl", "--errors", "/dev/full"),
        stdin=JUNK["json-scalars"],
        lost_output=True,
    )
    c["convert-all-streams-closed-input-file"] = Case(
        (*base, "input.jsonl"), stdin=None, stdout="closed", lost_output=True
    )
    c["convert-good-run-with-stdin-closed"] = Case(
        (*base, "input.jsonl", "-o", "out.jsonl"), stdin=None
    )
    c["plugins-stdout-closed"] = Case(("plugins",), stdout="closed", lost_output=True)
    c["plugins-stdout-full"] = Case(("plugins",), stdout="full", lost_output=True)
    c["formats-stdout-closed"] = Case(("formats",), stdout="closed", lost_output=True)
    c["formats-stdout-full"] = Case(("formats",), stdout="full", lost_output=True)
    c["plugins-stdin-closed"] = Case(("plugins",), stdin=None)
    c["help-stdout-full"] = Case(("--help",), stdout="full", lost_output=True)
    c["version-stdout-full"] = Case(("--version",), stdout="full", lost_output=True)
    c["help-stdout-closed"] = Case(("--help",), stdout="closed", lost_output=True)
    c["version-stdout-closed"] = Case(("--version",), stdout="closed", lost_output=True)
    c["help-of-convert-stdout-closed"] = Case(
        ("convert", "--help"), stdout="closed", lost_output=True
    )
    c["usage-error-stderr-closed"] = Case(("nope",), usage=True, stderr_closed=True)
    c["convert-usage-error-stderr-closed"] = Case(
        ("convert", "--from", "nope", "--to", "opencdc-json"), usage=True, stderr_closed=True
    )
    c["serve-misuse-stderr-closed"] = Case(
        ("registry", "serve", "--port", "0", "--store", "nope://x"),
        usage=True,
        stderr_closed=True,
    )
    c["plugins-stderr-closed"] = Case(("plugins",), stderr_closed=True)
    return c


_REGISTRY = ("--registry", "sqlite:///registry.db")


def junk_cases() -> dict[str, Case]:
    """Each junk input to each input format, plain and ``--kv``; the output format rotates."""
    c: dict[str, Case] = {}
    # Read-only formats cannot be --to (a usage error before reading, tested elsewhere).
    writable = [f for f in FORMATS if load_format(f).writable]
    for i, source in enumerate(FORMATS):
        for j, (name, data) in enumerate(JUNK.items()):
            target = writable[(i + j) % len(writable)]
            for kv in ((), ("--kv",)):
                key = f"{source}-to-{target}{'-kv' if kv else ''}-{name}"
                # Schema formats need a registry; the embedded one in the run's directory.
                args = ("convert", "--from", source, "--to", target, *kv, *_REGISTRY)
                c[key] = Case((*args, "--errors", "dead.jsonl"), stdin=data, exits=(0, 1))
        target = source if source in writable else "opencdc-json"
        c[f"{source}-fail-fast-random"] = Case(
            ("convert", "--from", source, "--to", target, "--fail-fast", *_REGISTRY),
            stdin=JUNK["random-100"],
            exits=(1,),
        )
    return c


def _prepare(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    (work / "a-dir").mkdir(exist_ok=True)
    (work / "input.jsonl").write_bytes(EXAMPLE.read_bytes())
    (work / "existing.jsonl").write_bytes(b'{"kept": "this must survive a failed run"}\n')


#: Credentials the command would take from the environment; no case inherits them.
_CREDENTIALS = ("CDC_REGISTRY_BASIC_AUTH", "CDC_REGISTRY_TOKEN")


def _run(case: Case, work: Path) -> Outcome:
    """``case`` in a subprocess through bash, its streams closed or full as it says."""
    _prepare(work)
    before = {name: (work / name).read_bytes() for name in case.unchanged}
    redirects = []
    if case.stdin is None:
        redirects.append("<&-")
    if case.stdout == "closed":
        redirects.append(">&-")
    elif case.stdout == "full":
        redirects.append(">/dev/full")
    if case.stderr_closed:
        redirects.append("2>&-")
    env = {k: v for k, v in os.environ.items() if k not in _CREDENTIALS}
    result = subprocess.run(
        ["bash", "-c", f'"$@" {" ".join(redirects)}', "bash", *CLI, *case.args],
        input=case.stdin or b"",
        capture_output=True,
        cwd=work,
        env={**env, **dict(case.env)},
        timeout=120,
    )
    changed = [name for name, data in before.items() if (work / name).read_bytes() != data]
    return Outcome(
        result.returncode, result.stdout, result.stderr.decode(errors="replace"), changed
    )


def _run_here(case: Case, work: Path) -> Outcome:
    """``case`` in this process (its streams are pipes: nothing needs a process)."""
    assert not case.needs_a_process, case
    _prepare(work)
    before = {name: (work / name).read_bytes() for name in case.unchanged}
    env: dict[str, str | None] = {name: None for name in _CREDENTIALS}
    result = run_cli(*case.args, stdin=case.stdin, cwd=work, env={**env, **dict(case.env)})
    changed = [name for name, data in before.items() if (work / name).read_bytes() != data]
    return Outcome(
        result.returncode, result.stdout, result.stderr.decode(errors="replace"), changed
    )


def _run_all(all_cases: dict[str, Case], root: Path) -> dict[str, Outcome]:
    """Every case: those that need a process in parallel subprocesses, the others here."""
    with ThreadPoolExecutor(max_workers=max(4, 2 * (os.cpu_count() or 1))) as pool:
        futures = {
            name: pool.submit(_run, case, root / name)
            for name, case in all_cases.items()
            if case.needs_a_process
        }
        here = {
            name: _run_here(case, root / name)
            for name, case in all_cases.items()
            if not case.needs_a_process
        }
        return {**here, **{name: future.result() for name, future in futures.items()}}


def check(case: Case, outcome: Outcome) -> None:
    err = outcome.stderr
    where = f"exit {outcome.returncode}, stderr:\n{err}"
    for stream in (err, outcome.stdout.decode(errors="replace")):
        assert "Traceback" not in stream, where
        assert "Exception ignored" not in stream, where
    assert not outcome.changed, f"changed {outcome.changed}; {where}"
    errors = [line for line in err.splitlines() if ERROR_LINE.match(line)]
    if case.usage:
        assert outcome.returncode == 2, where
        if not case.stderr_closed:  # with stderr closed, click falls back to stdout
            assert outcome.stdout == b"", where
            assert len(errors) == 1, f"expected one error line; {where}"
    elif case.lost_output:
        # a stream closed before the command ran is misuse; a full one a failed write
        closed = case.stdin is None or case.stdout == "closed"
        assert outcome.returncode == (2 if closed else 1), where
        assert len(errors) == 1, f"expected one error line; {where}"
    else:
        assert outcome.returncode in case.exits, where


CASES = cases()
JUNK_CASES = junk_cases()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return _run_all(CASES, tmp_path_factory.mktemp("misuse"))


@pytest.fixture(scope="module")
def junk_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return _run_all(JUNK_CASES, tmp_path_factory.mktemp("junk"))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_misuse_ends_in_a_clear_line_never_a_traceback(name: str, outcomes: dict[str, Outcome]):
    check(CASES[name], outcomes[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(JUNK_CASES))
def test_junk_input_to_every_format_never_ends_in_a_traceback(
    name: str, junk_outcomes: dict[str, Outcome]
):
    check(JUNK_CASES[name], junk_outcomes[name])


def test_every_command_is_covered():
    """A new command gets misuse cases here before it ships."""
    from cdc_connectors.cli import main

    def commands(group: object, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
        for name, command in getattr(group, "commands", {}).items():
            yield (*prefix, name)
            yield from commands(command, (*prefix, name))

    covered = {case.args[: len(path)] for case in CASES.values() for path in commands(main)}
    missing = [path for path in commands(main) if path not in covered]
    assert not missing, f"commands without misuse cases: {missing}"


def test_port_in_use_is_a_usage_error(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        case = Case(("registry", "serve", "--store", "memory://", "--port", port), usage=True)
        check(case, _run(case, tmp_path))


#: Cases run both ways by the next test: usage errors of every kind, junk input, fail-fast.
BOTH_WAYS = (
    "unknown-command",
    "formats-unknown-format",
    "run-not-yaml",
    "serve-port-out-of-range",
    "serve-store-not-a-database",
    "convert-unknown-opt",
    "convert-opt-twice",
    "convert-output-is-the-input-by-another-name",
    "convert-errors-is-a-directory",
)
BOTH_WAYS_JUNK = (
    "opencdc-proto-to-json-schema-random-100",
    "debezium-json-to-opencdc-proto-kv-deep-object",
    "avro-fail-fast-random",
)


@pytest.mark.slow
@pytest.mark.parametrize("name", BOTH_WAYS + BOTH_WAYS_JUNK)
def test_a_case_run_here_ends_as_in_a_process_of_its_own(name: str, tmp_path: Path):
    """What the in-process runs show is what the command shows a user."""
    case = {**CASES, **JUNK_CASES}[name]
    here, there = _run_here(case, tmp_path / "here"), _run(case, tmp_path / "there")
    assert (here.returncode, here.stdout, here.stderr) == (
        there.returncode,
        there.stdout,
        there.stderr.replace(str(tmp_path / "there"), str(tmp_path / "here")),
    )


@pytest.mark.slow
def test_a_pipeline_refused_before_it_runs_makes_nothing(tmp_path: Path):
    """A source path that does not exist is one line and exit 2, said before a checkpoint
    is locked: no checkpoint directory, no lock file, no output."""
    work = tmp_path / "work"
    _prepare(work)
    (work / "p.yaml").write_text(
        """version: "2.2"
spark: {checkpoint: ck}
pipelines:
  - id: p
    connectors:
      - {id: in, type: source, plugin: files, settings: {path: no-such-dir, format: debezium-json}}
      - {id: out, type: destination, plugin: files, settings: {path: out}}
"""
    )
    case = Case(("run", "p.yaml"), usage=True)
    outcome = _run(case, work)
    check(case, outcome)
    assert "does not exist" in outcome.stderr
    assert not (work / "ck").exists() and not (work / "out").exists()


@pytest.mark.parametrize(
    ("command", "closing"),
    [("run", "2>&-"), ("submit", ">&-"), ("submit", "2>&-")],
)
def test_a_run_whose_lines_would_be_lost_is_refused_before_spark_starts(
    tmp_path: Path, command: str, closing: str
) -> None:
    """``run`` and ``submit`` say how a run goes on standard error (``submit`` its driver's
    lines on standard output): started with one of those closed, a valid pipeline is
    refused at once, exit 2, instead of running unseen (or into a file opened later on that
    descriptor)."""
    (tmp_path / "in").mkdir()
    (tmp_path / "p.yaml").write_text(
        'version: "2.2"\npipelines:\n  - id: p\n    mode: batch\n    connectors:\n'
        "      - {id: i, type: source, plugin: files, settings: {path: in, format: opencdc-json}}\n"
        "      - {id: o, type: destination, plugin: files, settings: {path: out}}\n"
    )
    result = subprocess.run(
        ["bash", "-c", f'"$@" {closing}', "bash", *CLI, command, "p.yaml"],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 2, result
    assert not (tmp_path / "out").exists() and not (tmp_path / ".cdc").exists()
