"""`debezium-json`: Debezium change events (JsonConverter, schemas on and off) <-> OpenCDC."""

from __future__ import annotations

import base64
import copy
import io
import pickle
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_connectors.convert import DeadLetterWriter, convert_stream
from cdc_connectors.formats.base import FormatOptionError, Message, SkipMessage
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record, record_from_json
from cdc_connectors.registry import open_registry

# --- a PostgreSQL connector event with schemas.enable=true ---------------------------------

PG_ROW_FIELDS = [
    {"type": "int32", "optional": False, "default": 0, "field": "id"},
    {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "field": "price",
    },
    {
        "type": "int64",
        "optional": True,
        "name": "io.debezium.time.MicroTimestamp",
        "version": 1,
        "field": "updated_at",
    },
    {
        "type": "int32",
        "optional": True,
        "name": "io.debezium.time.Date",
        "version": 1,
        "field": "ship_date",
    },
    {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Json",
        "version": 1,
        "field": "attrs",
    },
    {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "new,paid,shipped"},
        "field": "status",
    },
    {"type": "string", "optional": True, "field": "notes"},
]
PG_VALUE = {
    "type": "struct",
    "fields": PG_ROW_FIELDS,
    "optional": True,
    "name": "shop.public.orders.Value",
}
PG_SOURCE_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.postgresql.Source",
    "fields": [
        {"type": "string", "optional": False, "field": "version"},
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "string", "optional": False, "field": "name"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {
            "type": "string",
            "optional": True,
            "name": "io.debezium.data.Enum",
            "version": 1,
            "parameters": {"allowed": "true,last,false,incremental"},
            "default": "false",
            "field": "snapshot",
        },
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": False, "field": "schema"},
        {"type": "string", "optional": False, "field": "table"},
        {"type": "int64", "optional": True, "field": "txId"},
        {"type": "int64", "optional": True, "field": "lsn"},
        {"type": "int64", "optional": True, "field": "xmin"},
    ],
}
PG_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "shop.public.orders.Envelope",
    "version": 1,
    "fields": [
        {**PG_VALUE, "field": "before"},
        {**PG_VALUE, "field": "after"},
        {**PG_SOURCE_SCHEMA, "field": "source"},
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
        {
            "type": "struct",
            "optional": True,
            "name": "event.block",
            "version": 1,
            "field": "transaction",
            "fields": [
                {"type": "string", "optional": False, "field": "id"},
                {"type": "int64", "optional": False, "field": "total_order"},
                {"type": "int64", "optional": False, "field": "data_collection_order"},
            ],
        },
    ],
}
PG_KEY = {
    "schema": {
        "type": "struct",
        "optional": False,
        "name": "shop.public.orders.Key",
        "fields": [{"type": "int32", "optional": False, "default": 0, "field": "id"}],
    },
    "payload": {"id": 42},
}
PG_ROW = {
    "id": 42,
    "price": "BNI=",  # 1234 unscaled, scale 2: 12.34
    "updated_at": 1_700_000_000_123_456,
    "ship_date": 19_700,
    "attrs": '{"gift": true}',
    "status": "paid",
    "notes": "fragile",
}
PG_PAYLOAD = {
    "before": None,
    "after": PG_ROW,
    "source": {
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
        "xmin": None,
    },
    "op": "c",
    "ts_ms": 1_700_000_000_300,
    "transaction": {"id": "771:24023128", "total_order": 1, "data_collection_order": 1},
}


def pg_event(**changes: Any) -> dict[str, Any]:
    payload = copy.deepcopy(PG_PAYLOAD)
    payload.update(changes)
    return {"schema": PG_SCHEMA, "payload": payload}


def message(value: Any, key: Any = PG_KEY) -> Message:
    return Message(
        None if value is None else orjson.dumps(value),
        key=None if key is None else orjson.dumps(key),
        where="orders:0:17",
    )


# --- a MySQL connector event with schemas.enable=false --------------------------------------

