"""`debezium-json-schema`: Debezium events as Confluent's JsonSchemaConverter writes them."""

from __future__ import annotations

import base64
import json
import uuid
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.formats import FormatOptionError, Message, load_format
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.registry import open_registry
from cdc_connectors.schema.connect.from_json_schema import connect_block
from cdc_connectors.schema.errors import SchemaError

TOPIC = "shop.public.orders"


def _optional(schema: dict[str, Any], index: int) -> dict[str, Any]:
    return {"connect.index": index, "oneOf": [{"type": "null"}, schema]}


def _value_schema(numeric_decimals: bool) -> dict[str, Any]:
    """The row as JsonSchemaConverter describes a PostgreSQL table (decimal.format BASE64,
    or NUMERIC)."""
    amount = {
        "type": "number" if numeric_decimals else "string",
        "connect.type": "bytes",
        "title": "org.apache.kafka.connect.data.Decimal",
        "connect.version": 1,
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.index": 1,
    }
    return {
        "type": "object",
        "title": f"{TOPIC}.Value",
        "properties": {
            "id": {"type": "integer", "connect.type": "int32", "connect.index": 0},
            "amount": amount,
            "created_at": {
                "type": "integer",
                "connect.type": "int64",
                "title": "io.debezium.time.MicroTimestamp",
                "connect.version": 1,
                "connect.index": 2,
            },
            "ship_date": _optional(
                {
                    "type": "integer",
                    "connect.type": "int32",
                    "title": "io.debezium.time.Date",
                    "connect.version": 1,
                },
                3,
            ),
            "note": _optional({"type": "string"}, 4),
        },
    }


def _envelope_schema(numeric_decimals: bool) -> dict[str, Any]:
    text = {"type": "string"}
    source = {
        "type": "object",
        "title": "io.debezium.connector.postgresql.Source",
        "properties": {
            "version": {**text, "connect.index": 0},
            "connector": {**text, "connect.index": 1},
            "name": {**text, "connect.index": 2},
            "ts_ms": {"type": "integer", "connect.type": "int64", "connect.index": 3},
            "db": {**text, "connect.index": 4},
            "schema": {**text, "connect.index": 5},
            "table": {**text, "connect.index": 6},
            "lsn": _optional({"type": "integer", "connect.type": "int64"}, 7),
        },
    }
    row = _value_schema(numeric_decimals)
    return {
        "type": "object",
        "title": f"{TOPIC}.Envelope",
        "connect.version": 2,
        "properties": {
            "before": _optional(row, 0),
            "after": _optional(row, 1),
            "source": {**source, "connect.index": 2},
            "op": {"type": "string", "connect.index": 3},
            "ts_ms": _optional({"type": "integer", "connect.type": "int64"}, 4),
        },
    }


KEY_SCHEMA = {
    "type": "object",
    "title": f"{TOPIC}.Key",
    "properties": {"id": {"type": "integer", "connect.type": "int32", "connect.index": 0}},
}


def _event(op: str, before: Any, after: Any, lsn: int) -> dict[str, Any]:
    source = {
        "version": "2.7.0.Final",
        "connector": "postgresql",
        "name": "shop",
        "ts_ms": 1_763_769_601_000,
        "db": "shop",
        "schema": "public",
        "table": "orders",
        "lsn": lsn,
    }
    return {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1}


