"""`cdl-json`: Huawei CDL's change messages (message_version 1.0 and 2.0) as OpenCDC records."""

from __future__ import annotations

import copy
import io
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_connectors.convert import DeadLetterWriter, convert_stream
from cdc_connectors.formats.base import FormatOptionError, Message, SkipMessage
from cdc_connectors.formats.debezium.cdl import CdlJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.opencdc import CodecError, Record, keys, record_from_json

# The two samples of Huawei's CDL documentation ("CDL JSON and Open-Source Debezium JSON"),
# verbatim: a PostgreSQL insert in CDL JSON (1.0) and in CDL's Debezium JSON (2.0).
SAMPLE_V1 = (
    b'{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"DATA_STORE"},'
    b'{"type":"string","optional":false,"field":"SEG_OWNER"},{"type":"string","optional":false,'
    b'"field":"TABLE_NAME"},{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.'
    b'Timestamp","version":1,"field":"TIMESTAMP"},{"type":"string","optional":false,"field":'
    b'"OPERATION"},{"type":"string","optional":true,"field":"LOB_COLUMNS"},{"type":"struct",'
    b'"fields":[{"type":"array","items":{"type":"struct","fields":[{"type":"string","optional":'
    b'false,"field":"name"},{"type":"int64","optional":false,"field":"value"}],"optional":false},'
    b'"optional":false,"field":"properties"}],"optional":false,"name":"transaction","field":'
    b'"transaction"},{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
    b'"optional":true,"name":"unique","field":"unique"},{"type":"struct","fields":[{"type":"int64",'
    b'"optional":true,"field":"count1"},{"type":"int32","optional":false,"field":"id"},{"type":'
    b'"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp","version":1,'
    b'"field":"time1"},{"type":"string","optional":true,"name":"com.xxx.cdc.data.Decimal","field":'
    b'"decimalNum"}],"optional":true,"name":"data","field":"data"},{"type":"struct","fields":[{'
    b'"type":"int64","optional":true,"field":"count1"},{"type":"int32","optional":false,"field":'
    b'"id"},{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp",'
    b'"version":1,"field":"time1"},{"type":"string","optional":true,"name":"com.xxx.cdc.data.'
    b'Decimal","field":"decimalNum"}],"optional":true,"name":"before","field":"before"},{"type":'
    b'"string","optional":false,"field":"message_version"},{"type":"string","optional":false,'
    b'"field":"message_type"},{"type":"string","optional":true,"field":"HEARTBEAT_IDENTIFIER"}],'
    b'"optional":false,"name":"public.ct_pg2hudi"},"payload":{"DATA_STORE":"POSTGRESQL",'
    b'"SEG_OWNER":"public","TABLE_NAME":"ct_pg2hudi","TIMESTAMP":1707047996013,"OPERATION":'
    b'"INSERT","LOB_COLUMNS":null,"transaction":{"properties":[{"name":"lsn","value":163955221008'
    b'},{"name":"txId","value":57227595}]},"unique":{"id":34},"data":{"count1":13,"id":34,"time1":'
    b'null,"decimalNum":null},"before":null,"message_version":"1.0","message_type":"0",'
    b'"HEARTBEAT_IDENTIFIER":"279fb050-0143-45c1-b184-50bc48c2461c"}}'
)
SAMPLE_V2 = (
    b'{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int64","optional":'
    b'true,"field":"count1"},{"type":"int32","optional":false,"field":"id"},{"type":"string",'
    b'"optional":true,"name":"com.xxx.cdc.data.timestamp","field":"time1"},{"type":"string",'
    b'"optional":true,"name":"com.xxx.cdc.data.Decimal","field":"decimalNum"}],"optional":true,'
    b'"name":"before","field":"before"},{"type":"struct","fields":[{"type":"int64","optional":'
    b'true,"field":"count1"},{"type":"int32","optional":false,"field":"id"},{"type":"string",'
    b'"optional":true,"name":"com.xxx.cdc.data.timestamp","field":"time1"},{"type":"string",'
    b'"optional":true,"name":"com.xxx.cdc.data.Decimal","field":"decimalNum"}],"optional":true,'
    b'"name":"data","field":"after"},{"type":"struct","fields":[{"type":"string","optional":false,'
    b'"field":"version"},{"type":"string","optional":false,"field":"connector"},{"type":"string",'
    b'"optional":false,"field":"name"},{"type":"int64","optional":false,"field":"ts_ms"},{"type":'
    b'"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":'
    b'"true,last,false"},"default":"false","field":"snapshot"},{"type":"string","optional":false,'
    b'"field":"db"},{"type":"string","optional":false,"field":"schema"},{"type":"string",'
    b'"optional":false,"field":"table"},{"type":"int64","optional":true,"field":"txId"},{"type":'
    b'"int64","optional":true,"field":"lsn"}],"optional":false,"name":"io.debezium.connector.'
    b'postgresql.Source","field":"source"},{"type":"string","optional":false,"field":"op"},{'
    b'"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":false,"field":'
    b'"message_version"},{"type":"string","optional":false,"field":"message_type"},{"type":'
    b'"string","optional":true,"field":"LOB_COLUMNS"},{"type":"struct","fields":[{"type":"int32",'
    b'"optional":false,"field":"id"}],"optional":true,"name":"unique","field":"unique"}],'
    b'"optional":false,"name":"public.ct_pg2hudi"},"payload":{"before":null,"after":{"count1":14,'
    b'"id":35,"time1":null,"decimalNum":null},"source":{"version":"1.4.0.Final","connector":'
    b'"postgresql","name":"cdl","ts_ms":1707048891235,"snapshot":"false","db":"cdl","schema":'
    b'"public","table":"ct_pg2hudi","txId":57227663,"lsn":163955586912},"op":"c","ts_ms":'
    b'1707048984208,"message_version":"2.0","message_type":"0","LOB_COLUMNS":null,"unique":{"id":'
    b"35}}}"
)

