"""`debezium-avro`: Debezium envelopes as Confluent-framed Avro <-> OpenCDC."""

from __future__ import annotations

import base64
import copy
import io
import json
import pickle
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.convert import DeadLetterWriter, convert_stream
from cdc_connectors.formats.base import FormatOptionError, Message, SkipMessage
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record, record_from_json
from cdc_connectors.opencdc.data import Change
from cdc_connectors.registry import SchemaRegistry, open_registry
from cdc_connectors.schema import framing

TOPIC = "shop.public.orders"
VALUE = SerializationContext(TOPIC, MessageField.VALUE)
KEY = SerializationContext(TOPIC, MessageField.KEY)

# What Confluent's AvroConverter registers for a PostgreSQL connector's orders table.
ROW = {
    "type": "record",
    "name": "Value",
    "namespace": "shop.public.orders",
    "fields": [
        {"name": "id", "type": {"type": "int", "connect.default": 0}, "default": 0},
        {
            "name": "price",
            "type": [
                "null",
                {
                    "type": "bytes",
                    "scale": 2,
                    "precision": 10,
                    "connect.version": 1,
                    "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
                    "connect.name": "org.apache.kafka.connect.data.Decimal",
                    "logicalType": "decimal",
                },
            ],
            "default": None,
        },
        {
            "name": "status",
            "type": [
                "null",
                {
                    "type": "string",
                    "connect.version": 1,
                    "connect.parameters": {"allowed": "new,paid"},
                    "connect.name": "io.debezium.data.Enum",
                },
            ],
            "default": None,
        },
        {"name": "notes", "type": ["null", "string"], "default": None},
    ],
    "connect.name": "shop.public.orders.Value",
}
ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "namespace": "shop.public.orders",
    "fields": [
        {"name": "before", "type": ["null", ROW], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {
            "name": "source",
            "type": {
                "type": "record",
                "name": "Source",
                "namespace": "io.debezium.connector.postgresql",
                "fields": [
                    {"name": "version", "type": "string"},
                    {"name": "connector", "type": "string"},
                    {"name": "name", "type": "string"},
                    {"name": "ts_ms", "type": "long"},
                    {"name": "snapshot", "type": ["string", "null"], "default": "false"},
                    {"name": "db", "type": "string"},
                    {"name": "schema", "type": "string"},
                    {"name": "table", "type": "string"},
                    {"name": "txId", "type": ["null", "long"], "default": None},
                    {"name": "lsn", "type": ["null", "long"], "default": None},
                ],
            },
        },
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
        {
            "name": "transaction",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "block",
                    "namespace": "event",
                    "fields": [
                        {"name": "id", "type": "string"},
                        {"name": "total_order", "type": "long"},
                        {"name": "data_collection_order", "type": "long"},
                    ],
                },
            ],
            "default": None,
        },
    ],
    "connect.name": "shop.public.orders.Envelope",
}
KEY_SCHEMA = {
    "type": "record",
    "name": "Key",
    "namespace": "shop.public.orders",
    "fields": [{"name": "id", "type": "int"}],
}
SOURCE = {
    "version": "2.5.0.Final",
    "connector": "postgresql",
    "name": "shop",
    "ts_ms": 1_700_000_000_200,
    "snapshot": "false",
    "db": "shop",
    "schema": "public",
    "table": "orders",
    "txId": 771,
    "lsn": 24_023_128,
}
AFTER = {"id": 42, "price": Decimal("12.34"), "status": "paid", "notes": "fragile"}


def event(**changes: Any) -> dict[str, Any]:
    value = {
        "before": None,
        "after": AFTER,
        "source": SOURCE,
        "op": "c",
        "ts_ms": 1_700_000_000_300,
        "transaction": {"id": "771:24023128", "total_order": 1, "data_collection_order": 1},
    }
    value.update(copy.deepcopy(changes))
    return value


def debezium(registry: SchemaRegistry, value: dict[str, Any] | None, key: int = 42) -> Message:
    """A message as Debezium writes it through Confluent's AvroConverter."""
    serialize = AvroSerializer(registry, json.dumps(ENVELOPE))
    key_bytes = AvroSerializer(registry, json.dumps(KEY_SCHEMA))({"id": key}, KEY)
    return Message(None if value is None else serialize(value, VALUE), key=key_bytes)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/r.db"