@pytest.mark.parametrize("numeric", [False, True])
def test_events_of_the_json_schema_converter_become_typed_records(numeric: bool) -> None:
    url = f"memory://{uuid.uuid4().hex}"
    client = open_registry(url)
    value = JSONSerializer(json.dumps(_envelope_schema(numeric)), client)
    key = JSONSerializer(json.dumps(KEY_SCHEMA), client)
    row = {
        "id": 1,
        "amount": 12.5 if numeric else base64.b64encode((1250).to_bytes(2, "big")).decode(),
        "created_at": 1_700_000_000_123_456,
        "ship_date": 20_000,
        "note": None,
    }
    topic = SerializationContext(TOPIC, MessageField.VALUE)
    key_topic = SerializationContext(TOPIC, MessageField.KEY)
    messages = [
        Message(value(_event("c", None, row, 100), topic), key({"id": 1}, key_topic)),
        Message(value(_event("d", row, None, 200), topic), key({"id": 1}, key_topic)),
        Message(None, key({"id": 1}, key_topic)),  # the tombstone after a delete
    ]
    fmt = load_format("debezium-json-schema")({}, registry=url)
    (created,) = fmt.decode(messages[0])
    assert created.operation.name == "CREATE"
    assert created.key == {"id": 1}
    assert created.payload.after == {
        "id": 1,
        "amount": Decimal("12.50"),
        "created_at": "2023-11-14T22:13:20.123456+00:00",
        "ship_date": "2024-10-04",
        "note": None,
    }
    assert created.metadata.collection == TOPIC
    assert created.metadata["debezium.source.lsn"] == "100"
    (deleted,) = fmt.decode(messages[1])
    assert deleted.operation.name == "DELETE" and deleted.payload.before["amount"] == Decimal(
        "12.50"
    )
    with pytest.raises(Exception, match="tombstone"):
        fmt.decode(messages[2])
    assert isinstance(created, Record)


def test_a_value_that_does_not_match_its_schema_names_the_place() -> None:
    url = f"memory://{uuid.uuid4().hex}"
    client = open_registry(url)
    good = JSONSerializer(json.dumps(_envelope_schema(True)), client)(
        _event("c", None, {"id": 1, "amount": 1, "created_at": 1}, 5),
        SerializationContext(TOPIC, MessageField.VALUE),
    )
    forged = good[:5] + json.dumps(_event("c", None, {"id": "x"}, 5)).encode()
    fmt = load_format("debezium-json-schema")({}, registry=url)
    with pytest.raises(CodecError, match=r"value: does not match schema id .*at /after"):
        fmt.decode(Message(forged, None))
    with pytest.raises(CodecError, match="read-only"):
        fmt.encode(Record.new("create", after={"id": 1}))


def test_a_registry_in_read_only_mode_is_read_all_the_same() -> None:
    url = f"memory://{uuid.uuid4().hex}"
    client = open_registry(url)
    data = JSONSerializer(json.dumps(_envelope_schema(True)), client)(
        _event("c", None, {"id": 1, "amount": 1.5, "created_at": 1}, 5),
        SerializationContext(TOPIC, MessageField.VALUE),
    )
    client.update_mode(None, "READONLY", force=True)
    (record,) = load_format("debezium-json-schema")({}, registry=url).decode(Message(data, None))
    assert record.payload.after["amount"] == Decimal("1.50")
    assert "opencdc.payload.schema.subject" not in record.metadata  # nothing registered


def test_the_format_needs_a_registry() -> None:
    with pytest.raises(FormatOptionError, match="needs a schema registry"):
        load_format("debezium-json-schema")({})


def test_json_schemas_become_the_connect_blocks_json_converter_writes() -> None:
    block = connect_block(_value_schema(False))
    assert block["name"] == f"{TOPIC}.Value" and block["type"] == "struct"
    fields = {f["field"]: f for f in block["fields"]}
    assert [f["field"] for f in block["fields"]] == [
        "id",
        "amount",
        "created_at",
        "ship_date",
        "note",
    ]
    assert fields["amount"]["type"] == "bytes" and fields["amount"]["parameters"]["scale"] == "2"
    assert fields["ship_date"] == {
        "type": "int32",
        "optional": True,
        "name": "io.debezium.time.Date",
        "version": 1,
        "field": "ship_date",
    }
    mapped = connect_block(
        {"type": "object", "connect.type": "map", "additionalProperties": {"type": "integer"}}
    )
    assert mapped["type"] == "map" and mapped["values"]["type"] == "int64"
    for refused in ({}, {"allOf": [{"type": "string"}]}, {"type": ["string", "integer"]}):
        with pytest.raises(SchemaError):
            connect_block(refused)
