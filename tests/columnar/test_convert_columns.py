"""``convert --from debezium-json --to opencdc-proto`` (and ``--to opencdc-json``, and
``--from ydb-json``, ``opencdc-json`` or ``opencdc-proto``) writes from columns: the same
output bytes, counts and dead letters as the per-message way, on generated streams."""

from __future__ import annotations

import base64
import io
import math
import time
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar import schemaless
from cdc_connectors.columnar.choose import serves
from cdc_connectors.convert import engine
from cdc_connectors.convert.deadletter import DeadLetterWriter
from cdc_connectors.convert.engine import ConvertStats, FailFast, convert_stream
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.debezium.lindorm import LindormJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
from cdc_connectors.formats.ydb import YdbJsonFormat
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.opencdc.structured import decimal_problem, json_number
from tests.columnar.debezium_batches import KEY_SCHEMA, batches, schemaless_batches
from tests.columnar.opencdc_json_batches import opencdc_json_batches
from tests.columnar.opencdc_proto_batches import opencdc_proto_batches
from tests.columnar.ydb_json_batches import YDB_SETTINGS, ydb_json_batches
from tests.hypothesis_profiles import examples

ROOT = Path(__file__).resolve().parents[2]


class PerMessageDebezium(DebeziumJsonFormat):
    """Debezium JSON as is, with a hook of its own, which the columns do not serve: the
    per-message way."""

    def extra_metadata(self, payload: Mapping[str, Any], metadata: Metadata) -> None:
        super().extra_metadata(payload, metadata)


@pytest.fixture(autouse=True)
def _fixed_clock_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)
    monkeypatch.setattr(engine, "CHUNK", 7)  # several chunks per stream


#: The destinations each generated stream is converted to, both ways.
TO = (OpenCDCProtoFormat, OpenCDCJsonFormat, DebeziumJsonFormat)


def _stream(messages: list[tuple[bytes | None, bytes | None]], kv: bool) -> bytes:
    if not kv:
        return b"".join(v + b"\n" for _, v in messages if v)
    lines = []
    for key, value in messages:
        line = {
            "key": orjson.Fragment(key) if key and _is_json(key) else None,
            "value": orjson.Fragment(value) if value and _is_json(value) else None,
        }
        lines.append(orjson.dumps(line))
    return b"\n".join(lines) + b"\n"


def _is_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def _counts(stats: ConvertStats) -> str:
    """The counts line without the count of the per-message way, which only the columns'
    run has."""
    return replace(stats, per_message=None).summary()


def _convert(
    fmt: Format,
    data: bytes,
    kv_in: bool,
    kv_out: bool,
    fail_fast: bool,
    to: type[Format] = OpenCDCProtoFormat,
) -> tuple[bytes, bytes, str]:
    out, letters = io.BytesIO(), io.BytesIO()
    try:
        stats = convert_stream(
            io.BytesIO(data),
            out,
            fmt,
            to({}),
            kv_in=kv_in,
            kv_out=kv_out,
            dead_letters=DeadLetterWriter(letters, "convert"),
            fail_fast=fail_fast,
            source_name="in.jsonl",
        )
    except FailFast as stop:
        stats = stop.stats
    return out.getvalue(), letters.getvalue(), f"{_counts(stats)} {stats.first_errors}"


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=batches(lines=True) | schemaless_batches(lines=True),
    kv_in=st.booleans(),
    kv_out=st.booleans(),
    fail_fast=st.sampled_from([False, False, True]),
)
def test_columns_give_the_output_and_dead_letters_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
    kv_in: bool,
    kv_out: bool,
    fail_fast: bool,
) -> None:
    data = _stream(messages, kv_in)
    for to in TO:
        ours = _convert(DebeziumJsonFormat({}), data, kv_in, kv_out, fail_fast, to)
        assert ours == _convert(PerMessageDebezium({}), data, kv_in, kv_out, fail_fast, to), to


