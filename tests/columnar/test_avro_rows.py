"""``convert --from debezium-json --to avro`` with a registry writes from columns: the same
message bytes, dead letters, counts and registered schemas as the per-message way, on
generated streams; what it writes, confluent-kafka's ``AvroDeserializer`` reads."""

from __future__ import annotations

import base64
import io
import itertools
import re
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar import avro_rows
from cdc_connectors.columnar.avro_rows import AvroRows
from cdc_connectors.columnar.choose import columns_for, serves
from cdc_connectors.columnar.debezium_avro_rows import DebeziumToAvroRows
from cdc_connectors.convert import engine
from cdc_connectors.convert.deadletter import DeadLetterWriter
from cdc_connectors.convert.engine import FailFast, convert_stream
from cdc_connectors.formats.avro import AvroFormat
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
from cdc_connectors.formats.protobuf import ProtobufFormat
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.pipeline.plan import SourceFormat, converter
from cdc_connectors.registry.embedded import EmbeddedRegistry
from tests.columnar.debezium_batches import KEY_SCHEMA, batches
from tests.columnar.test_convert_columns import _stream
from tests.columnar.test_pipeline_columns import _raw
from tests.hypothesis_profiles import examples

_REGISTRIES = itertools.count()


class PerMessageDebezium(DebeziumJsonFormat):
    """Debezium JSON as is, with a hook of its own, which the columns do not serve."""

    def extra_metadata(self, payload: Mapping[str, Any], metadata: Metadata) -> None:
        super().extra_metadata(payload, metadata)


@pytest.fixture(autouse=True)
def _fixed_clock_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)
    monkeypatch.setattr(engine, "CHUNK", 9)  # several chunks per stream


def _kv(messages: list[tuple[bytes | None, bytes | None]]) -> bytes:
    return _stream(messages, kv=True)


def _convert(
    source: Format,
    url: str,
    data: bytes,
    fail_fast: bool,
    options: dict[str, str] | None = None,
    to: type[Format] = AvroFormat,
) -> tuple[bytes, list[Any], bytes, str, list[tuple[str, int, str]]]:
    registry = EmbeddedRegistry(url)  # (a memory:// store lives while a client is open)
    out, letters = io.BytesIO(), io.BytesIO()
    try:
        stats = convert_stream(
            io.BytesIO(data),
            out,
            source,
            to(options or {}, registry=url),
            kv_in=True,
            kv_out=True,
            dead_letters=DeadLetterWriter(letters, "convert"),
            fail_fast=fail_fast,
            source_name="in.jsonl",
        )
    except FailFast as stop:
        stats = stop.stats
    named: list[Any] = out.getvalue().splitlines()
    if to in (AvroFormat, DebeziumAvroFormat, ProtobufFormat):
        named = [
            {part: _named(registry, line[part]) for part in ("key", "value")}
            for line in map(orjson.loads, named)
        ]
    registered = [
        (subject, version, registry.get_version(subject, version).schema.schema_str)
        for subject in registry.get_subjects()
        for version in registry.get_versions(subject)
    ]
    summary = f"{replace(stats, per_message=None).summary()} {stats.first_errors}"
    return out.getvalue(), named, letters.getvalue(), summary, registered


def _named(registry: EmbeddedRegistry, data: str | None) -> tuple[str, bytes] | None:
    """A message's schema (its text: the ids a registry gives depend on the order schemas
    come in, which the columns change) and body."""
    if data is None:
        return None
    return _unframed(registry, base64.b64decode(data))


def _unframed(registry: EmbeddedRegistry, message: bytes) -> tuple[str, bytes]:
    """``message`` as (the text of the schema its frame names, body); ("", message) for a
    message framed by no schema of the registry (a raw key)."""
    if message.startswith(b"\x00") and len(message) >= 5:
        try:
            schema = registry.get_schema(int.from_bytes(message[1:5], "big"))
        except SchemaRegistryError:
            return ("", message)
        return schema.schema_str, message[5:]
    return ("", message)


