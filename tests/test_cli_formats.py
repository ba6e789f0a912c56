"""`cdc-connectors formats` lists every format with what it reads and writes and its options;
an `--opt` that neither format of a `convert` has is refused with the options they do have."""

from __future__ import annotations

import re

import pytest

from cdc_connectors import plugins
from cdc_connectors.formats import load_format
from tests.conftest import run_cli

NAMES = sorted(plugins.available(plugins.FORMATS))


def _entries(text: str) -> dict[str, list[str]]:
    """Format name -> its lines (the heading first) of the listing."""
    entries: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line and not line.startswith(" "):
            current = entries.setdefault(line.split()[0], [])
        if line:
            current.append(line)
    return entries


def test_formats_lists_every_format_with_its_direction_and_options():
    done = run_cli("formats")
    assert done.returncode == 0, done.stderr
    entries = _entries(done.stdout.decode())
    assert sorted(entries) == NAMES
    for name, lines in entries.items():
        cls = load_format(name)
        heading = lines[0].split()
        assert heading[1] == ("read+write" if cls.writable else "read"), lines[0]
        listed = [line.split()[0] for line in lines[1:] if re.match(r"    \S", line)]
        assert listed == (sorted(cls.options) or ["(no"]), name
        # each option's meaning is there, wrapped but whole
        text = " ".join(" ".join(line.split()) for line in lines[1:])
        for option, meaning in cls.options.items():
            assert " ".join(meaning.split()) in text, (name, option)


def test_formats_says_which_formats_only_read():
    entries = _entries(run_cli("formats").stdout.decode())
    assert entries["ydb-json"][0].split()[1] == "read"
    assert entries["arcion-json"][0].split()[1] == "read"
    assert entries["debezium-json"][0].split()[1] == "read+write"
    assert "length-delimited" in entries["opencdc-proto"][0]
    assert entries["opencdc-proto"][1].strip() == "(no options)"


def test_formats_shows_the_formats_named():
    done = run_cli("formats", "ydb-json", "opencdc-json")
    assert done.returncode == 0, done.stderr
    assert list(_entries(done.stdout.decode())) == ["ydb-json", "opencdc-json"]


def test_an_unknown_format_is_a_usage_error_naming_those_there_are():
    done = run_cli("formats", "debezium")
    assert done.returncode == 2
    assert done.stdout == b""
    error = done.stderr.decode()
    assert error.count("\n") == 1
    assert "unknown format 'debezium'" in error and "debezium-json" in error


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("--from", "debezium-json", "--to", "opencdc-json", "--opt", "tombstone=delete"),
            "neither 'debezium-json' nor 'opencdc-json' has an option 'tombstone'; "
            "did you mean 'tombstones'? (debezium-json options: key.fields, message, "
            "schemas.enable, subject.strategy, tombstones, truncate; "
            "opencdc-json options: raw.as.string)",
        ),
        (
            ("--from", "ydb-json", "--to", "opencdc-proto", "--opt", "nothing=1"),
            "neither 'ydb-json' nor 'opencdc-proto' has an option 'nothing' "
            "(ydb-json options: collection, key.columns, mode; opencdc-proto has no options)",
        ),
        (
            ("--from", "opencdc-json", "--to", "opencdc-json", "--opt", "raw.as.strings=true"),
            "'opencdc-json' has no option 'raw.as.strings'; did you mean 'raw.as.string'? "
            "(opencdc-json options: raw.as.string)",
        ),
        (
            ("--from", "opencdc-proto", "--to", "opencdc-proto", "--opt", "topic=x"),
            "'opencdc-proto' has no options ('topic' given)",
        ),
    ],
    ids=["misspelt", "unknown", "one-format-twice", "no-options"],
)
def test_an_unknown_opt_lists_the_options_of_both_formats(args: tuple[str, ...], expected: str):
    done = run_cli("convert", *args, stdin=b"")
    assert done.returncode == 2
    assert done.stdout == b""
    error = done.stderr.decode()
    assert error.count("\n") == 1, error
    assert expected in error, error
