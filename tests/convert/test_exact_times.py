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


CREATED, READ = 1_700_000_000_123_456_789, 1_700_000_000_223_456_789


def _change(n: int) -> bytes:
    return orjson.dumps(
        {
            "position": "cA==",
            "operation": "update",
            "metadata": {
                "opencdc.collection": "orders",
                "opencdc.createdAt": str(CREATED + n),
                "opencdc.readAt": str(READ + n),
            },
            "key": {"id": n},
            "payload": {"before": None, "after": {"id": n, "v": "a"}},
        }
    )


def test_record_times_keep_every_digit_through_debezium_json_and_avro(tmp_path: Path) -> None:
    """``opencdc.createdAt`` and ``readAt`` (nanoseconds) written as Debezium JSON or Avro
    and read back are the same numbers: the envelope (and a ``source`` made of the
    metadata) carries ``ts_us`` and ``ts_ns`` beside ``ts_ms``, as Debezium 2.6 does, and
    the reader takes the finest. Before, both came back cut to milliseconds."""
    registry = f"sqlite:///{tmp_path}/r.db"
    for count in (1, 40):  # one message, and a batch of them
        source = tmp_path / f"in{count}.jsonl"
        source.write_bytes(b"".join(_change(n) + b"\n" for n in range(count)))
        for fmt in ("debezium-json", "debezium-avro"):
            written = tmp_path / f"{fmt}{count}.out"
            done = run_cli(
                *("convert", "--from", "opencdc-json", "--to", fmt, "--registry", registry),
                *(str(source), "-o", str(written)),
            )
            assert done.returncode == 0, done.stderr
            read = run_cli(
                *("convert", "--from", fmt, "--to", "opencdc-json", "--registry", registry),
                str(written),
            )
            assert read.returncode == 0, read.stderr
            times = [
                (int(m["opencdc.createdAt"]), int(m["opencdc.readAt"]))
                for m in (orjson.loads(line)["metadata"] for line in read.stdout.splitlines())
            ]
            assert times == [(CREATED + n, READ + n) for n in range(count)], fmt


def test_debezium_events_written_again_keep_their_finest_times(tmp_path: Path) -> None:
    """Debezium JSON with ``ts_ns`` written again as Debezium JSON: the columns (a batch)
    and the per-message way (one message) write the same envelope times, every digit."""
    events = [
        orjson.dumps(
            {
                "before": None,
                "after": {"id": n},
                "source": {"db": "shop", "table": "orders", "ts_ms": 1_700_000_000_123},
                "op": "u",
                "ts_ms": (READ + n) // 10**6,
                "ts_us": (READ + n) // 10**3,
                "ts_ns": READ + n,
            }
        )
        for n in range(30)
    ]
    outputs = []
    for lines in (events, events[:1]):
        source = tmp_path / f"dbz{len(lines)}.jsonl"
        source.write_bytes(b"".join(line + b"\n" for line in lines))
        done = run_cli(
            *("convert", "--from", "debezium-json", "--to", "debezium-json", str(source))
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.splitlines())
        written = [orjson.loads(line) for line in done.stdout.splitlines()]
        assert [(e["ts_ms"], e["ts_us"], e["ts_ns"]) for e in written] == [
            ((READ + n) // 10**6, (READ + n) // 10**3, READ + n) for n in range(len(lines))
        ]
    assert (
        b"0 the per-message way"
        in run_cli(
            *("convert", "--from", "debezium-json", "--to", "debezium-json"),
            str(tmp_path / "dbz30.jsonl"),
        ).stderr
    )
    assert outputs[0][0] == outputs[1][0]


LOCAL = {
    "type": "record",
    "name": "Row",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "lt", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "lu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    ],
}


def _row(n: int, lt: str, lu: str, tm: str) -> bytes:
    after = {"id": n, "lt": lt, "lu": lu, "tm": tm}
    return orjson.dumps(
        {
            "position": "cA==",
            "operation": "create",
            "metadata": {},
            "key": {"id": n},
            "payload": {"before": None, "after": after},
        }
    )


def test_local_timestamps_and_times_refuse_what_they_would_cut_or_drop(tmp_path: Path) -> None:
    """Avro's local timestamps took ``.123999`` as ``.123`` and dropped an offset, and its
    times of day dropped an offset, silently: now each is a dead letter saying why; what
    they hold (a zero offset too) comes back exactly."""
    import json

    (tmp_path / "row.avsc").write_text(json.dumps(LOCAL))
    good = _row(1, "2024-01-02T03:04:05.123", "2024-01-02T03:04:05.123456Z", "23:00:00Z")
    bad = [
        _row(2, "2024-01-02T03:04:05.123999", "2024-01-02T03:04:05", "01:00:00"),
        _row(3, "2024-01-02T03:04:05", "2024-01-02T03:04:05.123456+05:00", "01:00:00"),
        _row(4, "2024-01-02T03:04:05", "2024-01-02T03:04:05", "23:00:00-05:00"),
    ]
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join([good, *bad]) + b"\n")
    registry = f"sqlite:///{tmp_path}/r.db"
    written = run_cli(
        *("convert", "--from", "opencdc-json", "--to", "avro", "--registry", registry),
        *("--opt", "topic=t", "--opt", f"value.schema={tmp_path / 'row.avsc'}"),
        *(str(source), "-o", str(tmp_path / "rows.kv"), "--errors", str(tmp_path / "dlq")),
    )
    assert written.returncode == 1, written.stderr
    reasons = [
        orjson.loads(line)["metadata"]["conduit.dlq.nack.error"]
        for line in (tmp_path / "dlq").read_bytes().splitlines()
    ]
    assert len(reasons) == 3
    assert "finer than milliseconds" in reasons[0]
    assert "offset from UTC" in reasons[1] and "offset from UTC" in reasons[2]
    read = run_cli(
        *("convert", "--from", "avro", "--to", "opencdc-json", "--registry", registry),
        *("--opt", "topic=t", str(tmp_path / "rows.kv")),
    )
    assert read.returncode == 0, read.stderr
    after = orjson.loads(read.stdout.splitlines()[0])["payload"]["after"]
    assert (after["lt"], after["lu"], after["tm"]) == (
        "2024-01-02T03:04:05.123000",
        "2024-01-02T03:04:05.123456",
        "23:00:00",
    )


