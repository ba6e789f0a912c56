"""`convert --to avro` / `--from avro`: rows in Confluent's Avro wire format as --kv lines."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.formats import Message, load_format
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.json_codec import record_to_json
from cdc_connectors.registry import open_registry
from cdc_connectors.schema import framing
from tests.conftest import ROOT, run_cli

VALUE = SerializationContext("orders", MessageField.VALUE)
KEY = SerializationContext("orders", MessageField.KEY)


def _records() -> list[Record]:
    return [
        Record.new(
            "create", key={"id": 1}, after={"id": 1, "note": "a", "amount": Decimal("2.50")}
        ),
        Record.new(
            "update", key={"id": 1}, after={"id": 1, "note": "b", "amount": Decimal("3.75")}
        ),
        Record.new(
            "delete", key={"id": 1}, before={"id": 1, "note": "b", "amount": Decimal("3.75")}
        ),
    ]


def _jsonl(path: Path, records: list[Record]) -> Path:
    path.write_bytes(b"".join(record_to_json(r) + b"\n" for r in records))
    return path


def _kv(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rows_round_trip_through_the_cli(tmp_path: Path):
    registry = f"sqlite:///{tmp_path}/registry.db"
    source = _jsonl(tmp_path / "in.jsonl", _records())
    out = tmp_path / "rows.jsonl"
    done = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "avro",
        "--registry",
        registry,
        "--opt",
        "topic=orders",
        str(source),
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    lines = _kv(out)
    assert lines[2]["value"] is None  # a delete is a tombstone
    back = run_cli(
        "convert",
        "--from",
        "avro",
        "--to",
        "opencdc-json",
        "--registry",
        registry,
        "--opt",
        "topic=orders",
        str(out),
    )
    assert back.returncode == 0, back.stderr
    rows = [json.loads(line) for line in back.stdout.splitlines()]
    assert [r["operation"] for r in rows] == ["create", "create", "delete"]
    assert rows[1]["payload"]["after"] == {"amount": 3.75, "id": 1, "note": "b"}
    assert rows[2]["key"] == {"id": 1} and rows[2]["metadata"]["opencdc.collection"] == "orders"


def test_confluent_reads_our_rows_and_we_read_theirs(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    fmt = load_format("avro")({"topic": "orders"}, registry=url)
    message = fmt.encode(_records()[0])
    registry = open_registry(url)
    assert AvroDeserializer(registry)(message.value, VALUE)["amount"] == Decimal("2.50")
    assert AvroDeserializer(registry)(message.key, KEY) == {"id": 1}
    schema = json.dumps(
        {
            "type": "record",
            "name": "Row",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "tags", "type": {"type": "array", "items": "string"}},
            ],
        }
    )
    theirs = AvroSerializer(registry, schema)(
        {"id": 9, "tags": ["x"]}, SerializationContext("t", MessageField.VALUE)
    )
    (record,) = fmt.decode(Message(theirs, key=b"k-9"))
    assert record.payload.after == {"id": 9, "tags": ["x"]} and record.key == b"k-9"


def test_schema_id_in_a_header(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    fmt = load_format("avro")({"topic": "orders"}, registry=url)
    framed = fmt.encode(_records()[0]).value
    assert framed is not None
    header = framed[:5]
    (record,) = fmt.decode(Message(framed[5:], headers=[(framing.VALUE_SCHEMA_ID_HEADER, header)]))
    assert record.payload.after == {"id": 1, "note": "a", "amount": Decimal("2.50")}


def test_reader_latest_reads_every_version_as_the_newest(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    v1 = tmp_path / "v1.avsc"
    v1.write_text(
        json.dumps({"type": "record", "name": "Row", "fields": [{"name": "id", "type": "int"}]})
    )
    v2 = tmp_path / "v2.avsc"
    v2.write_text(
        json.dumps(
            {
                "type": "record",
                "name": "Row",
                "fields": [
                    {"name": "id", "type": "long"},
                    {"name": "tier", "type": "string", "default": "basic"},
                ],
            }
        )
    )
    old = load_format("avro")({"topic": "t", "value.schema": str(v1)}, registry=url)
    new = load_format("avro")({"topic": "t", "value.schema": str(v2)}, registry=url)
    first = old.encode(Record.new("create", after={"id": 1}))
    second = new.encode(Record.new("create", after={"id": 2**40, "tier": "gold"}))
    reader = load_format("avro")({"topic": "t", "reader": "latest"}, registry=url)
    assert [reader.decode(m)[0].payload.after for m in (first, second)] == [
        {"id": 1, "tier": "basic"},
        {"id": 2**40, "tier": "gold"},
    ]
    pinned = load_format("avro")({"topic": "t", "reader": "1"}, registry=url)
    with pytest.raises(CodecError, match=r"version 2 .* version 1"):
        pinned.decode(second)


def test_conduit_framed_raw_data_is_reframed(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    from cdc_connectors.registry.serde import RecordEncoder
    from cdc_connectors.registry.store import SchemaStore

    store = SchemaStore(open_registry(url))
    conduit = RecordEncoder(store, context="pipeline:source").encode(
        Record.new("create", after={"id": 5, "name": "x"}, collection="users")
    )
    assert conduit.metadata["opencdc.payload.schema.subject"] == "pipeline:source:users.payload"
    fmt = load_format("avro")({"topic": "users"}, registry=url)
    message = fmt.encode(conduit)
    assert AvroDeserializer(open_registry(url))(message.value, VALUE) == {"id": 5, "name": "x"}


def test_garbage_goes_to_the_dead_letters_with_its_bytes(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    garbage = b"\x07not avro"
    good_fmt = load_format("avro")({"topic": "orders"}, registry=url)
    good = good_fmt.encode(_records()[0])
    lines = [
        {"key": None, "value": base64.b64encode(garbage).decode()},
        {"key": None, "value": base64.b64encode(good.value or b"").decode()},
        {"key": None, "value": base64.b64encode(b"\x00\x00\x00\x01\x2c\x02").decode()},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    errors = tmp_path / "errors.jsonl"
    done = run_cli(
        "convert",
        "--from",
        "avro",
        "--to",
        "opencdc-json",
        "--registry",
        url,
        str(source),
        "--errors",
        str(errors),
    )
    assert done.returncode == 1
    assert (
        b"magic byte" in done.stderr
        and b"schema id 300 is not in the schema registry" in done.stderr
    )
    dead = [json.loads(line) for line in errors.read_text().splitlines()]
    assert len(dead) == 2 and len(done.stdout.splitlines()) == 1
    assert base64.b64decode(dead[0]["payload"]["after"]) == garbage
    assert "magic byte" in dead[0]["metadata"]["conduit.dlq.nack.error"]
    assert base64.b64decode(dead[1]["payload"]["after"]) == b"\x00\x00\x00\x01\x2c\x02"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), b"needs a schema registry"),
        (
            ("--registry", "sqlite:///{tmp}/r.db", "--opt", "subject.strategy=random"),
            b"subject.strategy",
        ),
        (
            ("--registry", "sqlite:///{tmp}/r.db", "--opt", "value.schema={tmp}/missing.avsc"),
            b"cannot read",
        ),
        (("--registry", "sqlite:///{tmp}/r.db", "--opt", "reader=newest"), b"'reader'"),
        (("--registry", "sqlite:///{tmp}/r.db", "--opt", "value.schema="), b"an empty path"),
        (("--registry", "sqlite:///{tmp}/newdir/"), b"newdir/ names a directory"),
        (("--registry", "http://127.0.0.1:9"), b"schema registry"),
    ],
)
def test_misuse_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], message: bytes):
    source = _jsonl(tmp_path / "in.jsonl", _records())
    out = tmp_path / "out.jsonl"
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "avro",
        "--opt",
        "topic=o",
        *argv,
        str(source),
        "-o",
        str(out),
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and b"Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert not out.exists() and not (tmp_path / "newdir").exists()


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (("subject.strategy=record",), b"inferred schemas are all named 'record'"),
        (("value.schema={tmp}/bad.avsc",), b"not an Avro schema"),
        (("value.schema={tmp}/str.avsc",), b"must be an Avro record, not string"),
        (("value.schema={tmp}/big.avsc",), b"larger than 1024 KiB"),
        (("reader=latest", "topic="), b"needs --opt topic=NAME"),
        (("raw.keys=maybe",), b"raw.keys"),
    ],
)
def test_schema_options_are_checked_before_the_run(
    tmp_path: Path, opts: tuple[str, ...], message: bytes
):
    (tmp_path / "bad.avsc").write_text("{not json")
    (tmp_path / "str.avsc").write_text('"string"')
    (tmp_path / "big.avsc").write_text(" " * (1024 * 1024 + 1) + '"string"')
    source = _jsonl(tmp_path / "in.jsonl", _records())
    out = tmp_path / "out.jsonl"
    registry = f"sqlite:///{tmp_path}/r.db"
    args = [a for o in opts for a in ("--opt", o.replace("{tmp}", str(tmp_path)))]
    if not any(o.startswith("topic=") for o in opts):
        args += ["--opt", "topic=t"]
    done = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "avro",
        "--registry",
        registry,
        *args,
        str(source),
        "-o",
        str(out),
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and b"Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert not out.exists() and not (tmp_path / "newdir").exists()
    assert not (tmp_path / "r.db").exists() or b"t-value" not in (tmp_path / "r.db").read_bytes()


def test_raw_keys_stay_raw_both_ways(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    fmt = load_format("avro")({"topic": "orders", "raw.keys": "true"}, registry=url)
    looks_framed = b"\x00\x00\x00\x00\x01\x02"  # a raw key that starts like a framed one
    message = fmt.encode(Record.new("create", key=looks_framed, after={"id": 1}))
    assert message.key == looks_framed
    (record,) = fmt.decode(message)
    assert record.key == looks_framed and record.payload.after == {"id": 1}
    long_key = (7).to_bytes(8, "big")  # Kafka's LongSerializer
    (record,) = fmt.decode(Message(message.value, key=long_key))
    assert record.key == long_key
    with pytest.raises(CodecError, match=r"raw\.keys=true writes raw keys only"):
        fmt.encode(Record.new("create", key={"id": 1}, after={"id": 1}))


def test_rows_a_registered_version_holds_reuse_it(tmp_path: Path):
    """A null then a text in one column: the second row fits the first row's schema."""
    url = f"sqlite:///{tmp_path}/registry.db"
    fmt = load_format("avro")({"topic": "t"}, registry=url)
    first = fmt.encode(Record.new("create", key={"id": 1}, after={"id": 1, "note": None, "n": 1.5}))
    second = fmt.encode(Record.new("create", key={"id": 2}, after={"id": 2, "note": "x", "n": 2}))
    assert first.value is not None and second.value is not None
    assert first.value[:5] == second.value[:5]  # one schema, one version
    assert [v.version for v in [open_registry(url).get_latest_version("t-value")]] == [1]
    assert fmt.decode(second)[0].payload.after == {"id": 2, "note": "x", "n": 2.0}


