"""``cdc-connectors run`` and ``submit`` misused: one error line, exit 2, before any Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

GOOD = """\
version: "2.2"
pipelines:
  - id: p
    connectors:
      - {id: in, type: source, plugin: files, settings: {path: in/, format: debezium-json}}
      - {id: out, type: destination, plugin: files, settings: {path: out/}}
"""

CASES = {
    "bad-yaml": ("pipelines: [\n", "p.yaml:2: not valid YAML"),
    "unknown-key": (GOOD.replace("  - id: p\n", "  - id: p\n    colour: red\n"), "p.yaml:4"),
    "unknown-plugin": (
        GOOD.replace("plugin: files, settings: {path: out/}", "plugin: s3"),
        "p.yaml:6",
    ),
    "bad-setting": (GOOD.replace("{path: out/}", "{path: out/, kv: maybe}"), "p.yaml:6"),
    "not-utf8": ("version: \xff\n", "p.yaml:1: not UTF-8"),
}


def _check_usage(result: object, expected: str) -> None:
    returncode = result.returncode  # type: ignore[attr-defined]
    stderr = result.stderr.decode()  # type: ignore[attr-defined]
    assert returncode == 2, stderr
    assert result.stdout == b""  # type: ignore[attr-defined]
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: "), stderr
    assert expected in lines[0], stderr


@pytest.mark.parametrize("command", ["run", "submit"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_file_that_cannot_run_is_one_line_and_exit_2(
    command: str, case: str, tmp_path: Path
) -> None:
    text, expected = CASES[case]
    path = tmp_path / "p.yaml"
    path.write_bytes(text.encode("latin-1"))
    _check_usage(run_cli(command, str(path)), expected)


@pytest.mark.parametrize("command", ["run", "submit"])
def test_a_missing_file_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    _check_usage(run_cli(command, str(tmp_path / "nope.yaml")), "cannot be read")


@pytest.mark.parametrize(
    "args",
    [("run",), ("submit",), ("run", "a.yaml", "b.yaml"), ("submit", "a.yaml", "--master", "x")],
    ids=["run-no-file", "submit-no-file", "run-two-files", "submit-args-without-dashes"],
)
def test_wrong_arguments_are_usage_errors(args: tuple[str, ...]) -> None:
    result = run_cli(*args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == b""
    assert b"Traceback" not in result.stderr
