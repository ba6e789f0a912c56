"""Debezium Avro -> ``protobuf`` rows from columns: the same stage rows (message bytes, their
order, dead letters) as the per-message way on generated batches, written as the message of
a ``.proto`` file made for the generated table; good change events all from columns, as
confluent-kafka reads them."""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar.choose import columns_for, serves
from cdc_connectors.columnar.debezium_avro_protobuf_rows import DebeziumAvroToProtobufRows
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.formats.protobuf import ProtobufFormat
from cdc_connectors.registry import open_registry
from cdc_connectors.schema.protobuf import message_class
from tests.columnar.debezium_avro_batches import batches
from tests.columnar.test_avro_columns import _orders, _raw
from tests.columnar.test_debezium_avro_rows import stage_rows
from tests.columnar.test_pipeline_columns import per_message
from tests.hypothesis_profiles import examples

PerMessageDebeziumAvro = per_message(DebeziumAvroFormat)
_REGISTRIES = itertools.count()
_HEAD = """syntax = "proto3";
package p;
import "google/protobuf/timestamp.proto";
"""
#: Messages the row's fields may be, after the row's (a file's first message is written).
_MORE = """message Inner { optional int32 n = 1; string s = 2; }
message Scaled { int32 scale = 1; bytes value = 2; }
"""
_KEY = _HEAD + "message Key { int64 id = 1; optional string code = 2; optional string ref = 3; }\n"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_TIMES = {"timestamp-millis", "timestamp-micros", "date"}


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)


def _field_type(avro: Any) -> str | None:
    """The Protobuf type a column of Avro type ``avro`` is written as (``None``: none)."""
    if isinstance(avro, list):
        members = [m for m in avro if m != "null"]
        return _field_type(members[0]) if len(members) == 1 else None
    if isinstance(avro, str):
        return {
            "int": "int32",
            "long": "int64",
            "float": "float",
            "double": "double",
            "boolean": "bool",
            "string": "string",
            "bytes": "bytes",
        }.get(avro)
    kind, logical = avro.get("type"), avro.get("logicalType")
    if logical in _TIMES:
        return "google.protobuf.Timestamp"
    if logical == "decimal":
        return "string"
    if kind == "array":
        item = _field_type(avro["items"])
        return None if item is None or item.startswith("repeated") else f"repeated {item}"
    if kind == "map":
        value = _field_type(avro["values"])
        return None if value is None else f"map<string, {value}>"
    if kind == "enum":
        return "string"
    if kind == "fixed":
        return "bytes"
    if kind == "record":
        return "Inner" if avro["name"].startswith("Inner") else "Scaled"
    return _field_type(kind)


def _proto(envelope: dict[str, Any]) -> str:
    """A ``.proto`` of the envelope's row: a field for each column Protobuf can hold."""
    row = next(f for f in envelope["fields"] if f["name"] == "before")["type"][1]
    fields = []
    for number, field in enumerate(row["fields"], start=1):
        kind = _field_type(field["type"])
        if kind is not None and _NAME.match(field["name"]):
            optional = "optional " if isinstance(field["type"], list) and " " not in kind else ""
            fields.append(f"  {optional}{kind} {field['name']} = {number};")
    return _HEAD + "message Row {\n" + "\n".join(fields) + "\n}\n" + _MORE


def _stage(
    source: type[Format], url: str, raw: pa.RecordBatch, options: dict[str, str]
) -> tuple[list[dict[str, Any]], int]:
    """The stage rows to ``protobuf`` (messages and dead letters, in order), and how many
    came the per-message way."""
    return stage_rows(source, url, raw, options, to=ProtobufFormat)


def _files(tmp: Path, value: str, key: str) -> dict[str, str]:
    (tmp / "row.proto").write_text(value)
    (tmp / "key.proto").write_text(key)
    return {"value.schema": str(tmp / "row.proto"), "key.schema": str(tmp / "key.proto")}


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_columns_give_the_stage_rows_of_the_per_message_way(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """One registry for both ways, the columns first; the row message made for the first
    table of the batch (the second's rows lack its columns or hold others)."""
    url = f"memory://debezium-avro-protobuf-{next(_REGISTRIES)}"
    registry = open_registry(url)
    raw = _raw(data.draw(batches(registry)), 1)
    first = sorted(s for s in registry.get_subjects() if re.fullmatch(r"t\d+-value", s))[0]
    envelope = orjson.loads(registry.get_latest_version(first).schema.schema_str)
    options = _files(tmp_path_factory.mktemp("proto"), _proto(envelope), _KEY)
    options["topic"] = "rows"
    ours, _ = _stage(DebeziumAvroFormat, url, raw, options)
    theirs, _ = _stage(PerMessageDebeziumAvro, url, raw, options)
    assert ours == theirs


def test_change_events_come_from_columns_and_confluent_reads_their_rows(
    tmp_path: Path,
) -> None:
    url = f"memory://debezium-avro-protobuf-{next(_REGISTRIES)}"
    row = _HEAD + (
        "message Row { int64 id = 1; string price = 2; string status = 3; "
        "optional string notes = 4; }\n"
    )
    key = _HEAD + "message Key { int64 id = 1; }\n"
    options = {**_files(tmp_path, row, key), "topic": "orders-rows"}
    raw = _raw(_orders(url, 12), 1)
    ours, per_message_rows = _stage(DebeziumAvroFormat, url, raw, options)
    assert per_message_rows == 0
    assert ours == _stage(PerMessageDebeziumAvro, url, raw, options)[0]
    rows = ProtobufDeserializer(
        message_class(row, [], (0,)), {"use.deprecated.format": False}, open_registry(url)
    )
    read = [rows(r["_message_value"], SerializationContext("t", MessageField.VALUE)) for r in ours]
    assert [r.id for r in read] == [42] * 12
    assert {r.price for r in read} == {"12.34"}
    assert [r.HasField("notes") for r in read] == [n % 3 != 0 for n in range(12)]


def test_only_debezium_avro_with_the_registry_of_the_rows_is_served() -> None:
    url = "memory://debezium-avro-protobuf-served"
    source = DebeziumAvroFormat({}, registry=url)
    assert isinstance(
        columns_for(source, ProtobufFormat({}, registry=url)), DebeziumAvroToProtobufRows
    )
    assert not serves(source, ProtobufFormat({}, registry="memory://elsewhere"))
    assert not serves(source, ProtobufFormat({"raw.keys": "true"}, registry=url))
