"""`arcion-json`: Arcion Replicant's JSON CDC messages (seed 002) -> OpenCDC records."""

from __future__ import annotations

import copy
import io
from typing import Any

import orjson
import pytest

from cdc_connectors.convert import DeadLetterWriter, convert_stream
from cdc_connectors.formats.base import FormatOptionError, Message, SkipMessage
from cdc_connectors.formats.debezium.arcion import ArcionJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record, record_from_json

# --- the seed's messages: Kafka key and value, schema blocks as Replicant writes them -------

ROW_FIELDS = [
    {"type": "int32", "optional": False, "field": "r_regionkey"},
    {"type": "string", "optional": False, "field": "r_name"},
    {"type": "string", "optional": True, "field": "r_comment"},
]
SOURCE_FIELDS = [
    {"type": "string", "optional": False, "field": "version"},
    {"type": "string", "optional": False, "field": "connector"},
    {"type": "string", "optional": False, "field": "name"},
    {"type": "int64", "optional": True, "field": "ts_ms"},
    {"type": "string", "optional": True, "field": "db"},
    {"type": "string", "optional": True, "field": "schema"},
    {"type": "string", "optional": False, "field": "table"},
    {"type": "string", "optional": True, "field": "query"},
    {"type": "string", "optional": True, "field": "snapshot"},
    {"type": "int64", "optional": True, "field": "server_id"},
    {"type": "string", "optional": True, "field": "gtid"},
    {"type": "string", "optional": True, "field": "file"},
    {"type": "int64", "optional": True, "field": "pos"},
    {"type": "int32", "optional": True, "field": "row"},
]


def key(connector: str, regionkey: int) -> dict[str, Any]:
    return {
        "schema": {
            "type": "struct",
            "optional": False,
            "name": f"{connector}.tpch.region.Key",
            "fields": [{"type": "int32", "optional": False, "field": "r_regionkey"}],
        },
        "payload": {"r_regionkey": regionkey},
    }


def value(connector: str, payload: dict[str, Any]) -> dict[str, Any]:
    row = {"type": "struct", "optional": True, "name": f"{connector}.tpch.region.Value"}
    return {
        "schema": {
            "type": "struct",
            "optional": False,
            "name": f"{connector}.tpch.region.Envelope",
            "fields": [
                {**row, "field": "before", "fields": ROW_FIELDS},
                {**row, "field": "after", "fields": ROW_FIELDS},
                {
                    "type": "struct",
                    "optional": False,
                    "field": "source",
                    "name": connector,
                    "fields": SOURCE_FIELDS,
                },
                {"type": "string", "optional": False, "field": "op"},
                {"type": "int64", "optional": True, "field": "ts_ms"},
            ],
        },
        "payload": payload,
    }


def source(connector: str, **fields: Any) -> dict[str, Any]:
    block = {
        "version": "5.7.41",
        "connector": "MYSQL",
        "name": connector,
        "ts_ms": None,
        "db": "tpch",
        "schema": None,
        "table": "region",
        "snapshot": "false",
        "server_id": "1",
        "gtid": None,
        "file": "mysql-log.000013",
        "pos": None,
        "row": 1,
        "thread": 309,
        "query": None,
    }
    block.update(fields)
    return block


