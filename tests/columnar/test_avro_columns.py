"""A fused pipeline stage and ``convert`` write Debezium Avro and Avro rows as OpenCDC
protobuf or JSON from columns: the same stage rows (messages, their order, dead letters)
as the per-message way, on generated batches."""

from __future__ import annotations

import base64
import io
import itertools
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.connectors.kafka_read import RAW_ARROW_SCHEMA
from cdc_connectors.convert.deadletter import DeadLetterWriter
from cdc_connectors.convert.engine import convert_stream
from cdc_connectors.formats.avro import AvroFormat
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
from cdc_connectors.formats.protobuf import ProtobufFormat
from cdc_connectors.opencdc import Record
from cdc_connectors.pipeline.plan import SKIPPED, SourceFormat, converter
from cdc_connectors.registry import open_registry
from cdc_connectors.schema import framing
from tests.columnar.debezium_avro_batches import batches, row_batches
from tests.columnar.protobuf_batches import batches as protobuf_batches
from tests.columnar.test_pipeline_columns import per_message
from tests.hypothesis_profiles import examples

REGISTRY = "memory://avro-columns"
_TOPICS = itertools.count()
PerMessageDebeziumAvro = per_message(DebeziumAvroFormat)
DESTINATIONS = {"proto": OpenCDCProtoFormat, "json": OpenCDCJsonFormat}
_HEADERS = RAW_ARROW_SCHEMA.field("headers").type


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)


def _raw(messages: list[tuple[bytes | None, bytes | None, bool]], ids: int) -> pa.RecordBatch:
    count = len(messages)
    headers = [
        [{"key": framing.VALUE_SCHEMA_ID_HEADER, "value": framing.frame(ids, b"")}]
        if in_header
        else None
        for _, _, in_header in messages
    ]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([k for k, _, _ in messages], pa.binary()),
            pa.array([v for _, v, _ in messages], pa.binary()),
            pa.array(["orders"] * count, pa.string()),
            pa.array([n % 3 for n in range(count)], pa.int32()),
            pa.array(range(100, 100 + count), pa.int64()),
            pa.nulls(count, RAW_ARROW_SCHEMA.field("timestamp").type),
            pa.array([0] * count, pa.int32()),
            pa.array(headers, _HEADERS),
        ],
        schema=RAW_ARROW_SCHEMA,
    )


def _stage(fmt: DebeziumAvroFormat, raw: pa.RecordBatch, to: str) -> list[dict[str, object]]:
    source = SourceFormat(fmt, "cdc-kafka", fail_fast=False)
    rows = []
    for batch in converter(source, DESTINATIONS[to]({}), "p:out")(iter([raw])):
        rows.extend(batch.to_pylist())
    return rows


def _without_flag(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{k: v for k, v in row.items() if k != "_per_message"} for row in rows]


def _agree(
    columns: type[Format], per_message: type[Format], raw: pa.RecordBatch, options: Any = None
) -> None:
    """The stage rows of ``columns`` (served by the columns) and of ``per_message`` are the
    same, to each OpenCDC destination: one generated batch checks both."""
    for to in ("proto", "json"):
        ours = _stage(columns(dict(options or {}), registry=REGISTRY), raw, to)
        theirs = _stage(per_message(dict(options or {}), registry=REGISTRY), raw, to)
        assert _without_flag(ours) == _without_flag(theirs), f"to {to}"


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_columns_give_the_stage_rows_of_the_per_message_way(data: st.DataObject) -> None:
    messages = data.draw(batches(open_registry(REGISTRY)))
    _agree(DebeziumAvroFormat, PerMessageDebeziumAvro, _raw(messages, 1))


def _orders(registry_url: str, count: int) -> list[tuple[bytes | None, bytes | None, bool]]:
    """Change events of the orders table as Debezium's AvroConverter writes them."""
    from confluent_kafka.schema_registry.avro import AvroSerializer

    from tests.formats.test_debezium_avro import AFTER, ENVELOPE, KEY, KEY_SCHEMA, VALUE, event

    registry = open_registry(registry_url)
    values = AvroSerializer(registry, orjson.dumps(ENVELOPE).decode())
    keys = AvroSerializer(registry, orjson.dumps(KEY_SCHEMA).decode())
    messages: list[tuple[bytes | None, bytes | None, bool]] = []
    for n in range(count):
        change = event() if n % 3 else event(op="u", before=AFTER, after={**AFTER, "notes": None})
        messages.append((keys({"id": n}, KEY), values(change, VALUE), False))
    return messages