@pytest.mark.parametrize(
    "number",
    [b"9514242627359937e-2", b"-9514242627359937e-2", b"9514242627359937E-2", b"0.1"],
)
def test_sixteen_digits_with_an_exponent_a_double_changes_go_the_per_message_way(
    number: bytes,
) -> None:
    """``9514242627359937e-2`` is 95142426273599.37, which a double reads as ...38: a number
    of sixteen digits with an exponent and no point is looked at as one with a point is."""
    source = (
        b'{"version":"2.5.0","connector":"postgresql","ts_ms":0,"db":"shop","schema":"public",'
        b'"table":"u","txId":null,"sequence":null,"xmin":null}'
    )
    event = (
        b'{"before":null,"after":{"code":0,"label":null,"tags":['
        + number
        + b',-1000000000000000e-3]},"source":'
        + source
        + b',"op":"c","ts_ms":0,"transaction":{"id":"7:1","total_order":1,'
        b'"data_collection_order":1}}'
    )
    data = _stream([(None, event)], False)
    for to in TO:
        ours = _convert(DebeziumJsonFormat({}), data, False, False, False, to)
        assert ours == _convert(PerMessageDebezium({}), data, False, False, False, to), to


def _from_columns(data: bytes, kv: bool, to: type[Format]) -> Any:
    """``_convert`` of Debezium JSON ``data`` to ``to`` (keys and values out), each message
    written from columns: decoding one the per-message way fails the test."""
    fmt = DebeziumJsonFormat({})
    decoded: list[object] = []
    fmt.decode = decoded.append  # type: ignore[assignment,method-assign]
    found = _convert(fmt, data, kv, True, False, to)
    assert not decoded
    return found


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=schemaless_batches(lines=True), sample=st.integers(1, 6))
def test_events_typed_from_a_sample_are_written_as_the_per_message_way_writes_them(
    messages: list[tuple[bytes | None, bytes | None]], sample: int
) -> None:
    """The types of events without a schema block inferred from their first few (as from
    the first 256 of a batch) and given to the read of all."""
    data = _stream(messages, False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schemaless, "_SAMPLE", sample)
        for to in TO:
            ours = _convert(DebeziumJsonFormat({}), data, False, False, False, to)
            assert ours == _convert(PerMessageDebezium({}), data, False, False, False, to), to


@pytest.mark.parametrize("to", [OpenCDCProtoFormat, OpenCDCJsonFormat, DebeziumJsonFormat])
@pytest.mark.parametrize("kv", [False, True])
def test_a_stream_of_good_messages_is_written_from_columns(to: type[Format], kv: bool) -> None:
    from bench.bench_debezium import lines

    key_schema = {**KEY_SCHEMA, "name": "shop.public.orders.Key"}
    messages = [
        (orjson.dumps({"schema": key_schema, "payload": {"id": n}}), line)
        for n, line in enumerate(lines(20))
    ]
    data = _stream(messages, kv)
    expected = _convert(PerMessageDebezium({}), data, kv, True, False, to)
    assert _from_columns(data, kv, to) == expected
    first = orjson.loads(expected[0].splitlines()[0])
    assert (first["key"] is not None) is kv
    if to is OpenCDCProtoFormat:
        assert base64.b64decode(first["value"]).startswith(b"\n\nin.jsonl:1\x10\x02")
    elif to is OpenCDCJsonFormat:
        assert first["value"]["position"] == base64.b64encode(b"in.jsonl:1").decode()
    else:
        assert first["value"]["op"] == "u" and first["value"]["source"]["table"] == "orders"