def test_a_debezium_event_maps_as_debezium_json_does(url: str) -> None:
    registry = open_registry(url)
    (record,) = DebeziumAvroFormat(registry=url).decode(debezium(registry, event()))
    assert record.operation is Operation.CREATE
    assert record.key == {"id": 42}
    assert record.payload.before is None and record.payload.after == AFTER
    md = record.metadata
    assert md.collection == "shop.public.orders"
    assert md.created_at == 1_700_000_000_200_000_000
    assert md.read_at == 1_700_000_000_300_000_000
    assert md["debezium.source.lsn"] == "24023128"
    assert md["debezium.source.connector"] == "postgresql"
    assert md["debezium.transaction.id"] == "771:24023128"


@pytest.mark.parametrize(
    ("op", "before", "after", "operation"),
    [
        ("u", AFTER, dict(AFTER, notes=None), Operation.UPDATE),
        ("d", AFTER, None, Operation.DELETE),
        ("r", None, AFTER, Operation.SNAPSHOT),
    ],
)
def test_operations_and_images(url: str, op: str, before: Any, after: Any, operation: Any) -> None:
    message = debezium(open_registry(url), event(op=op, before=before, after=after))
    (record,) = DebeziumAvroFormat(registry=url).decode(message)
    assert record.operation is operation
    assert (record.payload.before, record.payload.after) == (before, after)


def test_row_and_key_schemas_are_registered_once_per_writer_schema(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = open_registry(url)
    fmt = DebeziumAvroFormat(registry=url)
    calls: list[str] = []
    register = fmt.registry.register_schema_full_response

    def counted(subject: str, schema: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(subject)
        return register(subject, schema, *args, **kwargs)

    monkeypatch.setattr(fmt.registry, "register_schema_full_response", counted)
    records = [r for n in range(20) for r in fmt.decode(debezium(registry, event(), key=n))]
    assert sorted(calls) == ["shop.public.orders.key", "shop.public.orders.payload"]
    md = records[-1].metadata
    assert (md["opencdc.payload.schema.subject"], md["opencdc.payload.schema.version"]) == (
        "shop.public.orders.payload",
        "1",
    )
    assert md["opencdc.key.schema.subject"] == "shop.public.orders.key"
    row = orjson.loads(
        registry.get_version("shop.public.orders.payload", 1).schema.schema_str or ""
    )
    assert row["name"] == "shop.public.orders.Value"  # the after field's record, not the envelope
    assert [f["name"] for f in row["fields"]] == ["id", "price", "status", "notes"]
    assert row["fields"][1]["type"][1]["connect.name"] == "org.apache.kafka.connect.data.Decimal"


def test_tombstones_and_truncates_follow_the_debezium_options(url: str) -> None:
    registry = open_registry(url)
    with pytest.raises(SkipMessage, match="tombstone"):
        DebeziumAvroFormat(registry=url).decode(debezium(registry, None))
    (delete,) = DebeziumAvroFormat({"tombstones": "delete"}, registry=url).decode(
        debezium(registry, None, key=7)
    )
    assert delete.operation is Operation.DELETE and delete.key == {"id": 7}
    truncate = debezium(registry, event(op="t", after=None))
    with pytest.raises(CodecError, match="truncate"):
        DebeziumAvroFormat(registry=url).decode(truncate)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"\x07garbage", "magic byte"),
        (b"\x00\x00\x00\x01", "truncated|malformed|not in the schema registry"),
        (b"\x00\x00\x00\x01\x2c\x02", "schema id 300 is not in the schema registry"),
    ],
)
def test_garbage_is_a_codec_error_with_a_reason(url: str, value: bytes, reason: str) -> None:
    with pytest.raises(CodecError, match=reason) as caught:
        DebeziumAvroFormat(registry=url).decode(Message(value))
    assert caught.value.reason.startswith("value: ")
    assert caught.value.data == value


def test_a_body_that_is_not_of_its_schema_is_a_codec_error(url: str) -> None:
    good = debezium(open_registry(url), event())
    assert good.value is not None
    with pytest.raises(CodecError, match="is not Avro of its schema") as caught:
        DebeziumAvroFormat(registry=url).decode(Message(good.value[:-3]))
    assert caught.value.data == good.value[:-3]


def test_a_raw_key_stays_bytes(url: str) -> None:
    message = debezium(open_registry(url), event())
    (record,) = DebeziumAvroFormat(registry=url).decode(Message(message.value, key=b"order-42"))
    assert record.key == b"order-42"


def test_the_registry_is_required() -> None:
    with pytest.raises(FormatOptionError, match="registry"):
        DebeziumAvroFormat()
    with pytest.raises(FormatOptionError, match=r"subject\.strategy"):
        DebeziumAvroFormat({"subject.strategy": "conduit"}, registry="sqlite:///x.db")


# --- writing ---------------------------------------------------------------------------------