MYSQL_PAYLOAD = {
    "before": {"id": 1004, "first_name": "Anne", "email": "annek@noanswer.org"},
    "after": {"id": 1004, "first_name": "Anne Marie", "email": "annek@noanswer.org"},
    "source": {
        "version": "2.5.0.Final",
        "connector": "mysql",
        "name": "dbserver1",
        "ts_ms": 1_486_500_577_000,
        "snapshot": "false",
        "db": "inventory",
        "table": "customers",
        "server_id": 223344,
        "gtid": None,
        "file": "mysql-bin.000003",
        "pos": 364,
        "row": 0,
        "thread": 3,
        "query": None,
    },
    "op": "u",
    "ts_ms": 1_486_500_577_691,
    "transaction": None,
}


def mysql(**changes: Any) -> dict[str, Any]:
    payload = copy.deepcopy(MYSQL_PAYLOAD)
    payload.update(changes)
    return payload


def decode_one(fmt: DebeziumJsonFormat, msg: Message) -> Record:
    records = fmt.decode(msg)
    assert len(records) == 1
    return records[0]


# --- reading --------------------------------------------------------------------------------


def test_postgres_event_with_schema_comes_out_typed_with_every_mapping():
    record = decode_one(DebeziumJsonFormat(), message(pg_event()))
    assert record.operation is Operation.CREATE
    assert record.key == {"id": 42}
    assert record.payload.before is None
    after = record.payload.after
    assert after == {
        "id": 42,
        "price": Decimal("12.34"),
        "updated_at": "2023-11-14T22:13:20.123456+00:00",
        "ship_date": "2023-12-09",
        "attrs": '{"gift": true}',
        "status": "paid",
        "notes": "fragile",
    }
    assert isinstance(after["price"], Decimal) and str(after["price"]) == "12.34"
    md = record.metadata
    assert md.collection == "shop.public.orders"
    assert md.created_at == 1_700_000_000_200_000_000
    assert md.read_at == 1_700_000_000_300_000_000
    assert md["debezium.source.lsn"] == "24023128"
    assert md["debezium.source.txId"] == "771"
    assert md["debezium.source.snapshot"] == "false"
    assert md["debezium.source.connector"] == "postgresql"
    assert "debezium.source.xmin" not in md  # null fields are left out
    assert md["debezium.transaction.id"] == "771:24023128"
    assert md["debezium.transaction.total_order"] == "1"
    # no registry: typed values, but no schema metadata
    assert "opencdc.payload.schema.subject" not in md


def test_mysql_update_without_schema_keeps_the_values_as_sent():
    record = decode_one(DebeziumJsonFormat(), message(mysql(), key={"id": 1004}))
    assert record.operation is Operation.UPDATE
    assert record.key == {"id": 1004}
    assert record.payload.before == MYSQL_PAYLOAD["before"]
    assert record.payload.after == MYSQL_PAYLOAD["after"]
    md = record.metadata
    assert md.collection == "inventory.customers"  # db.table: MySQL has no schema
    assert md["debezium.source.file"] == "mysql-bin.000003"
    assert md["debezium.source.pos"] == "364"
    assert md["debezium.source.server_id"] == "223344"
    assert not any(k.startswith("debezium.transaction") for k in md)


def test_snapshot_read_is_a_snapshot_and_delete_keeps_the_before_image():
    snap = decode_one(DebeziumJsonFormat(), message(mysql(op="r", before=None), key=None))
    assert snap.operation is Operation.SNAPSHOT
    assert snap.key is None
    gone = decode_one(DebeziumJsonFormat(), message(mysql(op="d", after=None), key={"id": 1004}))
    assert gone.operation is Operation.DELETE
    assert gone.payload.after is None
    assert gone.payload.before == MYSQL_PAYLOAD["before"]


def test_empty_images_mean_absent_as_arcion_writes_them():
    record = decode_one(DebeziumJsonFormat(), message(mysql(op="c", before={}), key=None))
    assert record.payload.before is None