@pytest.mark.parametrize("to", [OpenCDCProtoFormat, OpenCDCJsonFormat])
@pytest.mark.parametrize("block", [True, False])
def test_events_as_debezium_writes_them_are_written_from_columns(
    to: type[Format], block: bool
) -> None:
    """Every member Debezium 2.7 writes (``"transaction": null``, the source's
    ``sequence`` and null ``xmin``, ``ts_us``/``ts_ns``), doubles of 17 digits, with or
    without the schema block: all from the columns, as the per-message way writes them."""
    from bench.postgres_events import events

    values = []
    for n, (_, value) in enumerate(events(40)):
        document = orjson.loads(value)
        if document["payload"]["after"]:
            document["payload"]["after"]["discount"] = n / 7  # 0.14285714285714285
        values.append(orjson.dumps(document if block else document["payload"]))
    data = b"".join(value + b"\n" for value in values)
    expected = _convert(PerMessageDebezium({}), data, False, True, False, to)
    assert _from_columns(data, False, to) == expected


def test_metadata_integers_of_19_digits_are_written_back_from_columns() -> None:
    """Debezium 2.6 and later write ``ts_ns`` (19 digits) in every event: written back as
    numbers from columns; a text of 19 digits past 64 bits as the text it is."""
    from bench.postgres_events import events

    edges = ["9223372036854775807", "9223372036854775808", "-9223372036854775808"]
    edges += ["-9223372036854775809", "1000000000000000000", "-1000000000000000000"]
    values = []
    for n, (_, value) in enumerate(events(36)):
        document = orjson.loads(value)
        source = next(f for f in document["schema"]["fields"] if f["field"] == "source")
        source["fields"].append({"type": "string", "optional": True, "field": "extra"})
        document["payload"]["source"]["extra"] = edges[n % len(edges)]
        values.append(orjson.dumps(document))
    data = b"".join(value + b"\n" for value in values)
    expected = _convert(PerMessageDebezium({}), data, False, True, False, DebeziumJsonFormat)
    assert b'"extra":"9223372036854775808"' in expected[0]
    assert b'"extra":9223372036854775807' in expected[0] and b'"ts_ns":1763769600' in expected[0]
    assert _from_columns(data, False, DebeziumJsonFormat) == expected


class PerMessageYdbJson(YdbJsonFormat):
    """``ydb-json`` as is, under another class, which the columns do not serve."""


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=ydb_json_batches(),
    ydb_settings=YDB_SETTINGS,
    kv_out=st.booleans(),
    fail_fast=st.sampled_from([False, False, True]),
)
def test_ydb_records_convert_as_the_per_message_way_converts_them(
    messages: list[tuple[bytes | None, bytes | None]],
    ydb_settings: dict[str, str],
    kv_out: bool,
    fail_fast: bool,
) -> None:
    data = b"".join(v.replace(b"\n", b" ") + b"\n" for _, v in messages if v)
    for to in TO:
        ours = _convert(YdbJsonFormat(ydb_settings), data, False, kv_out, fail_fast, to)
        theirs = _convert(PerMessageYdbJson(ydb_settings), data, False, kv_out, fail_fast, to)
        assert ours == theirs, to


class PerMessageOpenCDCJson(OpenCDCJsonFormat):
    """``opencdc-json`` as is, under another class, which the columns do not serve."""


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=opencdc_json_batches(),
    kv_out=st.booleans(),
    fail_fast=st.sampled_from([False, False, True]),
)
def test_opencdc_json_records_convert_as_the_per_message_way_converts_them(
    messages: list[tuple[bytes | None, bytes | None]],
    kv_out: bool,
    fail_fast: bool,
) -> None:
    data = b"".join(v.replace(b"\n", b" ") + b"\n" for _, v in messages if v)
    for to in TO:
        ours = _convert(OpenCDCJsonFormat({}), data, False, kv_out, fail_fast, to)
        theirs = _convert(PerMessageOpenCDCJson({}), data, False, kv_out, fail_fast, to)
        assert ours == theirs, to


