"""``cdc-connectors convert`` against a bare parse of the same lines, on one core.

``convert_debezium_vs_json_parse``: the command ``convert --from debezium-json --to
opencdc-proto IN -o OUT`` run in this process (click's runner: the command's own code path,
files in and out) on lines of :mod:`bench.postgres_events` (Debezium JSON values with schema
blocks, about 3.5 KB), against ``orjson.loads`` of each line of the same file. Best of
``BENCH_ROUNDS``, in turn.

``convert_debezium_to_debezium_vs_json_parse``: the same lines ``--to debezium-json`` (the
events rewritten without schema blocks, as a consumer of ``schemas.enable=false`` reads them),
against the same anchor.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from bench.common import entry, rates
from bench.pipeline_runs import ROUNDS
from bench.postgres_events import events
from cdc_connectors.cli import main

LINES = 20_000


def run() -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "debezium.jsonl"
        target = Path(tmp) / "records.pb"
        source.write_bytes(b"".join(value + b"\n" for _, value in events(LINES)))
        runner = CliRunner()

        def command(destination: str) -> Any:
            arguments = ["convert", "--from", "debezium-json", "--to", destination]

            def ours() -> None:
                done = runner.invoke(main, [*arguments, str(source), "-o", str(target)])
                assert done.exit_code == 0, done.output

            return ours

        def anchor() -> None:
            with source.open("rb") as lines:
                for line in lines:
                    orjson.loads(line)

        measured = rates(
            {
                "proto": command("opencdc-proto"),
                "debezium": command("debezium-json"),
                "anchor": anchor,
            },
            LINES,
            rounds=ROUNDS,
        )
    anchor_said = "bare orjson.loads of each line of the same file"
    return {
        "convert_debezium_vs_json_parse": entry(
            measured["proto"], "msg/s", anchor_said, measured["anchor"]
        ),
        "convert_debezium_to_debezium_vs_json_parse": entry(
            measured["debezium"], "msg/s", anchor_said, measured["anchor"]
        ),
    }


if __name__ == "__main__":
    for name, row in run().items():
        print(name, row)
