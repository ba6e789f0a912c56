"""Schema-encoded payloads expanded to typed columns in a real local Spark, and encoded back."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql.types import DecimalType, LongType, StringType, TimestampType

from cdc_connectors.opencdc import Record
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.serde import RecordEncoder
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.schema import framing
from cdc_connectors.spark import records_dataframe
from cdc_connectors.spark.expand import encode, expand

pytestmark = pytest.mark.spark

AMOUNT = {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}
V1 = {
    "type": "record",
    "name": "Item",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "legacy", "type": "string", "default": ""},
        {"name": "amount", "type": AMOUNT},
    ],
}
V2 = {
    "type": "record",
    "name": "Item",
    "fields": [
        *V1["fields"],
        {"name": "colour", "type": ["null", "string"], "default": None},
    ],
}
V3 = {
    "type": "record",
    "name": "Item",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "amount", "type": AMOUNT},
        {"name": "colour", "type": ["null", "string"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}, "default": 0},
    ],
}
V4_INCOMPATIBLE = {"type": "record", "name": "Item", "fields": [{"name": "id", "type": "string"}]}


def _named(record: Record, subject: str, version: int) -> Record:
    metadata = record.metadata.copy()
    framing.set_conduit_schema(metadata, "payload", subject, version)
    return replace(record, metadata=metadata)


@pytest.fixture
def stream(tmp_path: Path) -> tuple[str, list[Record]]:
    """Records of subject items-value written by versions 1, 2, 3 and an incompatible 4."""
    url = f"sqlite:///{tmp_path}/registry.db"
    registry = open_registry(url)
    store = SchemaStore(registry)
    for schema in (V1, V2, V3):
        store.register("items-value", json.dumps(schema))
    registry.set_compatibility("items-value", "NONE")
    store.register("items-value", json.dumps(V4_INCOMPATIBLE))
    rows = [
        (1, {"id": 1, "legacy": "old", "amount": Decimal("1.10")}),
        (2, {"id": 2, "legacy": "x", "amount": Decimal("2.20"), "colour": "red"}),
        (
            3,
            {
                "id": 2**40,
                "amount": Decimal("-3.30"),
                "colour": None,
                "at": "2025-01-02T03:04:05.000006+00:00",
            },
        ),
        (4, {"id": "not a number"}),
        (1, {"id": 5, "legacy": "", "amount": Decimal("99999999.99")}),
    ]
    records = []
    for position, (version, row) in enumerate(rows):
        record = Record.new("create", position=b"%d" % position, key={"n": position}, after=row)
        records.append(RecordEncoder(store).encode(_named(record, "items-value", version)))
    # one more, Confluent-framed with version 2's id, no metadata
    v2_id = registry.get_version("items-value", 2).schema_id
    body = (
        RecordEncoder(store)
        .encode(
            _named(
                Record.new(
                    "create",
                    after={"id": 6, "legacy": "", "amount": Decimal("6"), "colour": "blue"},
                ),
                "items-value",
                2,
            )
        )
        .payload.after
    )
    records.append(Record.new("create", position=b"5", after=framing.frame(v2_id, body)))
    # and a record of another subject, which expand leaves out
    store.register("other-value", json.dumps({"type": "record", "name": "O", "fields": []}))
    records.append(
        RecordEncoder(store).encode(
            _named(Record.new("create", position=b"6", after={}), "other-value", 1)
        )
    )
    return url, records


def test_writer_versions_expand_to_one_typed_dataframe(spark, stream):  # type: ignore[no-untyped-def]
    url, records = stream
    df = expand(records_dataframe(spark, records), url, "items-value", reader=3)
    after = df.schema["after"].dataType
    assert after["id"].dataType == LongType()
    assert after["amount"].dataType == DecimalType(10, 2)
    assert after["colour"].dataType == StringType() and after["colour"].nullable
    assert after["at"].dataType == TimestampType()
    rows = {r.position: r for r in df.orderBy("position").collect()}
    assert set(rows) == {b"0", b"1", b"2", b"3", b"4", b"5"}  # other-value left out
    assert rows[b"0"].after.asDict() == {
        "id": 1,
        "amount": Decimal("1.10"),
        "colour": None,
        "at": rows[b"0"].after.at,
    }
    assert rows[b"0"].after.at.timestamp() == 0 and rows[b"0"].error is None
    assert rows[b"1"].after.colour == "red"
    assert rows[b"2"].after.id == 2**40 and rows[b"2"].after.amount == Decimal("-3.30")
    assert rows[b"4"].after.amount == Decimal("99999999.99")
    assert rows[b"5"].after.id == 6 and rows[b"5"].after.colour == "blue"
    # version 4 cannot be read as version 3: an error row naming both
    assert rows[b"3"].after is None
    assert "'items-value' version 4" in rows[b"3"].error
    assert "'items-value' version 3" in rows[b"3"].error


def test_failfast_stops_at_the_bad_row(spark, stream):  # type: ignore[no-untyped-def]
    url, records = stream
    df = expand(records_dataframe(spark, records), url, "items-value", reader=3, mode="FAILFAST")
    with pytest.raises(Exception, match="version 4"):
        df.collect()


def test_latest_reader_and_garbage(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path}/registry.db"
    store = SchemaStore(open_registry(url))
    store.register("items-value", json.dumps(V1))
    good = RecordEncoder(store).encode(
        _named(
            Record.new(
                "create", position=b"a", after={"id": 1, "legacy": "", "amount": Decimal(1)}
            ),
            "items-value",
            1,
        )
    )
    truncated = replace(
        good, position=b"b", payload=replace(good.payload, after=good.payload.after[:-1])
    )
    df = expand(records_dataframe(spark, [good, truncated]), url, "items-value")
    rows = {r.position: r for r in df.collect()}
    assert rows[b"a"].after.id == 1 and rows[b"a"].error is None
    assert rows[b"b"].after is None and "payload.after" in rows[b"b"].error


def test_typed_columns_encode_back_to_bytes_confluent_reads(spark, stream):  # type: ignore[no-untyped-def]
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    url, records = stream
    typed = expand(records_dataframe(spark, records), url, "items-value", reader=3)
    typed = typed.where("error IS NULL").select("position", "after")
    encoded = encode(typed, url, "items-value", "after", version=3)
    rows = sorted(encoded.collect(), key=lambda r: r.position)
    deserializer = AvroDeserializer(open_registry(url))
    context = SerializationContext("items", MessageField.VALUE)
    values = [deserializer(r.value, context) for r in rows]
    assert [v["id"] for v in values] == [1, 2, 2**40, 5, 6]
    assert values[2]["amount"] == Decimal("-3.30") and values[2]["at"].microsecond == 6
    assert all(r.error is None for r in rows)


PROTO_V1 = 'syntax = "proto3"; package shop; message Order { int64 id = 1; string name = 2; }'
PROTO_V2 = (
    'syntax = "proto3"; package shop; import "google/protobuf/timestamp.proto"; '
    "message Order { int64 id = 1; string name = 2; optional string tier = 3; "
    "google.protobuf.Timestamp at = 4; }"
)


def test_protobuf_writer_versions_expand_to_the_readers_columns(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    from confluent_kafka.schema_registry import Schema

    from cdc_connectors.schema.protobuf import from_dict, message_class

    url = f"sqlite:///{tmp_path}/registry.db"
    registry = open_registry(url)
    v1 = registry.register_schema("orders-value", Schema(PROTO_V1, "PROTOBUF"))
    v2 = registry.register_schema("orders-value", Schema(PROTO_V2, "PROTOBUF"))
    old = framing.frame(
        v1, from_dict({"id": 2**40, "name": "a"}, message_class(PROTO_V1)).SerializeToString(), [0]
    )
    new_row = {"id": 2, "name": "b", "tier": "gold", "at": "2025-01-02T03:04:05.000006+00:00"}
    new = framing.frame(v2, from_dict(new_row, message_class(PROTO_V2)).SerializeToString(), [0])
    broken = new[:-4] + b"\xff\xff\xff\xff"
    records = [
        Record.new("create", position=b"%d" % i, key={"n": i}, after=value)
        for i, value in enumerate([old, new, broken])
    ]
    df = expand(records_dataframe(spark, records), url, "orders-value")
    assert df.schema["after"].dataType["at"].dataType == TimestampType()
    rows = {r.position: r for r in df.collect()}
    assert rows[b"0"].after.id == 2**40 and rows[b"0"].after.tier is None
    assert rows[b"1"].after.tier == "gold" and rows[b"1"].after.at.microsecond == 6
    assert rows[b"2"].after is None and rows[b"2"].error


def test_keys_expand_too(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path}/registry.db"
    store = SchemaStore(open_registry(url))
    key_schema = {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "long"}]}
    store.register("orders-key", json.dumps(key_schema))
    encoder = RecordEncoder(store)
    records = []
    for i in range(3):
        metadata = Record.new("create").metadata.copy()
        framing.set_conduit_schema(metadata, "key", "orders-key", 1)
        records.append(
            encoder.encode(
                Record.new(
                    "create",
                    position=b"%d" % i,
                    key={"id": 10 + i},
                    after=b"raw",
                    metadata=dict(metadata),
                )
            )
        )
    df = expand(records_dataframe(spark, records), url, "orders-key", part="key")
    assert df.schema["key"].dataType["id"].dataType == LongType()
    assert sorted(r.key.id for r in df.collect()) == [10, 11, 12]
    assert "payload" in df.columns


def test_protobuf_typed_columns_encode_back(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    from confluent_kafka.schema_registry import Schema
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from cdc_connectors.schema.protobuf import from_dict, message_class

    url = f"sqlite:///{tmp_path}/registry.db"
    sid = open_registry(url).register_schema("orders-value", Schema(PROTO_V2, "PROTOBUF"))
    row = {"id": 2**50, "name": "b", "tier": "gold", "at": "2025-01-02T03:04:05.000006+00:00"}
    body = framing.frame(sid, from_dict(row, message_class(PROTO_V2)).SerializeToString(), [0])
    typed = expand(
        records_dataframe(spark, [Record.new("create", after=body)]), url, "orders-value"
    )
    (encoded,) = encode(typed.select("after"), url, "orders-value", "after").collect()
    assert encoded.error is None and encoded.value == body
    read = ProtobufDeserializer(message_class(PROTO_V2), {"use.deprecated.format": False})(
        encoded.value, SerializationContext("orders", MessageField.VALUE)
    )
    assert read.id == 2**50 and read.tier == "gold"


def test_misuse_is_refused_at_the_call_naming_what(spark, stream):  # type: ignore[no-untyped-def]
    """At once, before any row is read, instead of a Python worker's KeyError later."""
    url, records = stream
    df = records_dataframe(spark, records)
    with pytest.raises(Exception, match="version 4"):  # any case, as Spark's modes
        expand(df, url, "items-value", reader=3, mode="failfast").collect()
    for call, said in [
        (lambda: expand(spark.range(3), url, "items-value"), "df has no 'payload' column"),
        (
            lambda: expand(df.withColumnRenamed("payload", "p"), url, "items-value"),
            "df has no 'payload' column of OpenCDC data (struct<before, after>; its columns:",
        ),
        (lambda: expand(df.drop("key"), url, "items-key", part="key"), "df has no 'key' column"),
        (lambda: expand(None, url, "items-value"), "df must be a DataFrame of OpenCDC records"),
        (lambda: expand(df, None, "items-value"), "registry must be a non-empty string"),
        (lambda: expand(df, url, ""), "subject must be a non-empty string"),
        (lambda: expand(df, url, "items-value", error_column=""), "error_column must be"),
        (lambda: records_dataframe(spark, None), "records must be an iterable of Record"),
        (lambda: records_dataframe(spark, [{"operation": "create"}]), "record 0 is a dict"),
    ]:
        with pytest.raises((TypeError, ValueError)) as caught:
            call()
        assert said in str(caught.value)