def test_confluent_deserializer_reads_what_we_write(url: str) -> None:
    record = Record.new(
        "update",
        key={"id": 3},
        before={"id": 3, "name": "a", "amount": Decimal("1.50")},
        after={"id": 3, "name": "b", "amount": Decimal("2.25")},
        metadata={"debezium.source.db": "shop", "debezium.source.table": "users"},
        collection="shop.users",
        created_at=1_700_000_000_123_456_789,
        read_at=1_700_000_000_456_789_012,
    )
    message = DebeziumAvroFormat({"topic": "users"}, registry=url).encode(record)
    registry = open_registry(url)
    value = AvroDeserializer(registry)(
        message.value, SerializationContext("users", MessageField.VALUE)
    )
    assert value == {
        "before": {"id": 3, "name": "a", "amount": Decimal("1.5000000000")},
        "after": {"id": 3, "name": "b", "amount": Decimal("2.2500000000")},
        "source": {
            "db": "shop",
            "table": "users",
            "ts_ms": 1_700_000_000_123,
            "ts_us": 1_700_000_000_123_456,
            "ts_ns": 1_700_000_000_123_456_789,
        },
        "op": "u",
        "ts_ms": 1_700_000_000_456,
        "ts_us": 1_700_000_000_456_789,
        "ts_ns": 1_700_000_000_456_789_012,
    }
    assert AvroDeserializer(registry)(
        message.key, SerializationContext("users", MessageField.KEY)
    ) == {"id": 3}
    envelope = orjson.loads(registry.get_latest_version("users-value").schema.schema_str or "")
    assert envelope["name"] == "shop.users.Envelope"
    names = [f["name"] for f in envelope["fields"]]
    assert names == ["before", "after", "source", "op", "ts_ms", "ts_us", "ts_ns"]
    assert envelope["fields"][0]["type"][0] == "null"
    assert envelope["fields"][1]["type"] == ["null", "shop.users.Value"]
    assert registry.get_versions("users-key") == [1]


@pytest.mark.parametrize(
    "record",
    [
        Record.new("create", key={"id": 1}, after={"id": 1, "n": "x"}, collection="db.t"),
        Record.new(
            "update",
            key={"id": 1},
            before={"id": 1, "n": "x", "f": 1.5},
            after={"id": 1, "n": "y", "f": 2.5},
            collection="db.t",
        ),
        Record.new("delete", key={"id": 1}, before={"id": 1, "n": "y"}, collection="db.t"),
        Record.new("snapshot", key={"id": 2}, after={"id": 2, "n": None}, collection="weird-db.t"),
    ],
)
def test_opencdc_round_trips_through_debezium_avro(url: str, record: Record) -> None:
    fmt = DebeziumAvroFormat(registry=url)
    (back,) = fmt.decode(fmt.encode(record))
    assert back.operation is record.operation
    assert back.key == record.key
    assert (back.payload.before, back.payload.after) == (
        record.payload.before,
        record.payload.after,
    )
    assert back.metadata.collection == record.metadata.collection


def test_a_debezium_event_round_trips_with_its_registered_row_schema(url: str) -> None:
    registry = open_registry(url)
    fmt = DebeziumAvroFormat({"topic": "copy"}, registry=url)
    (record,) = fmt.decode(debezium(registry, event(op="u", before=AFTER)))
    message = fmt.encode(record)
    envelope = orjson.loads(registry.get_latest_version("copy-value").schema.schema_str or "")
    row = envelope["fields"][0]["type"][1]
    assert row["name"] == "shop.public.orders.Value" and "connect.name" in row  # as registered
    (back,) = fmt.decode(message)
    assert (back.operation, back.key) == (Operation.UPDATE, {"id": 42})
    assert back.payload.after == AFTER and back.payload.before == AFTER
    for name in ("opencdc.collection", "opencdc.createdAt", "opencdc.readAt"):
        assert back.metadata[name] == record.metadata[name]
    source = {k: v for k, v in back.metadata.items() if k.startswith("debezium.")}
    assert source == {k: v for k, v in record.metadata.items() if k.startswith("debezium.")}
    theirs = AvroDeserializer(registry)(
        message.value, SerializationContext("copy", MessageField.VALUE)
    )
    assert theirs["source"]["lsn"] == 24_023_128 and theirs["transaction"]["total_order"] == 1