def _both(
    data: bytes,
    fail_fast: bool = False,
    options: dict[str, str] | None = None,
    to: type[Format] = AvroFormat,
) -> None:
    ours, theirs = (
        f"memory://avro-rows-{next(_REGISTRIES)}",
        f"memory://avro-rows-{next(_REGISTRIES)}",
    )
    columns = _convert(DebeziumJsonFormat({}, registry=ours), ours, data, fail_fast, options, to)
    per_message = _convert(
        PerMessageDebezium({}, registry=theirs), theirs, data, fail_fast, options, to
    )
    assert columns[1:4] == per_message[1:4]
    if not fail_fast:
        # (failing fast, the columns may have registered the schemas of the rest of the
        # chunk of the message that stopped the run)
        assert columns[4] == per_message[4]


_BLOCK_KEYS = st.one_of(
    st.integers(-(2**60), 2**60).map(
        lambda n: orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": n}})
    ),
    st.sampled_from(
        [
            orjson.dumps({"schema": KEY_SCHEMA, "payload": None}),
            orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": "one"}}),
            orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": 12345678901234567890}}),
            b'{"schema":{"type":"struct","fields":[{"type":"int64","field":"id"}]},"payload":5}',
        ]
    ),
)
_RAW_KEYS = st.none() | st.binary(max_size=6).filter(lambda k: not k.startswith(b"{"))
_SECOND_TABLE = re.compile(rb'("table"\s*:\s*)"t"')


@st.composite
def _streams(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """Batches of Debezium JSON events whose subjects each see one kind of schema: the
    second envelope schema of a batch is another table's, and the keys of a batch are all
    keys with a schema block (some of which the per-message way refuses), raw, or none.
    (Two schemas of one subject that the registry finds incompatible are registered in
    message order the per-message way, by envelope and key kind from columns: which one it
    refuses may differ, as the README says.)"""
    keys = draw(st.sampled_from([_BLOCK_KEYS, _RAW_KEYS]))
    messages = []
    for _, value in draw(batches(lines=True)):
        if value is not None and b"u.Envelope" in value:
            value = _SECOND_TABLE.sub(rb'\1"u"', value)
        messages.append((draw(keys), value))
    return messages


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_streams(), fail_fast=st.sampled_from([False, False, True]))
def test_columns_give_the_rows_dead_letters_and_schemas_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]], fail_fast: bool
) -> None:
    _both(_kv(messages), fail_fast)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_streams(), fail_fast=st.sampled_from([False, False, True]))
def test_opencdc_with_a_registry_names_the_schemas_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]], fail_fast: bool
) -> None:
    """With a registry, keys of a schema block are written from columns too, their schema
    named in each record's metadata (``opencdc.key.schema.*``)."""
    for to in (OpenCDCProtoFormat, OpenCDCJsonFormat, DebeziumJsonFormat):
        _both(_kv(messages), fail_fast, to=to)


@pytest.mark.parametrize("to", [OpenCDCProtoFormat, OpenCDCJsonFormat, DebeziumJsonFormat])
def test_opencdc_keys_of_a_schema_block_with_a_registry_are_written_from_columns(
    to: type[Format],
) -> None:
    data = _good_stream(30)
    _both(data, to=to)
    url = f"memory://avro-rows-{next(_REGISTRIES)}"
    fmt = DebeziumJsonFormat({}, registry=url)
    decoded: list[object] = []
    fmt.decode = decoded.append  # type: ignore[assignment,method-assign]
    out, _, letters, summary, _ = _convert(fmt, url, data, False, to=to)
    assert not decoded and not letters, summary
    if to is OpenCDCJsonFormat:
        metadata = orjson.loads(out.splitlines()[0])["value"]["metadata"]
        assert metadata["opencdc.key.schema.subject"] == "shop.public.orders.key"
        assert metadata["opencdc.payload.schema.subject"] == "shop.public.orders.payload"


def _lines(count: int) -> list[bytes]:
    from bench.bench_debezium import lines

    return lines(count)


