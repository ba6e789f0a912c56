"""`json-schema`: rows in Confluent's JSON Schema wire format, read and written both ways
with confluent-kafka's own serdes, over every kind of registry."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.formats import Message, load_format
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.json_codec import record_to_json
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.serde import RecordDecoder
from cdc_connectors.registry.store import SchemaStore
from tests.conftest import run_cli
from tests.registry.conftest import InProcessServer

VALUE = SerializationContext("orders", MessageField.VALUE)
KEY = SerializationContext("orders", MessageField.KEY)
ORDER = {
    "type": "object",
    "title": "shop.Order",
    "properties": {
        "id": {"type": "integer"},
        "status": {"type": "string", "enum": ["new", "paid", "shipped"]},
        "amount": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "status"],
    "additionalProperties": False,
}


@pytest.fixture(params=["memory", "sqlite", "http"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A registry of each kind, by the URL a format and confluent-kafka are given."""
    if request.param == "memory":
        yield f"memory://{uuid.uuid4().hex}"
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/registry.db"
    else:
        server = InProcessServer(f"sqlite:///{tmp_path}/registry.db")
        yield server.url
        server.stop()


def _format(url: str, **options: str) -> object:
    return load_format("json-schema")({"topic": "orders", **options}, registry=url)


def _schema_file(tmp_path: Path) -> str:
    path = tmp_path / "order.json"
    path.write_text(json.dumps(ORDER))
    return str(path)


def test_what_the_format_writes_confluent_reads(url: str, tmp_path: Path) -> None:
    fmt = _format(url, **{"value.schema": _schema_file(tmp_path)})
    record = Record.new(
        "create",
        key={"id": 7},
        after={"id": 7, "status": "paid", "amount": Decimal("19.99"), "tags": ["gift"]},
    )
    message = fmt.encode(record)  # type: ignore[attr-defined]
    client = open_registry(url)
    value = JSONDeserializer(None, schema_registry_client=client)(message.value, VALUE)
    assert value == {"id": 7, "status": "paid", "amount": 19.99, "tags": ["gift"]}
    assert JSONDeserializer(None, schema_registry_client=client)(message.key, KEY) == {"id": 7}
    assert client.get_latest_version("orders-value").schema.schema_type == "JSON"


def test_what_confluent_writes_the_format_reads(url: str) -> None:
    client = open_registry(url)
    data = JSONSerializer(json.dumps(ORDER), client)(
        {"id": 3, "status": "new", "amount": 12.5}, VALUE
    )
    key = JSONSerializer('{"type": "object"}', client)({"id": 3}, KEY)
    (record,) = _format(url).decode(Message(data, key))  # type: ignore[attr-defined]
    assert record.payload.after == {"id": 3, "status": "new", "amount": 12.5}
    assert record.key == {"id": 3}
    assert record.operation.name.lower() == "create"
    (deleted,) = _format(url).decode(Message(None, key))  # type: ignore[attr-defined]
    assert deleted.operation.name.lower() == "delete"


def test_a_value_that_does_not_match_its_schema_is_refused_naming_the_place(
    url: str, tmp_path: Path
) -> None:
    fmt = _format(url, **{"value.schema": _schema_file(tmp_path)})
    bad = Record.new("create", key={"id": 1}, after={"id": 1, "status": "lost", "amount": "x"})
    with pytest.raises(CodecError, match=r"at /status: .*; at /amount: .*not of type"):
        fmt.encode(bad)  # type: ignore[attr-defined]
    # a message another writer framed with the schema but whose JSON does not match
    client = open_registry(url)
    good = JSONSerializer(json.dumps(ORDER), client)({"id": 1, "status": "new"}, VALUE)
    forged = good[:5] + b'{"id": "one", "status": "new"}'
    with pytest.raises(CodecError, match=r"value: does not match schema id \d+: at /id"):
        _format(url).decode(Message(forged, None))  # type: ignore[attr-defined]
    with pytest.raises(CodecError, match="value: is not JSON"):
        _format(url).decode(Message(good[:5] + b"{nope", None))  # type: ignore[attr-defined]


