"""Times through Confluent Protobuf rows and Debezium's time types: the nanoseconds a type
holds are kept on both ways, by the columns as by the per-message way, and a value finer
than its type is a dead letter, never cut."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.cli_runner import run_cli

ROW = (
    'syntax = "proto3";\npackage x;\nimport "google/protobuf/timestamp.proto";\n'
    "message Row { int64 id = 1; google.protobuf.Timestamp ts = 2; }\n"
)
STAMPS = [
    "2024-01-01T00:00:00.123456789Z",
    "2024-01-01T00:00:00.5Z",
    "1970-01-01T00:00:00.000000001+01:00",
]


def _record(n: int, stamp: str) -> bytes:
    return orjson.dumps(
        {
            "position": "cA==",
            "operation": "create",
            "metadata": {"opencdc.collection": "pp"},
            "key": None,
            "payload": {"before": None, "after": {"id": n, "ts": stamp}},
        }
    )


def test_protobuf_timestamps_keep_their_nanoseconds_through_the_columns(tmp_path: Path) -> None:
    (tmp_path / "row.proto").write_text(ROW)
    source = tmp_path / "in.jsonl"
    lines = [_record(n, STAMPS[n % 3]) for n in range(12)]
    source.write_bytes(b"\n".join([*lines, _record(99, "2024-01-01T00:00:00.1234567891Z")]) + b"\n")
    registry = f"sqlite:///{tmp_path}/r.db"
    written = run_cli(
        *("convert", "--from", "opencdc-json", "--to", "protobuf", "--registry", registry),
        *("--opt", f"value.schema={tmp_path / 'row.proto'}", str(source)),
        *("-o", str(tmp_path / "rows.kv")),
    )
    assert written.returncode == 1 and b"finer than nanoseconds" in written.stderr
    read = run_cli(
        *("convert", "--from", "protobuf", "--to", "opencdc-json", "--registry", registry),
        *("--opt", "topic=pp", str(tmp_path / "rows.kv")),
    )
    assert read.returncode == 0, read.stderr
    stamps = [orjson.loads(line)["payload"]["after"]["ts"] for line in read.stdout.splitlines()]
    assert stamps == [
        [
            "2024-01-01T00:00:00.123456789+00:00",
            "2024-01-01T00:00:00.500000+00:00",
            "1969-12-31T23:00:00.000000001+00:00",
        ][n % 3]
        for n in range(12)
    ]
    assert b"8 the per-message way" in read.stderr  # the rows with nanoseconds alone


def test_the_columns_name_the_rows_whose_nanoseconds_they_would_cut() -> None:
    from cdc_connectors.schema.protobuf import from_dict, message_class
    from cdc_connectors.spark.protobuf_batch import ProtobufBatchDecoder

    cls = message_class(
        ROW.replace(
            "google.protobuf.Timestamp ts = 2;", "repeated google.protobuf.Timestamp ts = 2;"
        )
    )
    stamps = [["2024-01-01T00:00:00.5Z"], [], ["2024-01-01T00:00:00Z", STAMPS[0]]]
    bodies = [from_dict({"id": n, "ts": s}, cls).SerializeToString() for n, s in enumerate(stamps)]
    exact = ProtobufBatchDecoder(cls, exact=True)
    _, problems = exact.decode(bodies, [0] * 3)
    assert [p is not None for p in problems] == [False, False, True]
    _, cut = ProtobufBatchDecoder(cls).decode(bodies, [0] * 3)  # Spark's typed columns
    assert cut == [None] * 3
