"""`TypedDebeziumDecoder`: Debezium JSON with schema blocks -> typed Arrow columns.

The fast (columnar) path must give exactly what the per-message path gives: each message
decoded by `DebeziumJsonFormat.decode`, its images written as Avro of the row schema and
read back into the typed columns, as `expand` does through the registry.
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import UNAVAILABLE_VALUE, DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.serde import RecordEncoder
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder
from cdc_connectors.spark.expand import AvroColumnDecoder
from tests.hypothesis_profiles import examples


def unscaled(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 8) // 8, "big", signed=True)
    return base64.b64encode(raw).decode("ascii")


COLUMNS: list[dict[str, Any]] = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "int16", "optional": True, "field": "small"},
    {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "field": "price",
    },
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "field": "at"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "field": "at_ms"},
    {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "field": "day"},
    {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Enum",
        "parameters": {"allowed": "new,paid"},
        "field": "status",
    },
    {"type": "string", "optional": True, "name": "io.debezium.data.Uuid", "field": "uid"},
    {"type": "string", "optional": True, "field": "note"},
    {"type": "bytes", "optional": True, "field": "blob"},
    {"type": "boolean", "optional": True, "field": "ok"},
    {"type": "float32", "optional": True, "field": "ratio"},
    {"type": "float64", "optional": True, "field": "score"},
    {
        "type": "struct",
        "optional": True,
        "name": "shop.Address",
        "field": "address",
        "fields": [
            {"type": "string", "optional": False, "field": "city"},
            {"type": "int32", "optional": True, "field": "zip"},
        ],
    },
]
SOURCE = [
    ("version", "string"),
    ("connector", "string"),
    ("ts_ms", "int64"),
    ("snapshot", "string"),
    ("db", "string"),
    ("schema", "string"),
    ("table", "string"),
    ("lsn", "int64"),
    ("xmin", "int64"),
]


def envelope(columns: list[dict[str, Any]]) -> dict[str, Any]:
    row = {
        "type": "struct",
        "optional": True,
        "name": "shop.public.orders.Value",
        "fields": columns,
    }
    return {
        "type": "struct",
        "optional": False,
        "name": "shop.public.orders.Envelope",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {
                "type": "struct",
                "optional": False,
                "name": "io.debezium.connector.postgresql.Source",
                "field": "source",
                "fields": [
                    {"type": kind, "optional": name in ("xmin", "lsn", "schema"), "field": name}
                    for name, kind in SOURCE
                ],
            },
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
            {
                "type": "struct",
                "optional": True,
                "name": "event.block",
                "field": "transaction",
                "fields": [
                    {"type": "string", "optional": False, "field": "id"},
                    {"type": "int64", "optional": False, "field": "total_order"},
                ],
            },
        ],
    }


ENVELOPE = envelope(COLUMNS)
OLDER = envelope([c for c in COLUMNS if c["field"] not in ("score", "address")])


def row(**changes: Any) -> dict[str, Any]:
    base = {
        "id": 7,
        "small": -3,
        "price": unscaled(1234),
        "at": 1_700_000_000_123_456,
        "at_ms": 1_700_000_000_123,
        "day": 19_700,
        "status": "paid",
        "uid": "0b7a1c52-7f8e-4a43-9d61-3f3c2d5e6a70",
        "note": "hello",
        "blob": base64.b64encode(b"\x00\x01").decode(),
        "ok": True,
        "ratio": 0.5,
        "score": 1.25,
        "address": {"city": "Oslo", "zip": 150},
    }
    base.update(changes)
    return base


def event(
    op: str = "u",
    before: Any = None,
    after: Any = "row",
    schema: dict[str, Any] | None = ENVELOPE,
    **payload: Any,
) -> bytes:
    body = {
        "before": before,
        "after": row() if after == "row" else after,
        "source": {
            "version": "2.5.0.Final",
            "connector": "postgresql",
            "ts_ms": 1_700_000_000_000,
            "snapshot": "false",
            "db": "shop",
            "schema": "public",
            "table": "orders",
            "lsn": 123,
            "xmin": None,
        },
        "op": op,
        "ts_ms": 1_700_000_000_500,
        "transaction": None,
        **payload,
    }
    if schema is None:
        return orjson.dumps(body)
    return orjson.dumps({"schema": schema, "payload": body})


def decoder(fmt: DebeziumJsonFormat | None = None) -> TypedDebeziumDecoder:
    return TypedDebeziumDecoder(fmt or DebeziumJsonFormat(), ENVELOPE)


def both_ways(
    messages: list[Message], fmt: DebeziumJsonFormat | None = None
) -> tuple[tuple[list[Any], list[Any]], tuple[list[Any], list[Any]]]:
    """(rows, errors) of the fast path and of the per-message path, comparable: each row
    is its metadata as a dict and its other columns as one-row Arrow batches (Arrow holds
    dates Python cannot)."""
    fast = decoder(fmt)
    slow = decoder(fmt)
    slow._plan = None  # every message the per-message way
    out = []
    for one in (fast, slow):
        batch, errors = one.decode(messages)
        assert batch.schema.equals(one.schema)
        metadata = [dict(m) for m in batch.column("metadata").to_pylist()]
        rest = batch.drop_columns(["metadata"])
        rows = [(metadata[n], rest.slice(n, 1)) for n in range(batch.num_rows)]
        out.append((rows, [(i, str(e)) for i, e in errors]))
    return out[0], out[1]


def test_a_clean_batch_takes_the_fast_path_into_spark_types() -> None:
    messages = [Message(event(), where=f"orders.json:{n}") for n in range(1, 4)]
    one = decoder()
    assert one._plan is not None
    batch, errors = one.decode(messages)
    assert errors == []
    (first, *_rest) = batch.to_pylist()
    after = first["after"]
    assert after["price"] == Decimal("12.34")
    assert after["at"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.UTC)
    assert after["at_ms"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
    assert after["day"] == dt.date(1970, 1, 1) + dt.timedelta(days=19_700)
    assert after["small"] == -3 and after["blob"] == b"\x00\x01"
    assert after["address"] == {"city": "Oslo", "zip": 150}
    assert first["position"] == b"orders.json:1"
    assert first["operation"] == "update"
    metadata = dict(first["metadata"])
    assert metadata["opencdc.collection"] == "shop.public.orders"
    assert metadata["opencdc.createdAt"] == "1700000000000000000"
    assert metadata["opencdc.readAt"] == "1700000000500000000"
    assert metadata["debezium.source.lsn"] == "123"
    assert "debezium.source.xmin" not in metadata  # null fields are left out
    schema = batch.schema.field("after").type
    assert schema.field("price").type == pa.decimal128(10, 2)
    assert schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert schema.field("day").type == pa.date32()
    assert schema.field("small").type == pa.int32()  # Avro has no int16: Spark's int


def test_the_fast_path_gives_what_the_per_message_path_gives() -> None:
    messages = [
        Message(event()),
        Message(event(op="c")),
        Message(event(op="d", before=row(), after=None)),
        Message(event(op="r", after=row(note=UNAVAILABLE_VALUE))),
        Message(event(transaction={"id": "tx-1", "total_order": 3})),
        Message(event(after=row(price=None, address=None, uid=None))),
    ]
    fast, slow = both_ways(messages)
    assert fast == slow
    assert fast[0][3][0]["debezium.unavailable.columns"] == "note"
    assert fast[0][4][0]["debezium.transaction.total_order"] == "3"


def test_the_per_message_path_is_what_expand_reads_through_the_registry(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/registry.db"
    fmt = DebeziumJsonFormat({}, registry=url)
    message = Message(event())
    (record,) = fmt.decode(message)
    encoded = RecordEncoder(SchemaStore(open_registry(url))).encode(record)
    store = SchemaStore(open_registry(url))
    subject = record.metadata.payload_schema_subject
    assert subject is not None
    column = AvroColumnDecoder(store, store.latest(subject))
    expected, problems, _ = column.decode(
        [encoded.payload.after],  # type: ignore[list-item]
        [(subject, record.metadata.payload_schema_version or 0)],
    )
    assert problems == [None]
    batch, _ = decoder(DebeziumJsonFormat({}, registry=url)).decode([message])
    assert batch.column("after").to_pylist() == expected.to_pylist()


BAD_ROWS = [
    row(small=40_000),  # beyond int16
    row(status="lost"),  # not an allowed enum value
    row(price="!!"),  # no base64
    row(price=unscaled(10**12)),  # beyond decimal(10, 2)
    row(uid="not-a-uuid"),
    row(id=None),  # a required column
    row(address={"zip": 1}),  # a required nested column
    {**row(), "surprise": 1},  # a column the schema does not declare
    row(ratio=1e39),  # beyond float32
]


@pytest.mark.parametrize("bad", BAD_ROWS, ids=range(len(BAD_ROWS)))
def test_a_row_the_fast_path_cannot_take_is_decided_the_per_message_way(bad: Any) -> None:
    messages = [Message(event()), Message(event(after=bad)), Message(event(op="c"))]
    fast, slow = both_ways(messages)
    assert fast == slow
    rows, errors = fast
    assert len(rows) + len(errors) == 3
    assert [i for i, _ in errors] in ([], [1])


def test_one_bad_message_costs_only_its_own_record() -> None:
    messages = [
        Message(event()),
        Message(b"{not json", where="in.json:2"),
        Message(event(op="x")),
        Message(None),  # a tombstone: skipped
        Message(event(op="t")),  # a truncate: an error by default
        Message(event(op="c")),
    ]
    batch, errors = decoder().decode(messages)
    assert batch.num_rows == 2
    assert [i for i, _ in errors] == [1, 2, 4]
    assert all(isinstance(e, CodecError) for _, e in errors)
    assert "op 'x'" in str(errors[1][1]) or "unknown op" in str(errors[1][1])


def test_an_older_schema_version_lands_in_the_same_typed_columns() -> None:
    older = row()
    del older["score"], older["address"]
    messages = [Message(event()), Message(event(after=older, schema=OLDER))]
    batch, errors = decoder().decode(messages)
    assert errors == []
    first, second = batch.column("after").to_pylist()
    assert second["score"] is None and second["address"] is None
    assert second["price"] == first["price"]


def test_a_message_without_a_schema_block_is_typed_only_if_its_values_fit() -> None:
    # Without a schema, values are as sent: a decimal is its base64 text, not a number.
    fitting = row(price=None, at=None, at_ms=None, day=None, blob=None)
    messages = [
        Message(event(schema=None)),
        Message(event(schema=None, after=fitting)),
        Message(event()),
    ]
    fast, slow = both_ways(messages)
    assert fast == slow
    rows, errors = fast
    assert len(rows) == 2
    assert [i for i, _ in errors] == [0]
    assert "price" in errors[0][1]


def test_the_registry_names_the_schema_once_per_collection(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/registry.db"
    one = TypedDebeziumDecoder(DebeziumJsonFormat({}, registry=url), ENVELOPE)
    batch, errors = one.decode([Message(event()) for _ in range(50)])
    assert errors == []
    subjects = {
        dict(m)["opencdc.payload.schema.subject"] for m in batch.column("metadata").to_pylist()
    }
    assert subjects == {"shop.public.orders.payload"}
    assert open_registry(url).get_versions("shop.public.orders.payload") == [1]


def test_kafka_keys_become_the_record_key() -> None:
    key = orjson.dumps({"id": 7})
    messages = [Message(event(), key=key), Message(event(), key=None)]
    fast, slow = both_ways(messages)
    assert fast == slow
    batch, _ = decoder().decode(messages)
    assert batch.column("key").is_valid().to_pylist() == [True, False]


def test_the_decoder_pickles_for_executors() -> None:
    import pickle

    one = pickle.loads(pickle.dumps(decoder()))
    assert one._plan is not None
    batch, errors = one.decode([Message(event())])
    assert batch.num_rows == 1 and errors == []


# --- generated batches --------------------------------------------------------------------

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "id": st.integers(-(2**63), 2**63 - 1) | st.none(),
    "small": st.none() | st.integers(-(2**15) - 2, 2**15 + 2),
    "price": st.none() | st.integers(-(10**10) - 5, 10**10 + 5).map(unscaled) | st.just("@@"),
    "at": st.none() | st.integers(-(2**62), 2**62),
    "at_ms": st.none() | st.integers(-(10**15), 10**15),
    "day": st.none() | st.integers(-(2**31), 2**31 - 1),
    "status": st.none() | st.sampled_from(["new", "paid", "gone", ""]),
    "uid": st.none()
    | st.uuids().map(str)
    | st.uuids().map(lambda u: str(u).upper())
    | st.text(max_size=4),
    "note": st.none() | st.text(max_size=8) | st.just(UNAVAILABLE_VALUE),
    "blob": st.none() | st.binary(max_size=6).map(lambda b: base64.b64encode(b).decode()),
    "ok": st.none() | st.booleans(),
    "ratio": st.none() | st.floats(allow_nan=False, allow_infinity=False, width=32),
    "score": st.none() | st.floats(allow_nan=False, allow_infinity=False),
    "address": st.none()
    | st.fixed_dictionaries(
        {"city": st.none() | st.text(max_size=5), "zip": st.none() | st.integers(0, 99_999)}
    ),
}


@st.composite
def messages(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from(["typed", "typed", "typed", "older", "plain", "junk", "none"]))
    if kind == "junk":
        return Message(draw(st.sampled_from([b"{", b"[]", b"null", b'{"schema":{}}'])))
    if kind == "none":
        return Message(None)

    def image() -> Any:
        if draw(st.booleans()):
            return None
        values = {name: draw(strategy) for name, strategy in VALUES.items()}
        if kind == "older":
            del values["score"], values["address"]
        return values

    op = draw(st.sampled_from(["c", "u", "d", "r", "r", "t", "q"]))
    schema = {"typed": ENVELOPE, "older": OLDER, "plain": None}[kind]
    key = draw(st.none() | st.integers(0, 10).map(lambda n: orjson.dumps({"id": n})))
    return Message(event(op=op, before=image(), after=image(), schema=schema), key=key)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(messages(), max_size=10))
def test_generated_batches_give_the_same_rows_and_errors_both_ways(batch: list[Message]) -> None:
    fast, slow = both_ways(batch)
    assert fast == slow


@pytest.mark.spark
def test_the_typed_frame_is_a_spark_dataframe_of_spark_types(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import DateType, DecimalType, TimestampType

    path = tmp_path / "orders.json"
    path.write_bytes(b"\n".join(event(op=op) for op in "cur") + b"\n")
    one = decoder()

    def decode(batches: Any) -> Any:
        for batch in batches:
            found, errors = one.decode_arrays(batch.column(0))
            assert not errors
            yield found

    df = spark.read.text(str(path)).mapInArrow(decode, one.spark_schema)
    after = df.schema["after"].dataType
    assert after["price"].dataType == DecimalType(10, 2)
    assert after["at"].dataType == TimestampType()
    assert after["day"].dataType == DateType()
    rows = df.selectExpr("operation", "after.price AS price").collect()
    assert [r.operation for r in rows] == ["create", "update", "snapshot"]
    assert {r.price for r in rows} == {Decimal("12.34")}


@pytest.mark.parametrize(
    "change",
    [
        (b'"note":"hello"', b'"note":"\xff"'),  # invalid UTF-8
        (b'"note":"hello"', b'"note":"\\ud800"'),  # a lone surrogate
        (b'"score":1.25', b'"score":NaN'),
        (b'"score":1.25', b'"score":-Infinity'),
        (b'"score":1.25', b'"score":1e-400'),
        (b'"score":1.25', b'"score":9007199254740993'),
        (b'"score":1.25', b'"score":0.10000000000000000000001'),
        (b'"price":"BNI="', b'"price":""'),
    ],
    ids=["utf8", "surrogate", "nan", "infinity", "underflow", "big-int", "digits", "empty"],
)
def test_text_arrows_reader_accepts_but_json_does_not_is_an_error(change: Any) -> None:
    good = event()
    assert change[0] in good
    bad = good.replace(change[0], change[1])
    messages = [Message(good), Message(bad), Message(good)]
    fast, slow = both_ways(messages)
    assert fast == slow
    rows, errors = fast
    assert len(rows) == 2
    assert [i for i, _ in errors] == [1]


def test_a_decimal_without_a_spark_type_is_a_string_of_its_exact_text() -> None:
    columns = [
        {
            "type": "bytes",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2", "connect.decimal.precision": "60"},
            "field": "huge",
        }
    ]
    decoder = TypedDebeziumDecoder(DebeziumJsonFormat(), envelope(columns))
    assert decoder.row_type.field("huge").type == pa.string()


def test_debezium_names_that_are_no_avro_names_read_typed():
    row = {
        "type": "struct",
        "optional": True,
        "name": "server-1.db.orders.Value",
        "fields": [{"field": "id", "type": "int32", "optional": False}],
    }
    envelope = {
        "type": "struct",
        "name": "server-1.db.orders.Envelope",
        "optional": False,
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {"field": "op", "type": "string", "optional": False},
            {"field": "ts_ms", "type": "int64", "optional": True},
        ],
    }
    body = orjson.dumps(
        {"schema": envelope, "payload": {"before": None, "after": {"id": 7}, "op": "c", "ts_ms": 1}}
    )
    fmt = DebeziumJsonFormat()
    decoder = TypedDebeziumDecoder.from_message(fmt, Message(body))
    batch, errors = decoder.decode([Message(body)])
    assert errors == []
    assert batch.column("after").to_pylist() == [{"id": 7}]


def test_kafka_keys_that_are_no_json_object_stay_the_bytes_they_were() -> None:
    key_schema = {
        "type": "struct",
        "optional": False,
        "name": "shop.public.orders.Key",
        "fields": [{"type": "int64", "optional": False, "field": "id"}],
    }
    keys = [
        b" 7",
        b"1.50",
        b"[1, 2]",
        b'"text"',
        b"raw",
        b"",
        b'{"id": 7}',
        b' {"id": 1.5}',
        orjson.dumps({"schema": key_schema, "payload": {"id": 7}}),
    ]
    messages = [Message(event(), key=key) for key in keys]
    fast, slow = both_ways(messages)
    assert fast == slow
    batch, _ = decoder().decode(messages)
    raw = [k["raw_data"] for k in batch.column("key").to_pylist()]
    assert raw[:6] == keys[:6]


def test_the_integer_minus_zero_in_a_double_column_is_read_the_per_message_way() -> None:
    plain = event()
    assert b'"score":1.25' in plain
    values = pa.array(
        [plain, plain.replace(b'"score":1.25', b'"score":-0'), plain.replace(b"1.25", b"-0.0")],
        pa.binary(),
    )
    batch, rows = decoder().decode_fast(values)
    assert rows.tolist() == [0, 2]
    batch, errors = decoder().decode([Message(v) for v in values.to_pylist()])
    scores = batch.column("after").field("score").to_pylist()
    assert errors == [] and [str(s) for s in scores] == ["1.25", "0.0", "-0.0"]


def test_a_message_arrow_refuses_leaves_only_itself_to_the_per_message_way() -> None:
    good = event()
    bad = event(after=row(id="zz"))  # text in a long column: Arrow refuses the whole read
    values = pa.array([good] * 40 + [bad] + [good] * 23 + [bad] + [good] * 9, pa.binary())
    one = decoder()
    batch, rows = one.decode_fast(values)
    assert rows.tolist() == [n for n in range(len(values)) if n not in (40, 64)]
    assert batch.num_rows == len(rows)
    clean, _ = decoder().decode_fast(pa.array([good] * 3, pa.binary()))
    assert (
        batch.slice(0, 1)
        .drop_columns(["metadata"])
        .equals(clean.slice(0, 1).drop_columns(["metadata"]))
    )


def test_a_batch_arrow_refuses_throughout_is_split_a_bounded_number_of_times() -> None:
    one = decoder()
    tried = []
    fast = one._fast

    def counted(values: pa.Array, keys: Any, places: pa.Array, read: Any = None) -> Any:
        tried.append(len(values))
        return fast(values, keys, places, read)

    one._fast = counted  # type: ignore[method-assign]
    batch, rows = one.decode_fast(pa.array([event(after=row(id="zz"))] * 4096, pa.binary()))
    assert batch.num_rows == 0 and len(rows) == 0
    assert len(tried) <= 32 and sum(tried) <= 5 * 4096  # a few reads of the batch, not 4096


def test_decode_reads_around_a_message_arrow_refuses_as_the_per_message_way_does() -> None:
    good, bad = event(), event(after=row(id="zz"))
    messages = [
        Message(value, where=f"orders.json:{n}")
        for n, value in enumerate([good] * 9 + [bad] + [good] * 6, start=1)
    ]
    fast, slow = both_ways(messages)
    assert fast == slow
    assert [where for where, _ in fast[1]] == [9] and len(fast[0]) == 15
    one = decoder()
    read: list[int] = []
    per_message = one._slow

    def counted(messages: list[Message], rows: list[int]) -> Any:
        read.extend(rows)
        return per_message(messages, rows)

    one._slow = counted  # type: ignore[method-assign]
    one.decode(messages)
    assert read == [9]
