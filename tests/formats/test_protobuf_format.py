"""`convert --to protobuf` / `--from protobuf`: rows in Confluent's Protobuf wire format."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.formats import Message, load_format
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.json_codec import record_to_json
from cdc_connectors.registry import open_registry
from cdc_connectors.schema import framing
from cdc_connectors.schema.protobuf import message_class
from tests.conftest import run_cli

ORDERS = """
syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";

message Key { int64 id = 1; }
message Order {
  int64 id = 1;
  optional string note = 2;
  google.protobuf.Timestamp at = 3;
  repeated string tags = 4;
  Status status = 5;
  enum Status { NEW = 0; PAID = 1; }
}
"""
VALUE = SerializationContext("orders", MessageField.VALUE)


@pytest.fixture
def proto(tmp_path: Path) -> Path:
    path = tmp_path / "orders.proto"
    path.write_text(ORDERS)
    return path


def _format(url: str, proto: Path, **extra: str):  # type: ignore[no-untyped-def]
    options = {
        "topic": "orders",
        "value.schema": str(proto),
        "value.message": "shop.v1.Order",
        "key.schema": str(proto),
        "key.message": "shop.v1.Key",
        **extra,
    }
    return load_format("protobuf")(options, registry=url)


ROW = {
    "id": 2**62,
    "note": "gift",
    "at": "2025-01-02T03:04:05.123456+00:00",
    "tags": ["a"],
    "status": "PAID",
}


def test_rows_round_trip_and_confluent_reads_them(tmp_path: Path, proto: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    fmt = _format(url, proto)
    message = fmt.encode(Record.new("update", key={"id": ROW["id"]}, after=ROW))
    assert message.value is not None and message.key is not None
    frame = framing.read_frame(message.value, protobuf=True)
    assert frame.indexes == (1,)  # the second message of the file
    (record,) = fmt.decode(message)
    assert record.payload.after == ROW and record.key == {"id": ROW["id"]}
    order = message_class(ORDERS, (), (1,))
    read = ProtobufDeserializer(order, {"use.deprecated.format": False})(message.value, VALUE)
    assert read.id == 2**62 and read.note == "gift" and read.status == 1
    assert read.at.ToDatetime().isoformat() == "2025-01-02T03:04:05.123456"


def test_we_read_what_confluent_writes(tmp_path: Path, proto: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    order = message_class(ORDERS, (), (1,))
    message = order(id=5, tags=["x", "y"])
    data = ProtobufSerializer(order, open_registry(url), {"use.deprecated.format": False})(
        message, VALUE
    )
    (record,) = load_format("protobuf")({}, registry=url).decode(Message(data))
    assert record.payload.after == {
        "id": 5,
        "note": None,
        "at": None,
        "tags": ["x", "y"],
        "status": "NEW",
    }


def test_the_subjects_latest_schema_serves_without_a_file(tmp_path: Path, proto: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    open_registry(url).register_schema("orders-value", Schema(ORDERS, "PROTOBUF"))
    fmt = load_format("protobuf")({"topic": "orders"}, registry=url)
    message = fmt.encode(Record.new("create", key=b"k", after={"id": 1}))
    assert message.key == b"k"
    assert fmt.decode(message)[0].payload.after["id"] == 1
    with pytest.raises(CodecError, match=r"not inferred: register one or give --opt value\.schema"):
        load_format("protobuf")({"topic": "other"}, registry=url).encode(
            Record.new("create", after={"id": 1})
        )


def test_data_that_does_not_fit_names_the_field(tmp_path: Path, proto: Path):
    fmt = _format(f"sqlite:///{tmp_path}/registry.db", proto)
    with pytest.raises(CodecError, match=r"payload.after does not fit .*status"):
        fmt.encode(Record.new("create", after=dict(ROW, status="LOST")))
    with pytest.raises(CodecError, match=r"unknown|no field|not a field"):
        fmt.encode(Record.new("create", after={"id": 1, "colour": "red"}))


def test_garbage_goes_to_the_dead_letters(tmp_path: Path, proto: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    good = _format(url, proto).encode(Record.new("create", after=ROW)).value
    assert good is not None
    broken = good[:-3] + b"\xff\xff\xff"
    lines = [{"key": None, "value": base64.b64encode(v).decode()} for v in (good, broken)]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    errors = tmp_path / "errors.jsonl"
    done = run_cli(
        "convert",
        "--from",
        "protobuf",
        "--to",
        "opencdc-json",
        "--registry",
        url,
        str(source),
        "--errors",
        str(errors),
    )
    assert done.returncode == 1 and b"is not Protobuf of" in done.stderr
    (dead,) = [json.loads(line) for line in errors.read_text().splitlines()]
    assert base64.b64decode(dead["payload"]["after"]) == broken
    assert json.loads(done.stdout)["payload"]["after"]["id"] == ROW["id"]


def test_the_cli_round_trip(tmp_path: Path, proto: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    source = tmp_path / "in.jsonl"
    source.write_bytes(record_to_json(Record.new("create", key={"id": 1}, after=ROW)) + b"\n")
    out = tmp_path / "rows.jsonl"
    opts = [
        "--opt",
        "topic=orders",
        "--opt",
        f"value.schema={proto}",
        "--opt",
        "value.message=shop.v1.Order",
        "--opt",
        f"key.schema={proto}",
    ]
    done = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "protobuf",
        "--registry",
        url,
        *opts,
        str(source),
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    back = run_cli(
        "convert", "--from", "protobuf", "--to", "opencdc-json", "--registry", url, str(out)
    )
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["payload"]["after"] == ROW


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (("value.schema={tmp}/bad.proto",), b"value.schema"),
        (("value.schema={tmp}/orders.proto", "value.message=shop.v1.Nope"), b"no message"),
        (("value.schema={tmp}/missing.proto",), b"cannot read"),
        (("value.schema={tmp}/imports.proto",), b'Import "other.proto" was not found'),
    ],
)
def test_misuse_is_one_line_and_exit_2(
    tmp_path: Path, proto: Path, opts: tuple[str, ...], message: bytes
):
    (tmp_path / "bad.proto").write_text('syntax = "proto3"; message {')
    (tmp_path / "imports.proto").write_text(  # three problems: said in one line
        'syntax = "proto3"; import "other.proto"; message X { Other a = 1; }'
    )
    source = tmp_path / "in.jsonl"
    source.write_bytes(record_to_json(Record.new("create", after=ROW)) + b"\n")
    out = tmp_path / "out.jsonl"
    args = [a for o in opts for a in ("--opt", o.replace("{tmp}", str(tmp_path)))]
    done = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "protobuf",
        "--registry",
        f"sqlite:///{tmp_path}/r.db",
        *args,
        str(source),
        "-o",
        str(out),
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and b"Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert not out.exists()
