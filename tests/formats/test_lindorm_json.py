"""`lindorm-json`: Lindorm's change tracking messages (seed 003) -> OpenCDC records."""

from __future__ import annotations

import base64
import copy
import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_connectors.convert import DeadLetterWriter, convert_stream
from cdc_connectors.formats.base import FormatOptionError, Message
from cdc_connectors.formats.debezium.lindorm import LindormJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record, record_from_json

# --- the seed's samples ------------------------------------------------------------------------

SOURCE = {
    "version": "v1.0",
    "db": "ld-xxxx",
    "namespace": "default",
    "table": "customers",
    "ts_ms": 1465491411807,
}


def struct(field: str, fields: list[dict[str, Any]], optional: bool) -> dict[str, Any]:
    return {"type": "struct", "fields": fields, "optional": optional, "field": field}


ROW_SCHEMA = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": False, "field": "name"},
]
# "Data format description": the one sample with its schema block
DESCRIBED = {
    "payload": {
        "op": "u",
        "ts_ms": 1465491411815,
        "before": {"id": 1004, "name": "Jane"},
        "after": {"id": 1004, "name": "Anne"},
        "source": SOURCE,
    },
    "schema": {
        "type": "struct",
        "fields": [
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": False, "field": "ts_ms"},
            struct("before", ROW_SCHEMA, True),
            struct("after", ROW_SCHEMA, True),
            struct(
                "source",
                [
                    {"type": "string", "optional": False, "field": "version"},
                    {"type": "string", "optional": False, "field": "db"},
                    {"type": "string", "optional": False, "field": "namespace"},
                    {"type": "string", "optional": False, "field": "table"},
                    {"type": "int64", "optional": False, "field": "ts_ms"},
                ],
                False,
            ),
        ],
        "optional": False,
    },
}
ANNE = {"id": "1004", "first_name": "Anne", "last_name": "Kretchmar"}
ANNE_MARIE = {"id": "1004", "first_name": "Anne Marie", "last_name": "Kretchmar"}


def sql(op: str, before: Any, after: Any) -> dict[str, Any]:
    return {
        "schema": {},
        "payload": {
            "op": op,
            "ts_ms": 1465491411815,
            "before": before,
            "after": after,
            "source": SOURCE,
        },
    }


SQL_INSERT = sql("c", None, ANNE)
SQL_UPDATE = sql("u", ANNE_MARIE, ANNE)
SQL_DELETE = sql("d", ANNE_MARIE, None)
SQL_COLUMN_DELETE = sql("u", ANNE_MARIE, {"id": "1004", "first_name": "Anne Marie"})
HBASE_INSERT = {
    "schema": {},
    "payload": {
        "op": "c",
        "ts_ms": 1725258859839,
        "before": None,
        "after": {"ROW": "dXNlcjE=", "f_name": "bHVja3k="},
        "source": {
            "version": "v2.0",
            "db": "ld-xxxx",
            "namespace": "default",
            "table": "customers",
            "ts_ms": 1725258833727,
        },
    },
}


def message(value: Any, key: Any = None) -> Message:
    return Message(
        orjson.dumps(value),
        key=None if key is None else orjson.dumps(key),
        where="f:1",
    )


def decode_one(value: Any, key: Any = None, options: dict[str, str] | None = None) -> Record:
    records = LindormJsonFormat(options).decode(message(value, key))
    assert len(records) == 1
    return records[0]


def lindorm_metadata(record: Record) -> dict[str, str]:
    return {k: v for k, v in record.metadata.items() if k.startswith("lindorm.")}


SOURCE_METADATA = {
    "lindorm.source.version": "v1.0",
    "lindorm.source.db": "ld-xxxx",
    "lindorm.source.namespace": "default",
    "lindorm.source.table": "customers",
    "lindorm.source.ts_ms": "1465491411807",
}


def test_the_described_update_with_its_schema_block():
    record = decode_one(DESCRIBED)
    assert record.operation is Operation.UPDATE
    assert record.key is None  # SQL messages name no key columns
    assert record.payload.before == {"id": 1004, "name": "Jane"}
    assert record.payload.after == {"id": 1004, "name": "Anne"}
    md = record.metadata
    assert md.collection == "default.customers"
    assert md.created_at == 1_465_491_411_807_000_000  # source.ts_ms: the change
    assert md.read_at == 1_465_491_411_815_000_000  # ts_ms: written to Kafka
    assert lindorm_metadata(record) == SOURCE_METADATA
    assert record.position == b"f:1"


def test_the_schema_block_types_the_values():
    wrong = copy.deepcopy(DESCRIBED)
    wrong["payload"]["after"]["id"] = "1004"
    with pytest.raises(CodecError, match=r"after\.id: expected an integer"):
        LindormJsonFormat().decode(message(wrong))