def test_unchanged_toast_columns_are_kept_and_listed_for_table_destinations():
    row = dict(PG_ROW, notes="__debezium_unavailable_value", attrs="__debezium_unavailable_value")
    record = decode_one(DebeziumJsonFormat(), message(pg_event(op="u", after=row)))
    assert record.payload.after["notes"] == "__debezium_unavailable_value"
    assert record.metadata["debezium.unavailable.columns"] == "attrs,notes"
    plain = decode_one(DebeziumJsonFormat(), message(pg_event()))
    assert "debezium.unavailable.columns" not in plain.metadata


def test_an_unchanged_toast_bytea_column_is_found_in_its_decoded_bytes():
    fields = [*PG_ROW_FIELDS, {"type": "bytes", "optional": True, "field": "photo"}]
    event = pg_event(
        op="u", after=dict(PG_ROW, photo=base64.b64encode(b"__debezium_unavailable_value").decode())
    )
    event["schema"] = copy.deepcopy(PG_SCHEMA)
    event["schema"]["fields"][1]["fields"] = fields
    record = decode_one(DebeziumJsonFormat(), message(event))
    assert record.payload.after["photo"] == b"__debezium_unavailable_value"
    assert record.metadata["debezium.unavailable.columns"] == "photo"


def test_a_key_that_is_no_json_object_stays_raw_bytes():
    msg = Message(orjson.dumps(mysql()), key=b"customer-1004")
    assert decode_one(DebeziumJsonFormat(), msg).key == b"customer-1004"


def test_key_fields_build_the_key_when_there_is_no_kafka_key():
    fmt = DebeziumJsonFormat({"key.fields": "id, email"})
    record = decode_one(fmt, message(mysql(), key=None))
    assert record.key == {"id": 1004, "email": "annek@noanswer.org"}
    deleted = decode_one(fmt, message(mysql(op="d", after=None), key=None))
    assert deleted.key == {"id": 1004, "email": "annek@noanswer.org"}
    with pytest.raises(CodecError, match="'nope' is not in the row"):
        DebeziumJsonFormat({"key.fields": "nope"}).decode(message(mysql(), key=None))


def test_tombstones_are_skipped_or_become_key_only_deletes():
    with pytest.raises(SkipMessage) as skipped:
        DebeziumJsonFormat().decode(message(None))
    assert skipped.value.reason == "tombstone"
    (record,) = DebeziumJsonFormat({"tombstones": "delete"}).decode(message(None))
    assert record.operation is Operation.DELETE
    assert record.key == {"id": 42}
    assert record.payload.before is None and record.payload.after is None


@pytest.mark.parametrize(
    ("op", "option", "reason"),
    [("t", "truncate", "truncate"), ("m", "message", "message")],
)
def test_truncate_and_message_events_are_errors_unless_the_option_skips_them(op, option, reason):
    event = mysql(op=op, before=None, after=None)
    if op == "m":
        event["message"] = {"prefix": "audit", "content": "aGVsbG8="}
    with pytest.raises(CodecError, match=f"{option}=skip"):
        DebeziumJsonFormat().decode(message(event, key=None))
    with pytest.raises(SkipMessage) as skipped:
        DebeziumJsonFormat({option: "skip"}).decode(message(event, key=None))
    assert skipped.value.reason == reason


def test_heartbeats_and_transaction_boundaries_are_counted_skips():
    heartbeat = {
        "schema": {
            "type": "struct",
            "name": "io.debezium.connector.common.Heartbeat",
            "fields": [{"type": "int64", "optional": False, "field": "ts_ms"}],
        },
        "payload": {"ts_ms": 1_700_000_000_000},
    }
    key = {"serverName": "shop"}
    for value in (heartbeat, heartbeat["payload"]):
        with pytest.raises(SkipMessage) as skipped:
            DebeziumJsonFormat().decode(message(value, key=key))
        assert skipped.value.reason == "heartbeat"
    boundary = {"status": "BEGIN", "id": "571", "ts_ms": 1, "event_count": None}
    with pytest.raises(SkipMessage, match="transaction boundary"):
        DebeziumJsonFormat().decode(message(boundary, key=None))


