"""Debezium JSON shapes of real connectors that are not plain row structs: MongoDB's
documents as JSON text, schema change events."""

from __future__ import annotations

import orjson
import pytest

from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError

JSON_TEXT = {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1}
SOURCE = {
    "connector": "mongodb",
    "name": "m1",
    "ts_ms": 1700000000000,
    "db": "crm",
    "rs": "rs0",
    "collection": "leads",
    "ord": 3,
}


def mongo(after: object, *, schema: bool) -> bytes:
    payload = {"before": None, "after": after, "source": SOURCE, "op": "c", "ts_ms": 1700000000050}
    if not schema:
        return orjson.dumps(payload)
    block = {
        "type": "struct",
        "name": "m1.crm.leads.Envelope",
        "fields": [
            {**JSON_TEXT, "field": "before"},
            {**JSON_TEXT, "field": "after"},
            {
                "type": "struct",
                "field": "source",
                "fields": [
                    {"type": "string", "field": n}
                    for n in ("connector", "name", "db", "rs", "collection")
                ]
                + [{"type": "int64", "field": "ts_ms"}, {"type": "int32", "field": "ord"}],
            },
            {"type": "string", "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }
    return orjson.dumps({"schema": block, "payload": payload})


@pytest.mark.parametrize("schema", [True, False])
def test_a_mongodb_document_as_json_text_is_the_row(schema: bool) -> None:
    text = '{"_id": {"$oid": "6553f0a1b2c3d4e5f6a7b8c9"}, "score": 0.1, "big": 123456789012}'
    fmt = DebeziumJsonFormat()
    (record,) = fmt.decode(Message(mongo(text, schema=schema)))
    assert record.payload.after == {
        "_id": {"$oid": "6553f0a1b2c3d4e5f6a7b8c9"},
        "score": 0.1,
        "big": 123456789012,
    }
    assert record.metadata.collection == "crm.leads"
    # the batch way gives the same
    ((_, found),) = list(fmt.decode_many([Message(mongo(text, schema=schema))]))
    assert isinstance(found, list) and found[0].payload.after == record.payload.after


@pytest.mark.parametrize("text", ["[1, 2]", "not json", '"a"'])
def test_json_text_that_holds_no_object_is_an_error_naming_the_image(text: str) -> None:
    with pytest.raises(CodecError, match="after: a string image is a document's JSON text"):
        DebeziumJsonFormat().decode(Message(mongo(text, schema=False)))


def test_a_string_where_the_schema_has_a_row_struct_stays_an_error() -> None:
    value = {
        "schema": {
            "type": "struct",
            "fields": [
                {
                    "type": "struct",
                    "optional": True,
                    "field": "after",
                    "fields": [{"type": "int32", "field": "id"}],
                },
                {"type": "string", "field": "op"},
            ],
        },
        "payload": {"after": '{"id": 1}', "op": "c"},
    }
    with pytest.raises(CodecError):
        DebeziumJsonFormat().decode(Message(orjson.dumps(value)))


def test_a_schema_change_event_is_an_error_saying_what_it_is() -> None:
    value = {
        "source": {"connector": "mysql", "db": "crm", "table": "leads", "ts_ms": 1},
        "ts_ms": 2,
        "databaseName": "crm",
        "schemaName": None,
        "ddl": "CREATE TABLE leads (id INT PRIMARY KEY)",
        "tableChanges": [{"type": "CREATE", "id": '"crm"."leads"'}],
    }
    with pytest.raises(CodecError, match="a schema change event: 'CREATE TABLE leads") as caught:
        DebeziumJsonFormat().decode(Message(orjson.dumps(value)))
    assert "changes no row" in caught.value.reason