SNAP, RT = "KAFKA_snapshot_connector", "KAFKA_Connector"
SNAPSHOT_INSERT = (
    key(SNAP, 3),
    value(
        SNAP,
        {
            "before": {},
            "after": {
                "r_regionkey": 3,
                "r_name": "EUROPE",
                "r_comment": "ly final courts cajole furiously final excuse",
            },
            "source": source(
                SNAP,
                snapshot="true",
                server_id=None,
                file=None,
                row=None,
                thread=None,
                query="INSERT INTO tpch.region(r_regionkey, r_name, r_comment) VALUES(3, EUROPE, "
                "ly final courts cajole furiously final excuse)",
            ),
            "op": "r",
            "ts_ms": None,
        },
    ),
)
INSERT = (
    key(RT, 10),
    value(
        RT,
        {
            "before": {},
            "after": {"r_regionkey": 10, "r_name": "Test_nation", "r_comment": "ReplicationWorks"},
            "source": source(
                RT,
                ts_ms=1680798995000,
                pos=30407,
                query="INSERT INTO tpch.region(r_regionkey, r_name, r_comment) VALUES(10, "
                "Test_nation, ReplicationWorks)",
            ),
            "op": "c",
            "ts_ms": 1680779196386,
        },
    ),
)
UPDATE = (
    key(RT, 1),
    value(
        RT,
        {
            "before": {
                "r_regionkey": 1,
                "r_name": "AMERICA",
                "r_comment": "hs use ironic, even requests. s",
            },
            "after": {"r_regionkey": 1, "r_name": "AMERICA", "r_comment": "TestReplication"},
            "source": source(
                RT,
                ts_ms=1680799780000,
                pos=53709,
                query="UPDATE tpch.region SET r_regionkey=1 AND r_name=AMERICA AND "
                "r_comment=TestReplication WHERE r_regionkey=1 AND r_name=AMERICA AND "
                "r_comment=hs use ironic, even requests. s",
            ),
            "op": "u",
            "ts_ms": 1680779981001,
        },
    ),
)
DELETE = (
    key(RT, 1),
    value(
        RT,
        {
            "before": {"r_regionkey": 1, "r_name": "AMERICA", "r_comment": "TestReplication"},
            "after": {},
            "source": source(
                RT,
                ts_ms=1680799967000,
                pos=59647,
                query="DELETE FROM tpch.region WHERE r_regionkey=1 AND r_name=AMERICA AND "
                "r_comment=TestReplication",
            ),
            "op": "d",
            "ts_ms": 1680780168069,
        },
    ),
)
TOMBSTONE = (key(RT, 1), None)


def message(kv: tuple[dict[str, Any] | None, dict[str, Any] | None]) -> Message:
    k, v = kv
    return Message(
        None if v is None else orjson.dumps(v),
        key=None if k is None else orjson.dumps(k),
        where="f:1",
    )


def decode_one(kv: tuple[Any, Any], options: dict[str, str] | None = None) -> Record:
    records = ArcionJsonFormat(options).decode(message(kv))
    assert len(records) == 1
    return records[0]


def arcion_source(record: Record) -> dict[str, str]:
    return {k: v for k, v in record.metadata.items() if k.startswith("arcion.source.")}


# --- the seed's samples -----------------------------------------------------------------------


def test_snapshot_insert_is_a_snapshot_without_change_time():
    record = decode_one(SNAPSHOT_INSERT)
    assert record.operation is Operation.SNAPSHOT
    assert record.key == {"r_regionkey": 3}
    assert record.payload.before is None  # {} is absent
    assert record.payload.after == {
        "r_regionkey": 3,
        "r_name": "EUROPE",
        "r_comment": "ly final courts cajole furiously final excuse",
    }
    md = record.metadata
    assert md.collection == "tpch.region"
    assert md.created_at is None  # source.ts_ms is null in snapshot mode
    assert md.read_at is not None  # ts_ms null: the time of decoding
    assert arcion_source(record) == {
        "arcion.source.version": "5.7.41",
        "arcion.source.connector": "MYSQL",
        "arcion.source.name": "KAFKA_snapshot_connector",
        "arcion.source.db": "tpch",
        "arcion.source.table": "region",
        "arcion.source.snapshot": "true",
        "arcion.source.query": "INSERT INTO tpch.region(r_regionkey, r_name, r_comment) "
        "VALUES(3, EUROPE, ly final courts cajole furiously final excuse)",
    }
    assert record.position == b"f:1"