BAD_INPUTS = [
    (b'{"op":"c","after":{"id":1}', None, "not valid JSON"),
    (b"\xff\xfe", None, "not valid JSON"),
    (b"[1, 2]", None, "is a JSON object, not an array"),
    (b'"text"', None, "is a JSON object, not a string"),
    (b'{"schema":{"type":"struct","fields":[]}}', None, "without a 'payload'"),
    (b'{"schema":null,"payload":5}', None, "expected an object, got a number"),
    (orjson.dumps(mysql(op="x")), None, "unknown op 'x'"),
    (orjson.dumps(mysql(op=None)), None, "unknown op None"),
    (orjson.dumps({"before": None, "after": {"a": 1}}), None, "no 'op' field"),
    (orjson.dumps(mysql(after=[1, 2])), None, "after: expected an object or null"),
    (orjson.dumps(mysql(source="db1")), None, "source: expected an object"),
    (orjson.dumps(mysql(ts_ms="yesterday")), None, "payload.ts_ms: expected an integer"),
    (orjson.dumps(mysql(transaction=7)), None, "transaction: expected an object"),
    (b'{"op":"c","after":{"id":18446744073709551616}}', None, "does not fit in 64 bits"),
    (
        orjson.dumps(pg_event(after=dict(PG_ROW, updated_at="yesterday"))),
        None,
        "after.updated_at: expected an integer, got a string",
    ),
    (
        orjson.dumps(pg_event(after=dict(PG_ROW, id="42"))),
        None,
        "after.id: expected an integer",
    ),
    (
        orjson.dumps(pg_event(after=dict(PG_ROW, status="lost"))),
        None,
        "after.status: 'lost' is not one of the allowed values",
    ),
    (
        orjson.dumps(pg_event(after=dict(PG_ROW, price="not base64!"))),
        None,
        "after.price: not base64",
    ),
    (
        orjson.dumps(
            {
                "schema": {
                    "type": "struct",
                    "fields": [
                        {
                            "type": "struct",
                            "field": "after",
                            "fields": [{"type": "int128", "field": "id"}],
                        }
                    ],
                },
                "payload": mysql(),
            }
        ),
        None,
        "unknown Connect type 'int128'",
    ),
    (orjson.dumps(pg_event()), b'{"schema":{"type":"struct"},"payload":{"id":1}}', "fields"),
    (
        orjson.dumps(pg_event(after=dict(PG_ROW, coupon="X1"))),
        None,
        "after.coupon is not a field of the schema",
    ),
]


@pytest.mark.parametrize(("value", "key", "reason"), BAD_INPUTS)
def test_bad_input_is_a_codec_error_with_a_reason(value, key, reason):
    with pytest.raises(CodecError) as caught:
        DebeziumJsonFormat().decode(Message(value, key=key))
    assert reason in caught.value.reason


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"tombstones": "keep"}, "'tombstones'"),
        ({"truncate": "ignore"}, "'truncate'"),
        ({"message": "drop"}, "'message'"),
        ({"schemas.enable": "maybe"}, "'schemas.enable'"),
        ({"subject.strategy": "nope"}, "'subject.strategy'"),
        ({"key.fields": " , "}, "'key.fields'"),
        ({"key.fields": "a,,b"}, "'key.fields'.*empty column name"),
        ({"colour": "red"}, "'colour'"),
    ],
)
def test_bad_options_are_named(options, named):
    with pytest.raises(FormatOptionError, match=named):
        DebeziumJsonFormat(options)


# --- the registry ---------------------------------------------------------------------------