@pytest.mark.parametrize("to", ["proto", "json"])
def test_change_events_come_from_columns(to: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    raw = _raw([*_orders(url, 30), (b"raw key", None, False)], 1)
    ours = _stage(DebeziumAvroFormat(registry=url), raw, to)
    rows = [row for row in ours if row["_kind"] != SKIPPED]
    assert [row["_per_message"] for row in rows] == [False] * 30
    assert [row["_count"] for row in ours if row["_kind"] == SKIPPED] == [1]  # the tombstone
    assert _without_flag(ours) == _without_flag(
        _stage(PerMessageDebeziumAvro(registry=url), raw, to)
    )
    first = rows[0]["_message_value"]
    assert isinstance(first, bytes)
    if to == "json":
        record = orjson.loads(first)
        assert record["key"] == {"id": 0}
        assert record["metadata"]["opencdc.payload.schema.subject"] == "shop.public.orders.payload"
        assert record["metadata"]["opencdc.key.schema.subject"] == "shop.public.orders.key"
        assert record["payload"]["before"]["price"] == 12.34


def test_a_schema_id_in_a_header_goes_the_per_message_way(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    messages = _orders(url, 4)
    key, value, _ = messages[1]
    assert value is not None
    schema_id = int.from_bytes(value[1:5], "big")
    # The body alone starts with 0x00 (a null "before"): only the header tells its schema.
    messages[1] = (key, value[5:], True)
    raw = _raw(messages, schema_id)
    ours = _stage(DebeziumAvroFormat(registry=url), raw, "proto")
    assert [row["_per_message"] for row in ours] == [False, True, False, False]
    assert _without_flag(ours) == _without_flag(
        _stage(PerMessageDebeziumAvro(registry=url), raw, "proto")
    )


@pytest.mark.parametrize("to", [OpenCDCProtoFormat, OpenCDCJsonFormat])
def test_convert_writes_debezium_avro_from_columns(to: type[Format], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    messages = _orders(url, 12)
    lines = (
        b"".join(
            orjson.dumps(
                {
                    "key": base64.b64encode(k or b"").decode(),
                    "value": base64.b64encode(v or b"").decode(),
                }
            )
            + b"\n"
            for k, v, _ in messages
        )
        + orjson.dumps({"key": None, "value": base64.b64encode(b"\x00junk").decode()})
        + b"\n"
    )

    def convert(fmt: DebeziumAvroFormat) -> tuple[bytes, bytes, str]:
        out, letters = io.BytesIO(), io.BytesIO()
        stats = convert_stream(
            io.BytesIO(lines),
            out,
            fmt,
            to({}),
            kv_in=True,
            kv_out=True,
            dead_letters=DeadLetterWriter(letters, "convert"),
            source_name="in.jsonl",
        )
        return out.getvalue(), letters.getvalue(), replace(stats, per_message=None).summary()

    fmt = DebeziumAvroFormat(registry=url)
    decoded: list[object] = []
    original = fmt.decode

    def counted(message: Message) -> list[Record]:
        decoded.append(message)
        return original(message)

    fmt.decode = counted  # type: ignore[method-assign]
    ours = convert(fmt)
    assert ours == convert(PerMessageDebeziumAvro(registry=url))
    assert len(decoded) == 1  # the junk alone, to its dead letter
    assert ours[1].count(b"\n") == 1


def _envelope(row_fields: list[dict[str, object]], **more: object) -> dict[str, object]:
    """An envelope schema of ``row_fields``, with ``source`` and ``ts_ms`` as given."""
    from tests.columnar.debezium_avro_batches import SOURCE

    row = {"type": "record", "name": "Value", "namespace": "shop.public.t", "fields": row_fields}
    return {
        "type": "record",
        "name": "Envelope",
        "namespace": "shop.public.t",
        "fields": [
            {"name": "before", "type": ["null", row], "default": None},
            {"name": "after", "type": ["null", "Value"], "default": None},
            {"name": "source", "type": more.get("source", SOURCE)},
            {"name": "op", "type": "string"},
            {"name": "ts_ms", "type": more.get("ts_ms", ["null", "long"]), "default": None},
        ],
    }


_SOURCE_VALUE = {
    "version": "2.5.0",
    "connector": "postgresql",
    "name": "shop",
    "ts_ms": 1_700_000_000_000,
    "snapshot": "false",
    "db": "shop",
    "schema": "public",
    "table": "t",
    "txId": None,
    "lsn": None,
    "xmin": None,
    "flag": None,
}
_LOGICAL_SOURCE = {
    "type": "record",
    "name": "Source",
    "fields": [
        {"name": "table", "type": "string"},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
AGREE_ON = {
    "a NaN": (
        _envelope([{"name": "id", "type": "long"}, {"name": "c", "type": "double"}]),
        {"id": 1, "c": float("nan")},
        {},
    ),
    "an infinity in an array": (
        _envelope(
            [
                {"name": "id", "type": "long"},
                {"name": "c", "type": {"type": "array", "items": "float"}},
            ]
        ),
        {"id": 1, "c": [1.0, float("-inf")]},
        {},
    ),
    "a uuid that is none": (
        _envelope(
            [
                {"name": "id", "type": "long"},
                {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
            ]
        ),
        {"id": 1, "u": "not a uuid"},
        {},
    ),
    "a source time of a logical type": (
        _envelope([{"name": "id", "type": "long"}], source=_LOGICAL_SOURCE),
        {"id": 1},
        {"source": {"table": "t", "ts_ms": 1_700_000_000_000}},
    ),
    "a ts_ms that is a double": (
        _envelope([{"name": "id", "type": "long"}], ts_ms=["null", "double"]),
        {"id": 1},
        {"ts_ms": 1.7e12},
    ),
}


@pytest.mark.parametrize("case", AGREE_ON, ids=str)
@pytest.mark.parametrize("to", ["proto", "json"])
def test_the_two_ways_agree_on(case: str, to: str, tmp_path: Path) -> None:
    from confluent_kafka.schema_registry import Schema

    from tests.columnar.debezium_avro_batches import body

    schema, after, changes = AGREE_ON[case]
    url = f"sqlite:///{tmp_path}/r.db"
    schema_id = open_registry(url).register_schema(
        "t-value", Schema(orjson.dumps(schema).decode(), "AVRO")
    )
    event = {"before": None, "after": after, "source": _SOURCE_VALUE, "op": "c", "ts_ms": None}
    event.update(changes)
    value = framing.frame(schema_id, body(schema, event))
    raw = _raw([(None, value, False)], schema_id)
    ours = _stage(DebeziumAvroFormat(registry=url), raw, to)
    assert ours == _stage(PerMessageDebeziumAvro(registry=url), raw, to)


class PerMessageAvro(AvroFormat):
    """``avro`` as it is, under another class, which the columns do not serve."""


ROW_OPTIONS = [{}, {"topic": "orders"}, {"raw.keys": "true"}]


@settings(max_examples=examples(35), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), options=st.sampled_from(ROW_OPTIONS))
def test_avro_rows_from_columns_are_those_of_the_per_message_way(
    data: st.DataObject, options: dict[str, str]
) -> None:
    messages = data.draw(row_batches(open_registry(REGISTRY)))
    _agree(AvroFormat, PerMessageAvro, _raw(messages, 1), options)


@pytest.mark.parametrize("to", ["proto", "json"])
def test_avro_rows_come_from_columns(to: str, tmp_path: Path) -> None:
    from confluent_kafka.schema_registry.avro import AvroSerializer

    from tests.formats.test_debezium_avro import AFTER, KEY, KEY_SCHEMA, ROW, VALUE

    url = f"sqlite:///{tmp_path}/r.db"
    registry = open_registry(url)
    values = AvroSerializer(registry, orjson.dumps(ROW).decode())
    keys = AvroSerializer(registry, orjson.dumps(KEY_SCHEMA).decode())
    messages = [(keys({"id": n}, KEY), values({**AFTER, "id": n}, VALUE), False) for n in range(20)]
    raw = _raw([*messages, (keys({"id": 99}, KEY), None, False)], 1)
    options = {"topic": "shop.public.orders"}
    ours = _stage(AvroFormat(options, registry=url), raw, to)
    assert [row["_per_message"] for row in ours] == [False] * 20 + [True]  # the delete
    assert _without_flag(ours) == _without_flag(
        _stage(PerMessageAvro(options, registry=url), raw, to)
    )
    if to == "json":
        first = ours[0]["_message_value"]
        assert isinstance(first, bytes)
        record = orjson.loads(first)
        assert record["key"] == {"id": 0}
        assert record["metadata"] == {
            "opencdc.collection": "shop.public.orders",
            "opencdc.version": "v1",
        }
        assert record["payload"]["after"]["price"] == 12.34


@pytest.mark.parametrize(("source", "rows"), [("debezium-avro", False), ("avro", True)])
def test_the_bench_events_come_from_columns(source: str, rows: bool, tmp_path: Path) -> None:
    """PostgreSQL's types as AvroConverter writes them (a decimal, micro timestamps, a date,
    an enum, a ``uuid``): none goes the per-message way."""
    from bench.bench_registry_convert import avro_events

    url = f"sqlite:///{tmp_path}/r.db"
    raw = _raw([(k, v, False) for k, v in avro_events(40, url, rows)], 1)
    fmt = (
        DebeziumAvroFormat(registry=url) if source == "debezium-avro" else AvroFormat(registry=url)
    )
    ours = _stage(fmt, raw, "proto")
    assert [row["_per_message"] for row in ours] == [False] * 40


class PerMessageProtobuf(ProtobufFormat):
    """``protobuf`` as it is, under another class, which the columns do not serve."""


@settings(max_examples=examples(35), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), options=st.sampled_from(ROW_OPTIONS))
def test_protobuf_rows_from_columns_are_those_of_the_per_message_way(
    data: st.DataObject, options: dict[str, str]
) -> None:
    messages = data.draw(protobuf_batches(open_registry(REGISTRY)))
    _agree(ProtobufFormat, PerMessageProtobuf, _raw(messages, 1), options)


@pytest.mark.parametrize("to", ["proto", "json"])
def test_protobuf_rows_come_from_columns(to: str, tmp_path: Path) -> None:
    import datetime as dt

    from confluent_kafka.schema_registry import Schema

    from cdc_connectors.schema.protobuf import from_dict, message_class
    from tests.schema.test_protobuf_codec import ORDER

    url = f"sqlite:///{tmp_path}/r.db"
    schema_id = open_registry(url).register_schema("orders-value", Schema(ORDER, "PROTOBUF"))
    order = message_class(ORDER)
    row = {
        "customer": "ann",
        "email": "ann@example.com",
        "amount": 12.5,
        "created_at": dt.datetime(2025, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC),
        "ship_to": {"street": "1 Main St", "city": "Oslo"},
        "tags": ["gift"],
        "status": "SHIPPED",
        "points": 7,
    }
    messages = [
        (
            str(n).encode(),
            b"\x00"
            + schema_id.to_bytes(4, "big")
            + b"\x00"
            + from_dict({**row, "id": n}, order).SerializeToString(),
            False,
        )
        for n in range(20)
    ]
    raw = _raw(messages, 1)
    ours = _stage(ProtobufFormat({"topic": "orders"}, registry=url), raw, to)
    assert [r["_per_message"] for r in ours] == [False] * 20
    per_message = _stage(PerMessageProtobuf({"topic": "orders"}, registry=url), raw, to)
    assert _without_flag(ours) == _without_flag(per_message)
    if to == "json":
        first = ours[1]["_message_value"]
        assert isinstance(first, bytes)
        record = orjson.loads(first)
        assert record["key"] == base64.b64encode(b"1").decode()
        after = record["payload"]["after"]
        assert after["created_at"] == "2025-01-02T03:04:05.006000+00:00"
        assert after["status"] == "SHIPPED" and after["note"] is None and after["paid"] is False


def _avro_row(field_type: object, value: object) -> tuple[str, str, bytes]:
    from tests.columnar.debezium_avro_batches import body

    schema = {"type": "record", "name": "R", "fields": [{"name": "x", "type": field_type}]}
    return "AVRO", orjson.dumps(schema).decode(), body(schema, {"x": value})


_TIMESTAMP_PROTO = """syntax = "proto3";
import "google/protobuf/timestamp.proto";
message M { google.protobuf.Timestamp t = 1; repeated google.protobuf.Timestamp ts = 2; }
"""
ROWS_AGREE_ON = {
    "an Avro timestamp in year 10000": _avro_row(
        {"type": "long", "logicalType": "timestamp-millis"}, 253_402_300_800_005
    ),
    "an Avro date beyond year 9999": _avro_row({"type": "int", "logicalType": "date"}, 3_000_000),
    "an Avro time of 24 hours": _avro_row(
        {"type": "long", "logicalType": "time-micros"}, 86_400_000_000
    ),
    "an Avro time before midnight": _avro_row({"type": "int", "logicalType": "time-millis"}, -1),
    "Protobuf nanos beyond a second": (
        "PROTOBUF",
        _TIMESTAMP_PROTO,
        b"\x0a\x06\x10\x80\x94\xeb\xdc\x03",  # t {nanos: 1e9}
    ),
    "Protobuf negative nanos in a list": (
        "PROTOBUF",
        _TIMESTAMP_PROTO,
        b"\x12\x0b\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # ts [{nanos: -1}]
    ),
    "a Protobuf edition": ("PROTOBUF", 'edition = "2023"; message M { int32 x = 1; }', b"\x08\x01"),
    "a Protobuf message without fields": ("PROTOBUF", 'syntax = "proto3"; message M {}', b""),
    "a Protobuf enum alias": (
        "PROTOBUF",
        'syntax = "proto3"; message M { E e = 1; }\n'
        "enum E { option allow_alias = true; Z = 0; A = 1; AA = 1; }",
        b"\x08\x01",
    ),
    "a proto2 extension": (
        "PROTOBUF",
        'syntax = "proto2"; message M { optional int32 a = 1; extensions 100 to 200; }\n'
        "extend M { optional int32 x = 100; }",
        b"\x08\x01\xa0\x06\x05",
    ),
    "a proto2 group": (
        "PROTOBUF",
        'syntax = "proto2"; message M { optional group G = 1 { optional int32 a = 2; } }',
        b"\x0b\x10\x04\x0c",
    ),
}


@pytest.mark.parametrize("case", ROWS_AGREE_ON, ids=str)
@pytest.mark.parametrize("to", ["proto", "json"])
def test_the_row_formats_agree_on(case: str, to: str, tmp_path: Path) -> None:
    from confluent_kafka.schema_registry import Schema

    kind, text, body = ROWS_AGREE_ON[case]
    url = f"sqlite:///{tmp_path}/r.db"
    schema_id = open_registry(url).register_schema("t-value", Schema(text, kind))
    header = b"\x00" + schema_id.to_bytes(4, "big") + (b"\x00" if kind == "PROTOBUF" else b"")
    raw = _raw([(None, header + body, False)], schema_id)
    ours_format, per_message = (
        (AvroFormat, PerMessageAvro) if kind == "AVRO" else (ProtobufFormat, PerMessageProtobuf)
    )
    ours = _stage(ours_format(registry=url), raw, to)
    assert _without_flag(ours) == _without_flag(_stage(per_message(registry=url), raw, to))


_V1 = {
    "type": "record",
    "name": "Row",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "n", "type": "int"},
        {"name": "f", "type": "float"},
        {"name": "name", "type": "string"},
    ],
}
_V2 = {
    "type": "record",
    "name": "Row",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "n", "type": "long"},
        {"name": "f", "type": "double"},
        {"name": "name", "type": "string"},
        {"name": "extra", "type": ["null", "string"], "default": None},
    ],
}
_EVOLVED_ROWS = st.fixed_dictionaries(
    {
        "id": st.integers(-(2**63), 2**63 - 1),
        "n": st.integers(-(2**31), 2**31 - 1),
        "f": st.floats(width=32, allow_nan=False, allow_infinity=False),
        "name": st.text(max_size=5),
    }
)


