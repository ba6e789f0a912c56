from __future__ import annotations

import io
import json
import re
from base64 import b64encode
from datetime import datetime
from decimal import Decimal

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.opencdc import (
    CodecError,
    Operation,
    Record,
    read_json_lines,
    record_from_json,
    record_to_json,
)
from cdc_connectors.opencdc.json_codec import (
    CLOSER_LOOK,
    base64_json,
    load_exact,
    long_fractions_alike,
)
from tests.hypothesis_profiles import examples

from .canonical import CANONICAL, CONDUIT_TEST_RECORD


@pytest.mark.parametrize("doc", CANONICAL)
def test_conduit_canonical_records_round_trip_exactly(doc):
    record = record_from_json(doc)
    assert record.payload.after == orjson.loads(doc)["payload"]["after"]
    assert record_from_json(record_to_json(record)) == record


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
        (b"[1,2]", "must be a JSON object, not an array"),
        (b"null", "must be a JSON object, not null"),
        (b'{"operation":"create","position":7}', "position must be a base64 string, not a number"),
        (b'{"operation":"insert"}', "unknown operation 'insert'"),
        (b'{"operation":"create","metadata":{"n":1}}', "metadata 'n' must be a string, not int"),
        (b'{"operation":"create","metadata":[]}', "metadata must be an object, not an array"),
        (
            b'{"operation":"create","key":12}',
            "key must be a base64 string, an object or null, not a number",
        ),
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


@pytest.mark.parametrize(
    "number", [b"18446744073709551616", b"-9223372036854775809", b"1" + b"0" * 300]
)
def test_integers_beyond_64_bits_are_refused_on_read_not_read_as_doubles(number):
    # orjson alone reads these as doubles: 18446744073709551616 -> 1.8446744073709552e19
    doc = b'{"operation":"create","payload":{"after":{"id":' + number + b"}}}"
    with pytest.raises(CodecError, match="does not fit in 64 bits"):
        record_from_json(doc)


@pytest.mark.parametrize(
    "doc",
    [
        b'{"operation":"create","payload":{"after":{"id":18446744073709551615,"m":-9223372036854775808}}}',
        b'{"operation":"create","payload":{"after":{"s":"123456789012345678901234567890"}}}',
        b'{"operation":"create","payload":{"after":{"q":"\\"12345678901234567890123"}}}',
    ],
)
def test_64_bit_extremes_and_long_digit_runs_that_are_not_big_integers_are_read(doc):
    record = record_from_json(doc)
    assert record.payload.after == orjson.loads(doc)["payload"]["after"]
    assert record_from_json(record_to_json(record)) == record


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (2**64, r"payload\.after\.n: integer 18446744073709551616 does not fit in 64 bits"),
        (float("nan"), r"payload\.after\.n: nan has no JSON form"),
        (float("inf"), r"payload\.after\.n: inf has no JSON form"),
        (Decimal("NaN"), r"payload\.after\.n: NaN has no JSON form"),
    ],
)
def test_numbers_json_cannot_hold_are_refused_not_written_as_null(value, message):
    with pytest.raises(CodecError, match=message):
        record_to_json(Record.new("create", after={"n": value}))


def test_nesting_deeper_than_json_holds_is_refused_on_write_without_recursion_error():
    value: object = 1
    for _ in range(5000):  # far beyond Python's recursion limit
        value = [value]
    with pytest.raises(
        CodecError,
        match=r"payload\.after\.a(\[0\]){5} \(and \d+ levels more\): structured data nested",
    ):
        record_to_json(Record.new("create", after={"a": value}))
    shallow = record_from_json(b'{"payload":{"after":{"a":' + b"[" * 253 + b"]" * 253 + b"}}}")
    assert record_from_json(record_to_json(shallow)) == shallow


def test_metadata_and_structured_keys_are_written_sorted():
    record = Record.new("create", metadata={"z": "1", "a": "2"}, after={"b": {"y": 1, "x": 2}})
    out = record_to_json(record)
    assert b'"metadata":{"a":"2","opencdc.version":"v1","z":"1"}' in out
    assert b'"after":{"b":{"x":2,"y":1}}' in out


