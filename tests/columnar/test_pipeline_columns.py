"""A fused pipeline stage writes Debezium JSON (and Arcion) as OpenCDC protobuf or JSON from
columns: the same stage rows (messages, their order, dead letters) as the per-message way,
on generated batches."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar.debezium_opencdc import DebeziumToOpenCDC
from cdc_connectors.connectors.kafka_read import RAW_ARROW_SCHEMA
from cdc_connectors.connectors.kafka_write import TopicTemplate
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.debezium.arcion import ArcionJsonFormat
from cdc_connectors.formats.debezium.cdl import CdlJsonFormat
from cdc_connectors.formats.debezium.lindorm import LindormJsonFormat
from cdc_connectors.formats.debezium.ydb import YdbDebeziumJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
from cdc_connectors.formats.ydb import YdbJsonFormat
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.pipeline.connectors import TopicRoute
from cdc_connectors.pipeline.plan import SKIPPED, SourceFormat, converter
from tests.columnar.cdl_batches import cdl_batches
from tests.columnar.debezium_batches import (
    COLUMNS,
    KEY_SCHEMA,
    SOURCE,
    SPELLINGS,
    arcion,
    batches,
    lindorm_batches,
    respelt,
    schemaless_batches,
    unscaled,
    ydb_batches,
)
from tests.columnar.opencdc_json_batches import opencdc_json_batches
from tests.columnar.opencdc_proto_batches import opencdc_proto_batches
from tests.columnar.ydb_json_batches import YDB_SETTINGS, ydb_json_batches
from tests.hypothesis_profiles import examples

F = TypeVar("F", bound=DebeziumJsonFormat)


def per_message(dialect: type[F]) -> type[F]:
    """``dialect`` as is, with a hook of its own, which the columns do not serve: the
    per-message way."""

    class PerMessage(dialect):  # type: ignore[valid-type,misc]
        def extra_metadata(self, payload: Mapping[str, Any], metadata: Metadata) -> None:
            super().extra_metadata(payload, metadata)

    return PerMessage


PerMessageDebezium = per_message(DebeziumJsonFormat)


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    # Dead letters and messages without ts_ms carry the time of reading.
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)


def _raw(messages: list[tuple[bytes | None, bytes | None]]) -> pa.RecordBatch:
    count = len(messages)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([k for k, _ in messages], pa.binary()),
            pa.array([v for _, v in messages], pa.binary()),
            pa.array(["orders"] * count, pa.string()),
            pa.array([n % 3 for n in range(count)], pa.int32()),
            pa.array(range(100, 100 + count), pa.int64()),
            pa.nulls(count, RAW_ARROW_SCHEMA.field("timestamp").type),
            pa.array([0] * count, pa.int32()),
            pa.nulls(count, RAW_ARROW_SCHEMA.field("headers").type),
        ],
        schema=RAW_ARROW_SCHEMA,
    )


def _rows(batches: Iterator[pa.RecordBatch]) -> list[dict[str, object]]:
    rows = []
    for batch in batches:
        for row in batch.to_pylist():
            row.pop("_per_message")
            rows.append(row)
    return rows


PerMessageArcion = per_message(ArcionJsonFormat)


DESTINATIONS = {
    "proto": OpenCDCProtoFormat,
    "json": OpenCDCJsonFormat,
    "debezium": DebeziumJsonFormat,
}


def _stage(
    fmt: DebeziumJsonFormat, raw: pa.RecordBatch, to: str = "proto"
) -> list[dict[str, object]]:
    return _stage_of(fmt, raw, to)


def _stage_of(fmt: Format, raw: pa.RecordBatch, to: str = "proto") -> list[dict[str, object]]:
    source = SourceFormat(fmt, "cdc-kafka", fail_fast=False)
    return _rows(converter(source, DESTINATIONS[to]({}), "p:out")(iter([raw])))


def _agree(
    columns: type[Format],
    per_message: type[Format],
    raw: pa.RecordBatch,
    options: Mapping[str, str] | None = None,
    to: tuple[str, ...] = tuple(DESTINATIONS),
) -> None:
    """The stage rows of ``columns`` (served by the columns) and of ``per_message`` (the
    per-message way) are the same, to each destination: one generated batch checks them all,
    so that Hypothesis draws it once."""
    for destination in to:
        ours = _stage_of(columns(dict(options or {})), raw, destination)
        theirs = _stage_of(per_message(dict(options or {})), raw, destination)
        assert ours == theirs, f"to {destination}, options {options}"


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=batches())
def test_columns_give_the_stage_rows_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    _agree(DebeziumJsonFormat, PerMessageDebezium, _raw(messages))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=schemaless_batches())
def test_events_without_a_schema_block_give_the_stage_rows_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    _agree(DebeziumJsonFormat, PerMessageDebezium, _raw(messages))


PerMessageYdb = per_message(YdbDebeziumJsonFormat)


YDB_OPTIONS = [
    {},
    {"collection": "orders"},
    {"mode": "NEW_IMAGE"},
    {"mode": "NEW_AND_OLD_IMAGES", "collection": "t"},
    {"mode": "UPDATES"},
]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=ydb_batches())
def test_ydb_changes_from_columns_are_those_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    raw = _raw(messages)
    for options in YDB_OPTIONS:
        _agree(YdbDebeziumJsonFormat, PerMessageYdb, raw, options, ("proto",))


def test_ydb_changes_come_from_columns() -> None:
    def change(n: int) -> bytes:
        after = {"id": n, "name": f"n{n}", "intColumn": n * 10}
        source = {"connector": "ydb", "version": "1.0.0", "step": 1_670_792_400_890 + n}
        source.update(txId=562_949_953_607_163, snapshot=False)
        return orjson.dumps({"payload": {"op": "u", "after": after, "source": source}})

    raw = _raw([(orjson.dumps({"payload": {"id": n}}), change(n)) for n in range(20)])
    fmt = YdbDebeziumJsonFormat({"collection": "orders", "mode": "NEW_IMAGE"})
    out = list(
        converter(SourceFormat(fmt, "k", fail_fast=False), OpenCDCJsonFormat({}), "p")(iter([raw]))
    )
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    rows = _rows(iter(out))
    per_message = PerMessageYdb({"collection": "orders", "mode": "NEW_IMAGE"})
    assert rows == _rows(
        converter(SourceFormat(per_message, "k", fail_fast=False), OpenCDCJsonFormat({}), "p")(
            iter([raw])
        )
    )
    first = orjson.loads(rows[0]["_message_value"])
    assert first["metadata"]["opencdc.collection"] == "orders"
    assert first["metadata"]["opencdc.createdAt"] == str(1_670_792_400_890 * 1_000_000)
    assert first["key"] == {"id": 0}


PerMessageLindorm = per_message(LindormJsonFormat)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=lindorm_batches())
def test_lindorm_changes_from_columns_are_those_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    raw = _raw(messages)
    _agree(LindormJsonFormat, PerMessageLindorm, raw, {}, ("proto", "json"))
    _agree(LindormJsonFormat, PerMessageLindorm, raw, {"hbase": "false"}, ("proto",))
    _agree(LindormJsonFormat, PerMessageLindorm, raw, {"hbase": "true"}, ("json",))


def test_lindorm_sql_changes_come_from_columns() -> None:
    lines = Path("examples/lindorm/customers.jsonl").read_bytes().splitlines()
    raw = _raw([(None, line) for line in lines if line.strip()][:2])  # no column deletion
    source = SourceFormat(LindormJsonFormat({}), "k", fail_fast=False)
    out = list(converter(source, OpenCDCJsonFormat({}), "p")(iter([raw])))
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    assert _rows(iter(out)) == _stage(PerMessageLindorm({}), raw, "json")


_SOURCE_T = {"version": "1", "connector": "c", "ts_ms": 1, "db": "shop", "table": "t"}
_DECIMAL = {
    "type": "bytes",
    "optional": True,
    "name": "org.apache.kafka.connect.data.Decimal",
    "parameters": {"scale": "2", "connect.decimal.precision": "30"},
}
# Inputs where the two ways once disagreed: (key, value) messages of one batch each.
EDGES: dict[str, list[tuple[bytes | None, bytes | None]]] = {
    "a table that is no string": [(None, b'{"op":"c","after":{"id":1},"source":{"table":5}}')],
    "a database that is no string": [
        (None, b'{"op":"c","after":{"id":1},"source":{"db":5,"table":"t"}}')
    ],
    "two documents in a key, one split over two": [
        (b'{"payload":{"id":1}}{"payload":{"id":2}}', b'{"op":"c","after":{"id":1}}'),
        (b'{"payload":', b'{"op":"c","after":{"id":2}}'),
        (b'{"id":3}}', b'{"op":"c","after":{"id":3}}'),
    ],
    "digits with an exponent in a column of doubles": [
        (None, b'{"op":"c","after":{"x":12345678901234567e-1},"source":{"table":"t"}}'),
        (None, b'{"op":"c","after":{"x":100000000000000000001e-20},"source":{"table":"t"}}'),
    ],
    "field names one of which begins another": [
        (b'{"a":1,"ab":2}', b'{"op":"c","after":{"a":1,"ab":2,"b":3},"source":{"table":"t"}}'),
    ],
}


def _with_schema(field: dict[str, object], values: list[object]) -> list[tuple[None, bytes]]:
    raw = _events([{**field, "field": "v"}], [{"id": n, "v": v} for n, v in enumerate(values)])
    return [(None, value) for value in raw.column("value").to_pylist()]


# Typed by a schema block (built when the test runs): field, values.
TYPED_EDGES: dict[str, tuple[dict[str, object], list[object]]] = {
    "the decimal -2**63": (_DECIMAL, ["/4AAAAAAAAAA"]),
    "an array of the TOAST placeholder": (
        {"type": "array", "optional": True, "items": {"type": "string"}},
        [["__debezium_unavailable_value"], ["x"]],
    ),
    "bytes that are not ASCII": ({"type": "bytes", "optional": True}, ["é", "AA=="]),
}


def test_the_two_ways_agree_on_metadata_named_twice() -> None:
    # A top-level field "source.table" writes the metadata name source's table writes.
    value = orjson.loads(_with_schema({"type": "string", "optional": True}, ["x"])[0][1])
    value["schema"]["fields"].append({"type": "string", "optional": True, "field": "source.table"})
    value["payload"]["source.table"] = "other"
    raw = _raw([(None, orjson.dumps(value))])
    for to in ("proto", "json", "debezium"):
        assert _stage(DebeziumJsonFormat({}), raw, to) == _stage(PerMessageDebezium({}), raw, to)


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
@pytest.mark.parametrize("edge", sorted([*EDGES, *TYPED_EDGES]))
def test_the_two_ways_agree_on(edge: str, to: str) -> None:
    raw = _raw(EDGES[edge] if edge in EDGES else _with_schema(*TYPED_EDGES[edge]))
    assert _stage(DebeziumJsonFormat({}), raw, to) == _stage(PerMessageDebezium({}), raw, to)


@pytest.mark.parametrize(
    "value",
    [
        b'{"payload":{"op":"u","after":{"id":1},"source":{"step":9223372036854}}}',
        b'{"payload":{"op":"u","after":{"id":1},"source":{"step":5},"step":7}}',
    ],
    ids=["the last step 64 bits of nanoseconds hold", "a step named twice"],
)
def test_the_two_ways_agree_on_ydb_steps(value: bytes) -> None:
    raw = _raw([(None, value)])
    assert _stage(YdbDebeziumJsonFormat({}), raw, "json") == _stage(PerMessageYdb({}), raw, "json")


TEMPLATES = [
    "cdc.{collection}",
    '{{ index .Metadata "debezium.source.db" }}-{{ index .Metadata "debezium.source.schema" }}',
    '{{ index .Metadata "debezium.transaction.id" }}',  # most records have none
]


def _routed_stage(
    fmt: DebeziumJsonFormat, raw: pa.RecordBatch, to: str, template: str
) -> list[dict[str, object]]:
    source = SourceFormat(fmt, "cdc-kafka", fail_fast=False)
    route = TopicRoute(TopicTemplate(template))
    return _rows(converter(source, DESTINATIONS[to]({}), "p:out", route)(iter([raw])))


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=batches() | schemaless_batches())
def test_topics_from_a_template_are_those_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    raw = _raw(messages)
    for template in TEMPLATES:
        ours = _routed_stage(DebeziumJsonFormat({}), raw, "proto", template)
        assert ours == _routed_stage(PerMessageDebezium({}), raw, "proto", template), template


def test_routed_messages_come_from_columns() -> None:
    from bench.bench_debezium import lines

    raw = _raw([(None, line) for line in lines(20)])
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    route = TopicRoute(TopicTemplate(TEMPLATES[0]))
    out = list(converter(source, OpenCDCProtoFormat({}), "p:out", route)(iter([raw])))
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    assert {t for b in out for t in b.column("_topic").to_pylist()} == {"cdc.shop.public.orders"}


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=batches(dialect="arcion"))
def test_arcion_messages_from_columns_are_those_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    _agree(ArcionJsonFormat, PerMessageArcion, _raw(messages))


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
@pytest.mark.parametrize("keyed", [False, True])
def test_most_messages_of_a_plain_batch_come_from_columns(to: str, keyed: bool) -> None:
    from bench.bench_debezium import lines

    key_schema = {**KEY_SCHEMA, "name": "shop.public.orders.Key"}
    raw = _raw(
        [
            (orjson.dumps({"schema": key_schema, "payload": {"id": n}}) if keyed else None, line)
            for n, line in enumerate(lines(50))
        ]
    )
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DESTINATIONS[to]({}), "p:out")(iter([raw])))
    assert sum(b.num_rows for b in out) == 50
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    assert _rows(iter(out)) == _stage(PerMessageDebezium({}), raw, to)


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_messages_spelt_with_spaces_or_over_lines_come_from_columns(to: str, spelling: str) -> None:
    from bench.bench_debezium import lines

    key_schema = {**KEY_SCHEMA, "name": "shop.public.orders.Key"}
    messages = [
        (orjson.dumps({"schema": key_schema, "payload": {"id": n}}), line)
        for n, line in enumerate(lines(30))
    ]
    raw = _raw([(respelt(k, spelling), respelt(v, spelling)) for k, v in messages])
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DESTINATIONS[to]({}), "p:out")(iter([raw])))
    assert sum(b.num_rows for b in out) == 30
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    assert _rows(iter(out)) == _stage(PerMessageDebezium({}), raw, to)
    # The same records as JsonConverter's compact spelling gives.
    compact = _stage(PerMessageDebezium({}), _raw(messages), to)
    assert [r["_message_value"] for r in _rows(iter(out))] == [r["_message_value"] for r in compact]


def _events(fields: list[dict[str, object]], images: list[dict[str, object]]) -> pa.RecordBatch:
    """Raw messages of one schema: a row of ``fields`` (after ``id``), one per image."""
    row = {
        "type": "struct",
        "optional": True,
        "name": "t.Value",
        "fields": [{"type": "int64", "optional": False, "field": "id"}, *fields],
    }
    schema = {
        "type": "struct",
        "optional": False,
        "name": "t.Envelope",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {**SOURCE, "field": "source"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    source = {"version": "1", "connector": "c", "ts_ms": 1, "db": "shop", "table": "t"}
    return _raw(
        [
            (
                None,
                orjson.dumps(
                    {
                        "schema": schema,
                        "payload": {"before": None, "after": after, "source": source, "op": "c"},
                    }
                ),
            )
            for after in images
        ]
    )


def _all_from_columns(raw: pa.RecordBatch, to: str) -> list[dict[str, object]]:
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DESTINATIONS[to]({}), "p:out")(iter([raw])))
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    rows = _rows(iter(out))
    assert rows == _stage(PerMessageDebezium({}), raw, to)
    return rows


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
def test_columns_with_defaults_come_from_columns(to: str) -> None:
    # A null (or no field) is the column's default, as Kafka Connect's JsonConverter reads it.
    fields = [
        {**block, "optional": n % 2 == 0, "field": f"c{n}"}
        for n, (block, _) in enumerate(COLUMNS)
        if "default" in block
    ]
    assert len(fields) > 8
    rows = _all_from_columns(
        _events(fields, [{"id": 1}, {"id": 2, **{str(f["field"]): None for f in fields}}]), to
    )
    if to == "json":
        after = orjson.loads(rows[0]["_message_value"])["payload"]["after"]
        assert after[fields[0]["field"]] == fields[0]["default"]


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
def test_float_columns_come_from_columns_as_the_doubles_their_text_says(to: str) -> None:
    fields = [{"type": "float", "optional": True, "field": "f"}]
    images = [{"id": n, "f": f} for n, f in enumerate([0.1, 1.5, -3.25e-5, 1.25e-30, None, 7])]
    rows = _all_from_columns(_events(fields, images), to)
    if to == "json":
        assert orjson.loads(rows[0]["_message_value"])["payload"]["after"]["f"] == 0.1


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
def test_numerics_of_variable_scale_come_from_columns_as_their_exact_text(to: str) -> None:
    # PostgreSQL's numeric without a precision: Debezium's VariableScaleDecimal.
    fields = [
        {
            "type": "struct",
            "optional": True,
            "name": "io.debezium.data.VariableScaleDecimal",
            "fields": [
                {"type": "int32", "optional": False, "field": "scale"},
                {"type": "bytes", "optional": False, "field": "value"},
            ],
            "field": "n",
        }
    ]
    numbers = [(2, 150), (0, -7), (5, 10**30 + 1), (-2, 3), None]
    images = [
        {"id": k, "n": None if n is None else {"scale": n[0], "value": unscaled(n[1])}}
        for k, n in enumerate(numbers)
    ]
    rows = _all_from_columns(_events(fields, images), to)
    if to == "json":
        texts = [orjson.loads(r["_message_value"])["payload"]["after"]["n"] for r in rows]
        assert texts == ["1.50", "-7", "10000000000000000000000000.00001", "300", None]


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
def test_arrays_come_from_columns(to: str) -> None:
    # PostgreSQL's arrays: text[], int[], real[], numeric(10,2)[], arrays of arrays and of
    # structs.
    fields = [
        {**block, "optional": True, "field": f"c{n}"}
        for n, (block, _) in enumerate(COLUMNS)
        if block["type"] == "array"
    ]
    assert len(fields) >= 5
    images = [
        {"id": 1, str(fields[0]["field"]): [1, None, 3]},
        {"id": 2, **{str(f["field"]): [] for f in fields}},
        {"id": 3, **{str(f["field"]): None for f in fields}},
    ]
    values = {
        "int32": [5, -(2**31)],
        "int64": [2**40, -3],
        "string": ["a", 'q"uote', "é"],
        "double": [0.5, None, 3],
        "float": [0.1, None, 2.5],  # float32: 0.1 reads as the double its text reads as
        "bytes": [unscaled(150), None],
        "array": [[True], None, []],
        "struct": [{"n": 1, "t": 1_700_000_000_000_000}, None],
    }
    full: dict[str, object] = {"id": 4}
    for f in fields:
        items = f["items"]
        assert isinstance(items, dict)
        full[str(f["field"])] = values[str(items["type"])]
    images.append(full)
    rows = _all_from_columns(_events(fields, images), to)
    if to == "json":
        after = orjson.loads(rows[3]["_message_value"])["payload"]["after"]
        plain = ("int32", "int64", "string", "double", "float", "array")
        for f in fields:
            kind = f["items"]["type"]  # type: ignore[index]
            if kind in plain:
                assert after[str(f["field"])] == values[kind]


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
def test_an_array_item_the_columns_cannot_write_sends_its_message_the_per_message_way(
    to: str,
) -> None:
    decimal = {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "2", "connect.decimal.precision": "20"},
    }
    fields = [
        {"type": "array", "optional": True, "items": {"type": "int64"}, "field": "n"},
        {"type": "array", "optional": True, "items": decimal, "field": "d"},
        {
            "type": "array",
            "optional": True,
            "items": {**decimal, "parameters": {"scale": "0", "connect.decimal.precision": "30"}},
            "field": "w",
        },
    ]
    images = [
        {"id": 1, "n": [1, 2**53 + 1], "d": []},  # no double holds it
        {"id": 2, "n": [], "d": [unscaled(5), unscaled(10**17 + 1)]},  # nor this one
        {"id": 3, "n": [7], "d": [unscaled(5)]},
        {"id": 4, "w": [unscaled(3), unscaled(10**25)]},  # JSON writes it with an exponent
    ]
    raw = _events(fields, images)
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DESTINATIONS[to]({}), "p:out")(iter([raw])))
    assert _rows(iter(out)) == _stage(PerMessageDebezium({}), raw, to)
    flags = [
        flag
        for batch in out
        if "_per_message" in batch.schema.names
        for flag in batch["_per_message"].to_pylist()
    ]
    # JSON holds the first two exactly: only protobuf's doubles send them that way (10**25
    # is a double's exactly).
    assert flags.count(False) == (2 if to == "proto" else 3)


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
def test_keys_without_a_schema_block_come_from_columns(to: str) -> None:
    # key.converter.schemas.enable=false: the key is its payload alone.
    from bench.bench_debezium import lines

    keys = [{"id": n, "region": f"eu-{n % 3}", "live": n % 2 == 0} for n in range(20)]
    raw = _raw([(orjson.dumps(k), line) for k, line in zip(keys, lines(20), strict=True)])
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DESTINATIONS[to]({}), "p:out")(iter([raw])))
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    rows = _rows(iter(out))
    assert rows == _stage(PerMessageDebezium({}), raw, to)
    assert orjson.loads(rows[3]["_message_key"]) == keys[3]


@pytest.mark.parametrize("to", ["proto", "json"])
@pytest.mark.parametrize("spelling", [None, "spaced"])
def test_events_without_a_schema_block_come_from_columns(to: str, spelling: str | None) -> None:
    # value.converter.schemas.enable=false: each value is its payload alone.
    from bench.bench_debezium import lines

    def payload(text: bytes) -> bytes:
        return orjson.dumps(orjson.loads(text)["payload"])

    messages = [(orjson.dumps({"id": n}), payload(line)) for n, line in enumerate(lines(40))]
    raw = _raw([(respelt(k, spelling), respelt(v, spelling)) for k, v in messages])
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DESTINATIONS[to]({}), "p:out")(iter([raw])))
    flags = [
        f for b in out if "_per_message" in b.schema.names for f in b["_per_message"].to_pylist()
    ]
    assert len(flags) == 40
    # A double column's whole numbers are written as they were read only the per-message way.
    assert flags.count(True) <= (0 if to == "proto" else 4)
    assert _rows(iter(out)) == _stage(PerMessageDebezium({}), raw, to)


def test_arcion_messages_come_from_columns() -> None:
    from bench.bench_debezium import lines

    raw = _raw([(None, arcion(line)) for line in lines(20)])
    source = SourceFormat(ArcionJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, OpenCDCJsonFormat({}), "p:out")(iter([raw])))
    assert sum(b.num_rows for b in out) == 20
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    assert _rows(iter(out)) == _stage(PerMessageArcion({}), raw, "json")


def test_dialects_described_by_their_envelope_are_written_from_columns() -> None:
    fmt = DebeziumJsonFormat({})
    assert DebeziumToOpenCDC.serves(fmt, OpenCDCProtoFormat({}))
    assert DebeziumToOpenCDC.serves(fmt, OpenCDCJsonFormat({}))
    assert DebeziumToOpenCDC.serves(ArcionJsonFormat({}), OpenCDCProtoFormat({}))
    assert not DebeziumToOpenCDC.serves(PerMessageDebezium({}), OpenCDCProtoFormat({}))
    assert DebeziumToOpenCDC.serves(LindormJsonFormat({}), OpenCDCProtoFormat({}))
    assert not DebeziumToOpenCDC.serves(fmt, OpenCDCJsonFormat({"raw.as.string": "true"}))
    # Debezium JSON itself, without schema blocks, with a registry on either side or not
    # (test_avro_rows compares the ways with one)
    assert DebeziumToOpenCDC.serves(fmt, DebeziumJsonFormat({}))
    assert DebeziumToOpenCDC.serves(ArcionJsonFormat({}), DebeziumJsonFormat({}))
    assert not DebeziumToOpenCDC.serves(fmt, DebeziumJsonFormat({"schemas.enable": "true"}))
    assert DebeziumToOpenCDC.serves(fmt, DebeziumJsonFormat({}, registry="memory://"))
    assert DebeziumToOpenCDC.serves(DebeziumJsonFormat({}, registry="memory://"), fmt)
    assert not DebeziumToOpenCDC.serves(fmt, LindormJsonFormat({}))
    assert not DebeziumToOpenCDC.serves(
        DebeziumJsonFormat({"key.fields": "id"}), OpenCDCProtoFormat({})
    )


def test_a_uuid_whose_hex_looks_like_an_exponent_keeps_its_message_on_columns() -> None:
    from bench.bench_debezium import lines

    uuid = b'"note":"0b7a1c52-4e90-4a43-9d61-3f3c2d5e6a70"'
    line = lines(1)[0].replace(b'"note":"leave at the door"', uuid)
    assert b"4e90" in line
    raw = _raw([(None, line)])
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, OpenCDCProtoFormat({}), "p:out")(iter([raw])))
    assert out[0].column("_per_message").to_pylist() == [False]


def test_numbers_a_double_would_change_are_dead_letters_as_in_the_per_message_way() -> None:
    images = [
        {"id": 1, "amount": unscaled(12_345)},
        {"id": 2, "amount": unscaled(10_000_000_000_000_001)},  # 17 digits: no double holds them
        {"id": 2**53 + 1, "amount": unscaled(5)},  # nor this integer
        {"id": 4, "amount": unscaled(999_999_999_999_999)},  # 15 digits: exact
    ]
    raw = _events([{**_DECIMAL, "field": "amount"}], images)
    rows = _stage(DebeziumJsonFormat({}), raw)
    assert rows == _stage(PerMessageDebezium({}), raw)
    assert [r["_kind"] for r in rows] == [0, 0, 2, 2]


KEYS = [
    None,
    b"",
    b"raw key",
    b"5",
    b" 5",
    b"[1, 2]",
    b'"text"',
    b"\xff\xfe",
    b"123456789012345678901234",  # the per-message way refuses integers beyond 64 bits
    b'{"id": 2}',
    b' {"id": 2}',
    b'{"id": 1.5, "s": "a\\"b"}',
    b"{not json",
    orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": 7}}),
    orjson.dumps({"schema": KEY_SCHEMA, "payload": None}),
    orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": "seven"}}),
    orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": 7, "more": 1}}),
]


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
def test_every_kind_of_kafka_key_gives_what_the_per_message_way_gives(to: str) -> None:
    from bench.bench_debezium import lines

    line = lines(1)[0]
    for key in KEYS:  # alone (the key a schema is learnt from) and in a batch
        raw = _raw([(key, line)])
        assert _stage(DebeziumJsonFormat({}), raw, to) == _stage(PerMessageDebezium({}), raw, to)
    raw = _raw([(key, line) for key in KEYS * 2])
    rows = _stage(DebeziumJsonFormat({}), raw, to)
    assert rows == _stage(PerMessageDebezium({}), raw, to)
    written = [r["_message_key"] for r in rows if r["_kind"] == 0]
    assert written[:3] == [None, b"", b"raw key"]


def test_decimals_are_written_as_the_per_message_way_writes_them() -> None:
    def decimal(scale: int, precision: int) -> dict[str, object]:
        return {
            "type": "bytes",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
        }

    row = {
        "type": "struct",
        "optional": True,
        "name": "t.Value",
        "fields": [
            {"type": "int64", "optional": False, "field": "id"},
            {**decimal(0, 30), "field": "whole"},
            {**decimal(10, 20), "field": "small"},
        ],
    }
    schema = {
        "type": "struct",
        "optional": False,
        "name": "t.Envelope",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {**SOURCE, "field": "source"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    source = {"version": "1", "connector": "c", "ts_ms": 1, "db": "shop", "table": "t"}
    wholes = [0, 1, -1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**25]
    smalls = [0, 1, -1, 12_345, 10**4, 10**5, 10**19 - 1]
    messages = []
    for n, (whole, small) in enumerate(zip(wholes, smalls * 2, strict=False)):
        after = {"id": n, "whole": unscaled(whole), "small": unscaled(small)}
        payload = {"before": None, "after": after, "source": source, "op": "c"}
        messages.append((None, orjson.dumps({"schema": schema, "payload": payload})))
    raw = _raw(messages)
    rows = _stage(DebeziumJsonFormat({}), raw, "json")
    assert rows == _stage(PerMessageDebezium({}), raw, "json")
    first = orjson.loads(rows[1]["_message_value"])
    assert first["payload"]["after"] == {"id": 1, "small": 1e-10, "whole": 1}
    assert b'"small":1E-10' in rows[1]["_message_value"]


@pytest.mark.parametrize("to", ["proto", "json", "debezium"])
def test_minus_zero_doubles_are_written_as_the_per_message_way_reads_them(to: str) -> None:
    row = {
        "type": "struct",
        "optional": True,
        "name": "t.Value",
        "fields": [
            {"type": "int64", "optional": False, "field": "id"},
            {"type": "double", "optional": True, "field": "x"},
        ],
    }
    schema = {
        "type": "struct",
        "optional": False,
        "name": "t.Envelope",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {**SOURCE, "field": "source"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    source = {"version": "1", "connector": "c", "ts_ms": 1, "db": "shop", "table": "t"}
    texts = [b"-0.0", b"-0", b"0", b"-0e0", b"-0.5", b" -0 "]
    messages = []
    for n, text in enumerate(texts):
        after = {"id": n, "x": 12345.0}
        payload = {"before": None, "after": after, "source": source, "op": "c"}
        value = orjson.dumps({"schema": schema, "payload": payload})
        messages.append((None, value.replace(b"12345.0", text)))
    raw = _raw(messages)
    source_format = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source_format, DESTINATIONS[to]({}), "p:out")(iter([raw])))
    assert _rows(iter(out)) == _stage(PerMessageDebezium({}), raw, to)
    per_message = [flag for b in out for flag in b.column("_per_message").to_pylist()]
    assert per_message == [False, True, False, False, False, True]


class PerMessageCdl(CdlJsonFormat):
    """``cdl-json`` as it is, under another class, which the columns do not serve."""


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=cdl_batches())
def test_cdl_changes_from_columns_are_those_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    _agree(CdlJsonFormat, PerMessageCdl, _raw(messages))


def test_cdl_debezium_json_comes_from_columns() -> None:
    lines = Path("examples/cdl/ct_pg2hudi.kv.jsonl").read_bytes().splitlines()
    messages = [orjson.loads(line) for line in lines if line.strip()]
    raw = _raw([(None, orjson.dumps(m["value"])) for m in messages])
    source = SourceFormat(CdlJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, OpenCDCJsonFormat({}), "p")(iter([raw])))
    flags = [flag for b in out for flag in b.column("_per_message").to_pylist()]
    assert flags.count(False) >= 2  # the inserts and updates; a delete without before goes its way
    assert _rows(iter(out)) == _stage_of(PerMessageCdl({}), raw, "json")
    first = orjson.loads(_rows(iter(out))[0]["_message_value"])
    assert first["metadata"]["cdl.message_version"] == "2.0"


@pytest.mark.parametrize(
    "payload",
    [
        {"before": None, "after": {}, "op": "c"},
        {"before": {}, "after": {"id": 1}, "op": "u"},
        {"before": {}, "after": None, "op": "d"},
        {"before": {"id": 1}, "after": {"id": None}, "op": "u"},
    ],
    ids=["create of {}", "update from {}", "delete of {}", "explicit nulls"],
)
@pytest.mark.parametrize("fmt", [DebeziumJsonFormat, CdlJsonFormat], ids=["debezium", "cdl"])
def test_an_image_spelt_empty_is_none_as_the_per_message_way_reads_it(
    payload: dict[str, object], fmt: type[Format]
) -> None:
    row = {
        "type": "struct",
        "optional": True,
        "fields": [{"type": "int32", "optional": True, "field": "id"}],
    }
    source = {
        "type": "struct",
        "optional": False,
        "field": "source",
        "fields": [
            {"type": "string", "optional": False, "field": "table"},
            {"type": "int64", "optional": False, "field": "ts_ms"},
        ],
    }
    schema = {
        "type": "struct",
        "optional": False,
        "name": "v",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            source,
            {"type": "string", "optional": False, "field": "op"},
            {"type": "string", "optional": True, "field": "message_version"},
        ],
    }
    event = {**payload, "source": {"table": "t", "ts_ms": 1}, "message_version": "2.0"}
    raw = _raw([(None, orjson.dumps({"schema": schema, "payload": event}))] * 2)
    per_message = PerMessageCdl if fmt is CdlJsonFormat else PerMessageDebezium
    for to in ("proto", "json", "debezium"):
        assert _stage_of(fmt({}), raw, to) == _stage_of(per_message({}), raw, to)


class PerMessageYdbJson(YdbJsonFormat):
    """``ydb-json`` as it is, under another class, which the columns do not serve."""


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=ydb_json_batches(), ydb_settings=YDB_SETTINGS)
def test_ydb_records_from_columns_are_those_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]], ydb_settings: dict[str, str]
) -> None:
    _agree(YdbJsonFormat, PerMessageYdbJson, _raw(messages), ydb_settings)


@pytest.mark.parametrize("to", ["proto", "json"])
@pytest.mark.parametrize(
    ("ydb_settings", "record"),
    [
        ({}, b'{"key":[%d],"update":{"name":"a","amount":1.5},"ts":[1670792400890,7]}'),
        (
            {"mode": "NEW_AND_OLD_IMAGES", "key.columns": "id"},
            b'{"key":[%d],"update":{},"newImage":{"name":"b","n":null},'
            b'"oldImage":{"name":"a","n":2},"ts":[1670792400890,7]}',
        ),
        (
            {"mode": "KEYS_ONLY", "collection": "orders", "key.columns": "id,code"},
            b'{"key":[%d,"x"],"erase":{}}',
        ),
    ],
    ids=["updates", "images", "keys only"],
)
def test_ydb_records_come_from_columns(
    to: str, ydb_settings: dict[str, str], record: bytes
) -> None:
    raw = _raw([(None, record % n) for n in range(50)] + [(None, b'{"resolved":[1,2]}')])
    source = SourceFormat(YdbJsonFormat(ydb_settings), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DESTINATIONS[to]({}), "p")(iter([raw])))
    kinds = [kind for b in out for kind in b.column("_kind").to_pylist()]
    flags = [flag for b in out for flag in b.column("_per_message").to_pylist()]
    assert [f for f, kind in zip(flags, kinds, strict=True) if kind != SKIPPED] == [False] * 50
    assert kinds.count(SKIPPED) == 1  # the resolved timestamp, skipped the per-message way
    assert _rows(iter(out)) == _stage_of(PerMessageYdbJson(ydb_settings), raw, to)


class PerMessageOpenCDCJson(OpenCDCJsonFormat):
    """``opencdc-json`` as it is, under another class, which the columns do not serve."""


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=opencdc_json_batches())
def test_opencdc_json_records_from_columns_are_those_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    raw = _raw(messages)
    for options in ({}, {"raw.as.string": "true"}):
        _agree(OpenCDCJsonFormat, PerMessageOpenCDCJson, raw, options)


@pytest.mark.parametrize("to", ["proto", "json"])
def test_opencdc_json_records_come_from_columns(to: str) -> None:
    records = [
        {
            "position": "cG9zLTE=",
            "operation": "update",
            "metadata": {"opencdc.collection": "orders", "opencdc.readAt": "1"},
            "key": {"id": n},
            "payload": {"before": None, "after": {"id": n, "total": 1.5, "tags": ["a"]}},
        }
        for n in range(40)
    ]
    records += [{"operation": "delete", "key": "cmF3", "payload": {"before": {"id": 1}}}] * 5
    records += [{"operation": "create", "payload": {"after": "cmF3"}}]  # raw: its own way
    raw = _raw([(None, orjson.dumps(r)) for r in records])
    source = SourceFormat(OpenCDCJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DESTINATIONS[to]({}), "p")(iter([raw])))
    flags = [flag for b in out for flag in b.column("_per_message").to_pylist()]
    assert flags == [False] * 45 + [True]
    assert _rows(iter(out)) == _stage_of(PerMessageOpenCDCJson({}), raw, to)


class PerMessageOpenCDCProto(OpenCDCProtoFormat):
    """``opencdc-proto`` as it is, under another class, which the columns do not serve."""


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=opencdc_proto_batches())
def test_opencdc_proto_records_from_columns_are_those_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    _agree(OpenCDCProtoFormat, PerMessageOpenCDCProto, _raw(messages))


@pytest.mark.parametrize("to", ["proto", "json"])
def test_opencdc_proto_records_come_from_columns(to: str) -> None:
    from cdc_connectors.opencdc.json_codec import record_from_json
    from cdc_connectors.opencdc.proto_codec import record_to_proto_bytes

    records = [
        {
            "position": "cG9zLTE=",
            "operation": "snapshot",
            "metadata": {"opencdc.collection": "orders"},
            "key": {"id": n},
            "payload": {"after": {"id": n, "total": 1.5 + n, "tags": ["a", None]}},
        }
        for n in range(30)
    ]
    records.append({"operation": "create", "payload": {"after": "cmF3"}})  # raw: its own way
    raw = _raw([(None, record_to_proto_bytes(record_from_json(orjson.dumps(r)))) for r in records])
    source = SourceFormat(OpenCDCProtoFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DESTINATIONS[to]({}), "p")(iter([raw])))
    flags = [flag for b in out for flag in b.column("_per_message").to_pylist()]
    assert flags == [False] * 30 + [True]
    assert _rows(iter(out)) == _stage_of(PerMessageOpenCDCProto({}), raw, to)


# --- Debezium JSON written from columns ------------------------------------------------------

# Texts the per-message way writes back as numbers, as strings, or parses (JSON objects).
_METADATA_TEXTS = st.sampled_from(
    [
        *("0", "-0", "7", "-12", "007", "+5", "1.5", "1e3", " 1", "9" * 18, "9" * 19),
        *("-" + "9" * 19, "9" * 20, "{}", '{"a": 1}', "[1,2]", "[x", "{", "", "plain"),
        *('q"uote', "ünï", "\u2028"),
    ]
)
_TRANSACTION = {
    "type": "struct",
    "optional": True,
    "name": "event.block",
    "fields": [
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": False, "field": "total_order"},
        {"type": "int64", "optional": False, "field": "data_collection_order"},
    ],
}


@st.composite
def _debezium_destination_events(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """Events whose source, transaction and extra payload fields make every kind of
    metadata the Debezium JSON writer turns back into members."""
    # "scn", "sequence", "gtid": Debezium's strings, whatever their text looks like
    texts = draw(
        st.lists(
            st.sampled_from(["note", "lsn_text", "origin", "scn", "sequence", "gtid"]),
            unique=True,
        )
    )
    source_fields = [dict(f) for f in SOURCE["fields"]]  # type: ignore[call-overload]
    source_fields += [{"type": "string", "optional": True, "field": t} for t in texts]
    extra = draw(st.lists(st.sampled_from(["ts_us", "ts_ns", "origin", "op_note"]), unique=True))
    fields = [
        {
            "type": "struct",
            "optional": True,
            "name": "t.Value",
            "field": image,
            "fields": [
                {"type": "int64", "optional": False, "field": "id"},
                {"type": "string", "optional": True, "field": "name"},
            ],
        }
        for image in ("before", "after")
    ]
    fields += [
        {**SOURCE, "fields": source_fields, "field": "source"},
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
        {**_TRANSACTION, "field": "transaction"},
    ]
    fields += [
        {
            "type": "string" if e.startswith(("origin", "op_")) else "int64",
            "optional": True,
            "field": e,
        }
        for e in extra
    ]
    schema = {"type": "struct", "optional": False, "name": "t.Envelope", "fields": fields}
    messages = []
    for n in range(draw(st.integers(1, 12))):
        op = draw(st.sampled_from(["c", "u", "d", "r"]))
        image = {"id": n, "name": draw(st.none() | _METADATA_TEXTS)}
        source = {
            "version": "2.7",
            # txId: a string in Oracle's source block only
            "connector": draw(st.sampled_from(["postgresql", "oracle", "mysql"])),
            "ts_ms": n,
            "db": draw(st.sampled_from(["shop", "2024"])),
            "schema": draw(st.none() | _METADATA_TEXTS),
            "table": "t",
            "txId": draw(st.none() | st.integers(-(2**63), 2**63 - 1)),
            "snapshot": draw(st.none() | _METADATA_TEXTS),
            "version_2": draw(st.none() | _METADATA_TEXTS),
            **{t: draw(st.none() | _METADATA_TEXTS) for t in texts},
        }
        payload: dict[str, object] = {
            "before": image if op in ("u", "d") else None,
            "after": None if op == "d" else image,
            "source": source,
            "op": op,
            "ts_ms": draw(st.none() | st.integers(-(2**40), 2**45)),
            "transaction": draw(
                st.none()
                | st.fixed_dictionaries(
                    {
                        "id": _METADATA_TEXTS,
                        "total_order": st.integers(0, 9),
                        "data_collection_order": st.integers(-1, 2**62),
                    }
                )
            ),
        }
        for e in extra:
            payload[e] = draw(
                st.none()
                | (_METADATA_TEXTS if e.startswith(("origin", "op_")) else st.integers(0, 2**62))
            )
        messages.append(
            (
                draw(st.none() | st.just(orjson.dumps({"id": n}))),
                orjson.dumps({"schema": schema, "payload": payload}),
            )
        )
    return messages


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_debezium_destination_events())
def test_debezium_json_from_columns_is_what_the_per_message_way_writes(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    raw = _raw(messages)
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DebeziumJsonFormat({}), "p:out")(iter([raw])))
    assert _rows(iter(out)) == _stage(PerMessageDebezium({}), raw, "debezium")


def test_debezium_json_with_every_kind_of_metadata_comes_from_columns() -> None:
    value = orjson.loads(_with_schema({"type": "string", "optional": True}, ["x"])[0][1])
    value["schema"]["fields"] += [
        {**_TRANSACTION, "field": "transaction"},
        {"type": "string", "optional": True, "field": "origin"},
    ]
    value["payload"]["transaction"] = {
        "id": "571:53195829",
        "total_order": 1,
        "data_collection_order": 1,
    }
    value["payload"]["origin"] = "db-1"
    raw = _raw([(orjson.dumps({"id": n}), orjson.dumps(value)) for n in range(5)])
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DebeziumJsonFormat({}), "p:out")(iter([raw])))
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    rows = _rows(iter(out))
    assert rows == _stage(PerMessageDebezium({}), raw, "debezium")
    event = orjson.loads(rows[0]["_message_value"])
    assert list(event) == [
        *("before", "after", "source", "op", "transaction"),
        *("ts_ms", "ts_us", "ts_ns", "origin"),
    ]
    assert event["transaction"] == value["payload"]["transaction"]
    assert event["origin"] == "db-1"
    assert list(event["source"]) == sorted(event["source"])
    assert rows[2]["_message_key"] == b'{"id":2}'


def test_rows_of_many_sets_of_metadata_names_give_what_the_per_message_way_gives() -> None:
    from cdc_connectors.columnar.debezium_records import MAX_GROUPS

    base = orjson.loads(_with_schema({"type": "string", "optional": True}, ["x"])[0][1])
    names = [f"f{n}" for n in range(5)]
    base["schema"]["fields"] += [{"type": "int64", "optional": True, "field": f} for f in names]
    messages = []
    for n in range(2 ** len(names)):  # each subset of the optional fields set: 32 sets
        value = orjson.loads(orjson.dumps(base))
        for bit, name in enumerate(names):
            value["payload"][name] = n if n >> bit & 1 else None
        messages.append((None, orjson.dumps(value)))
    raw = _raw(messages)
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, DebeziumJsonFormat({}), "p:out")(iter([raw])))
    flags = [f for b in out for f in b.column("_per_message").to_pylist()]
    assert flags.count(False) == MAX_GROUPS  # one row per set: the first sets' rows
    assert _rows(iter(out)) == _stage(PerMessageDebezium({}), raw, "debezium")


@pytest.mark.parametrize(
    ("connector", "tx_id"), [("oracle", "0500090012340000"), ("postgresql", 771)]
)
def test_debeziums_string_members_stay_strings_from_columns(connector: str, tx_id: object) -> None:
    """An Oracle SCN of digits, a ``sequence`` of JSON text, a database named ``2024``: the
    strings Debezium wrote, as both ways write them; ``txId`` is one in Oracle's only."""
    value = orjson.loads(_with_schema({"type": "string", "optional": True}, ["x"])[0][1])
    block = next(f for f in value["schema"]["fields"] if f["field"] == "source")
    block["fields"] += [
        {"type": "string", "optional": True, "field": m} for m in ("scn", "sequence")
    ]
    for field in block["fields"]:
        if field["field"] == "txId":
            field["type"] = "string" if connector == "oracle" else "int64"
    source = value["payload"]["source"]
    source.update(connector=connector, scn="28815345", sequence='["1","2"]', db="2024", txId=tx_id)
    raw = _raw([(orjson.dumps({"id": n}), orjson.dumps(value)) for n in range(3)])
    source_format = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source_format, DebeziumJsonFormat({}), "p:out")(iter([raw])))
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    rows = _rows(iter(out))
    assert rows == _stage(PerMessageDebezium({}), raw, "debezium")
    written = orjson.loads(rows[0]["_message_value"])["source"]
    assert (written["scn"], written["sequence"], written["db"]) == ("28815345", '["1","2"]', "2024")
    assert written["txId"] == tx_id
