"""``cdc-connectors`` run for a test: in this process through click's ``CliRunner`` (no
interpreter start), or in a subprocess where the process boundary is what is tested (exit
statuses of a real process, closed streams, what Python prints at exit)."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
CLI = (sys.executable, "-m", "cdc_connectors.cli")
#: The name click gives the command when it runs as ``python -m cdc_connectors.cli``.
PROG_NAME = "python -m cdc_connectors.cli"


def run_cli(
    *args: str,
    stdin: bytes | None = None,
    cwd: Path | str = ROOT,
    env: Mapping[str, str | None] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``cdc-connectors ARGS`` in this process, as a subprocess would show it.

    The exit status, stdout and stderr are what ``python -m cdc_connectors.cli`` gives; an
    exception that escapes the command is exit 1 and its traceback on stderr, as Python
    prints it, so that a test looking for "Traceback" finds it. ``env`` is set for the run
    (a name mapped to None is unset)."""
    from cdc_connectors.cli import main

    previous = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            main, list(args), input=stdin or b"", env=env, prog_name=PROG_NAME
        )
    finally:
        os.chdir(previous)
    stderr = result.stderr_bytes
    code = result.exit_code
    if result.exc_info is not None and not isinstance(result.exc_info[1], SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info)).encode()
        code = 1
    return subprocess.CompletedProcess([*CLI, *args], code, result.stdout_bytes, stderr)


def run_cli_process(
    *args: str, stdin: bytes | None = None, cwd: Path | str = ROOT
) -> subprocess.CompletedProcess[bytes]:
    """Run ``cdc-connectors ARGS`` as a user would, in a subprocess."""
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, cwd=cwd, timeout=120)