V1_METADATA = {
    "cdl.DATA_STORE": "POSTGRESQL",
    "cdl.SEG_OWNER": "public",
    "cdl.TABLE_NAME": "ct_pg2hudi",
    "cdl.TIMESTAMP": "1707047996013",
    "cdl.message_version": "1.0",
    "cdl.message_type": "0",
    "cdl.HEARTBEAT_IDENTIFIER": "279fb050-0143-45c1-b184-50bc48c2461c",
    "cdl.lsn": "163955221008",
    "cdl.txId": "57227595",
}
V2_METADATA = {
    "cdl.message_version": "2.0",
    "cdl.message_type": "0",
    "cdl.source.version": "1.4.0.Final",
    "cdl.source.connector": "postgresql",
    "cdl.source.name": "cdl",
    "cdl.source.ts_ms": "1707048891235",
    "cdl.source.snapshot": "false",
    "cdl.source.db": "cdl",
    "cdl.source.schema": "public",
    "cdl.source.table": "ct_pg2hudi",
    "cdl.source.txId": "57227663",
    "cdl.source.lsn": "163955586912",
}


def _sample(raw: bytes) -> dict[str, Any]:
    return copy.deepcopy(orjson.loads(raw))


def _bytes(envelope: dict[str, Any]) -> bytes:
    return orjson.dumps(envelope, default=str)


def _decode(value: bytes | None, key: bytes | None = None, **options: str) -> list[Record]:
    return CdlJsonFormat(options).decode(Message(value, key=key, where="f:1"))


def _one(value: bytes, key: bytes | None = None, **options: str) -> Record:
    """The single record of a message; readAt checked to be the time of decoding when the
    message carries none, then dropped so records compare whole."""
    before = time.time_ns()
    (record,) = _decode(value, key, **options)
    after = time.time_ns()
    read_at = record.metadata.read_at
    assert read_at is not None
    document = orjson.loads(value)
    if document.get("payload", document).get("ts_ms") is None:
        assert before <= read_at <= after
        record.metadata.read_at = None
    return record