def test_non_string_metadata_in_a_document_is_a_codec_error_naming_the_key():
    with pytest.raises(CodecError, match="metadata 'n' must be a string, not int"):
        record_from_json(b'{"operation":"create","metadata":{"n":1}}')


@pytest.mark.parametrize("value", [datetime(2020, 1, 1), {1, 2}, object()])
def test_types_structured_data_cannot_hold_are_refused_as_protobuf_refuses_them(value):
    with pytest.raises(CodecError, match=r"payload\.after\.t: type \w+ cannot be structured data"):
        record_to_json(Record.new("create", after={"t": value}))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (Decimal("1E+400"), "decimal 1E\\+400 is beyond the range of a JSON number"),
        (Decimal("1E-400"), "decimal 1E-400 is beyond the range of a JSON number"),
    ],
)
def test_decimals_a_json_reader_would_not_read_back_are_refused(value, message):
    with pytest.raises(CodecError, match=r"payload\.after\.v\[0\]: " + message):
        record_to_json(Record.new("create", after={"v": [value]}))


@pytest.mark.parametrize(
    "value",
    [
        Decimal("19.99"),
        Decimal("5"),
        Decimal("1.5E+30"),
        Decimal("123456789012345678901234"),
        Decimal(10**38 - 1),
        Decimal(-(10**38 - 1)),
    ],
)
def test_decimals_are_written_exactly_and_read_back_as_the_same_number(value):
    back = record_from_json(record_to_json(Record.new("create", after={"v": value})))
    assert Decimal(str(back.payload.after["v"])) == value


def test_an_integral_decimal_beyond_64_bits_is_written_with_an_exponent():
    # A plain integer token would be read as a 64-bit integer by JSON readers.
    text = record_to_json(Record.new("create", after={"v": Decimal(10**38 - 1)}))
    assert b'"v":9.9999999999999999999999999999999999999E+37' in text


def test_metadata_replaced_behind_the_records_back_is_an_error_naming_the_key():
    from cdc_connectors.opencdc import record_to_proto_bytes

    record = Record.new("create")
    record.metadata = {"n": 1}  # type: ignore[assignment]
    for write in (record_to_json, record_to_proto_bytes):
        with pytest.raises(CodecError, match="metadata 'n' must be a string, not int"):
            write(record)
    record = Record.new("create")
    record.position = "p"  # type: ignore[assignment]
    for write in (record_to_json, record_to_proto_bytes):
        with pytest.raises(CodecError, match="position must be bytes, not str"):
            write(record)


@pytest.mark.parametrize(
    "number",
    [
        "0.30000000000000000001",
        "12345678901234567890.5",
        "1.2345678901234567891e-5",
        "1.23456789012345678901234",
        "-12345678901234567890e-3",
        "-4.6986522550395717",  # 19 characters, as many as a nanosecond timestamp
        "1.2345678901234567891e5",
    ],
)
def test_numbers_a_double_would_change_are_read_exactly_and_written_back_the_same(number):
    line = f'{{"operation":"create","payload":{{"after":{{"x":{number},"ok":0.1}}}}}}'
    record = record_from_json(line)
    assert record.payload.after == {"x": Decimal(number), "ok": 0.1}
    assert type(record.payload.after["ok"]) is float  # numbers a double holds stay floats
    again = record_from_json(record_to_json(record))
    assert again.payload.after["x"] == Decimal(number)


@pytest.mark.parametrize("number", ["1e400", "-1E+309", "1e-400", "-2.5e-999"])
def test_numbers_beyond_a_doubles_range_are_refused_on_read(number):
    line = f'{{"operation":"create","payload":{{"after":{{"x":{number}}}}}}}'
    with pytest.raises(CodecError, match=f"number {re.escape(number)} is beyond the range"):
        record_from_json(line)


@pytest.mark.parametrize(
    "after",
    [
        '{"x": 1e-400}',
        '{"x":[1, 1e-400]}',
        '{"x":[\n\t1e-400]}',
        '{"id":"0d650372-e907-44df","x":{"y":-1e-400}}',
    ],
)
def test_a_big_exponent_is_found_wherever_a_value_may_be(after):
    line = f'{{"operation":"create","payload":{{"after":{after}}}}}'
    with pytest.raises(CodecError, match="beyond the range"):
        record_from_json(line)


