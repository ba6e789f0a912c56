"""A fused pipeline stage writes Debezium JSON as OpenCDC protobuf from columns: the same
stage rows (messages, their order, dead letters) as the per-message way, on generated
batches."""

from __future__ import annotations

import time
from collections.abc import Iterator

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from cdc_connectors.columnar.debezium_proto import DebeziumToProto
from cdc_connectors.connectors.kafka_read import RAW_ARROW_SCHEMA
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
from cdc_connectors.pipeline.plan import SourceFormat, converter
from tests.columnar.debezium_batches import SOURCE, batches, unscaled


class PerMessageDebezium(DebeziumJsonFormat):
    """Debezium JSON as is, under a class the columns do not serve: the per-message way."""


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


def _stage(fmt: DebeziumJsonFormat, raw: pa.RecordBatch) -> list[dict[str, object]]:
    source = SourceFormat(fmt, "cdc-kafka", fail_fast=False)
    return _rows(converter(source, OpenCDCProtoFormat({}), "p:out")(iter([raw])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_columns_give_the_stage_rows_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    raw = _raw(messages)
    assert _stage(DebeziumJsonFormat({}), raw) == _stage(PerMessageDebezium({}), raw)


def test_most_messages_of_a_plain_batch_come_from_columns() -> None:
    from bench.bench_debezium import lines

    raw = _raw([(None, line) for line in lines(50)])
    source = SourceFormat(DebeziumJsonFormat({}), "cdc-kafka", fail_fast=False)
    out = list(converter(source, OpenCDCProtoFormat({}), "p:out")(iter([raw])))
    assert sum(b.num_rows for b in out) == 50
    assert not any(any(b.column("_per_message").to_pylist()) for b in out)
    assert _rows(iter(out)) == _stage(PerMessageDebezium({}), raw)


def test_only_debezium_json_itself_to_opencdc_proto_is_written_from_columns() -> None:
    fmt = DebeziumJsonFormat({})
    assert DebeziumToProto.serves(fmt, OpenCDCProtoFormat({}))
    assert not DebeziumToProto.serves(PerMessageDebezium({}), OpenCDCProtoFormat({}))
    assert not DebeziumToProto.serves(fmt, OpenCDCJsonFormat({}))
    assert not DebeziumToProto.serves(
        DebeziumJsonFormat({"key.fields": "id"}), OpenCDCProtoFormat({})
    )


def test_numbers_a_double_would_change_are_dead_letters_as_in_the_per_message_way() -> None:
    row = {
        "type": "struct",
        "optional": True,
        "name": "t.Value",
        "fields": [
            {"type": "int64", "optional": False, "field": "id"},
            {
                "type": "bytes",
                "optional": True,
                "name": "org.apache.kafka.connect.data.Decimal",
                "parameters": {"scale": "2", "connect.decimal.precision": "30"},
                "field": "amount",
            },
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

    def event(id_: int, cents: int) -> bytes:
        after = {"id": id_, "amount": unscaled(cents)}
        payload = {"before": None, "after": after, "source": source, "op": "c"}
        return orjson.dumps({"schema": schema, "payload": payload})

    raw = _raw(
        [
            (None, event(1, 12_345)),
            (None, event(2, 10_000_000_000_000_001)),  # 17 digits: no double holds them
            (None, event(2**53 + 1, 5)),  # nor this integer
            (None, event(4, 999_999_999_999_999)),  # 15 digits: exact
        ]
    )
    rows = _stage(DebeziumJsonFormat({}), raw)
    assert rows == _stage(PerMessageDebezium({}), raw)
    assert [r["_kind"] for r in rows] == [0, 0, 2, 2]