def _good_stream(count: int) -> bytes:
    key_schema = {**KEY_SCHEMA, "name": "shop.public.orders.Key"}
    return _kv(
        [
            (orjson.dumps({"schema": key_schema, "payload": {"id": n}}), line)
            for n, line in enumerate(_lines(count))
        ]
    )


def test_a_stream_of_good_messages_is_written_from_columns_and_confluent_reads_it() -> None:
    data = _good_stream(30)
    _both(data)
    url = f"memory://avro-rows-{next(_REGISTRIES)}"
    fmt = DebeziumJsonFormat({}, registry=url)
    decoded: list[object] = []
    fmt.decode = decoded.append  # type: ignore[assignment,method-assign]
    out, _, letters, summary, registered = _convert(fmt, url, data, False)
    assert not decoded and not letters, summary
    assert {subject for subject, _, _ in registered} == {
        "shop.public.orders.payload",
        "shop.public.orders.key",
        "shop.public.orders-value",
        "shop.public.orders-key",
    }
    rows = AvroDeserializer(EmbeddedRegistry(url))
    lines = [orjson.loads(line) for line in out.splitlines()]
    assert len(lines) == 30
    first = lines[0]
    value = rows(base64.b64decode(first["value"]), SerializationContext("t", MessageField.VALUE))
    key = rows(base64.b64decode(first["key"]), SerializationContext("t", MessageField.KEY))
    assert key == {"id": 0}
    assert set(value) >= {"id", "amount", "created_at"}


def test_a_topic_option_names_the_subjects_as_the_per_message_way() -> None:
    _both(_good_stream(12), options={"topic": "orders"})


def test_only_a_registry_shared_with_the_source_and_no_schema_files_are_served(
    tmp_path: Any,
) -> None:
    source = DebeziumJsonFormat({}, registry="memory://served")
    assert serves(source, AvroFormat({}, registry="memory://served"))
    assert not serves(DebeziumJsonFormat({}), AvroFormat({}, registry="memory://served"))
    assert not serves(source, AvroFormat({}, registry="memory://other"))
    assert not serves(source, AvroFormat({"raw.keys": "true"}, registry="memory://served"))
    schema = tmp_path / "row.avsc"
    schema.write_text('{"type":"record","name":"R","fields":[{"name":"id","type":"long"}]}')
    assert not serves(source, AvroFormat({"value.schema": str(schema)}, registry="memory://served"))
    assert isinstance(
        columns_for(source, AvroFormat({}, registry="memory://served")), DebeziumToAvroRows
    )


def test_a_double_too_large_for_a_float_field_is_refused() -> None:
    url = f"memory://avro-rows-{next(_REGISTRIES)}"
    fmt = AvroFormat({}, registry=url)
    schema = '{"type":"record","name":"R","namespace":"n","fields":[{"name":"f","type":"float"}]}'
    version = (
        EmbeddedRegistry(url).register_schema_full_response("c.payload", _avro(schema)).version
    )
    rows = AvroRows(fmt, "payload")
    data = pa.StructArray.from_arrays([pa.array([1.5, 1e39, -1e39, 3.0e38])], names=["f"])
    count = len(data)
    written, refused = rows.write(
        data,
        np.ones(count, dtype=bool),
        pa.array(["c.payload"] * count),
        pa.array([str(version)] * count),
        pa.array(["c"] * count),
    )
    assert refused.tolist() == [False, True, True, False]
    assert written[0].as_py()[5:] == b"\x00\x00\xc0\x3f"
    assert avro_rows._holds_float(pa.list_(pa.struct([("x", pa.float32())])))


def _avro(text: str) -> Any:
    from confluent_kafka.schema_registry import Schema

    return Schema(text, "AVRO")