class PerMessageOpenCDCProto(OpenCDCProtoFormat):
    """``opencdc-proto`` as is, under another class, which the columns do not serve."""


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=opencdc_proto_batches(),
    kv=st.booleans(),
    fail_fast=st.sampled_from([False, False, True]),
)
def test_opencdc_proto_records_convert_as_the_per_message_way_converts_them(
    messages: list[tuple[bytes | None, bytes | None]],
    kv: bool,
    fail_fast: bool,
) -> None:
    from cdc_connectors.convert.streams import MessageWriter

    data = io.BytesIO()
    writer = MessageWriter(data, OpenCDCProtoFormat, kv=kv)
    for _, value in messages:
        if value is not None:
            writer.write(Message(value))
    stream = data.getvalue()
    for to in TO:
        ours = _convert(OpenCDCProtoFormat({}), stream, kv, kv, fail_fast, to)
        theirs = _convert(PerMessageOpenCDCProto({}), stream, kv, kv, fail_fast, to)
        assert ours == theirs, to


def _envelope(source_fields: Any = (), extra: Any = None, transaction: Any = None) -> bytes:
    fields: list[Any] = [
        {
            "type": "struct",
            "optional": True,
            "field": "after",
            "fields": [{"type": "int64", "optional": False, "field": "id"}],
        },
        {"type": "struct", "optional": False, "field": "source", "fields": source_fields},
        {"type": "string", "optional": False, "field": "op"},
    ]
    if transaction is not None:
        fields.append(
            {"type": "struct", "optional": True, "field": "transaction", "fields": transaction}
        )
    if extra is not None:
        fields.append(extra)
    schema = {"type": "struct", "fields": fields}
    return orjson.dumps(
        {"schema": schema, "payload": {"after": {"id": 1}, "source": {}, "op": "c"}}
    )


#: Schema blocks whose ``source``, ``transaction`` or envelope fields are no list of named
#: blocks of a type name: the per-message way reads the events (it does not look there).
MISSHAPEN_SCHEMAS = [
    _envelope(5),
    _envelope("ab"),
    _envelope({"a": 1}),
    _envelope([7]),
    _envelope([{"type": "string", "field": 5}]),
    _envelope([{"type": "string", "field": None}]),
    _envelope([{"type": "string", "field": ["x"]}]),
    _envelope([{"type": ["string"], "field": "x"}]),
    _envelope([{"type": "string", "optional": True}]),
    _envelope(transaction=[None]),
    _envelope(transaction=[{"type": "string"}]),
    _envelope(extra={"type": "string", "field": ["x"]}),
    _envelope(extra={"type": "string", "field": {"a": 1}}),
    _envelope(extra={"type": "string", "field": 5}),
]
_SCHEMA = (
    b'{"schema":{"type":"struct","fields":[{"type":"struct","optional":true,"field":"after",'
    b'"fields":[{"type":"int64","optional":false,"field":"id"}]},'
    b'{"type":"string","optional":false,"field":"op"}]},'
)
#: Member names that are no UTF-8, which Arrow's JSON reader reads as they are: in a
#: schemaless event's image, beside a payload, inside a typed image.
UNREADABLE_NAMES = [
    b'{"after":{"\xff":1},"op":"c"}',
    _SCHEMA + b'"payload":{"after":{"id":1},"op":"c"},"\xff":1}',
    _SCHEMA + b'"payload":{"after":{"id":1,"\xfe":2},"op":"c"}}',
    b'{"payload":{"after":{"a":1},"op":"c","source":{"\xfd":"x"}}}',
]


@pytest.mark.parametrize("to", [OpenCDCProtoFormat, OpenCDCJsonFormat, DebeziumJsonFormat])
@pytest.mark.parametrize("odd", MISSHAPEN_SCHEMAS + UNREADABLE_NAMES)
def test_odd_schema_blocks_and_member_names_go_the_per_message_way(
    to: type[Format], odd: bytes
) -> None:
    good = _envelope([{"type": "string", "optional": True, "field": "db"}])
    bare = b'{"after":{"a":2},"op":"c"}'
    data = b"\n".join([good, bare, odd, good, bare]) + b"\n"
    ours = _convert(DebeziumJsonFormat({}), data, False, False, False, to)
    assert ours == _convert(PerMessageDebezium({}), data, False, False, False, to)
    assert "wrote 4 records" in ours[2] or "wrote 5 records" in ours[2]