def _v1(
    operation: str, before: dict[str, Any] | None, after: dict[str, Any] | None
) -> dict[str, Any]:
    envelope = _sample(SAMPLE_V1)
    envelope["payload"].update(OPERATION=operation, before=before, data=after)
    return envelope


def _v2(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    envelope = _sample(SAMPLE_V2)
    envelope["payload"].update(op=op, before=before, after=after)
    return envelope


# --- the documentation's samples -------------------------------------------------------------


def test_cdl_json_1_0_sample_insert_is_a_create_with_unique_as_key_and_cdl_metadata():
    assert _one(SAMPLE_V1) == Record.new(
        "create",
        position=b"f:1",
        key={"id": 34},
        after={"count1": 13, "id": 34, "time1": None, "decimalNum": None},
        collection="public.ct_pg2hudi",
        created_at=1707047996013 * 1_000_000,
        metadata={**V1_METADATA, "cdl.OPERATION": "INSERT"},
    )


def test_cdl_debezium_json_2_0_sample_insert_is_a_create_timed_by_source_and_payload():
    assert _one(SAMPLE_V2) == Record.new(
        "create",
        position=b"f:1",
        key={"id": 35},
        after={"count1": 14, "id": 35, "time1": None, "decimalNum": None},
        collection="cdl.public.ct_pg2hudi",
        created_at=1707048891235 * 1_000_000,
        read_at=1707048984208 * 1_000_000,
        metadata=V2_METADATA,
    )


# --- the samples' other operations -----------------------------------------------------------

OLD_V1 = {"count1": 13, "id": 34, "time1": 1707047996013, "decimalNum": "12.5"}
NEW_V1 = {"count1": 14, "id": 34, "time1": 1707048000000, "decimalNum": "-0.000000000000000001"}
OLD_ROW = {
    "count1": 13,
    "id": 34,
    "time1": "2024-02-04T11:59:56.013000+00:00",
    "decimalNum": Decimal("12.500000000000000000"),
}
NEW_ROW = {
    "count1": 14,
    "id": 34,
    "time1": "2024-02-04T12:00:00+00:00",
    "decimalNum": Decimal("-0.000000000000000001"),
}


def test_cdl_json_1_0_update_converts_timestamps_and_decimal_strings_with_the_schema():
    record = _one(_bytes(_v1("UPDATE", OLD_V1, NEW_V1)))
    assert str(record.operation) == "update"
    assert record.payload.before == OLD_ROW
    assert record.payload.after == NEW_ROW
    assert record.key == {"id": 34}
    assert record.metadata["cdl.OPERATION"] == "UPDATE"


def test_cdl_json_1_0_delete_keeps_the_before_image_and_has_no_after():
    record = _one(_bytes(_v1("DELETE", OLD_V1, None)))
    assert record == Record.new(
        "delete",
        position=b"f:1",
        key={"id": 34},
        before=OLD_ROW,
        collection="public.ct_pg2hudi",
        created_at=1707047996013 * 1_000_000,
        metadata={**V1_METADATA, "cdl.OPERATION": "DELETE"},
    )


OLD_V2 = {"count1": 13, "id": 35, "time1": "2024-02-04 11:59:56.013", "decimalNum": "12.5"}
NEW_V2 = {"count1": 14, "id": 35, "time1": "2024-02-04T20:00:00+08:00", "decimalNum": "7"}


@pytest.mark.parametrize(
    ("op", "operation", "before", "after"),
    [
        ("u", "update", OLD_V2, NEW_V2),
        ("d", "delete", OLD_V2, None),
        ("r", "snapshot", None, NEW_V2),
    ],
)
def test_cdl_debezium_json_2_0_operations_map_as_debezium_with_typed_columns(
    op, operation, before, after
):
    record = _one(_bytes(_v2(op, before, after)))
    typed_before = {
        "count1": 13,
        "id": 35,
        "time1": "2024-02-04T11:59:56.013000+00:00",  # no offset: UTC
        "decimalNum": Decimal("12.500000000000000000"),
    }
    typed_after = {
        "count1": 14,
        "id": 35,
        "time1": "2024-02-04T12:00:00+00:00",
        "decimalNum": Decimal("7.000000000000000000"),
    }
    assert record == Record.new(
        operation,
        position=b"f:1",
        key={"id": 35},
        before=typed_before if before else None,
        after=typed_after if after else None,
        collection="cdl.public.ct_pg2hudi",
        created_at=1707048891235 * 1_000_000,
        read_at=1707048984208 * 1_000_000,
        metadata=V2_METADATA,
    )


@pytest.mark.parametrize("sample", [SAMPLE_V1, SAMPLE_V2], ids=["1.0", "2.0"])
def test_a_heartbeat_without_operation_or_row_is_skipped_as_heartbeat(sample):
    envelope = _sample(sample)
    payload = envelope["payload"]
    for name in ("OPERATION", "op", "data", "after", "before", "unique"):
        if name in payload:
            payload[name] = None
    with pytest.raises(SkipMessage) as caught:
        _decode(_bytes(envelope))
    assert caught.value.reason == "heartbeat"


@pytest.mark.parametrize("sample", [SAMPLE_V1, SAMPLE_V2], ids=["1.0", "2.0"])
def test_the_payload_without_its_schema_wrapper_decodes_to_the_same_record(sample):
    bare = _bytes(_sample(sample)["payload"])
    assert _one(bare) == _one(sample)


def test_without_a_schema_values_stay_as_sent_and_numbers_stay_exact():
    payload = _v1("INSERT", None, {"id": 1, "price": "PRICE"})["payload"]
    value = _bytes(payload).replace(b'"PRICE"', b"12345678901234567.25")
    (record,) = _decode(value)
    assert record.payload.after == {"id": 1, "price": Decimal("12345678901234567.25")}


def test_an_empty_object_row_image_means_absent():
    record = _one(_bytes(_v1("INSERT", {}, {"count1": 1, "id": 34})))
    assert record.payload.before is None


# --- keys and options ------------------------------------------------------------------------


KEY_SCHEMA = b'{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}]}'


@pytest.mark.parametrize("sample", [SAMPLE_V1, SAMPLE_V2], ids=["1.0", "2.0"])
def test_without_unique_the_kafka_key_is_the_key(sample):
    envelope = _sample(sample)
    envelope["payload"]["unique"] = None
    value = _bytes(envelope)
    wrapped = b'{"schema":%s,"payload":{"id":35}}' % KEY_SCHEMA
    assert _one(value, key=wrapped).key == {"id": 35}
    assert _one(value, key=b'{"id":35}').key == {"id": 35}
    assert _one(value, key=b"row-35").key == b"row-35"
    assert _one(value).key is None


@pytest.mark.parametrize(
    ("sample", "row_key"),
    [(SAMPLE_V1, {"id": 34, "count1": 13}), (SAMPLE_V2, {"id": 35, "count1": 14})],
    ids=["1.0", "2.0"],
)
def test_without_unique_or_kafka_key_the_key_fields_option_takes_the_key_from_the_row(
    sample, row_key
):
    envelope = _sample(sample)
    envelope["payload"]["unique"] = None
    value = _bytes(envelope)
    assert _one(value, **{"key.fields": "id, count1"}).key == row_key
    assert _one(value, key=b'{"id":1}', **{"key.fields": "id"}).key == {"id": 1}
    assert _one(sample, key=b'{"id":1}', **{"key.fields": "count1"}).key == {"id": row_key["id"]}
    with pytest.raises(CodecError, match=r"key\.fields: column 'nope' is not in the row"):
        _decode(value, **{"key.fields": "nope"})


@pytest.mark.parametrize(
    ("envelope", "key"),
    [(_v1("DELETE", None, None), {"id": 34}), (_v2("d", None, None), {"id": 35})],
    ids=["1.0", "2.0"],
)
def test_a_delete_with_unique_but_no_before_image_is_a_key_only_delete(envelope, key):
    record = _one(_bytes(envelope))
    assert (str(record.operation), record.key) == ("delete", key)
    assert record.payload.before is None and record.payload.after is None


def test_unique_is_typed_by_its_schema_in_2_0():
    envelope = _sample(SAMPLE_V2)
    envelope["schema"]["fields"][-1]["fields"][0].update(
        type="string", name="com.xxx.cdc.data.Decimal"
    )
    envelope["payload"]["unique"] = {"id": "35.5"}
    assert _one(_bytes(envelope)).key == {"id": Decimal("35.500000000000000000")}


def test_tombstones_are_skipped_unless_the_option_makes_them_key_only_deletes():
    with pytest.raises(SkipMessage) as caught:
        _decode(None, key=b'{"id":35}')
    assert caught.value.reason == "tombstone"
    (record,) = _decode(None, key=b'{"id":35}', tombstones="delete")
    assert (str(record.operation), record.key, record.position) == ("delete", {"id": 35}, b"f:1")
    assert record.payload.before is None and record.payload.after is None
    with pytest.raises(SkipMessage):  # nothing to delete without a key
        _decode(None, tombstones="delete")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"tombstones": "drop"}, "'tombstones'"),
        ({"key.fields": " , "}, "'key.fields'"),
        ({"key.fields": ""}, "'key.fields'"),
        ({"key.field": "id"}, "'key.field'"),
    ],
)
def test_bad_options_are_refused_naming_the_option(options, named):
    with pytest.raises(FormatOptionError, match=named):
        CdlJsonFormat(options)