def test_schemas_are_registered_once_and_named_in_the_metadata(tmp_path: Path, monkeypatch):
    url = f"sqlite:///{tmp_path}/r.db"
    fmt = DebeziumJsonFormat(registry=url)
    calls: list[str] = []
    register = fmt.registry.register_schema_full_response

    def counted(subject: str, schema: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(subject)
        return register(subject, schema, *args, **kwargs)

    monkeypatch.setattr(fmt.registry, "register_schema_full_response", counted)
    records = []
    for n in range(100):
        row = dict(PG_ROW, id=n, notes=f"order {n}")
        key = {**PG_KEY, "payload": {"id": n}}
        records.extend(fmt.decode(message(pg_event(after=row), key=key)))
    md = records[0].metadata
    assert md["opencdc.payload.schema.subject"] == "shop.public.orders.payload"
    assert md["opencdc.key.schema.subject"] == "shop.public.orders.key"
    versions = {
        (r.metadata["opencdc.payload.schema.version"], r.metadata["opencdc.key.schema.version"])
        for r in records
    }
    assert versions == {("1", "1")}
    assert sorted(calls) == ["shop.public.orders.key", "shop.public.orders.payload"]
    registry = open_registry(url)
    assert registry.get_versions("shop.public.orders.payload") == [1]
    schema = registry.get_version("shop.public.orders.payload", 1).schema.schema_str
    avro = orjson.loads(schema)
    assert avro["name"] == "Value" and avro["namespace"] == "shop.public.orders"
    price = next(f for f in avro["fields"] if f["name"] == "price")
    assert {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}.items() <= (
        price["type"][1].items()
    )
    # a changed schema block is a new version
    wider = copy.deepcopy(pg_event())
    wider["schema"]["fields"][1]["fields"] = [
        *PG_ROW_FIELDS,
        {"type": "string", "optional": True, "field": "coupon"},
    ]
    (changed,) = fmt.decode(message(wider))
    assert changed.metadata["opencdc.payload.schema.version"] == "2"


def test_the_topic_strategy_names_subjects_after_the_collection(tmp_path: Path):
    fmt = DebeziumJsonFormat({"subject.strategy": "topic"}, registry=f"sqlite:///{tmp_path}/r.db")
    record = decode_one(fmt, message(pg_event()))
    assert record.metadata["opencdc.payload.schema.subject"] == "shop.public.orders-value"
    assert record.metadata["opencdc.key.schema.subject"] == "shop.public.orders-key"


def test_the_format_survives_pickling_for_spark_executors(tmp_path: Path):
    fmt = DebeziumJsonFormat(registry=f"sqlite:///{tmp_path}/r.db")
    fmt.decode(message(pg_event()))
    clone = pickle.loads(pickle.dumps(fmt))
    assert decode_one(clone, message(pg_event())).payload.after["price"] == Decimal("12.34")


# --- writing and round trips ----------------------------------------------------------------


def test_encode_is_conduits_reverse_mapping():
    record = Record.new(
        "snapshot",
        key={"id": 7},
        after={"id": 7, "name": "x"},
        metadata={
            "debezium.source.db": "inventory",
            "debezium.source.table": "t",
            "debezium.source.pos": "364",
            "debezium.source.snapshot": "true",
        },
        read_at=1_700_000_000_300_000_000,
    )
    msg = DebeziumJsonFormat().encode(record)
    value = orjson.loads(msg.value or b"")
    assert value["op"] == "r"
    assert value["ts_ms"] == 1_700_000_000_300
    assert value["source"] == {"db": "inventory", "table": "t", "pos": 364, "snapshot": "true"}
    assert value["after"] == {"id": 7, "name": "x"}
    assert orjson.loads(msg.key or b"") == {"id": 7}


@pytest.mark.parametrize("schemas", ["false", "true"])
@pytest.mark.parametrize("operation", ["create", "update", "delete", "snapshot"])
def test_opencdc_to_debezium_and_back_keeps_operation_key_images_and_collection(operation, schemas):
    before = None if operation in ("create", "snapshot") else {"id": 1, "n": "a", "q": None}
    after = None if operation == "delete" else {"id": 1, "n": "b", "q": 2.5, "tags": ["x"]}
    record = Record.new(
        operation,
        key={"id": 1},
        before=before,
        after=after,
        collection="db.public.items",
        read_at=1_700_000_000_000_000_000,
    )
    fmt = DebeziumJsonFormat({"schemas.enable": schemas})
    msg = fmt.encode(record)
    assert (b'"schema"' in (msg.value or b"")) is (schemas == "true")
    back = decode_one(fmt, msg)
    assert back.operation is record.operation
    assert back.key == record.key
    assert back.payload == record.payload
    assert back.metadata.collection == "db.public.items"
    assert back.metadata.read_at == record.metadata.read_at


def test_typed_values_round_trip_through_the_registered_schema(tmp_path: Path):
    fmt = DebeziumJsonFormat({"schemas.enable": "true"}, registry=f"sqlite:///{tmp_path}/r.db")
    original = decode_one(fmt, message(pg_event(op="u", before=PG_ROW)))
    msg = fmt.encode(original)
    value = orjson.loads(msg.value or b"")
    after_schema = next(f for f in value["schema"]["fields"] if f["field"] == "after")
    assert after_schema["name"] == "shop.public.orders.Value"
    names = {f["field"]: f.get("name") for f in after_schema["fields"]}
    assert names["updated_at"] == "io.debezium.time.MicroTimestamp"
    assert names["status"] == "io.debezium.data.Enum"
    assert value["payload"]["after"] == PG_ROW  # the very JSON Debezium wrote
    assert orjson.loads(msg.key or b"")["payload"] == {"id": 42}
    back = decode_one(fmt, msg)
    assert back.operation is Operation.UPDATE
    assert back.key == original.key
    assert back.payload == original.payload
    assert back.metadata.collection == original.metadata.collection
    assert back.metadata["opencdc.payload.schema.version"] == "1"


def test_what_json_cannot_hold_is_refused_on_writing_not_changed():
    record = Record.new("create", after={"x": float("nan")})
    with pytest.raises(CodecError, match=r"payload\.after\.x"):
        DebeziumJsonFormat().encode(record)


def test_conduits_own_debezium_output_reads_back_with_collection_and_times():
    # Conduit writes the record's metadata as source
    value = {
        "before": None,
        "after": {"id": 1},
        "op": "c",
        "ts_ms": 1_700_000_000_300,
        "source": {"opencdc.collection": "users", "opencdc.createdAt": "1700000000100000000"},
    }
    record = decode_one(DebeziumJsonFormat(), message(value, key=None))
    assert record.metadata.collection == "users"
    assert record.metadata.created_at == 1_700_000_000_100_000_000


def test_decimals_without_a_registered_schema_are_written_exactly():
    record = Record.new("create", after={"amount": Decimal("123456789012345678.123456789012")})
    fmt = DebeziumJsonFormat({"schemas.enable": "true"})
    back = decode_one(fmt, fmt.encode(record))
    assert back.payload.after == {"amount": Decimal("123456789012345678.123456789012")}
    plain = DebeziumJsonFormat().encode(record)
    assert b"123456789012345678.123456789012" in (plain.value or b"")


def test_records_from_envelope_takes_parsed_json_for_other_formats():
    class Vendor(DebeziumJsonFormat):
        name = "vendor-json"
        prefix = "vendor"

    fmt = Vendor()
    (record,) = fmt.records_from_envelope(mysql(), {"payload": {"id": 1004}}, Message(b""))
    assert record.key == {"id": 1004}
    assert record.metadata["vendor.source.file"] == "mysql-bin.000003"
    assert not any(k.startswith("debezium.") for k in record.metadata)


# --- end to end through the convert engine ---------------------------------------------------


def test_convert_stream_counts_records_skips_and_dead_letters():
    lines = [
        {"key": PG_KEY, "value": pg_event()},
        {"key": {"id": 1004}, "value": mysql()},
        {"key": PG_KEY, "value": None},
        {"key": None, "value": mysql(op="t", before=None, after=None)},
        {"key": None, "value": {"ts_ms": 5}},
        {"key": None, "value": mysql(op="z")},
    ]
    source = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    source += b'{"key":null,"value":{"op":"c","after":[}}\n'  # not even a kv line
    out, dead = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(source),
        out,
        DebeziumJsonFormat(),
        OpenCDCJsonFormat(),
        kv_in=True,
        dead_letters=DeadLetterWriter(dead, "convert:debezium-json->opencdc-json"),
        source_name="events.jsonl",
    )
    assert (stats.messages, stats.written, stats.errors) == (7, 2, 3)
    assert dict(stats.skipped) == {"tombstone": 1, "heartbeat": 1}
    written = [record_from_json(line) for line in out.getvalue().splitlines()]
    assert [r.operation for r in written] == [Operation.CREATE, Operation.UPDATE]
    assert b'"price":12.34,' in out.getvalue().splitlines()[0]
    letters = [record_from_json(line) for line in dead.getvalue().splitlines()]
    assert len(letters) == 3
    reasons = [r.metadata["conduit.dlq.nack.error"] for r in letters]
    assert "truncate=skip" in reasons[0]
    assert "unknown op 'z'" in reasons[1]
    assert letters[0].position == b"events.jsonl:4"
    assert orjson.loads(letters[1].payload.after or b"")["op"] == "z"  # the original bytes


