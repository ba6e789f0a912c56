"""Records' keys and payloads schema-encoded through the registry, and decoded back."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.registry import SchemaRegistry, open_registry
from cdc_connectors.registry.serde import RecordDecoder, RecordEncoder
from cdc_connectors.registry.store import SchemaStore, UnknownSchema
from cdc_connectors.schema import framing

from .conftest import InProcessServer

VALUE = SerializationContext("orders", MessageField.VALUE)
KEY = SerializationContext("orders", MessageField.KEY)

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    ],
}
ORDER_KEY = {
    "type": "record",
    "name": "OrderKey",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}],
}
ROW = {
    "id": 2**40 + 1,
    "note": "gift",
    "amount": Decimal("12.30"),
    "at": "2025-01-02T03:04:05.123456+00:00",
    "day": "2025-01-02",
}


@pytest.fixture(params=["memory", "http"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SchemaRegistry]:
    """The embedded registry in this process, and the same store served over real HTTP."""
    if request.param == "memory":
        reg = open_registry(f"memory://{uuid.uuid4().hex}")
        yield reg
        reg.close()
    else:
        server = InProcessServer(f"sqlite:///{tmp_path}/registry.db")
        reg = open_registry(server.url)
        yield reg
        reg.close()
        server.stop()


def _record(row: dict | None = None, key: dict | None = None) -> Record:
    return Record.new("create", key=key, after=dict(row or ROW), collection="shop.orders")


def _named(record: Record, subject: str, version: int, part: str = "payload") -> Record:
    metadata = record.metadata.copy()
    framing.set_conduit_schema(metadata, part, subject, version)  # type: ignore[arg-type]
    return replace(record, metadata=metadata)


# --- interop with confluent-kafka's serializers -----------------------------------------------


def test_confluent_reads_what_we_write(registry: SchemaRegistry):
    store = SchemaStore(registry)
    store.register("orders-value", json.dumps(ORDER))
    store.register("orders-key", json.dumps(ORDER_KEY))
    record = _named(_record(key={"id": ROW["id"]}), "orders-value", 1)
    record = _named(record, "orders-key", 1, "key")
    encoded = RecordEncoder(store, framing="confluent").encode(record)
    value = AvroDeserializer(registry)(encoded.payload.after, VALUE)
    assert value["id"] == ROW["id"] and value["amount"] == Decimal("12.30")
    assert value["at"].isoformat() == ROW["at"] and value["day"].isoformat() == ROW["day"]
    assert AvroDeserializer(registry)(encoded.key, KEY) == {"id": ROW["id"]}


def test_we_read_what_confluent_writes(registry: SchemaRegistry):
    serializer = AvroSerializer(registry, json.dumps(ORDER))
    import datetime as dt

    native = dict(
        ROW, at=dt.datetime.fromisoformat(ROW["at"]), day=dt.date.fromisoformat(ROW["day"])
    )
    value = serializer(native, VALUE)
    key = AvroSerializer(registry, json.dumps(ORDER_KEY))({"id": 5}, KEY)
    record = Record.new("create", key=key, after=value)
    decoded = RecordDecoder(SchemaStore(registry)).decode(record)
    assert decoded.payload.after == ROW
    assert decoded.key == {"id": 5}


def test_conduit_framing_is_plain_avro_of_the_named_version(registry: SchemaRegistry):
    store = SchemaStore(registry)
    store.register("orders-value", json.dumps(ORDER))
    encoded = RecordEncoder(store).encode(_named(_record(), "orders-value", 1))
    body = encoded.payload.after
    assert (isinstance(body, bytes) and body[:1] != b"\x00") or body[1:5] != b"\x00\x00\x00\x01"
    text = registry.get_version("orders-value", 1).schema.schema_str
    plain = fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(json.loads(text)))
    assert plain["amount"] == Decimal("12.30") and plain["id"] == ROW["id"]
    assert RecordDecoder(store).decode(encoded).payload.after == ROW


# --- schema evolution -------------------------------------------------------------------------

V1 = {
    "type": "record",
    "name": "Item",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "legacy", "type": "string", "default": ""},
    ],
}
V2 = {
    "type": "record",
    "name": "Item",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "legacy", "type": "string", "default": ""},
        {"name": "colour", "type": "string", "default": "none"},
    ],
}
V3 = {
    "type": "record",
    "name": "Item",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "colour", "type": "string", "default": "none"},
    ],
}


def _stream(registry: SchemaRegistry) -> list[Record]:
    store = SchemaStore(registry)
    rows = [
        (V1, {"id": 1, "legacy": "a"}),
        (V2, {"id": 2, "legacy": "b", "colour": "red"}),
        (V3, {"id": 2**40, "colour": "blue"}),
        (V1, {"id": 4, "legacy": "d"}),
    ]
    out = []
    for schema, row in rows:
        version = store.register("items-value", json.dumps(schema)).version
        assert version is not None
        out.append(RecordEncoder(store).encode(_named(_record(row), "items-value", version)))
    return out


def test_several_writer_versions_decode_into_the_latest(registry: SchemaRegistry):
    stream = _stream(registry)
    decoder = RecordDecoder(SchemaStore(registry), reader="latest")
    rows = [decoder.decode(r).payload.after for r in stream]
    assert rows == [
        {"id": 1, "colour": "none"},
        {"id": 2, "colour": "red"},
        {"id": 2**40, "colour": "blue"},
        {"id": 4, "colour": "none"},
    ]


def test_a_pinned_reader_version(registry: SchemaRegistry):
    stream = _stream(registry)
    decoder = RecordDecoder(SchemaStore(registry), reader=2)
    assert decoder.decode(stream[0]).payload.after == {"id": 1, "legacy": "a", "colour": "none"}
    # version 3 wrote a long: version 2 reads an int, so that message is an error naming both
    with pytest.raises(CodecError, match=r"'items-value' version 3 .*'items-value' version 2"):
        decoder.decode(stream[2])


def test_the_reader_is_fixed_when_the_read_starts(registry: SchemaRegistry):
    stream = _stream(registry)
    store = SchemaStore(registry)
    decoder = RecordDecoder(store, reader="latest")
    assert decoder.decode(stream[0]).payload.after == {"id": 1, "colour": "none"}
    v4 = dict(V3, fields=[*V3["fields"], {"name": "size", "type": "int", "default": 0}])
    store.register("items-value", json.dumps(v4))
    assert decoder.decode(stream[1]).payload.after == {"id": 2, "colour": "red"}
    assert RecordDecoder(store, reader="latest").decode(stream[1]).payload.after == {
        "id": 2,
        "colour": "red",
        "size": 0,
    }


def test_an_incompatible_writer_is_an_error_naming_both_versions(registry: SchemaRegistry):
    registry.set_compatibility("clash-value", "NONE")
    store = SchemaStore(registry)
    store.register("clash-value", json.dumps(V1))
    bad = {"type": "record", "name": "Item", "fields": [{"name": "id", "type": "string"}]}
    store.register("clash-value", json.dumps(bad))
    good = RecordEncoder(store).encode(_named(_record({"id": 1}), "clash-value", 1))
    with pytest.raises(CodecError, match=r"version 1 .* version 2"):
        RecordDecoder(store, reader="latest").decode(good)


def test_several_subjects_each_to_their_own_reader(registry: SchemaRegistry):
    store = SchemaStore(registry)
    store.register("a-value", json.dumps(V1))
    store.register("a-value", json.dumps(V2))
    other = {"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]}
    store.register("b-value", json.dumps(other))
    wide = {**other, "fields": [*other["fields"], {"name": "y", "type": "int", "default": 9}]}
    store.register("b-value", json.dumps(wide))
    a = RecordEncoder(store).encode(_named(_record({"id": 1, "legacy": "z"}), "a-value", 1))
    b = RecordEncoder(store).encode(_named(_record({"x": 3}), "b-value", 1))
    decoder = RecordDecoder(store, reader="latest")
    assert decoder.decode(a).payload.after == {"id": 1, "legacy": "z", "colour": "none"}
    assert decoder.decode(b).payload.after == {"x": 3, "y": 9}


def test_confluent_framed_evolution_by_subject_strategy(registry: SchemaRegistry):
    store = SchemaStore(registry)
    old = store.register("orders-value", json.dumps(V1))
    store.register("orders-value", json.dumps(V2))
    body = framing.frame(old.schema_id, fastavro_body(V1, {"id": 7, "legacy": "q"}))
    decoder = RecordDecoder(store, reader="latest", subject_strategy="topic", topic="orders")
    decoded = decoder.decode(Record.new("create", after=body))
    assert decoded.payload.after == {"id": 7, "legacy": "q", "colour": "none"}
    with pytest.raises(CodecError, match="names no subject"):
        RecordDecoder(store, reader="latest").decode(Record.new("create", after=body))


def fastavro_body(schema: dict, row: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), row)
    return out.getvalue()


# --- bad input: an error with the reason and the bytes, never a crash -------------------------


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x00\x00\x00\x00", "truncated"),
        (b"\x00\x00\x00\x03\xe7\x02", "schema id 999 is not in the schema registry"),
        (b"\x01abc", "truncated"),
    ],
)
def test_garbage_is_an_error_that_keeps_the_bytes(
    registry: SchemaRegistry, data: bytes, reason: str
):
    with pytest.raises(CodecError, match=reason) as caught:
        RecordDecoder(SchemaStore(registry)).decode(Record.new("create", after=data))
    assert caught.value.data == data


def test_an_unknown_schema_of_a_registry_holding_none_says_so(registry: SchemaRegistry):
    """A store at a mistyped path is created empty: each message's error says the registry
    holds no schema at all; once it holds one, an unknown id is only that."""
    store = SchemaStore(registry)
    with pytest.raises(UnknownSchema) as caught:
        store.by_id(7)
    assert str(caught.value).endswith(
        "schema id 7 is not in the schema registry (Schema 7 not found): the registry "
        "holds no schema at all; is it the one the messages were written with?"
    ), caught.value
    store.register("items-value", json.dumps(V1))
    with pytest.raises(UnknownSchema) as caught:
        store.by_id(999)
    assert "holds no schema" not in str(caught.value)


class _Counting:
    """A registry whose subjects cannot be listed (an HTTP error, a timeout), counting asks."""

    def __init__(self, registry: SchemaRegistry, fails: bool):
        self.registry, self.fails, self.asked = registry, fails, 0

    def get_subjects(self) -> list[str]:
        self.asked += 1
        if self.fails:
            raise OSError("timed out")
        return list(self.registry.get_subjects())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.registry, name)


@pytest.mark.parametrize("fails", [True, False])
def test_the_registry_is_asked_whether_it_is_empty_once_for_many_unknown_schemas(fails: bool):
    registry = open_registry(f"memory://{uuid.uuid4().hex}")
    counting = _Counting(registry, fails)
    store = SchemaStore(counting)  # type: ignore[arg-type]
    for schema_id in range(1, 6):
        with pytest.raises(UnknownSchema) as caught:
            store.by_id(schema_id)
        assert ("holds no schema" in str(caught.value)) is not fails
    assert counting.asked == 1  # (an empty one again after some seconds only)
    registry.close()


def test_bytes_that_do_not_match_the_schema(registry: SchemaRegistry):
    store = SchemaStore(registry)
    sid = store.register("items-value", json.dumps(V1)).schema_id
    decoder = RecordDecoder(store)
    truncated = framing.frame(sid, b"\x02")  # id, then the string length is missing
    with pytest.raises(CodecError, match="not Avro of its schema"):
        decoder.decode(Record.new("create", after=truncated))
    trailing = framing.frame(sid, fastavro_body(V1, {"id": 1, "legacy": ""}) + b"\x00")
    with pytest.raises(CodecError, match="1 bytes are left"):
        decoder.decode(Record.new("create", after=trailing))
    bad_utf8 = framing.frame(sid, b"\x02\x04\xff\xfe")
    with pytest.raises(CodecError, match="not Avro"):
        decoder.decode(Record.new("create", after=bad_utf8))


def test_a_version_the_registry_does_not_have(registry: SchemaRegistry):
    record = _named(Record.new("create", after=b"\x02"), "nothing-value", 3)
    with pytest.raises(UnknownSchema, match="'nothing-value' version 3"):
        RecordDecoder(SchemaStore(registry)).decode(record)


def test_raw_data_without_a_schema_passes_through(registry: SchemaRegistry):
    record = Record.new("create", key=b"plain", after=b"text")
    assert RecordDecoder(SchemaStore(registry)).decode(record) is record


def test_data_that_does_not_fit_its_schema_is_an_encode_error(registry: SchemaRegistry):
    store = SchemaStore(registry)
    store.register("orders-value", json.dumps(ORDER))
    bad = _named(_record(dict(ROW, amount=Decimal("1.234"))), "orders-value", 1)
    with pytest.raises(CodecError, match=r"payload.after does not fit .*'orders-value' version 1"):
        RecordEncoder(store).encode(bad)
    with pytest.raises(CodecError, match="not an ISO 8601"):
        RecordEncoder(store).encode(_named(_record(dict(ROW, at="soon")), "orders-value", 1))


def test_a_schema_is_registered_once_per_process(registry: SchemaRegistry):
    store = SchemaStore(registry)
    calls = []
    original = registry.register_schema_full_response

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args[0])
        return original(*args, **kwargs)

    registry.register_schema_full_response = counted  # type: ignore[method-assign]
    for _ in range(50):
        store.register("orders-value", json.dumps(ORDER))
    assert calls == ["orders-value"]
    assert registry.get_latest_version("orders-value").version == 1
    assert isinstance(registry.get_schema(1), Schema)


def test_inferred_schemas_are_registered_under_conduits_subjects(registry: SchemaRegistry):
    store = SchemaStore(registry)
    record = Record.new(
        "update",
        key={"id": 9},
        before={"id": 9, "tags": ["a"], "price": Decimal("1.5"), "gone": None},
        after={"id": 9, "tags": ["a", "b"], "price": Decimal("2.25"), "gone": None},
        collection="shop.orders",
    )
    encoded = RecordEncoder(store, context="orders:source").encode(record)
    assert encoded.metadata.payload_schema_subject == "orders:source:shop.orders.payload"
    assert encoded.metadata.key_schema_subject == "orders:source:shop.orders.key"
    assert encoded.metadata.payload_schema_version == 1
    text = registry.get_version("orders:source:shop.orders.payload", 1).schema.schema_str
    schema = json.loads(text)
    assert schema["name"] == "record" and [f["name"] for f in schema["fields"]] == [
        "gone",
        "id",
        "price",
        "tags",
    ]
    # Plain Avro: a bare fastavro read of the registered schema gives the row back.
    after = fastavro.schemaless_reader(
        io.BytesIO(encoded.payload.after), fastavro.parse_schema(schema)
    )
    assert after == {"gone": None, "id": 9, "price": Decimal("2.25"), "tags": ["a", "b"]}
    key_text = registry.get_version("orders:source:shop.orders.key", 1).schema.schema_str
    key = fastavro.schemaless_reader(
        io.BytesIO(encoded.key), fastavro.parse_schema(json.loads(key_text))
    )
    assert key == {"id": 9}
    assert RecordDecoder(store).decode(encoded).payload.before == record.payload.before


def test_a_number_that_inference_cannot_hold_is_an_error(registry: SchemaRegistry):
    record = Record.new("create", after={"n": 2**64 - 1}, collection="c")
    with pytest.raises(CodecError, match=r"payload.*2\*\*|does not fit an Avro long"):
        RecordEncoder(SchemaStore(registry)).encode(record)


def test_a_key_the_schema_lacks_is_refused_not_dropped(registry: SchemaRegistry):
    store = SchemaStore(registry)
    store.register("orders-value", json.dumps(ORDER))
    extra = _named(_record(dict(ROW, ref=2**53 + 1)), "orders-value", 1)
    with pytest.raises(
        CodecError,
        match=r"payload.after does not fit its Avro schema: ref: not a field of the Avro record",
    ):
        RecordEncoder(store).encode(extra)


def test_decimal_text_is_read_exactly(registry: SchemaRegistry):
    store = SchemaStore(registry)
    store.register("orders-value", json.dumps(ORDER))
    text = _named(_record(dict(ROW, amount="12.30")), "orders-value", 1)
    encoded = RecordEncoder(store).encode(text)
    assert RecordDecoder(store).decode(encoded).payload.after["amount"] == Decimal("12.30")
    for bad in ("12.345", "lots", "NaN"):
        with pytest.raises(CodecError, match=r"amount|decimal|Scale"):
            RecordEncoder(store).encode(_named(_record(dict(ROW, amount=bad)), "orders-value", 1))


def test_an_inferred_timestamp_is_written_and_read(registry: SchemaRegistry):
    import datetime as dt

    at = dt.datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    store = SchemaStore(registry)
    encoded = RecordEncoder(store).encode(Record.new("create", after={"at": at}, collection="c"))
    assert RecordDecoder(store).decode(encoded).payload.after == {"at": at.isoformat()}


def _guid_frame(registry: SchemaRegistry, schema_id: int, body: bytes) -> bytes:
    guid = registry.get_schema_guid(schema_id)  # type: ignore[attr-defined]
    return b"\x01" + uuid.UUID(guid).bytes + body


def test_guid_framed_writers_resolve_each_to_the_reader(registry: SchemaRegistry):
    if not hasattr(registry, "get_schema_guid"):
        pytest.skip("the HTTP client finds GUIDs through the server; the store covers it")
    registry.set_compatibility("g-value", "NONE")
    store = SchemaStore(registry)
    one = store.register("g-value", json.dumps(V1))
    bad = {"type": "record", "name": "Item", "fields": [{"name": "id", "type": "string"}]}
    clash = store.register("g-value", json.dumps(bad))
    store.register("g-value", json.dumps(V2))
    good = _guid_frame(registry, one.schema_id, fastavro_body(V1, {"id": 3, "legacy": "g"}))
    wrong = _guid_frame(registry, clash.schema_id, fastavro_body(bad, {"id": "x"}))
    decoder = RecordDecoder(store, reader="latest", subject_strategy="topic", topic="g")
    for _ in range(2):  # the answer for one GUID is not the answer for another
        assert decoder.decode(Record.new("create", after=good)).payload.after == {
            "id": 3,
            "legacy": "g",
            "colour": "none",
        }
        with pytest.raises(CodecError, match=r"'g-value' version 2 .* 'g-value' version 3"):
            decoder.decode(Record.new("create", after=wrong))


def test_confluent_framing_leaves_no_metadata_that_would_misread_the_bytes(
    registry: SchemaRegistry,
):
    store = SchemaStore(registry)
    store.register("orders-value", json.dumps(ORDER))
    named = _named(_record(), "orders-value", 1)  # a version named by the input record
    encoded = RecordEncoder(store, framing="confluent").encode(named)
    assert encoded.metadata.payload_schema_subject is None
    assert RecordDecoder(store).decode(encoded).payload.after == ROW
    inferred = RecordEncoder(store, framing="confluent").encode(
        Record.new("create", key={"id": 1}, after={"id": 1}, collection="c")
    )
    assert inferred.metadata.key_schema_subject is None
    decoded = RecordDecoder(store).decode(inferred)
    assert decoded.key == {"id": 1} and decoded.payload.after == {"id": 1}
    metadata_only = RecordEncoder(store, encode=False).encode(
        Record.new("create", after={"id": 1}, collection="c")
    )
    assert metadata_only.metadata.payload_schema_subject == "c.payload"


@pytest.mark.parametrize("name", ["record", "topic-record"])
def test_record_strategies_refuse_inferred_schemas(registry: SchemaRegistry, name: str):
    encoder = RecordEncoder(SchemaStore(registry), subject_strategy=name, topic="t")
    with pytest.raises(CodecError, match="inferred schemas are all named 'record'"):
        encoder.encode(Record.new("create", after={"id": 1}))