@pytest.mark.parametrize("reader", ["latest", "1", "2"])
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(st.booleans(), _EVOLVED_ROWS, st.none() | st.text(max_size=3)),
        min_size=1,
        max_size=12,
    )
)
def test_rows_of_every_version_read_as_the_reader_schema(
    reader: str, rows: list[tuple[bool, dict[str, object], str | None]]
) -> None:
    """``reader``: every writer version decoded into the reader's columns (Avro schema
    resolution: int to long, float to double, a field added with a default; a newer version
    read as an older one drops the field, and a long that does not narrow is a dead
    letter), as the per-message way reads them."""
    from confluent_kafka.schema_registry import Schema

    from tests.columnar.debezium_avro_batches import body

    registry = open_registry(REGISTRY)
    topic = f"evolved{next(_TOPICS)}"
    ids = [
        registry.register_schema(f"{topic}-value", Schema(orjson.dumps(v).decode(), "AVRO"))
        for v in (_V1, _V2)
    ]
    messages: list[tuple[bytes | None, bytes | None, bool]] = []
    for newer, row, extra in rows:
        schema = _V2 if newer else _V1
        value = {**row, "extra": extra} if newer else row
        messages.append((None, framing.frame(ids[newer], body(schema, value)), False))
    raw = _raw(messages, 1)
    options = {"reader": reader, "topic": topic}
    ours = _stage(AvroFormat(options, registry=REGISTRY), raw, "json")
    assert _without_flag(ours) == _without_flag(
        _stage(PerMessageAvro(options, registry=REGISTRY), raw, "json")
    )
    if reader != "1":
        assert not any(r["_per_message"] for r in ours)  # every version from columns