def test_base64_helper_matches_debezium_decimal_bytes():
    # the PG fixture's price is what Debezium writes for numeric(10,2) 12.34
    assert int.from_bytes(base64.b64decode(PG_ROW["price"]), "big", signed=True) == 1234


# --- input an attacker would send: refused with a reason, never changed or crashing --------

FLOAT_ROW = {
    "type": "struct",
    "optional": True,
    "name": "t.Value",
    "fields": [
        {"type": "float64", "optional": True, "field": "f"},
        {
            "type": "struct",
            "optional": True,
            "name": "t.Nest",
            "field": "nest",
            "fields": [{"type": "int32", "optional": True, "field": "x"}],
        },
        {
            "type": "bytes",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2"},
            "field": "amount",
        },
    ],
}


def typed_event(after: Any, op: str = "c") -> bytes:
    schema = {
        "type": "struct",
        "name": "t.Envelope",
        "fields": [
            {**FLOAT_ROW, "field": "before"},
            {**FLOAT_ROW, "field": "after"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    return orjson.dumps({"schema": schema, "payload": {"op": op, "after": after}})


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (b'{"f": 9007199254740993}', "would change as a float64"),
        (b'{"f": 0.10000000000000000000001}', "would change as a float64"),
        (b'{"nest": {"x": 1, "secret": "kept"}}', "after.nest.secret: not a field"),
        (b'{"amount": ""}', "empty bytes are no decimal"),
    ],
)
def test_values_a_schema_cannot_hold_exactly_are_refused(text: bytes, reason: str) -> None:
    value = typed_event({"placeholder": 1}).replace(b'{"placeholder":1}', text)
    with pytest.raises(CodecError, match=reason):
        DebeziumJsonFormat().decode(Message(value))


def test_a_double_that_reads_back_the_same_is_kept() -> None:
    (record,) = DebeziumJsonFormat().decode(Message(typed_event({"f": 9007199254740992})))
    assert record.payload.after == {"f": 9007199254740992.0, "nest": None, "amount": None}


def test_a_variable_scale_decimal_beyond_any_database_is_refused() -> None:
    block = {
        "type": "struct",
        "optional": True,
        "name": "t.Value",
        "fields": [
            {
                "type": "struct",
                "optional": True,
                "name": "io.debezium.data.VariableScaleDecimal",
                "field": "n",
                "fields": [
                    {"type": "int32", "optional": False, "field": "scale"},
                    {"type": "bytes", "optional": False, "field": "value"},
                ],
            }
        ],
    }
    schema = {
        "type": "struct",
        "name": "t.Envelope",
        "fields": [{**block, "field": "after"}, {"type": "string", "field": "op"}],
    }
    value = {
        "schema": schema,
        "payload": {"op": "c", "after": {"n": {"scale": 10**8, "value": "AQ=="}}},
    }
    with pytest.raises(CodecError, match="beyond 16383"):
        DebeziumJsonFormat().decode(Message(orjson.dumps(value)))


def test_nesting_deep_enough_to_exhaust_the_stack_is_a_codec_error() -> None:
    deep = b"[" * 700 + b"]" * 700
    value = b'{"op":"c","after":{"s":' + deep + b'},"source":{"table":"t"}}'
    with pytest.raises(CodecError, match="too deeply"):
        DebeziumJsonFormat().decode(Message(value))


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"op": "c", "source": {"table": "t"}}, "create without an after image"),
        ({"op": "d", "source": {"table": "t"}}, "neither a before image nor a key"),
        ({"op": "c", "after": {"a": 1}, "source": {"db": ["x"]}}, "source.db: expected a string"),
        ({"op": "c", "after": {"a": 1}, "ts_ms": 2**62}, "beyond the nanoseconds"),
    ],
)
def test_envelopes_that_say_nothing_or_lie_are_refused(payload: Any, reason: str) -> None:
    with pytest.raises(CodecError, match=reason):
        DebeziumJsonFormat().decode(Message(orjson.dumps(payload)))