def test_realtime_insert_is_a_create_with_times_and_binlog_metadata():
    record = decode_one(INSERT)
    assert record.operation is Operation.CREATE
    assert record.key == {"r_regionkey": 10}
    assert record.payload.before is None
    assert record.payload.after == {
        "r_regionkey": 10,
        "r_name": "Test_nation",
        "r_comment": "ReplicationWorks",
    }
    md = record.metadata
    assert md.collection == "tpch.region"
    assert md.created_at == 1_680_798_995_000_000_000
    assert md.read_at == 1_680_779_196_386_000_000
    assert arcion_source(record) == {
        "arcion.source.version": "5.7.41",
        "arcion.source.connector": "MYSQL",
        "arcion.source.name": "KAFKA_Connector",
        "arcion.source.ts_ms": "1680798995000",
        "arcion.source.db": "tpch",
        "arcion.source.table": "region",
        "arcion.source.snapshot": "false",
        "arcion.source.server_id": "1",
        "arcion.source.file": "mysql-log.000013",
        "arcion.source.pos": "30407",
        "arcion.source.row": "1",
        "arcion.source.thread": "309",
        "arcion.source.query": "INSERT INTO tpch.region(r_regionkey, r_name, r_comment) "
        "VALUES(10, Test_nation, ReplicationWorks)",
    }
    assert not any(k.startswith("debezium.") for k in md)


def test_update_keeps_both_images():
    record = decode_one(UPDATE)
    assert record.operation is Operation.UPDATE
    assert record.key == {"r_regionkey": 1}
    assert record.payload.before == {
        "r_regionkey": 1,
        "r_name": "AMERICA",
        "r_comment": "hs use ironic, even requests. s",
    }
    assert record.payload.after == {
        "r_regionkey": 1,
        "r_name": "AMERICA",
        "r_comment": "TestReplication",
    }
    assert record.metadata.created_at == 1_680_799_780_000_000_000
    assert record.metadata.read_at == 1_680_779_981_001_000_000
    assert record.metadata["arcion.source.pos"] == "53709"


def test_delete_has_the_before_image_and_no_after():
    record = decode_one(DELETE)
    assert record.operation is Operation.DELETE
    assert record.key == {"r_regionkey": 1}
    assert record.payload.before == {
        "r_regionkey": 1,
        "r_name": "AMERICA",
        "r_comment": "TestReplication",
    }
    assert record.payload.after is None  # {} is absent
    assert record.metadata.created_at == 1_680_799_967_000_000_000
    assert record.metadata["arcion.source.query"].startswith("DELETE FROM tpch.region")


def test_the_tombstone_after_a_delete_is_a_counted_skip_or_a_key_only_delete():
    with pytest.raises(SkipMessage) as skipped:
        ArcionJsonFormat().decode(message(TOMBSTONE))
    assert skipped.value.reason == "tombstone"
    (record,) = ArcionJsonFormat({"tombstones": "delete"}).decode(message(TOMBSTONE))
    assert record.operation is Operation.DELETE
    assert record.key == {"r_regionkey": 1}


# --- the rest of the mapping ------------------------------------------------------------------


def test_a_table_without_key_columns_has_a_null_key_or_the_key_fields():
    keyless = (None, INSERT[1])
    assert decode_one(keyless).key is None
    chosen = decode_one(keyless, {"key.fields": "r_name"})
    assert chosen.key == {"r_name": "Test_nation"}


def test_collection_is_db_schema_table_where_the_schema_is_set():
    event = copy.deepcopy(INSERT[1])
    event["payload"]["source"].update(connector="POSTGRESQL", db="shop", schema="public")
    record = decode_one((INSERT[0], event))
    assert record.metadata.collection == "shop.public.region"
    assert record.metadata["arcion.source.schema"] == "public"


def test_values_are_typed_by_the_schema_block():
    event = copy.deepcopy(INSERT[1])
    event["payload"]["after"]["r_regionkey"] = "10"
    with pytest.raises(CodecError, match=r"after\.r_regionkey: expected an integer"):
        ArcionJsonFormat().decode(message((INSERT[0], event)))