def test_numbers_are_read_exactly_and_other_values_are_raw_json(url: str) -> None:
    client = open_registry(url)
    schema = '{"type": ["object", "string"]}'
    framed = JSONSerializer(schema, client)({"id": 1}, VALUE)[:5]
    exact = framed + b'{"id": 12345678901234567890.5, "n": 9007199254740993}'
    (record,) = _format(url).decode(Message(exact, None))  # type: ignore[attr-defined]
    assert record.payload.after == {"id": Decimal("12345678901234567890.5"), "n": 2**53 + 1}
    (text,) = _format(url).decode(Message(framed + b'"plain text"', None))  # type: ignore[attr-defined]
    assert text.payload.after == b'"plain text"'


def test_schemas_are_inferred_once_and_kept_while_rows_match_them(url: str) -> None:
    fmt = _format(url)
    first = fmt.encode(Record.new("create", key={"id": 1}, after={"id": 1, "note": None}))  # type: ignore[attr-defined]
    second = fmt.encode(  # type: ignore[attr-defined]
        Record.new("create", key={"id": 2}, after={"id": 2, "note": "x", "extra": True})
    )
    assert first.value[1:5] == second.value[1:5]  # an open object: the same schema
    schema = open_registry(url).get_latest_version("orders-value").schema.schema_str
    assert orjson.loads(schema)["properties"]["id"] == {"type": ["integer", "null"]}
    # text where integers were: a new schema the registry refuses (BACKWARD), naming the place
    with pytest.raises(CodecError, match=r"incompatible.*#/properties/id"):
        fmt.encode(Record.new("create", key={"id": 3}, after={"id": "three"}))  # type: ignore[attr-defined]


def test_records_holding_framed_json_are_decoded_by_the_record_decoder(url: str) -> None:
    client = open_registry(url)
    data = JSONSerializer(json.dumps(ORDER), client)({"id": 9, "status": "shipped"}, VALUE)
    record = Record.new("create", after=data)
    decoded = RecordDecoder(SchemaStore(client)).decode(record)
    assert decoded.payload.after == {"id": 9, "status": "shipped"}


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ('{"type": 5}', "not a JSON Schema"),
        ('{"$ref": "http://127.0.0.1:9/x.json"}', "the schema cannot validate: Resource"),
        ('{"$ref": "#/definitions/nope"}', "the schema cannot validate: Pointer"),
    ],
)
def test_a_schema_file_that_is_no_json_schema_is_one_line(
    tmp_path: Path, schema: str, said: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(schema)
    source = tmp_path / "in.jsonl"
    source.write_bytes(record_to_json(Record.new("create", after={"id": 1})) + b"\n")
    done = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "json-schema",
        "--registry",
        f"sqlite:///{tmp_path}/r.db",
        "--opt",
        f"value.schema={bad}",
        str(source),
    )
    assert done.returncode == 2
    told = done.stderr.decode()
    assert told.count("\n") == 1 and f"option 'value.schema': {said}" in told, told


def test_rows_round_trip_through_the_cli_with_bad_ones_as_dead_letters(tmp_path: Path) -> None:
    registry = f"sqlite:///{tmp_path}/registry.db"
    source = tmp_path / "in.jsonl"
    records = [
        Record.new("create", key={"id": 1}, after={"id": 1, "status": "new"}),
        Record.new("create", key={"id": 2}, after={"id": 2, "status": "lost"}),
        Record.new("delete", key={"id": 1}, before={"id": 1, "status": "new"}),
    ]
    source.write_bytes(b"".join(record_to_json(r) + b"\n" for r in records))
    rows, letters = tmp_path / "rows.jsonl", tmp_path / "letters.jsonl"
    done = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "json-schema",
        "--registry",
        registry,
        "--opt",
        "topic=orders",
        "--opt",
        f"value.schema={_schema_file(tmp_path)}",
        "--errors",
        str(letters),
        str(source),
        "-o",
        str(rows),
    )
    assert done.returncode == 1, done.stderr
    said = done.stderr.decode()
    assert "in.jsonl:2" in said and "at /status" in said, said
    assert "at /status" in letters.read_text()
    assert len(rows.read_text().splitlines()) == 2
    back = run_cli(
        "convert",
        "--from",
        "json-schema",
        "--to",
        "opencdc-json",
        "--registry",
        registry,
        "--opt",
        "topic=orders",
        str(rows),
    )
    assert back.returncode == 0, back.stderr
    read = [json.loads(line) for line in back.stdout.decode().splitlines()]
    assert [r["operation"] for r in read] == ["create", "delete"]
    assert read[0]["payload"]["after"] == {"id": 1, "status": "new"}