@pytest.mark.parametrize(
    ("written", "read", "value"),
    [
        ("long", {"type": "long", "logicalType": "timestamp-millis"}, 5),
        ({"type": "long", "logicalType": "timestamp-millis"}, "long", 5),
        ("int", {"type": "int", "logicalType": "date"}, 5),
    ],
    ids=["long read as a timestamp", "a timestamp read as long", "int read as a date"],
)
def test_a_reader_of_another_logical_type_reads_as_the_per_message_way(
    written: object, read: object, value: int, tmp_path: Path
) -> None:
    """fastavro keeps the writer's logical type where the reader's differs: the columns
    leave such a writer version to the per-message way."""
    from confluent_kafka.schema_registry import Schema

    from tests.columnar.debezium_avro_batches import body

    def row(kind: object) -> dict[str, object]:
        return {"type": "record", "name": "R", "fields": [{"name": "x", "type": kind}]}

    url = f"sqlite:///{tmp_path}/r.db"
    registry = open_registry(url)
    ids = [
        registry.register_schema("t-value", Schema(orjson.dumps(row(kind)).decode(), "AVRO"))
        for kind in (written, read)
    ]
    raw = _raw([(None, framing.frame(ids[0], body(row(written), {"x": value})), False)], 1)
    options = {"reader": "latest", "topic": "t"}
    ours = _stage(AvroFormat(options, registry=url), raw, "json")
    assert _without_flag(ours) == _without_flag(
        _stage(PerMessageAvro(options, registry=url), raw, "json")
    )