def test_connect_floats_refuse_numbers_they_would_change() -> None:
    """Debezium JSON with schema blocks: a number a ``float32`` or ``float64`` field would
    not read back as (``16777217`` and ``1e-46`` in 32 bits, 21 digits in a double) is an
    error naming the field, as the Avro and Protobuf writers refuse them; what they hold is
    written as it is."""
    from decimal import Decimal

    import pytest

    from cdc_connectors.formats.debezium.encode import connect_json
    from cdc_connectors.opencdc import CodecError
    from cdc_connectors.schema.connect import parse_connect_schema

    schema = parse_connect_schema(
        {
            "type": "struct",
            "fields": [
                {"field": "f", "type": "float32", "optional": True},
                {"field": "d", "type": "float64", "optional": True},
            ],
        }
    )
    assert connect_json(schema, {"f": 0.1, "d": Decimal("0.5")}) == {"f": 0.1, "d": 0.5}
    assert connect_json(schema, {"f": 16777216, "d": 1e308}) == {"f": 16777216, "d": 1e308}
    for value, said in (
        ({"f": 16777217}, "f: 16777217 would change as a float32"),
        ({"f": 1e-46}, "f: 1e-46 would change as a float32"),
        ({"f": 0.123456789}, "would change as a float32"),
        ({"d": Decimal("0.30000000000000000001")}, "d: 0.30000000000000000001 would change"),
    ):
        with pytest.raises(CodecError, match=said):
            connect_json(schema, value)


def test_envelope_times_a_long_does_not_hold_are_left_null() -> None:
    """A ``readAt`` past 2^63 nanoseconds (or a ``createdAt``): ``ts_ms`` as before, the
    finer times null, not an error (they were not written before they existed)."""
    from cdc_connectors.formats.debezium.encode import envelope_times

    assert envelope_times(2**63) == {"ts_ms": 2**63 // 10**6, "ts_us": 2**63 // 1000, "ts_ns": None}
    assert envelope_times(2**76)["ts_us"] is None
    assert envelope_times(-(2**63)) == {
        "ts_ms": -(2**63) // 10**6,
        "ts_us": -(2**63) // 1000,
        "ts_ns": -(2**63),
    }