def test_the_format_is_read_only():
    with pytest.raises(CodecError, match="read-only"):
        CdlJsonFormat().encode(Record.new("create", after={"a": 1}))


# --- bad input -------------------------------------------------------------------------------


def _edit_v1(**changes: Any) -> bytes:
    envelope = _sample(SAMPLE_V1)
    envelope["payload"].update(changes)
    return _bytes(envelope)


def _edit_v2(**changes: Any) -> bytes:
    envelope = _sample(SAMPLE_V2)
    envelope["payload"].update(changes)
    return _bytes(envelope)


def _source(**changes: Any) -> bytes:
    envelope = _sample(SAMPLE_V2)
    envelope["payload"]["source"].update(changes)
    return _bytes(envelope)


BAD = [
    (b"{not json", "invalid JSON"),
    (b"\xff\xfe", "invalid UTF-8"),
    (b"[1, 2]", "value: a CDL message is a JSON object, not an array"),
    (b'{"payload": 3}', "payload: expected an object, got the number 3"),
    (b'{"payload": {}, "extra": 1}', "'extra' beside 'payload'"),
    (b'{"id": 18446744073709551616}', "value: integer 18446744073709551616 does not fit"),
    (b'{"payload": {"OPERATION": "INSERT"}}', "payload.message_version: missing"),
    (_edit_v1(message_version="3.0"), "payload.message_version: unknown version '3.0'"),
    (_edit_v1(message_version=1.0), "payload.message_version: unknown version 1.0"),
    (_edit_v1(OPERATION="MERGE"), "payload.OPERATION: unknown operation 'MERGE'"),
    (_edit_v1(OPERATION=1), "payload.OPERATION: unknown operation 1"),
    (_edit_v1(OPERATION=None), "payload.OPERATION: missing"),
    (_edit_v1(OPERATION=["INSERT"]), 'payload.OPERATION: unknown operation ["INSERT"]'),
    (_edit_v1(data=None), "payload.data: missing: 'INSERT' (create) needs the row it writes"),
    (_edit_v1(OPERATION="UPDATE", data={}), "payload.data: missing: 'UPDATE' (update) needs"),
    (
        _edit_v1(OPERATION="DELETE", data=None, unique=None),
        "payload.before: missing: 'DELETE' (delete) without 'unique' needs the row",
    ),
    (_edit_v1(data=[1]), "payload.data: expected an object or null, got an array"),
    (_edit_v1(before="x"), "payload.before: expected an object or null, got a string"),
    (_edit_v1(data={"id": 34, "extra": 1}), "payload.data.extra: a column the message's schema"),
    (_edit_v1(data={"id": "34"}), "payload.data.id: expected an integer, got a string"),
    (_edit_v1(data={"count1": 1}), "payload.data.id: null for a required int32"),
    (_edit_v1(data={"id": 1, "decimalNum": "1,5"}), "payload.data.decimalNum: not a decimal"),
    (_edit_v1(data={"id": 1, "time1": "noon"}), "payload.data.time1: expected an integer"),
    (_edit_v1(unique={"id": None}), "payload.unique.id: null for a required int32"),
    (_edit_v1(unique=[34]), "payload.unique: expected an object or null, got an array"),
    (_edit_v1(TABLE_NAME=None), "payload.TABLE_NAME: missing"),
    (_edit_v1(TABLE_NAME=7), "payload.TABLE_NAME: expected a non-empty string"),
    (_edit_v1(SEG_OWNER=["public"]), "payload.SEG_OWNER: expected a string, got an array"),
    (_edit_v1(TIMESTAMP=None), "payload.TIMESTAMP: missing"),
    (_edit_v1(TIMESTAMP="1707047996013"), "payload.TIMESTAMP: expected Unix milliseconds"),
    (_edit_v1(TIMESTAMP=True), "payload.TIMESTAMP: expected Unix milliseconds"),
    (_edit_v1(transaction=[]), "payload.transaction: expected an object, got an array"),
    (_edit_v1(transaction={"properties": {}}), "payload.transaction.properties: expected an"),
    (_edit_v1(transaction={"properties": [{"value": 1}]}), "properties[0]: expected an object"),
    (_edit_v1(HEARTBEAT_IDENTIFIER="?").replace(b'"?"', b'"\\ud800"'), "no low surrogate"),
    (
        b'{"schema": {"type": "nope"}, "payload": {"message_version": "1.0"}}',
        "not a Kafka Connect schema: schema.type",
    ),
    (
        b'{"schema": {"type": "string"}, "payload": {"message_version": "1.0"}}',
        "schema: the payload's schema is a struct, not string",
    ),
    # 2.0: Debezium's reasons, plus what CDL's messages always carry
    (_edit_v2(op="x"), "unknown op 'x'"),
    (_edit_v2(op=["c"]), "unknown op ['c']"),
    (_edit_v2(op="t"), "op 't' is a truncate, which has no OpenCDC operation"),
    (_edit_v2(op="m"), "op 'm' is a logical decoding message, which has no OpenCDC operation"),
    (_edit_v2(op=None), "payload.op: missing in a message that carries a row"),
    (_edit_v2(after=None), "payload.after: missing: 'c' (create) needs the row it writes"),
    (_edit_v2(op="r", after={}), "payload.after: missing: 'r' (snapshot) needs the row"),
    (
        _edit_v2(op="d", after=None, unique=None),
        "payload.before: missing: 'd' (delete) without 'unique' needs the row",
    ),
    (_edit_v2(unique=[35]), "payload.unique: expected an object or null, got an array"),
    (_edit_v2(unique={"id": "35"}), "key.id: expected an integer, got a string"),
    (_edit_v2(source="pg"), "source: expected an object, got a string"),
    (_source(ts_ms=1.5), "source.ts_ms: expected an integer"),
    (_edit_v2(ts_ms="soon"), "payload.ts_ms: expected an integer, got a string"),
    (_edit_v2(transaction=5), "transaction: expected an object"),
    (_edit_v2(after={"id": 35, "time1": "Feb 4"}), "after.time1: not an ISO-8601 date-time"),
    (_edit_v2(after={"id": None}), "after.id: null for a required int32"),
    (_edit_v2(after={"id": 35, "zzz": 1}), "after.zzz is not a field of the schema"),
]