@pytest.mark.parametrize(
    ("sample", "operation", "before", "after"),
    [
        (SQL_INSERT, Operation.CREATE, None, ANNE),
        (SQL_UPDATE, Operation.UPDATE, ANNE_MARIE, ANNE),
        (SQL_DELETE, Operation.DELETE, ANNE_MARIE, None),
    ],
)
def test_sql_samples_with_an_empty_schema(sample, operation, before, after):
    record = decode_one(sample)
    assert record.operation is operation
    assert record.key is None
    assert record.payload.before == before
    assert record.payload.after == after
    assert record.metadata.collection == "default.customers"
    assert record.metadata.created_at == 1_465_491_411_807_000_000
    assert record.metadata.read_at == 1_465_491_411_815_000_000
    assert lindorm_metadata(record) == SOURCE_METADATA  # no deleted columns


def test_a_column_deletion_nulls_the_column_and_names_it():
    record = decode_one(SQL_COLUMN_DELETE)
    assert record.operation is Operation.UPDATE
    assert record.payload.before == ANNE_MARIE
    assert record.payload.after == {"id": "1004", "first_name": "Anne Marie", "last_name": None}
    assert list(record.payload.after) == ["id", "first_name", "last_name"]
    assert record.metadata["lindorm.deleted.columns"] == "last_name"


def test_a_column_deletion_keeps_columns_only_after_has():
    after = {"id": "1004", "first_name": "Anne", "email": "anne@example.org"}
    record = decode_one(sql("u", ANNE_MARIE, after))
    assert record.payload.after == {**after, "last_name": None}
    assert record.metadata["lindorm.deleted.columns"] == "last_name"


def test_a_full_data_export_row_would_be_a_snapshot():
    # the seed defines op r (full data export) though Lindorm does not write it yet
    assert decode_one(sql("r", None, ANNE)).operation is Operation.SNAPSHOT


def test_a_delete_is_no_column_deletion():
    assert "lindorm.deleted.columns" not in decode_one(SQL_DELETE).metadata


def test_the_hbase_sample_is_detected_and_decoded_to_bytes_keyed_by_row():
    record = decode_one(HBASE_INSERT)
    assert record.operation is Operation.CREATE
    assert record.key == {"ROW": b"user1"}
    assert record.payload.after == {"ROW": b"user1", "f_name": b"lucky"}
    assert record.payload.before is None
    assert record.metadata.collection == "default.customers"
    assert record.metadata.created_at == 1_725_258_833_727_000_000
    assert record.metadata.read_at == 1_725_258_859_839_000_000
    assert record.metadata["lindorm.source.version"] == "v2.0"


def hbase(op: str, before: Any, after: Any) -> dict[str, Any]:
    event = copy.deepcopy(HBASE_INSERT)
    event["payload"].update(op=op, before=before, after=after)
    return event


def b64(text: bytes) -> str:
    return base64.b64encode(text).decode()


def test_hbase_delete_and_column_deletion_key_by_row():
    row = {"ROW": b64(b"user1"), "f_name": b64(b"lucky"), "f_age": b64(b"\x00\x07")}
    gone = decode_one(hbase("d", row, None))
    assert gone.operation is Operation.DELETE
    assert gone.key == {"ROW": b"user1"}
    assert gone.payload.before == {"ROW": b"user1", "f_name": b"lucky", "f_age": b"\x00\x07"}
    shrunk = decode_one(hbase("u", row, {"ROW": row["ROW"], "f_name": row["f_name"]}))
    assert shrunk.payload.after == {"ROW": b"user1", "f_name": b"lucky", "f_age": None}
    assert shrunk.metadata["lindorm.deleted.columns"] == "f_age"


@pytest.mark.parametrize(
    "after",
    [
        {"id": "1004", "first_name": "Anne"},  # no ROW
        {"ROW": "dXNlcjE=", "name": "bHVja3k="},  # name is no family_qualifier
        {"ROW": "dXNlcjE=", "f_count": 3},  # a value that is no base64 string
    ],
)
def test_sql_rows_that_look_almost_like_hbase_stay_sql(after):
    record = decode_one(sql("c", None, after))
    assert record.payload.after == after
    assert record.key is None


def test_the_hbase_option_forces_either_reading():
    row = {"ROW": "dXNlcjE=", "name": "bHVja3k="}
    forced = decode_one(sql("c", None, row), options={"hbase": "true"})
    assert forced.payload.after == {"ROW": b"user1", "name": b"lucky"}
    assert forced.key == {"ROW": b"user1"}
    plain = decode_one(HBASE_INSERT, options={"hbase": "false"})
    assert plain.payload.after == HBASE_INSERT["payload"]["after"]
    assert plain.key is None


def test_the_sql_key_is_the_kafka_key_else_the_key_fields():
    assert decode_one(SQL_UPDATE, key={"id": "1004"}).key == {"id": "1004"}
    wrapped = {"schema": {"type": "struct", "fields": [{"type": "string", "field": "id"}]}}
    assert decode_one(SQL_UPDATE, key={**wrapped, "payload": {"id": "1004"}}).key == {"id": "1004"}
    assert decode_one(SQL_DELETE, options={"key.fields": "id"}).key == {"id": "1004"}
    raw = LindormJsonFormat().decode(Message(orjson.dumps(SQL_INSERT), key=b"1004"))
    assert raw[0].key == b"1004"