def _rows_schema(before: list[Any], after: list[Any], extra: str = "") -> bytes:
    return (
        orjson.dumps(
            {
                "type": "struct",
                "fields": [
                    {"type": "struct", "optional": True, "field": "before", "fields": before},
                    {"type": "struct", "optional": True, "field": "after", "fields": after},
                    {"type": "string", "optional": False, "field": "op"},
                ],
            }
        )[:-1]
        + extra.encode()
        + b"}"
    )


_ID = {"type": "int32", "optional": False, "field": "id"}
_TS = {"type": "int64", "optional": True, "field": "ts"}
_STAMP = {**_TS, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}
_TEXT_ID = {"type": "string", "optional": False, "field": "id"}
#: Events the per-message way reads otherwise than a first columnar reading did: a before
#: image of another row schema than the after image (a timestamp, a text id), numbers in the
#: schema block beyond 64 bits or of more digits than a double holds.
SCHEMA_CORNERS = [
    b'{"schema":' + _rows_schema([_ID, _STAMP], [_ID, _TS]) + b',"payload":'
    b'{"before":{"id":1,"ts":1700000000000},"after":{"id":1,"ts":1700000000000},"op":"u"}}',
    b'{"schema":' + _rows_schema([_TEXT_ID], [_ID]) + b',"payload":'
    b'{"before":{"id":1},"after":null,"op":"d"}}',
    b'{"schema":' + _rows_schema([_ID], [_ID], ',"x":18446744073709551616') + b',"payload":'
    b'{"before":null,"after":{"id":1},"op":"c"}}',
    b'{"schema":' + _rows_schema([_ID], [_ID], ',"x":0.30000000000000000001') + b',"payload":'
    b'{"before":null,"after":{"id":1},"op":"c"}}',
]


class PerMessageLindorm(LindormJsonFormat):
    """``lindorm-json`` as is, under another class, which the columns do not serve."""


@pytest.mark.parametrize("to", [OpenCDCProtoFormat, OpenCDCJsonFormat])
@pytest.mark.parametrize("corner", SCHEMA_CORNERS)
def test_schema_corners_read_as_the_per_message_way_reads_them(
    to: type[Format], corner: bytes
) -> None:
    data = corner + b"\n" + corner + b"\n"
    ours = _convert(DebeziumJsonFormat({}), data, False, False, False, to)
    assert ours == _convert(PerMessageDebezium({}), data, False, False, False, to)
    ours = _convert(LindormJsonFormat({}), data, False, False, False, to)
    assert ours == _convert(PerMessageLindorm({}), data, False, False, False, to)


@pytest.mark.parametrize("op", [b"[]", b"{}", b'["c"]', b"1"])
def test_an_op_that_is_no_text_is_a_dead_letter_in_every_dialect(op: bytes) -> None:
    data = b'{"payload":{"op":' + op + b',"after":{"id":1}}}\n'
    for fmt in (DebeziumJsonFormat({}), LindormJsonFormat({}), PerMessageLindorm({})):
        out, letters, summary = _convert(fmt, data, False, False, False)
        assert out == b"" and letters.count(b"\n") == 1 and "errors 1" in summary