def test_confluent_serializer_output_of_our_schema_reads_back(url: str) -> None:
    """A producer that writes our registered envelope schema with Confluent's serializer."""
    fmt = DebeziumAvroFormat({"topic": "t"}, registry=url)
    record = Record.new(
        "create", key={"id": 1}, after={"id": 1, "n": "x"}, collection="db.t", created_at=10**6
    )
    fmt.encode(record)
    registry = open_registry(url)
    schema = registry.get_latest_version("t-value").schema.schema_str
    value = AvroSerializer(registry, schema, conf={"auto.register.schemas": False})(
        {
            "before": None,
            "after": {"id": 9, "n": "z"},
            "source": {"table": "db.t", "ts_ms": 5},
            "op": "c",
            "ts_ms": 6,
        },
        SerializationContext("t", MessageField.VALUE),
    )
    (back,) = fmt.decode(Message(value))
    assert back.payload.after == {"id": 9, "n": "z"}
    assert (back.metadata.collection, back.metadata.created_at) == ("db.t", 5_000_000)


def test_writing_errors_are_codec_errors(url: str) -> None:
    fmt = DebeziumAvroFormat(registry=url)
    with pytest.raises(CodecError, match="no Debezium op"):
        fmt.encode(Record(operation=Operation.UNSPECIFIED, payload=Change(None, {"id": 1})))
    with pytest.raises(CodecError, match="topic"):
        fmt.encode(Record.new("create", after={"id": 1}))
    bad = Record.new("update", before={"id": 1, "x": 1}, after={"id": 1}, collection="t")
    with pytest.raises(CodecError, match=r"payload\.before"):
        fmt.encode(bad)


def test_the_format_survives_pickling(url: str) -> None:
    fmt = DebeziumAvroFormat(registry=url)
    message = debezium(open_registry(url), event())
    fmt.decode(message)
    assert pickle.loads(pickle.dumps(fmt)).decode(message)[0].key == {"id": 42}


def test_convert_stream_end_to_end(url: str) -> None:
    registry = open_registry(url)
    messages = [debezium(registry, event()), debezium(registry, None)]
    lines = [
        {
            "key": base64.b64encode(m.key or b"").decode(),
            "value": None if m.value is None else base64.b64encode(m.value).decode(),
        }
        for m in messages
    ]
    lines.append({"key": None, "value": base64.b64encode(b"\x07garbage").decode()})
    source = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    out, dead = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(source),
        out,
        DebeziumAvroFormat(registry=url),
        OpenCDCJsonFormat(),
        kv_in=True,
        dead_letters=DeadLetterWriter(dead, "convert:debezium-avro->opencdc-json"),
        source_name="orders.jsonl",
    )
    assert (stats.messages, stats.written, stats.errors) == (3, 1, 1)
    assert dict(stats.skipped) == {"tombstone": 1}
    (written,) = [record_from_json(line) for line in out.getvalue().splitlines()]
    assert written.operation is Operation.CREATE and written.key == {"id": 42}
    assert written.metadata["opencdc.payload.schema.subject"] == "shop.public.orders.payload"
    (letter,) = [record_from_json(line) for line in dead.getvalue().splitlines()]
    assert "magic byte" in letter.metadata["conduit.dlq.nack.error"]


def test_framing_header_carries_the_schema_id(url: str) -> None:
    message = debezium(open_registry(url), event())
    assert message.value is not None
    frame = framing.read_frame(message.value)
    header = message.value[: frame.offset]
    bare = Message(
        message.value[frame.offset :],
        key=message.key,
        headers=[(framing.VALUE_SCHEMA_ID_HEADER, header)],
    )
    (record,) = DebeziumAvroFormat(registry=url).decode(bare)
    assert record.payload.after == AFTER


@pytest.mark.parametrize("encoded", [False, True])
def test_records_with_conduit_schema_metadata_are_written_with_it(url: str, encoded: bool) -> None:
    from cdc_connectors.registry.serde import RecordEncoder
    from cdc_connectors.registry.store import SchemaStore

    record = Record.new(
        "update",
        key={"id": 5},
        before={"id": 5, "name": "x", "amount": Decimal("1.25")},
        after={"id": 5, "name": None, "amount": Decimal("1.25")},
        collection="app.users",
    )
    conduit = RecordEncoder(SchemaStore(open_registry(url)), encode=encoded).encode(record)
    assert isinstance(conduit.key, bytes) is encoded  # Conduit's framing: bare Avro bodies
    fmt = DebeziumAvroFormat(registry=url)
    message = fmt.encode(conduit)
    registry = open_registry(url)
    envelope = orjson.loads(registry.get_latest_version("app.users-value").schema.schema_str or "")
    assert envelope["fields"][0]["type"][1]["name"] == "record"  # the row schema Conduit inferred
    key = AvroDeserializer(registry)(message.key, SerializationContext("t", MessageField.KEY))
    assert key == {"id": 5}
    (back,) = fmt.decode(message)
    assert back.key == {"id": 5}
    assert back.payload.after == {"id": 5, "name": None, "amount": Decimal("1.2500000000")}