@pytest.mark.parametrize("to", ["proto", "json"])
def test_unsigned_64_bit_integers_beyond_2_53_are_refused_as_any_integer(to: str) -> None:
    from confluent_kafka.schema_registry import Schema

    from cdc_connectors.schema.protobuf import from_dict, message_class
    from tests.columnar.protobuf_batches import ROW

    registry = open_registry(REGISTRY)
    schema_id = registry.register_schema("proto-unsigned-value", Schema(ROW, "PROTOBUF"))
    row = message_class(ROW, (), (0,))
    numbers = [2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2, 2**63, 2**64 - 1]
    messages = [
        (
            None,
            b"\x00"
            + schema_id.to_bytes(4, "big")
            + b"\x00"
            + from_dict({"id": n, field: number}, row).SerializeToString(),
            False,
        )
        for n, (field, number) in enumerate(
            (field, number) for field in ("u64", "points") for number in numbers
        )
    ]
    raw = _raw(messages, 1)
    ours = _stage(ProtobufFormat({}, registry=REGISTRY), raw, to)
    assert _without_flag(ours) == _without_flag(
        _stage(PerMessageProtobuf({}, registry=REGISTRY), raw, to)
    )
    errors = sorted(
        dict(row["metadata"])["conduit.dlq.nack.error"].split(":")[0]  # type: ignore[call-overload]
        for row in ours
        if row["operation"] == "dead-letter"
    )
    beyond = sum(number > 2**53 for number in numbers)
    if to == "proto":
        assert errors == ["payload.after.points"] * beyond + ["payload.after.u64"] * beyond
    else:
        assert errors == []
    assert sum(bool(r["_per_message"]) for r in ours) == len(errors)
