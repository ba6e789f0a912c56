"""``convert --from debezium-json --to debezium-avro`` with a registry writes from columns:
the same message bytes, dead letters, counts and registered schemas as the per-message way,
on generated streams and on events whose metadata shapes the envelope (transactions, source
fields of every kind, names that are no Avro names); what it writes, confluent-kafka's
``AvroDeserializer`` reads."""

from __future__ import annotations

import base64
import itertools
import time
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar import debezium_avro_envelopes
from cdc_connectors.columnar.choose import columns_for, serves
from cdc_connectors.columnar.debezium_avro_envelopes import DebeziumToDebeziumAvro
from cdc_connectors.convert import engine
from cdc_connectors.formats.avro import AvroFormat
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.formats.debezium.ydb import YdbDebeziumJsonFormat
from cdc_connectors.registry.embedded import EmbeddedRegistry
from tests.columnar.debezium_batches import KEY_SCHEMA
from tests.columnar.test_avro_rows import (
    PerMessageDebezium,
    _convert,
    _good_stream,
    _kv,
    _lines,
    _stage,
    _streams,
)
from tests.hypothesis_profiles import examples

_URLS = itertools.count()


@pytest.fixture(autouse=True)
def _fixed_clock_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)
    monkeypatch.setattr(engine, "CHUNK", 9)  # several chunks per stream


def _url() -> str:
    return f"memory://debezium-avro-{next(_URLS)}"


def _both(data: bytes, fail_fast: bool = False, options: dict[str, str] | None = None) -> Any:
    """Both ways on ``data`` (kv lines): the same messages (each schema as its text), dead
    letters, summary and registered schemas; the columns' output."""
    ours, theirs = _url(), _url()
    columns = _convert(
        DebeziumJsonFormat({}, registry=ours), ours, data, fail_fast, options, DebeziumAvroFormat
    )
    per_message = _convert(
        PerMessageDebezium({}, registry=theirs),
        theirs,
        data,
        fail_fast,
        options,
        DebeziumAvroFormat,
    )
    assert columns[1:4] == per_message[1:4]
    if not fail_fast:
        # the same schemas under the same subjects; a subject's versions may be numbered in
        # another order where the messages of one chunk are spelt two ways (see the README)
        assert _schemas(columns[4]) == _schemas(per_message[4])
    return columns


def _schemas(registered: list[tuple[str, int, str]]) -> list[tuple[str, str]]:
    return sorted((subject, text) for subject, _, text in registered)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_streams(), fail_fast=st.sampled_from([False, False, True]))
def test_columns_give_the_envelopes_dead_letters_and_schemas_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]], fail_fast: bool
) -> None:
    _both(_kv(messages), fail_fast)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_streams())
def test_a_pipeline_stage_writes_the_envelopes_and_dead_letters_of_the_per_message_way(
    messages: list[tuple[bytes | None, bytes | None]],
) -> None:
    ours, theirs = _url(), _url()
    columns = _stage(DebeziumJsonFormat({}, registry=ours), ours, messages, DebeziumAvroFormat)
    per_message = _stage(
        PerMessageDebezium({}, registry=theirs), theirs, messages, DebeziumAvroFormat
    )
    assert columns[0] == per_message[0]


def test_a_stream_of_good_messages_is_written_from_columns_and_confluent_reads_it() -> None:
    data = _good_stream(30)
    _both(data)
    url = _url()
    fmt = DebeziumJsonFormat({}, registry=url)
    decoded: list[object] = []
    fmt.decode = decoded.append  # type: ignore[assignment,method-assign]
    out, _, letters, summary, registered = _convert(fmt, url, data, False, None, DebeziumAvroFormat)
    assert not decoded and not letters, summary
    assert {subject for subject, _, _ in registered} == {
        "shop.public.orders.payload",
        "shop.public.orders.key",
        "shop.public.orders-value",
        "shop.public.orders-key",
    }
    read = AvroDeserializer(EmbeddedRegistry(url))
    lines = [orjson.loads(line) for line in out.splitlines()]
    assert len(lines) == 30
    value = read(base64.b64decode(lines[0]["value"]), SerializationContext("t", MessageField.VALUE))
    key = read(base64.b64decode(lines[0]["key"]), SerializationContext("t", MessageField.KEY))
    assert key == {"id": 0}
    assert value["op"] in ("c", "u", "d", "r")
    assert value["source"]["table"] == "orders" and isinstance(value["source"]["ts_ms"], int)
    assert set(value["after"]) >= {"id", "amount", "created_at"}