def test_the_counts_say_how_many_messages_went_the_per_message_way():
    """What the columns leave (a tombstone, junk) is counted in the summary, as pipelines
    count it; a pair of formats the columns do not serve says nothing of it."""
    changes = (ROOT / "examples" / "debezium" / "orders.kv.jsonl").read_bytes()
    data = changes + b"{not json\n" + b'{"key": null, "value": [1, 2]}\n'
    out, letters = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(data),
        out,
        DebeziumJsonFormat({}),
        OpenCDCProtoFormat({}),
        kv_in=True,
        dead_letters=DeadLetterWriter(letters, "convert"),
        source_name="in.jsonl",
    )
    assert (stats.messages, stats.errors, stats.skipped["tombstone"]) == (8, 2, 1)
    assert stats.per_message == 3  # the tombstone and the two bad lines
    assert stats.summary().endswith(", errors 2, 3 the per-message way"), stats.summary()

    # OpenCDC JSON to Debezium JSON: no columns, no count
    records = (ROOT / "examples" / "opencdc" / "orders.jsonl").read_bytes()
    assert not serves(OpenCDCJsonFormat({}), DebeziumJsonFormat({}))
    plain = convert_stream(
        io.BytesIO(records), io.BytesIO(), OpenCDCJsonFormat({}), DebeziumJsonFormat({})
    )
    assert plain.per_message is None and plain.summary().endswith(", errors 0"), plain.summary()


#: Unscaled values at the edges of what a double keeps and Python writes plainly.
_TEXT_DECIMALS = [
    0,
    1,
    -1,
    12,
    1_000,  # a millionth at scale 9: plain text still
    10**6,
    123_456_789_012_345,  # 15 digits: a double keeps them
    -123_456_789_012_345_000,  # 15 significant digits, trailing zeros
    1_234_567_890_123_456,  # 16 digits: a double changes most
    9_007_199_254_740_993,  # 2**53 + 1
    12_345_678_901_234_567_890_123,
    -(10**40) + 1,
    2**63 - 1,  # the largest integer a reader takes as a 64-bit one
    2**64,  # Python writes it with an exponent (json_number)
    -(2**63) - 1,
    10**400 + 1,  # a fraction beyond a double's range at scale 3: no JSON number
    -(10**400),  # a whole number: written as one
]


@pytest.mark.parametrize(
    "parameters",
    [
        {"scale": "3"},
        {"scale": "0"},
        {"scale": "30", "connect.decimal.precision": "65"},
        {"scale": "9"},
        {"scale": "-2", "connect.decimal.precision": "50"},
        {"scale": "400"},
        {"scale": "3", "connect.decimal.precision": "4300"},
        {"scale": "2", "connect.decimal.precision": "0"},
    ],
)
def test_decimals_spark_has_no_type_for_are_written_from_columns_as_the_per_message_way(
    parameters: dict[str, str],
) -> None:
    """A Connect ``Decimal`` without a precision, or of more digits than Spark's decimal
    holds, is a column of text: written from it (protobuf's double, JSON's number as Python
    writes it), and a row the columns cannot write exactly alone goes the per-message way."""
    column = {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": parameters,
    }
    numbers = [*_TEXT_DECIMALS, None]
    data = _one_column_events(column, [None if n is None else _unscaled(n) for n in numbers])
    for to in TO:
        stats = _same_both_ways(data, to)
        scale = int(parameters["scale"])
        if to is OpenCDCProtoFormat:  # the rows a double would change, and only those
            assert stats.per_message == stats.errors, stats.summary()
        elif to is OpenCDCJsonFormat:  # what it writes with an exponent or refuses
            precision = int(parameters.get("connect.decimal.precision", 64))
            assert stats.per_message == sum(
                _json_refuses_or_exponent(n, scale, precision) for n in _TEXT_DECIMALS
            ), stats.summary()


_ID = {"type": "int64", "optional": False, "field": "id"}


def _json_refuses_or_exponent(unscaled: int, scale: int, precision: int) -> bool:
    """Whether the per-message way refuses the decimal (more digits than its precision, a
    fraction beyond a double's range) or writes it into JSON with an exponent, or the
    columns leave it to that way (a number beyond a double's range)."""
    value = Decimal(f"{unscaled}E{-scale}")
    too_many = len(str(abs(unscaled))) > precision
    beyond = not math.isfinite(float(value))  # (a kv line holds its record as text)
    return too_many or beyond or "E" in json_number(value) or bool(decimal_problem(value))


