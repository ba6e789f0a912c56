"""CDL JSON to ``avro`` and ``protobuf`` rows, ``debezium-avro`` and Debezium JSON from
columns: what the per-message way writes (``convert`` and a pipeline stage), on generated
CDL streams and on the CDL example; what confluent-kafka reads."""

from __future__ import annotations

import base64
import itertools
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar.cdl_debezium import (
    CdlToAvroRows,
    CdlToDebeziumAvro,
    CdlToDebeziumJson,
    CdlToProtobufRows,
)
from cdc_connectors.columnar.choose import columns_for
from cdc_connectors.convert import engine
from cdc_connectors.formats.avro import AvroFormat
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.formats.debezium.cdl import CdlJsonFormat
from cdc_connectors.formats.protobuf import ProtobufFormat
from cdc_connectors.registry.embedded import EmbeddedRegistry
from tests.columnar.cdl_batches import cdl_batches
from tests.columnar.test_avro_rows import _BLOCK_KEYS, _SECOND_TABLE, _convert, _kv, _stage
from tests.hypothesis_profiles import examples

_REGISTRIES = itertools.count()
_EXAMPLE = Path(__file__).parents[2] / "examples/cdl/ct_pg2hudi.kv.jsonl"


class PerMessageCdl(CdlJsonFormat):
    """``cdl-json`` as it is, under another class, which the columns do not serve."""


@pytest.fixture(autouse=True)
def _fixed_clock_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)
    monkeypatch.setattr(engine, "CHUNK", 9)  # several chunks per stream


def _urls() -> tuple[str, str]:
    return f"memory://cdl-{next(_REGISTRIES)}", f"memory://cdl-{next(_REGISTRIES)}"


def _both(data: bytes, to: type[Format], fail_fast: bool = False) -> Any:
    """``convert`` of ``data`` from columns and the per-message way agree (each on a
    registry of its own): messages with their schemas' texts, dead letters, counts and,
    unless a run stopped early, the schemas registered."""
    ours, theirs = _urls()
    columns = _convert(CdlJsonFormat({}, registry=ours), ours, data, fail_fast, to=to)
    per_message = _convert(PerMessageCdl({}, registry=theirs), theirs, data, fail_fast, to=to)
    assert columns[1:4] == per_message[1:4]
    if not fail_fast:
        assert columns[4] == per_message[4]
    return columns


@st.composite
def _streams(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """CDL messages (2.0, 1.0, other versions, junk) whose keys are all keys with a schema
    block or all none (raw keys go the per-message way); the second envelope schema is
    another table's, as in ``test_avro_rows`` (two incompatible schemas of one subject are
    registered in another order from columns, as the README says)."""
    keys = draw(st.sampled_from([_BLOCK_KEYS, st.none()]))
    messages = []
    for _, value in draw(cdl_batches()):
        if value is not None and b"u.Envelope" in value:
            value = _SECOND_TABLE.sub(rb'\1"u"', value)
        messages.append((draw(keys), value))
    return messages


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_streams(), fail_fast=st.sampled_from([False, False, True]))
def test_convert_to_avro_rows_and_envelopes_is_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]], fail_fast: bool
) -> None:
    for to in (AvroFormat, DebeziumAvroFormat):
        _both(_kv(messages), to, fail_fast)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_streams())
def test_a_pipeline_stage_writes_the_rows_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    ours, theirs = _urls()
    columns = _stage(CdlJsonFormat({}, registry=ours), ours, messages)[0]
    assert columns == _stage(PerMessageCdl({}, registry=theirs), theirs, messages)[0]


def _example() -> bytes:
    return _EXAMPLE.read_bytes()


@pytest.mark.parametrize("to", [AvroFormat, DebeziumAvroFormat])
def test_the_example_s_inserts_and_updates_come_from_columns(to: type[Format]) -> None:
    _both(_example(), to)
    url = _urls()[0]
    fmt = CdlJsonFormat({}, registry=url)
    decoded: list[Any] = []
    per_message = fmt.decode
    fmt.decode = lambda message: decoded.append(message) or per_message(message)  # type: ignore[method-assign]
    out, _, letters, summary, _ = _convert(fmt, url, _example(), False, to=to)
    assert not letters, summary
    # the insert and the delete from columns; the Kafka tombstone the per-message way's
    assert [message.value for message in decoded] == [None], summary
    if to is AvroFormat:
        rows = AvroDeserializer(EmbeddedRegistry(url))
        first = orjson.loads(out.splitlines()[0])
        value = base64.b64decode(first["value"])
        row = rows(value, SerializationContext("t", MessageField.VALUE))
        assert row == {"count1": 14, "id": 35, "time1": None, "decimalNum": None}


_ROWS_PROTO = """syntax = "proto3";
package cdl;
import "google/protobuf/timestamp.proto";
message Row { optional int64 count1 = 1; int32 id = 2; TIME time1 = 3;
  optional string decimalNum = 4; }
"""


@pytest.mark.parametrize(
    ("time", "per_message"),
    [
        ("google.protobuf.Timestamp", ["in.jsonl:3"]),
        # CDL's timestamp text is a timestamp column, which the Protobuf columns write
        # into a Timestamp only: into a string, its row goes the per-message way
        ("optional string", ["in.jsonl:1", "in.jsonl:3"]),
    ],
)
def test_protobuf_rows_of_the_example_come_from_columns(
    tmp_path: Path, time: str, per_message: list[str]
) -> None:
    (tmp_path / "row.proto").write_text(_ROWS_PROTO.replace("TIME", time))
    options = {"value.schema": str(tmp_path / "row.proto")}
    found = []
    for source in (CdlJsonFormat, PerMessageCdl):
        url = _urls()[0]
        fmt = source({}, registry=url)
        decoded: list[Any] = []
        original = fmt.decode
        fmt.decode = lambda m, d=decoded, p=original: d.append(m) or p(m)  # type: ignore[method-assign,misc]
        _, named, letters, summary, registered = _convert(
            fmt, url, _example(), False, options, ProtobufFormat
        )
        assert not letters, summary
        found.append((named, summary, registered, [m.where for m in decoded]))
    assert found[0][:3] == found[1][:3]
    assert found[1][3] == ["in.jsonl:1", "in.jsonl:2", "in.jsonl:3"]
    assert found[0][3] == per_message  # the Kafka tombstone (line 3) is the per-message way's


def test_what_is_served() -> None:
    url = "memory://cdl-served"
    cdl = CdlJsonFormat({}, registry=url)
    pairs = {
        AvroFormat({}, registry=url): CdlToAvroRows,
        ProtobufFormat({}, registry=url): CdlToProtobufRows,
        DebeziumAvroFormat({}, registry=url): CdlToDebeziumAvro,
    }
    for destination, converter in pairs.items():
        assert type(columns_for(cdl, destination)) is converter
    assert type(columns_for(CdlJsonFormat({}), DebeziumJsonFormat({}))) is CdlToDebeziumJson
    # another registry than the source's, or key.fields: the per-message way
    assert columns_for(cdl, AvroFormat({}, registry="memory://other")) is None
    keyed = CdlJsonFormat({"key.fields": "id"}, registry=url)
    assert columns_for(keyed, AvroFormat({}, registry=url)) is None
    assert columns_for(PerMessageCdl({}, registry=url), AvroFormat({}, registry=url)) is None