@pytest.mark.parametrize(("value", "reason"), BAD, ids=[reason for _, reason in BAD])
def test_bad_input_is_a_codec_error_naming_the_field(value, reason):
    with pytest.raises(CodecError) as caught:
        _decode(value)
    assert reason in caught.value.reason


# --- end to end ------------------------------------------------------------------------------


def test_convert_stream_turns_good_lines_to_opencdc_and_a_bad_line_into_a_dead_letter():
    heartbeat = _sample(SAMPLE_V1)
    heartbeat["payload"].update(OPERATION=None, data=None, unique=None)
    lines = [
        SAMPLE_V1,
        _edit_v1(OPERATION="MERGE"),
        _bytes(heartbeat),
        SAMPLE_V2,
        _bytes(_v2("d", OLD_V2, None)),
    ]
    out, dead = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(b"\n".join(lines) + b"\n"),
        out,
        CdlJsonFormat(),
        OpenCDCJsonFormat(),
        dead_letters=DeadLetterWriter(dead, "convert:cdl-json->opencdc-json"),
        source_name="cdl.jsonl",
    )
    assert (stats.messages, stats.written, stats.errors) == (5, 3, 1)
    assert dict(stats.skipped) == {"heartbeat": 1}
    written = [record_from_json(line) for line in out.getvalue().splitlines()]
    assert [(str(r.operation), r.position, r.key) for r in written] == [
        ("create", b"cdl.jsonl:1", {"id": 34}),
        ("create", b"cdl.jsonl:4", {"id": 35}),
        ("delete", b"cdl.jsonl:5", {"id": 35}),
    ]
    assert written[2].payload.before == {
        "count1": 13,
        "id": 35,
        "time1": "2024-02-04T11:59:56.013000+00:00",
        "decimalNum": Decimal("12.500000000000000000"),
    }
    (letter,) = [record_from_json(line) for line in dead.getvalue().splitlines()]
    assert letter.position == b"cdl.jsonl:2"
    assert letter.payload.after == lines[1]
    assert (
        "payload.OPERATION: unknown operation 'MERGE'"
        in letter.metadata[keys.CONDUIT_DLQ_NACK_ERROR]
    )