def test_text_that_looks_like_an_exponent_is_text():
    after = {"id": "0d650372-e907-44df", "s": "x,1e999", "n": 1.5}
    line = f'{{"operation":"create","payload":{{"after":{json.dumps(after)}}}}}'
    assert record_from_json(line).payload.after == after


def test_long_digit_strings_are_not_numbers():
    line = '{"metadata":{"opencdc.readAt":"1763769841000000000"},"payload":{"after":{"s":"1e999"}}}'
    record = record_from_json(line)
    assert record.metadata.read_at == 1763769841000000000
    assert record.payload.after == {"s": "1e999"}


@given(st.binary(max_size=300))
def test_raw_data_is_written_as_the_json_string_of_its_base64(data: bytes) -> None:
    """A fragment (orjson cannot write a text of 2 GiB or more), with the bytes of a string."""
    assert orjson.dumps([base64_json(data)]) == orjson.dumps([b64encode(data).decode()])

    assert orjson.dumps([base64_json(data)]) == orjson.dumps([b64encode(data).decode()])
    record = Record.new("create", key=data, after=data)
    assert record_from_json(record_to_json(record)) == record


# --- CLOSER_LOOK: where readers of many documents leave one to load_exact -------------------

_NUMBER_TEXTS = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(0, 30)
    .flatmap(lambda places: st.decimals(allow_nan=False, allow_infinity=False, places=places))
    .map(str),
    st.sampled_from(["1e400", "1E-300", "2.5e+308", "-0.0", "1.0000000000000000001", "12.50"]),
    st.from_regex(r"-?[1-9][0-9]{0,25}(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,4})?", fullmatch=True),
)
_STRING_TEXTS = st.sampled_from(
    ['"1763769600100000000"', '"a-1234567890123456789"', '"\\ud800"', '"\\uDC00x"', '"4e900"']
) | st.text(alphabet="0123456789.-+e", max_size=30).map(json.dumps)


@settings(max_examples=examples(500), deadline=None)
@given(values=st.lists(_NUMBER_TEXTS | _STRING_TEXTS, min_size=1, max_size=4))
def test_closer_look_finds_every_document_load_exact_reads_otherwise(values: list[str]) -> None:
    text = ("[" + ",".join(values) + "]").encode()
    try:
        plain = orjson.loads(text)
    except orjson.JSONDecodeError:
        plain = None
    try:
        exact = load_exact(text)
    except (CodecError, orjson.JSONDecodeError):
        exact = CodecError
    if exact is CodecError or plain is None or repr(exact) != repr(plain):
        assert re.search(CLOSER_LOOK, text.decode("utf-8", "surrogatepass")), text


@pytest.mark.parametrize(
    ("text", "alike"),
    [
        (b'{"a":0.13042279608514273,"b":-0.13042279608514273}', True),  # shortest texts
        (b'{"a":1.3042279608514273e-5}', True),  # the same double, another spelling
        (b'{"a":0.1000000000000000}', True),  # trailing zeros: the same number
        (b'{"a":1700000000000000000}', True),  # an integer, read exactly
        (b'{"a":0.10000000000000001}', False),  # 0.1's double, not the number
        (b'{"a":1.30422796085142731e-5}', False),
        (b'{"a":12345678901234567e-1}', False),
        (b'{"a":-9514242627359937e-2}', False),  # 16 digits and a sign: kept exact there
        (b'{"a":-1.2345678901234568e-5}', True),  # a double's, spelt as Java does
        (b'{"a":"1.1.1.1.1.1.1.1.1.1"}', False),  # looked at in a string too: no number
    ],
)
def test_long_fractions_alike_says_whether_load_exact_reads_them_as_orjson(
    text: bytes, alike: bool
) -> None:
    assert long_fractions_alike(text) is alike
    if alike:
        assert load_exact(text) == orjson.loads(text)
    elif b'"1.1' not in text:
        assert load_exact(text) != orjson.loads(text)