def _stage(
    source: Format,
    url: str,
    messages: list[tuple[bytes | None, bytes | None]],
    to: type[Format] = AvroFormat,
    options: dict[str, str] | None = None,
) -> Any:
    """The rows of a fused pipeline stage (messages and dead letters, in order), each
    message's schema id replaced by its schema's text; and how many came the per-message
    way."""
    registry = EmbeddedRegistry(url)
    stage = converter(
        SourceFormat(source, "cdc-kafka", fail_fast=False),
        to(options or {}, registry=url),
        "p:out",
    )
    rows, per_message = [], 0
    for batch in stage(iter([_raw(messages)])):
        for row in batch.to_pylist():
            per_message += bool(row.pop("_per_message"))
            for part in ("_message_key", "_message_value"):
                data = row.get(part)
                if isinstance(data, bytes):
                    row[part] = _unframed(registry, data)
            rows.append(row)
    return rows, per_message


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_streams())
def test_a_pipeline_stage_writes_the_rows_and_dead_letters_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    ours, theirs = f"memory://stage-{next(_REGISTRIES)}", f"memory://stage-{next(_REGISTRIES)}"
    columns = _stage(DebeziumJsonFormat({}, registry=ours), ours, messages)[0]
    assert columns == _stage(PerMessageDebezium({}, registry=theirs), theirs, messages)[0]


def test_a_pipeline_stage_of_good_messages_takes_none_the_per_message_way() -> None:
    messages = [
        (orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": n}}), line)
        for n, line in enumerate(_lines(40))
    ]
    url = f"memory://stage-{next(_REGISTRIES)}"
    rows, per_message = _stage(DebeziumJsonFormat({}, registry=url), url, messages)
    assert len(rows) == 40 and per_message == 0
    assert all(row["_message_value"][0] and row["_message_key"][0] for row in rows)


def test_a_collection_of_any_text_and_a_first_key_that_is_refused() -> None:
    """A table named with NULs groups its rows as any other; a key whose payload the
    per-message way refuses, coming first, does not keep the columns from its schema."""
    lines = [
        line.replace(b'"table":"orders"', b'"table":"a\\u0000\\u0000b"') for line in _lines(12)
    ]
    keys = [orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": "one"}})]
    keys += [orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": n}}) for n in range(11)]
    data = _kv(list(zip(keys, lines, strict=True)))
    _both(data)
    url = f"memory://avro-rows-{next(_REGISTRIES)}"
    fmt = DebeziumJsonFormat({}, registry=url)
    decoded: list[object] = []
    original = fmt.decode

    def counted(message: Any) -> Any:
        decoded.append(message)
        return original(message)

    fmt.decode = counted  # type: ignore[method-assign]
    *_, summary, registered = _convert(fmt, url, data, False)
    assert len(decoded) == 1 and summary.startswith("read 12 messages, wrote 11 records")
    assert any(subject == "shop.public.a\x00\x00b-value" for subject, _, _ in registered)


def _to_debezium_json(cls: type[Format], source: str | None, destination: str | None, data: bytes):
    """``convert --to debezium-json`` of ``data`` with a registry for the source, the
    destination, both or neither: the messages and dead letters."""
    kept = [EmbeddedRegistry(url) for url in {source, destination} if url]
    out, letters = io.BytesIO(), io.BytesIO()
    convert_stream(
        io.BytesIO(data),
        out,
        cls({}, registry=source),
        DebeziumJsonFormat({}, registry=destination),
        kv_in=True,
        kv_out=True,
        dead_letters=DeadLetterWriter(letters, "convert"),
        source_name="in.jsonl",
    )
    del kept
    return out.getvalue(), letters.getvalue()


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_streams(), sides=st.sampled_from([(True, False), (False, True), (True, True)]))
def test_debezium_json_with_a_registry_on_either_side_is_the_per_message_way_s(
    messages: list[tuple[bytes | None, bytes | None]], sides: tuple[bool, bool]
) -> None:
    data = _kv(messages)
    found = []
    for cls in (DebeziumJsonFormat, PerMessageDebezium):
        source, destination = (
            f"memory://dj-{next(_REGISTRIES)}" if side else None for side in sides
        )
        found.append(_to_debezium_json(cls, source, destination, data))
    assert found[0] == found[1]