def test_hbase_schemas_are_bytes_when_registered(tmp_path: Path):
    fmt = LindormJsonFormat(registry=f"sqlite:///{tmp_path}/r.db")
    (record,) = fmt.decode(message(HBASE_INSERT))
    assert record.metadata["opencdc.payload.schema.subject"] == "default.customers.payload"
    assert record.metadata["opencdc.key.schema.subject"] == "default.customers.key"
    avro = orjson.loads(fmt.registry.get_version("default.customers.payload", 1).schema.schema_str)
    assert {f["name"]: f["type"] for f in avro["fields"]} == {
        "ROW": ["null", "bytes"],
        "f_name": ["null", "bytes"],
    }


BAD_INPUTS = [
    (b'{"schema":{},"payload":{"op":"c"', "not valid JSON"),
    (b"\x00\x01", "not valid JSON"),
    (orjson.dumps(sql("x", None, ANNE)), "unknown op 'x'"),
    (orjson.dumps(sql("t", None, ANNE)), "unknown op 't'"),
    (orjson.dumps({"schema": {}}), "without a 'payload'"),
    (orjson.dumps({"schema": {}, "payload": "c"}), "expected an object, got a string"),
    (orjson.dumps({"schema": {}, "payload": {"after": ANNE}}), "no 'op' field"),
    (orjson.dumps(hbase("c", None, {"ROW": "dXNlcjE=", "f_name": "not base64!"})), "not base64"),
    (orjson.dumps(hbase("c", None, {"ROW": "dXNlcjE", "f_name": "bHVja3k="})), "ROW: not base64"),
]


@pytest.mark.parametrize(("value_bytes", "reason"), BAD_INPUTS)
def test_bad_input_is_a_codec_error_with_a_reason(value_bytes: bytes, reason: str):
    with pytest.raises(CodecError) as caught:
        LindormJsonFormat().decode(Message(value_bytes, where="f:1"))
    assert reason in caught.value.reason


def test_bad_base64_names_the_column():
    bad = hbase("c", None, {"ROW": "dXNlcjE=", "f_name": "not base64!"})
    with pytest.raises(CodecError, match=r"after\.f_name: not base64"):
        LindormJsonFormat().decode(message(bad))


@pytest.mark.parametrize(
    "bad",
    [
        {"ROW": "dXNlcjE=", "f_count": 3},  # no string
        {"f_name": "bHVja3k="},  # no ROW to key by
    ],
)
def test_rows_that_cannot_be_hbase_are_errors_when_the_option_says_hbase(bad):
    with pytest.raises(CodecError):
        LindormJsonFormat({"hbase": "true"}).decode(message(sql("c", None, bad)))


@pytest.mark.parametrize(
    ("options", "named"),
    [({"hbase": "maybe"}, "'hbase'"), ({"truncate": "skip"}, "'truncate'")],
)
def test_bad_options_are_named(options: dict[str, str], named: str):
    with pytest.raises(FormatOptionError, match=named):
        LindormJsonFormat(options)


def test_the_format_is_read_only():
    with pytest.raises(CodecError, match="read-only"):
        LindormJsonFormat().encode(decode_one(SQL_INSERT))


# --- end to end -------------------------------------------------------------------------------


def test_convert_stream_writes_every_sample_and_dead_letters_a_bad_one():
    samples = [DESCRIBED, SQL_INSERT, SQL_UPDATE, SQL_DELETE, SQL_COLUMN_DELETE, HBASE_INSERT]
    bad = hbase("c", None, {"ROW": "dXNlcjE=", "f_name": "%%%"})
    stream = b"".join(orjson.dumps(v) + b"\n" for v in [*samples, bad])
    out, dead = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(stream),
        out,
        LindormJsonFormat(),
        OpenCDCJsonFormat(),
        dead_letters=DeadLetterWriter(dead, "convert:lindorm-json->opencdc-json"),
        source_name="customers.jsonl",
    )
    assert (stats.messages, stats.written, stats.errors) == (7, 6, 1)
    written = [record_from_json(line) for line in out.getvalue().splitlines()]
    assert [r.operation for r in written] == [
        Operation.UPDATE,
        Operation.CREATE,
        Operation.UPDATE,
        Operation.DELETE,
        Operation.UPDATE,
        Operation.CREATE,
    ]
    assert written[4].metadata["lindorm.deleted.columns"] == "last_name"
    assert written[5].key == {"ROW": "dXNlcjE="}  # bytes: base64 in OpenCDC JSON
    assert written[5].position == b"customers.jsonl:6"
    (letter,) = [record_from_json(line) for line in dead.getvalue().splitlines()]
    assert "after.f_name: not base64" in letter.metadata["conduit.dlq.nack.error"]
    assert letter.position == b"customers.jsonl:7"
