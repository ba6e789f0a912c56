"""``convert`` of the formats without a schema (``ydb-json``, ``opencdc-json``) against a
bare parse of the same lines, on one core.

The change events of :mod:`bench.postgres_events` (an 11-column orders table, mostly
updates), converted once the per-message way into each source format:

- ``convert_ydb_json_vs_json_parse``: as a YDB changefeed in ``NEW_AND_OLD_IMAGES`` mode
  writes them (``key``, ``newImage``, ``oldImage``, ``ts``; about 420 bytes a line),
  ``convert --from ydb-json --opt mode=NEW_AND_OLD_IMAGES --opt key.columns=id --to
  opencdc-proto``;
- ``convert_opencdc_json_vs_json_parse``: as OpenCDC JSON (what the Debezium reading gives,
  16 metadata entries; about 900 bytes a line), ``convert --from opencdc-json --to
  opencdc-proto``;

each the command in this process (click's runner: files in and out) against
``orjson.loads`` of each line of the same file. Best of ``BENCH_ROUNDS``, in turn.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from bench.common import entry, rates
from bench.pipeline_runs import ROUNDS
from bench.postgres_events import events
from cdc_connectors.cli import main
from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.opencdc import Record

LINES = 20_000


def _records(count: int) -> list[Record]:
    debezium = DebeziumJsonFormat({})
    found = []
    for n, (_, value) in enumerate(events(count)):
        found += debezium.decode(Message(value, where=f"events:{n + 1}"))
    return found


def _ydb(record: Record, step: int) -> bytes:
    after = record.payload.after if isinstance(record.payload.after, dict) else None
    before = record.payload.before if isinstance(record.payload.before, dict) else None
    row = after or before or {}
    change: dict[str, Any] = {"key": [row.get("id")]}
    change["erase" if after is None else "update"] = {}
    for name, image in (("newImage", after), ("oldImage", before or after)):
        if image is not None:
            change[name] = {k: _plain(v) for k, v in image.items() if k != "id"}
    change["ts"] = [1_700_000_000_000 + step, 562_949_953_607_163 + step]
    return orjson.dumps(change)


def _plain(value: Any) -> Any:
    """A value as YDB's JSON writes it: numbers, text, booleans (decimals as text)."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def run() -> dict[str, dict[str, Any]]:
    records = _records(LINES)
    opencdc = OpenCDCJsonFormat({})
    lines = {
        "ydb": b"".join(_ydb(r, n) + b"\n" for n, r in enumerate(records)),
        "opencdc": b"".join(opencdc.encode(r).value + b"\n" for r in records),  # type: ignore[operator]
    }
    options = {
        "ydb": [
            "--from",
            "ydb-json",
            "--opt",
            "mode=NEW_AND_OLD_IMAGES",
            "--opt",
            "key.columns=id",
        ],
        "opencdc": ["--from", "opencdc-json"],
    }
    found: dict[str, dict[str, Any]] = {}
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in lines.items():
            source = Path(tmp) / f"{name}.jsonl"
            target = Path(tmp) / f"{name}.pb"
            source.write_bytes(data)
            command = ["convert", *options[name], "--to", "opencdc-proto", str(source)]
            measured = rates(
                {"ours": _command(runner, [*command, "-o", str(target)]), "anchor": _parse(source)},
                len(records),
                rounds=ROUNDS,
            )
            found[f"convert_{name}_json_vs_json_parse"] = entry(
                measured["ours"],
                "msg/s",
                "bare orjson.loads of each line of the same file",
                measured["anchor"],
            )
    return found


def _command(runner: CliRunner, args: list[str]) -> Callable[[], None]:
    def ours() -> None:
        done = runner.invoke(main, args)
        assert done.exit_code == 0, done.output

    return ours


def _parse(source: Path) -> Callable[[], None]:
    def anchor() -> None:
        with source.open("rb") as lines:
            for line in lines:
                orjson.loads(line)

    return anchor


if __name__ == "__main__":
    for name, row in run().items():
        print(name, row)