def _same_both_ways(data: bytes, to: type[Format]) -> ConvertStats:
    """The counts of converting Debezium JSON ``data`` to ``to``, once the output, dead
    letters and counts are found the same from columns as the per-message way (to lines
    of records and to kv lines)."""
    for kv_out in (False, True):
        ours = _convert(DebeziumJsonFormat({}), data, False, kv_out, False, to)
        assert ours == _convert(PerMessageDebezium({}), data, False, kv_out, False, to), to
    return convert_stream(
        io.BytesIO(data),
        io.BytesIO(),
        DebeziumJsonFormat({}),
        to({}),
        dead_letters=DeadLetterWriter(io.BytesIO(), "convert"),
        source_name="in.jsonl",
    )


def _unscaled(number: int) -> str:
    size = (number.bit_length() + 8) // 8
    return base64.b64encode(number.to_bytes(size, "big", signed=True)).decode()


def _map_events(maps: list[Any], values: dict[str, Any]) -> bytes:
    """Creates of rows with a map column of ``values``, holding ``maps``."""
    column = {
        "type": "map",
        "optional": True,
        "keys": {"type": "string", "optional": False},
        "values": values,
    }
    return _one_column_events(column, maps)


def _one_column_events(column: dict[str, Any], values: list[Any]) -> bytes:
    """Lines of Debezium JSON creates of rows ``{"id": n, "c": value}``, ``c`` a column of
    the Connect field block ``column``."""
    image = {
        "type": "struct",
        "optional": True,
        "name": "t.Value",
        "fields": [_ID, {**column, "field": "c"}],
    }
    block = {
        "type": "struct",
        "optional": False,
        "name": "t.Envelope",
        "fields": [
            {**image, "field": "before"},
            {**image, "field": "after"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    events = [
        orjson.dumps(
            {"schema": block, "payload": {"before": None, "after": {"id": n, "c": v}, "op": "c"}}
        )
        for n, v in enumerate(values)
    ]
    return b"\n".join(events) + b"\n"


#: hstore values: keys one of which begins another (protobuf orders them otherwise than
#: JSON), keys to escape, null values, an empty map, no map.
_HSTORES = [
    {"b": "2", "ab": "1", "a": None},
    {"é": "x", 'q"uote': "y\n", "": ""},
    {},
    None,
    {"z": "last", "a": "first"},
]


def test_maps_are_written_from_columns_as_the_per_message_way_writes_them() -> None:
    """A ``map`` of string keys (PostgreSQL's ``hstore``) is read apart from Arrow's reader
    and written from columns: a ``Struct`` in protobuf's key order, a JSON object in key
    order (Debezium JSON: the message's order)."""
    data = _map_events(_HSTORES, {"type": "string", "optional": True})
    for to in TO:
        ours = _from_columns(data, False, to)
        assert ours == _convert(PerMessageDebezium({}), data, False, True, False, to), to


@pytest.mark.parametrize(
    ("maps", "values"),
    [
        (
            [{"k": 1}, {"k": 2**31}, {"k": None}, {"k": "1"}, {"k": True}, [], "x", {"k": 7}],
            {"type": "int32", "optional": False},
        ),
        (
            [{"k": "v"}, {"k": 1}, {"k": True}, {"k": {}}, {"k": []}, [], "x", {"k": None}],
            {"type": "string", "optional": True},
        ),
    ],
)
def test_map_values_the_per_message_way_refuses_go_that_way_alone(
    maps: list[Any], values: dict[str, Any]
) -> None:
    data = _map_events(maps, values)
    for to in TO:
        stats = _same_both_ways(data, to)
        assert (stats.written, stats.errors) == (2, 6), stats.summary()
        if to is not DebeziumJsonFormat:
            assert stats.per_message == 6, stats.summary()
