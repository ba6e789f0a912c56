"""Debezium Avro -> ``avro`` rows (change events unwrapped to their rows) from columns: the
same stage rows (message bytes, their order, dead letters) as the per-message way on
generated batches; good change events all from columns, as confluent-kafka reads them."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar.choose import columns_for, serves
from cdc_connectors.columnar.debezium_avro_to_rows import DebeziumAvroToAvroRows
from cdc_connectors.formats.avro import AvroFormat
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.pipeline.connectors import resolve
from cdc_connectors.pipeline.plan import SourceFormat, converter
from cdc_connectors.registry import open_registry
from tests.columnar.debezium_avro_batches import batches
from tests.columnar.test_avro_columns import _orders, _raw
from tests.columnar.test_pipeline_columns import per_message
from tests.hypothesis_profiles import examples

PerMessageDebeziumAvro = per_message(DebeziumAvroFormat)
_REGISTRIES = itertools.count()


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)


def stage_rows(
    source: type[Format],
    url: str,
    raw: pa.RecordBatch,
    options: dict[str, str],
    routed: bool = False,
    to: type[Format] = AvroFormat,
) -> tuple[list[dict[str, Any]], int]:
    """The stage rows of a fused pipeline stage to ``to`` (messages and dead letters, in
    order), and how many came the per-message way; ``routed``: to the Kafka topic of each
    record's collection."""
    route = None
    if routed:
        kafka = resolve("kafka")
        assert kafka is not None
        route, _ = kafka.routing({"servers": "x:1", "topic": "rows.{collection}"})
    stage = converter(
        SourceFormat(source({}, registry=url), "cdc-kafka", fail_fast=False),
        to(dict(options), registry=url),
        "p:out",
        route,
    )
    rows, per_message_rows = [], 0
    for batch in stage(iter([raw])):
        for row in batch.to_pylist():
            per_message_rows += bool(row.pop("_per_message"))
            rows.append(row)
    return rows, per_message_rows


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), options=st.sampled_from([{}, {"topic": "rows"}]), routed=st.booleans())
def test_columns_give_the_stage_rows_of_the_per_message_way(
    data: st.DataObject, options: dict[str, str], routed: bool
) -> None:
    """One registry for both ways, the columns first: the schemas they register under the
    destination's subjects are those the per-message way finds there (the same ids)."""
    url = f"memory://debezium-avro-rows-{next(_REGISTRIES)}"
    raw = _raw(data.draw(batches(open_registry(url))), 1)
    ours, _ = stage_rows(DebeziumAvroFormat, url, raw, options, routed)
    theirs, _ = stage_rows(PerMessageDebeziumAvro, url, raw, options, routed)
    assert ours == theirs


def test_change_events_come_from_columns_and_confluent_reads_their_rows() -> None:
    from tests.formats.test_debezium_avro import AFTER

    url = f"memory://debezium-avro-rows-{next(_REGISTRIES)}"
    messages = _orders(url, 12)
    raw = _raw(messages, 1)
    rows_topic = {"topic": "orders-rows"}  # (the envelopes' subject holds the envelope)
    ours, per_message_rows = stage_rows(DebeziumAvroFormat, url, raw, rows_topic)
    assert per_message_rows == 0
    assert ours == stage_rows(PerMessageDebeziumAvro, url, raw, rows_topic)[0]
    routed, per_message_rows = stage_rows(DebeziumAvroFormat, url, raw, rows_topic, routed=True)
    assert per_message_rows == 0
    assert {row["_topic"] for row in routed} == {"rows.shop.public.orders"}
    assert routed == stage_rows(PerMessageDebeziumAvro, url, raw, rows_topic, routed=True)[0]
    read = AvroDeserializer(open_registry(url))
    rows = [
        read(row["_message_value"], SerializationContext("t", MessageField.VALUE)) for row in ours
    ]
    keys = [read(row["_message_key"], SerializationContext("t", MessageField.KEY)) for row in ours]
    assert keys == [{"id": n} for n in range(12)]
    assert rows[1] == AFTER
    assert rows[0] == {**AFTER, "notes": None}  # an update's new image


def test_only_debezium_avro_with_the_registry_of_the_rows_is_served(tmp_path: Any) -> None:
    url = "memory://debezium-avro-served"
    source = DebeziumAvroFormat({}, registry=url)
    assert serves(source, AvroFormat({}, registry=url))
    assert isinstance(columns_for(source, AvroFormat({}, registry=url)), DebeziumAvroToAvroRows)
    assert not serves(source, AvroFormat({}, registry="memory://elsewhere"))
    assert not serves(source, AvroFormat({"raw.keys": "true"}, registry=url))
    assert not serves(
        DebeziumAvroFormat({"key.fields": "id"}, registry=url), AvroFormat({}, registry=url)
    )
    schema = tmp_path / "row.avsc"
    schema.write_text(orjson.dumps({"type": "record", "name": "R", "fields": []}).decode())
    assert not serves(source, AvroFormat({"value.schema": str(schema)}, registry=url))


def test_a_message_left_to_the_per_message_way_registers_nothing_from_columns() -> None:
    """A good key beside a value that does not decode: the per-message way fails before it
    names a schema, and so do the columns (no subject of Conduit's for the key)."""
    url = f"memory://debezium-avro-rows-{next(_REGISTRIES)}"
    (key, value, _), *_ = _orders(url, 1)
    assert value is not None
    registry = open_registry(url)
    before = set(registry.get_subjects())
    raw = _raw([(key, value[:7], False)], 1)  # the frame and two bytes of the body
    rows, per_message_rows = stage_rows(DebeziumAvroFormat, url, raw, {"topic": "orders-rows"})
    assert per_message_rows == 1 and rows[0]["_kind"] != 0  # a dead letter
    assert set(registry.get_subjects()) == before


def _registered(url: str) -> set[tuple[str, int, str]]:
    registry = open_registry(url)
    return {
        (subject, version, registry.get_version(subject, version).schema.schema_str)
        for subject in registry.get_subjects()
        for version in registry.get_versions(subject)
    }


def test_each_way_on_a_registry_of_its_own_registers_the_same_schemas(tmp_path: Path) -> None:
    """The two ways on registries of their own that hold the source's schemas alike: the
    same subjects, versions and schemas afterwards, and the same messages (ids aside)."""
    ours_url, theirs_url = (f"sqlite:///{tmp_path}/{name}.db" for name in ("ours", "theirs"))
    messages = _orders(ours_url, 12)
    assert _orders(theirs_url, 12) == messages  # the same schemas, ids and messages
    raw = _raw(messages, 1)
    options = {"topic": "orders-rows"}
    ours, _ = stage_rows(DebeziumAvroFormat, ours_url, raw, options)
    theirs, _ = stage_rows(PerMessageDebeziumAvro, theirs_url, raw, options)
    assert _registered(ours_url) == _registered(theirs_url)
    assert len(_registered(ours_url)) == 6  # the source's two, Conduit's two, the rows' two
    assert [(r["_message_key"][5:], r["_message_value"][5:]) for r in ours] == [
        (r["_message_key"][5:], r["_message_value"][5:]) for r in theirs
    ]