def test_a_delete_named_by_its_key_alone_is_kept() -> None:
    (record,) = DebeziumJsonFormat().decode(
        Message(orjson.dumps({"op": "d", "source": {"table": "t"}}), key=b'{"id": 1}')
    )
    assert record.key == {"id": 1}


def test_a_time_of_zero_is_a_time_not_a_missing_one():
    payload = mysql(ts_ms=0)
    payload["source"] = {**payload["source"], "ts_ms": 0}
    fmt = DebeziumJsonFormat()
    one = decode_one(fmt, message(payload, key={"id": 1004}))
    ((_, many),) = fmt.decode_many([message(payload, key={"id": 1004})])
    assert isinstance(many, list)
    for record in (one, *many):
        assert record.metadata["opencdc.createdAt"] == "0"
        assert record.metadata["opencdc.readAt"] == "0"


# --- Debezium's own events written back with their registered schemas ------------------------

_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "debezium"
_WITH_BLOCKS = sorted(
    path
    for path in (*_EXAMPLES.glob("real/*.jsonl"), *_EXAMPLES.glob("edge/*.jsonl"))
    if not any(part in path.name for part in (".kv.", "mongodb", "schemaless"))
)


@pytest.mark.parametrize("path", _WITH_BLOCKS, ids=lambda path: path.name)
def test_debeziums_events_come_back_with_its_row_schemas_and_values(tmp_path: Path, path: Path):
    """Decoded with a registry and written with ``schemas.enable``, a connector's event
    carries the very row schema, values and ``source`` members (but its nulls) it came with
    (VariableScaleDecimal included: its Avro form is the decimal's text, its Connect form
    Debezium's struct)."""
    fmt = DebeziumJsonFormat({"schemas.enable": "true"}, registry=f"sqlite:///{tmp_path}/r.db")
    written = 0
    for line in path.read_bytes().splitlines():
        event = orjson.loads(line)
        if not isinstance(event.get("schema"), dict) or "op" not in event["payload"]:
            continue  # transaction boundaries
        try:
            (record,) = fmt.decode(Message(value=line))
        except CodecError:
            continue  # the edge cases' dead letters, tested with their reasons elsewhere
        out = orjson.loads(fmt.encode(record).value or b"")
        for image in ("before", "after"):
            if event["payload"][image] is None:
                continue
            blocks = [
                next(f for f in value["schema"]["fields"] if f["field"] == image)
                for value in (event, out)
            ]
            assert blocks[1]["fields"] == blocks[0]["fields"], image
            assert out["payload"][image] == event["payload"][image]
        given = {k: v for k, v in event["payload"]["source"].items() if v is not None}
        assert out["payload"]["source"] == given  # Oracle's SCNs stay strings
        written += 1
    assert written
