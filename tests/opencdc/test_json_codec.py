from __future__ import annotations

import io
from decimal import Decimal

import orjson
import pytest

from cdc_connectors.opencdc import (
    CodecError,
    Operation,
    Record,
    read_json_lines,
    record_from_json,
    record_to_json,
)

from .canonical import CANONICAL, CONDUIT_TEST_RECORD


@pytest.mark.parametrize("doc", CANONICAL)
def test_conduit_canonical_records_round_trip_exactly(doc):
    record = record_from_json(doc)
    assert orjson.loads(record_to_json(record)) == orjson.loads(doc)


def test_json_keys_are_written_in_conduits_order():
    out = record_to_json(record_from_json(CONDUIT_TEST_RECORD))
    assert list(orjson.loads(out)) == ["position", "operation", "metadata", "key", "payload"]
    assert list(orjson.loads(out)["payload"]) == ["before", "after"]


def test_reading_decodes_raw_base64_structured_objects_and_nulls():
    record = record_from_json(CONDUIT_TEST_RECORD)
    assert record.position == b"foo"
    assert record.key == b"bar"
    assert record.payload.before is None
    assert record.payload.after == {"baz": "qux", "foo": "bar"}
    assert record.operation is Operation.CREATE


def test_raw_as_string_writes_and_reads_plain_strings():
    record = Record.new("update", key=b"k-1", before=b'{"a":1}', after={"a": 2})
    doc = orjson.loads(record_to_json(record, raw_as_string=True))
    assert doc["key"] == "k-1"
    assert doc["payload"]["before"] == '{"a":1}'
    assert doc["position"] == ""  # position stays base64 always
    assert record_from_json(orjson.dumps(doc), raw_as_string=True) == record


def test_raw_as_string_refuses_bytes_that_are_not_utf8():
    record = Record.new("create", key=b"\xff\xfe")
    with pytest.raises(CodecError, match="key is not UTF-8"):
        record_to_json(record, raw_as_string=True)


def test_integer_and_operation_n_forms_are_accepted_on_read():
    assert record_from_json(b'{"operation": 3}').operation is Operation.DELETE
    assert record_from_json(b'{"operation": "Operation(4)"}').operation is Operation.SNAPSHOT


def test_structured_bytes_and_decimals_have_exact_json_forms():
    record = Record.new(
        "create", after={"blob": b"\x00\x01", "amount": Decimal("12345678901234567890.25")}
    )
    out = record_to_json(record)
    assert b'"amount":12345678901234567890.25' in out
    assert orjson.loads(out)["payload"]["after"]["blob"] == "AAE="


def test_large_integers_in_structured_data_stay_exact():
    doc = b'{"operation":"create","payload":{"after":{"id":9007199254740993}}}'
    record = record_from_json(doc)
    assert record.payload.after == {"id": 9007199254740993}
    assert b"9007199254740993" in record_to_json(record)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (b"{not json", "invalid JSON"),
        (b"[1,2]", "must be a JSON object"),
        (b'{"operation":"insert"}', "unknown operation 'insert'"),
        (b'{"operation":"create","metadata":{"n":1}}', "metadata 'n' must be a string, not int"),
        (b'{"operation":"create","metadata":[]}', "metadata must be an object"),
        (b'{"operation":"create","key":12}', "key must be a base64 string, an object or null"),
        (b'{"operation":"create","position":"!!"}', "position is not valid base64"),
        (b'{"operation":"create","payload":{"after":"a"}}', "payload.after is not valid base64"),
        (b'{"operation":"create","payload":[]}', "payload must be an object"),
    ],
)
def test_bad_json_input_raises_one_error_type_saying_what(doc, message):
    with pytest.raises(CodecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        record_from_json(doc)


def test_stream_error_names_source_and_line_and_keeps_the_bytes():
    stream = io.BytesIO(CONDUIT_TEST_RECORD + b"\n\n" + b'{"operation":"nope"}\n')
    reader = read_json_lines(stream, source="changes.jsonl")
    assert next(reader).key == b"bar"
    with pytest.raises(CodecError) as caught:
        next(reader)
    assert caught.value.where == "changes.jsonl:3"
    assert str(caught.value) == "changes.jsonl:3: unknown operation 'nope'"
    assert caught.value.data == b'{"operation":"nope"}'