def test_a_pipeline_stage_of_good_messages_takes_none_the_per_message_way() -> None:
    messages = [
        (orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": n}}), line)
        for n, line in enumerate(_lines(40))
    ]
    url = _url()
    rows, per_message = _stage(
        DebeziumJsonFormat({}, registry=url), url, messages, DebeziumAvroFormat
    )
    assert len(rows) == 40 and per_message == 0


def test_a_topic_option_and_another_strategy_name_the_subjects_as_the_per_message_way() -> None:
    _both(_good_stream(12), options={"topic": "orders"})
    _both(_good_stream(12), options={"subject.strategy": "topic-record"})


_ROW = {
    "type": "struct",
    "optional": True,
    "name": "t.Value",
    "fields": [
        {"type": "int64", "optional": False, "field": "id"},
        {"type": "string", "optional": True, "field": "note"},
    ],
}
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


def _event(source: dict[str, Any], n: int, **payload: Any) -> bytes:
    """A change event whose ``source`` block holds every field of ``source`` (typed by its
    value: a text, or a 64-bit integer), with a transaction block where ``payload`` has
    one."""
    fields = [
        {"type": "int64" if isinstance(v, int) else "string", "optional": True, "field": k}
        for k, v in source.items()
    ]
    envelope = [
        {**_ROW, "field": "before"},
        {**_ROW, "field": "after"},
        {"type": "struct", "optional": False, "name": "src", "fields": fields, "field": "source"},
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
    ]
    if "transaction" in payload:
        envelope.append({**_TRANSACTION, "field": "transaction"})
    schema = {"type": "struct", "optional": False, "name": "t.Envelope", "fields": envelope}
    body = {"before": None, "after": {"id": n, "note": None}, "source": source, "op": "c"}
    return orjson.dumps({"schema": schema, "payload": {**body, "ts_ms": 5, **payload}})


def test_metadata_that_shapes_the_envelope_gives_what_the_per_message_way_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Source fields of text and of 64-bit integers (and integers' text at the edges of a
    long), none naming a place or a time (the per-message way adds ``table`` and
    ``ts_ms``), transactions, and a source field whose name is no Avro name."""
    shop = {"db": "shop", "table": "t", "ts_ms": 1_700_000_000_000}
    sources = [
        shop,
        {**shop, "lsn": 2**63 - 1, "xmin": -(2**63), "seq": "9223372036854775808"},
        {**shop, "seq": "-9223372036854775809", "name": "0012", "other": "-0"},
        {"connector": "postgresql"},  # no place, no time
        {"connector": "postgresql", "ts_us": 1},  # a time, no place
        {**shop, "bad-name": "x"},  # no Avro name: a dead letter, the per-message way
    ]
    messages = []
    for n, source in enumerate(sources * 3):
        transaction = {"id": f"tx{n}", "total_order": n, "data_collection_order": 1}
        extra = {"transaction": transaction} if n % 2 else {}
        key = orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": n}})
        messages.append((key, _event(source, n, **extra)))
    # without a collection (no db, no table) no subject is named but by the topic option
    _, _, letters, summary, _ = _both(_kv(messages))
    assert summary.startswith("read 18 messages, wrote 9 records"), summary
    assert letters.count(b"\n") == 9
    written = []
    write = DebeziumToDebeziumAvro._write

    def counted(self: DebeziumToDebeziumAvro, *args: Any) -> Any:
        found = write(self, *args)
        written.append(0 if found is None else len(found.rows))
        return found

    monkeypatch.setattr(DebeziumToDebeziumAvro, "_write", counted)
    _, _, letters, summary, _ = _both(_kv(messages), options={"topic": "orders"})
    assert summary.startswith("read 18 messages, wrote 15 records"), summary
    assert letters.count(b"\n") == 3 and b"is no Avro field name" in letters
    assert sum(written) == 15  # every envelope written from columns


def test_only_a_registry_shared_with_the_source_is_served() -> None:
    url = _url()
    source = DebeziumJsonFormat({}, registry=url)
    assert serves(source, DebeziumAvroFormat({}, registry=url))
    assert isinstance(
        columns_for(source, DebeziumAvroFormat({}, registry=url)), DebeziumToDebeziumAvro
    )
    assert not serves(source, DebeziumAvroFormat({}, registry=_url()))
    assert not serves(DebeziumJsonFormat({}), DebeziumAvroFormat({}, registry=url))
    assert not serves(
        DebeziumJsonFormat({"key.fields": "id"}, registry=url), DebeziumAvroFormat({}, registry=url)
    )
    assert not isinstance(columns_for(source, AvroFormat({}, registry=url)), DebeziumToDebeziumAvro)


def test_a_long_is_written_as_avro_writes_it() -> None:
    values = np.array([0, -1, 1, 63, -64, 64, 2**31, -(2**63), 2**63 - 1], dtype=np.int64)
    matrix, sizes = debezium_avro_envelopes._long(values)
    written = [bytes(matrix[i, : sizes[i]]) for i in range(len(values))]
    import fastavro

    def avro(n: int) -> bytes:
        import io

        out = io.BytesIO()
        fastavro.schemaless_writer(out, "long", n)
        return out.getvalue()

    assert written == [avro(int(n)) for n in values]


def test_longs_are_the_texts_the_per_message_way_types_as_long() -> None:
    texts = pa.array(
        [
            "0",
            "-0",
            "12",
            "012",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "1.5",
            "",
            None,
            "99999999999999999999",
        ],
        pa.string(),
    )
    found = debezium_avro_envelopes._longs(texts).tolist()
    assert found == [True, True, True, False, True, False, True, False, False, False, False, False]


def test_envelope_schemas_are_registered_in_the_order_of_the_rows_written() -> None:
    """Rows of one schema block whose metadata gives two envelope schemas (a null ``lsn``
    is no metadata field) register them in the order of the rows written, after a dead
    letter (a double too large for its ``float`` column): a subject's versions are numbered
    as the per-message way numbers them. (Messages of different schema blocks are taken
    block by block: the README says what may differ.)"""
    row = {
        "type": "struct",
        "optional": True,
        "name": "t.Value",
        "fields": [
            {"type": "int64", "optional": False, "field": "id"},
            {"type": "float", "optional": True, "field": "x"},
        ],
    }

    fields = [
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": False, "field": "table"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {"type": "int64", "optional": True, "field": "lsn"},
    ]

    def event(n: int, x: float, source: dict[str, Any]) -> bytes:
        schema = {
            "type": "struct",
            "optional": False,
            "name": "t.Envelope",
            "fields": [
                {**row, "field": "before"},
                {**row, "field": "after"},
                {
                    "type": "struct",
                    "optional": False,
                    "name": "s",
                    "fields": fields,
                    "field": "source",
                },
                {"type": "string", "optional": False, "field": "op"},
            ],
        }
        payload = {"before": None, "after": {"id": n, "x": x}, "source": source, "op": "c"}
        return orjson.dumps({"schema": schema, "payload": payload})

    # one schema block: the metadata of a null lsn has no such field, so the envelopes differ
    shop = {"db": "shop", "table": "t", "ts_ms": 1_700_000_000_000, "lsn": None}
    values = [event(0, 1e39, shop), event(1, 1.5, {**shop, "lsn": 7}), event(2, 2.5, shop)]
    messages = [
        (orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": n}}), value)
        for n, value in enumerate(values)
    ]
    ours, theirs = _url(), _url()
    columns = _convert(
        DebeziumJsonFormat({}, registry=ours), ours, _kv(messages), False, None, DebeziumAvroFormat
    )
    per_message = _convert(
        PerMessageDebezium({}, registry=theirs),
        theirs,
        _kv(messages),
        False,
        None,
        DebeziumAvroFormat,
    )
    assert columns[1:] == per_message[1:]
    assert columns[3].startswith("read 3 messages, wrote 2 records"), columns[3]
    assert [version for subject, version, _ in columns[4] if subject == "shop.t-value"] == [1, 2]


def test_a_table_and_a_creation_time_are_added_as_the_per_message_way_adds_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """YDB's Debezium JSON names its collection by option and its time by ``step``: its
    ``source`` has no place and no time of its own, so the envelope gets ``table`` (the
    collection) and ``ts_ms``, ``ts_us``, ``ts_ns`` (the creation time), from columns as one
    by one."""
    row = {
        "type": "struct",
        "optional": True,
        "name": "t.Value",
        "fields": [{"type": "int64", "optional": False, "field": "id"}],
    }
    source = {
        "type": "struct",
        "optional": False,
        "name": "ydb.Source",
        "fields": [
            {"type": "string", "optional": False, "field": "connector"},
            {"type": "int64", "optional": False, "field": "step"},
            {"type": "int64", "optional": False, "field": "txId"},
        ],
    }
    schema = {
        "type": "struct",
        "optional": False,
        "name": "t.Envelope",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {**source, "field": "source"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    messages = []
    for n in range(6):
        change = {"connector": "ydb", "step": 1_670_792_400_890 + n, "txId": 5}
        payload = {"before": None, "after": {"id": n}, "source": change, "op": "u"}
        key = orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": n}})
        messages.append((key, orjson.dumps({"schema": schema, "payload": payload})))
    added = []
    record = debezium_avro_envelopes._Parts._record

    def counted(self: Any, block: Any, metadata: Any, taken: Any, prefix: str, first: Any) -> Any:
        added.extend(f["name"] for f in block["fields"] if prefix + f["name"] not in first)
        return record(self, block, metadata, taken, prefix, first)

    monkeypatch.setattr(debezium_avro_envelopes._Parts, "_record", counted)
    options = {"collection": "orders", "mode": "NEW_IMAGE"}
    ours, theirs = _url(), _url()
    columns = _convert(
        YdbDebeziumJsonFormat(options, registry=ours),
        ours,
        _kv(messages),
        False,
        None,
        DebeziumAvroFormat,
    )
    per_message = _convert(
        PerMessageYdb(options, registry=theirs),
        theirs,
        _kv(messages),
        False,
        None,
        DebeziumAvroFormat,
    )
    assert columns[1:] == per_message[1:]
    assert columns[3].startswith("read 6 messages, wrote 6 records"), columns[3]
    assert added == ["table", "ts_ms", "ts_us", "ts_ns"]
    read = AvroDeserializer(EmbeddedRegistry(ours))
    first = orjson.loads(columns[0].splitlines()[0])["value"]
    event = read(base64.b64decode(first), SerializationContext("t", MessageField.VALUE))
    assert event["source"]["table"] == "orders"
    assert event["source"]["ts_ms"] == 1_670_792_400_890
    assert event["source"]["ts_ns"] == 1_670_792_400_890_000_000


class PerMessageYdb(YdbDebeziumJsonFormat):
    """YDB's Debezium JSON as is, with a hook of its own, which the columns do not serve."""

    def extra_metadata(self, payload: Any, metadata: Any) -> None:
        super().extra_metadata(payload, metadata)