def test_a_bare_payload_without_the_schema_wrapper_reads_the_same():
    bare = (INSERT[0]["payload"], INSERT[1]["payload"])
    record = decode_one(bare)
    assert record.operation is Operation.CREATE
    assert record.key == {"r_regionkey": 10}
    assert record.payload.after == decode_one(INSERT).payload.after


BAD_INPUTS = [
    (b'{"schema":{"type":"struct","fields":[]},"payload":{"op":"c"', "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (orjson.dumps({**INSERT[1], "payload": {**INSERT[1]["payload"], "op": "x"}}), "unknown op 'x'"),
    # Debezium's truncate has no place in Arcion's format
    (orjson.dumps({**INSERT[1], "payload": {**INSERT[1]["payload"], "op": "t"}}), "unknown op 't'"),
    (orjson.dumps({"schema": INSERT[1]["schema"]}), "without a 'payload'"),
    (orjson.dumps({"schema": None, "payload": [1]}), "expected an object, got an array"),
    (orjson.dumps({"before": {}, "after": {"r_regionkey": 1}}), "no 'op' field"),
    (orjson.dumps([INSERT[1]]), "is a JSON object, not an array"),
]


@pytest.mark.parametrize(("value_bytes", "reason"), BAD_INPUTS)
def test_bad_input_is_a_codec_error_with_a_reason(value_bytes: bytes, reason: str):
    with pytest.raises(CodecError) as caught:
        ArcionJsonFormat().decode(Message(value_bytes, key=orjson.dumps(INSERT[0]), where="f:1"))
    assert reason in caught.value.reason


@pytest.mark.parametrize(
    ("options", "named"),
    [({"truncate": "skip"}, "'truncate'"), ({"tombstones": "keep"}, "'tombstones'")],
)
def test_options_are_arcions_own(options: dict[str, str], named: str):
    with pytest.raises(FormatOptionError, match=named):
        ArcionJsonFormat(options)


def test_the_format_is_read_only():
    with pytest.raises(CodecError, match="read-only"):
        ArcionJsonFormat().encode(decode_one(INSERT))


# --- end to end: a primary-key change is delete + tombstone + insert -----------------------


def test_convert_stream_keeps_a_key_change_as_delete_then_create_and_dead_letters_bad_lines():
    # r_regionkey 1 -> 10: Replicant writes the delete, its tombstone, then the insert.
    changed = [DELETE, TOMBSTONE, INSERT]
    bad = (INSERT[0], {**INSERT[1], "payload": {**INSERT[1]["payload"], "op": "z"}})
    lines = [{"key": k, "value": v} for k, v in [SNAPSHOT_INSERT, UPDATE, *changed, bad]]
    stream = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    out, dead = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(stream),
        out,
        ArcionJsonFormat(),
        OpenCDCJsonFormat(),
        kv_in=True,
        dead_letters=DeadLetterWriter(dead, "convert:arcion-json->opencdc-json"),
        source_name="region.jsonl",
    )
    assert (stats.messages, stats.written, stats.errors) == (6, 4, 1)
    assert dict(stats.skipped) == {"tombstone": 1}
    written = [record_from_json(line) for line in out.getvalue().splitlines()]
    assert [(r.operation, r.key) for r in written] == [
        (Operation.SNAPSHOT, {"r_regionkey": 3}),
        (Operation.UPDATE, {"r_regionkey": 1}),
        (Operation.DELETE, {"r_regionkey": 1}),
        (Operation.CREATE, {"r_regionkey": 10}),
    ]
    assert [r.position for r in written] == [
        b"region.jsonl:1",
        b"region.jsonl:2",
        b"region.jsonl:3",
        b"region.jsonl:5",
    ]
    (letter,) = [record_from_json(line) for line in dead.getvalue().splitlines()]
    assert "unknown op 'z'" in letter.metadata["conduit.dlq.nack.error"]
    assert letter.position == b"region.jsonl:6"
    assert orjson.loads(letter.payload.after or b"")["payload"]["op"] == "z"  # original bytes