def test_with_a_registry_1_0_names_its_table_s_schemas_and_avro_rows_of_every_row_are_read_back():
    """CDL JSON 1.0 names the row's schema (its ``data`` struct) and the key's (``unique``)
    as Debezium JSON does: the ``avro`` destination writes every row of the table with that
    schema; inferred from each row's values, the second row's (a column null in the first)
    was refused by the registry."""
    import base64
    import uuid

    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from cdc_connectors.formats.avro import AvroFormat
    from cdc_connectors.registry import open_registry

    url = f"memory://cdl-v1-{uuid.uuid4().hex}"
    registry = open_registry(url)  # (a memory:// store lives while a client is open)
    lines = Path("examples/cdl/ct_pg2hudi.jsonl").read_bytes().splitlines()
    fmt = CdlJsonFormat(registry=url)
    record = fmt.decode(Message(value=lines[0], where="cdl.jsonl:1"))[0]
    assert record.metadata["opencdc.payload.schema.subject"] == "public.ct_pg2hudi.payload"
    assert record.metadata["opencdc.key.schema.subject"] == "public.ct_pg2hudi.key"
    out, dead = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(b"\n".join(lines) + b"\n"),
        out,
        fmt,
        AvroFormat(registry=url),
        kv_out=True,
        dead_letters=DeadLetterWriter(dead, "convert"),
        source_name="cdl.jsonl",
    )
    assert (stats.written, stats.errors) == (4, 0), dead.getvalue()
    rows = AvroDeserializer(registry)
    values = [
        rows(base64.b64decode(line["value"]), SerializationContext("t", MessageField.VALUE))
        for line in map(orjson.loads, out.getvalue().splitlines())
        if line["value"] is not None
    ]
    assert [row["count1"] for row in values] == [13, 14, 14]
    assert values[1]["decimalNum"] == Decimal("12.500000000000000000")
    registry.close()