def _debezium_event(discount: float | None, row_id: int) -> bytes:
    row = {
        "type": "struct",
        "optional": True,
        "name": "shop.public.orders.Value",
        "fields": [
            {"type": "int32", "optional": False, "field": "id"},
            {"type": "double", "optional": True, "field": "discount"},
            {
                "type": "int64",
                "optional": False,
                "name": "io.debezium.time.MicroTimestamp",
                "version": 1,
                "field": "created_at",
            },
        ],
    }
    source = {"type": "struct", "optional": False, "fields": [], "field": "source"}
    envelope = {
        "type": "struct",
        "optional": False,
        "name": "shop.public.orders.Envelope",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            source,
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    after = {"id": row_id, "discount": discount, "created_at": 1_700_000_000_123_456}
    payload = {"before": None, "after": after, "source": {}, "op": "c"}
    return json.dumps({"schema": envelope, "payload": payload}).encode()


def test_rows_of_debezium_events_keep_the_types_of_their_schema_block(tmp_path: Path):
    """A nullable double null in one row and set in the next: both rows are written with the
    row schema of the schema block, as Confluent's AvroConverter would type them, where
    inference from the values would register ["null","string"], then refuse the double."""
    url = f"sqlite:///{tmp_path}/registry.db"
    source = tmp_path / "events.jsonl"
    source.write_bytes(b"\n".join([_debezium_event(None, 1), _debezium_event(0.25, 2)]) + b"\n")
    out = tmp_path / "rows.jsonl"
    done = run_cli(
        "convert",
        "--from",
        "debezium-json",
        "--to",
        "avro",
        "--registry",
        url,
        "--opt",
        "topic=orders",
        str(source),
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    values = [base64.b64decode(line["value"]) for line in _kv(out)]
    assert values[0][:5] == values[1][:5]  # one schema for both rows
    registry = open_registry(url)
    row = json.loads(registry.get_latest_version("orders-value").schema.schema_str)
    types = {field["name"]: field["type"] for field in row["fields"]}
    assert row["name"] == "Value" and row["namespace"] == "shop.public.orders"
    assert types["id"] == "int" and types["discount"] == ["null", "double"]
    assert types["created_at"]["logicalType"] == "timestamp-micros"
    read = [AvroDeserializer(registry)(value, VALUE) for value in values]
    assert [r["discount"] for r in read] == [None, 0.25]
    assert read[1]["created_at"].isoformat() == "2023-11-14T22:13:20.123456+00:00"


def test_a_schema_the_metadata_names_writes_the_rows_that_fit_it(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    registry = open_registry(url)
    text = json.dumps(
        {
            "type": "record",
            "name": "Row",
            "namespace": "shop",
            "fields": [{"name": "id", "type": "int"}, {"name": "n", "type": ["null", "float"]}],
        }
    )
    registry.register_schema("shop.rows.payload", Schema(text, "AVRO"))
    fmt = load_format("avro")({"topic": "t"}, registry=url)
    named = {"opencdc.payload.schema.subject": "shop.rows.payload"}
    named["opencdc.payload.schema.version"] = "1"
    fits = fmt.encode(Record.new("create", after={"id": 1, "n": None}, metadata=named))
    assert fits.value is not None
    written = registry.get_latest_version("t-value")
    assert json.loads(written.schema.schema_str)["name"] == "Row"
    assert int.from_bytes(fits.value[1:5], "big") == written.schema_id
    context = SerializationContext("t", MessageField.VALUE)
    assert AvroDeserializer(registry)(fits.value, context) == {"id": 1, "n": None}
    # a row the named schema does not hold (a field it lacks) is written as without metadata
    fresh = load_format("avro")({"topic": "u"}, registry=url)
    other = fresh.encode(Record.new("create", after={"id": 2, "n": 1.5, "x": "y"}, metadata=named))
    assert other.value is not None
    assert json.loads(registry.get_latest_version("u-value").schema.schema_str)["name"] == "record"
    assert fresh.decode(other)[0].payload.after == {"id": 2, "n": 1.5, "x": "y"}
    # a schema file of the part goes first
    schema_file = tmp_path / "row.avsc"
    schema_file.write_text(
        json.dumps({"type": "record", "name": "F", "fields": [{"name": "id", "type": "long"}]})
    )
    filed = load_format("avro")({"topic": "f", "value.schema": str(schema_file)}, registry=url)
    filed.encode(Record.new("create", after={"id": 3}, metadata=named))
    assert json.loads(registry.get_latest_version("f-value").schema.schema_str)["name"] == "F"


@pytest.mark.parametrize(
    "metadata",
    [
        {"opencdc.payload.schema.subject": "nowhere", "opencdc.payload.schema.version": "3"},
        {"opencdc.payload.schema.subject": "shop.proto", "opencdc.payload.schema.version": "1"},
        {"opencdc.payload.schema.subject": "shop.proto", "opencdc.payload.schema.version": "x"},
        {"opencdc.payload.schema.subject": "", "opencdc.payload.schema.version": "1"},
    ],
    ids=["unknown", "protobuf", "bad-version", "no-subject"],
)
def test_metadata_naming_no_usable_schema_leaves_the_row_to_inference(
    tmp_path: Path, metadata: dict[str, str]
):
    url = f"sqlite:///{tmp_path}/registry.db"
    open_registry(url).register_schema(
        "shop.proto", Schema('syntax = "proto3"; message M { int64 id = 1; }', "PROTOBUF")
    )
    fmt = load_format("avro")({"topic": "t"}, registry=url)
    message = fmt.encode(Record.new("create", after={"id": 1}, metadata=dict(metadata)))
    written = open_registry(url).get_latest_version("t-value")
    assert json.loads(written.schema.schema_str)["name"] == "record"  # inferred
    assert fmt.decode(message)[0].payload.after == {"id": 1}


def test_keys_of_debezium_events_keep_their_key_schema(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    out = tmp_path / "rows.jsonl"
    done = run_cli(
        "convert",
        "--kv",
        "--from",
        "debezium-json",
        "--to",
        "avro",
        "--registry",
        url,
        str(ROOT / "examples" / "debezium" / "orders.kv.jsonl"),
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    registry = open_registry(url)
    key = json.loads(registry.get_latest_version("shop.public.orders-key").schema.schema_str)
    assert (key["name"], key["namespace"]) == ("Key", "shop.public.orders")
    assert key["fields"] == [{"name": "id", "type": "int"}]
    context = SerializationContext("shop.public.orders", MessageField.KEY)
    keys = [AvroDeserializer(registry)(base64.b64decode(line["key"]), context) for line in _kv(out)]
    assert keys[0] == {"id": 1}
