"""Protobuf bodies -> one Arrow struct array of the message's Spark type, and back."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.common.serde import SchemaId
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from cdc_connectors.schema.protobuf import from_dict, message_class, to_dict
from cdc_connectors.spark.proto_types import message_struct
from cdc_connectors.spark.protobuf_batch import ProtobufBatchDecoder, ProtobufBatchEncoder
from cdc_connectors.spark.variant import from_variant
from tests.hypothesis_profiles import examples
from tests.schema.test_protobuf_codec import (
    CUSTOMER,
    CUSTOMERS,
    FULL,
    MIXED,
    ORDER,
    REFERENCES,
    WELL_KNOWN,
)

UTC = datetime.UTC
UINT64_MAX = 2**64 - 1


def customer_class() -> Any:
    return message_class(CUSTOMER, REFERENCES)


def bodies(*rows: dict[str, Any]) -> list[bytes]:
    cls = customer_class()
    return [from_dict(row, cls).SerializeToString() for row in rows]


def test_the_arrow_type_is_the_one_spark_expects_for_the_struct():
    for cls in (customer_class(), message_class(ORDER)):
        array, _ = ProtobufBatchDecoder(cls).decode([cls().SerializeToString()], [0])
        expected = to_arrow_schema(message_struct(cls.DESCRIPTOR), timezone="UTC")
        assert pa.schema(list(array.type)).equals(expected, check_metadata=True)
    order = message_class(ORDER)
    arrow_type = ProtobufBatchDecoder(order).arrow_type
    assert arrow_type.field("customer").type == pa.string()  # not large_string
    assert arrow_type.field("created_at").type == pa.timestamp("us", tz="UTC")
    assert arrow_type.field("points").type == pa.decimal128(20, 0)
    assert arrow_type.field("id").type == pa.int64()


def test_values_come_out_exact_and_typed():
    array, errors = ProtobufBatchDecoder(customer_class()).decode(bodies(FULL, {}), [0, 0])
    assert errors == [None, None]
    full, empty = array.to_pylist()
    assert full["id"] == -(2**63) and full["s64"] == 2**63 - 1
    assert full["big"] == Decimal(UINT64_MAX) and full["cap"] == Decimal(UINT64_MAX)
    assert full["blob"] == b"\x00\xff\x10" and full["token"] == b""
    assert full["tier"] == "SILVER" and full["tiers"] == ["GOLD", "TIER_UNSPECIFIED"]
    assert full["address"] == {"street": "1 Main St", "zip": None}
    assert full["previous"][0] == {"street": "old", "zip": "12345"}
    assert dict(full["counters"]) == {"a": 2**63 - 1, "b": -1}
    assert dict(full["by_id"]) == {7: {"street": "s", "zip": "z"}}
    assert full["email"] == "a@example.com" and full["phone"] is None
    assert full["created_at"] == datetime.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)
    assert full["visits"][1] == datetime.datetime(9999, 12, 31, tzinfo=UTC)
    assert full["limit"] == -(2**63) and full["note"] == ""
    assert full["balance"] == {"currency": "EUR", "units": 2**63 - 1}
    assert from_variant(**full["extra"]) == {"a": 1.5, "b": [True, None, "x", {"c": 2.0}]}
    # unset: presence fields null, proto3 scalars their defaults
    assert empty["nickname"] is None and empty["address"] is None and empty["extra"] is None
    assert empty["created_at"] is None and empty["limit"] is None and empty["big"] == 0
    assert empty["tier"] == "TIER_UNSPECIFIED" and empty["previous"] == []


def test_garbage_bodies_become_null_rows_with_their_reasons():
    good = bodies({"id": 1}, {"id": 2})
    framed = SchemaId("PROTOBUF", 7, message_indexes=[0]).id_to_bytes() + good[1]
    truncated = bodies({"name": "a long enough name"})[0][:-3]
    messages = [good[0], b"\xff\xff\xff\xff\xff", framed, truncated, None, b"\x08\x01", b"xyz"]
    offsets = [0, 0, 6, 0, 0, 3, -1]
    array, errors = ProtobufBatchDecoder(customer_class()).decode(messages, offsets)
    assert array.is_valid().to_pylist() == [True, False, True, False, False, False, False]
    assert [row and row["id"] for row in array.to_pylist()] == [1, None, 2, None, None, None, None]
    assert errors[0] is None and errors[2] is None
    assert errors[1] is not None and errors[1].startswith(
        "not a test.v1.Customer message (5 bytes)"
    )
    assert errors[3] is not None and errors[3].startswith("not a test.v1.Customer message")
    assert errors[4] is None  # a tombstone: null, nothing wrong
    assert errors[5] == "offset 3 is outside the 2-byte message"
    assert errors[6] == "offset -1 is outside the 3-byte message"


def test_an_offset_past_the_end_is_an_error_not_an_empty_message():
    # b[5:] of a 3-byte body would parse as an empty (valid) message
    messages = bodies({"id": 1}, {"id": 2})
    offsets = [0, len(messages[1]) + 2]
    array, errors = ProtobufBatchDecoder(customer_class()).decode(messages, offsets)
    assert array.to_pylist()[1] is None
    assert errors == [None, f"offset {offsets[1]} is outside the {len(messages[1])}-byte message"]


def test_a_value_spark_cannot_hold_fails_only_its_row_and_names_the_field():
    cls = customer_class()
    late = cls(id=2)
    late.previous.add(street="x")
    late.visits.add(seconds=253402300800)  # 10000-01-01
    messages = [*bodies({"id": 1}), late.SerializeToString(), *bodies({"id": 3})]
    array, errors = ProtobufBatchDecoder(cls).decode(messages, [0, 0, 0])
    assert [row and row["id"] for row in array.to_pylist()] == [1, None, 3]
    assert errors[0] is None and errors[2] is None
    assert errors[1] == "visits: Timestamp 253402300800s 0ns is outside years 1..9999"


def test_a_proto2_string_that_is_not_utf8_fails_its_row_and_names_the_field():
    # proto2 does not check strings when parsing; Arrow does when building the column
    cls = message_class(
        'syntax = "proto2"; message A { optional B b = 1; } message B { optional string s = 1; }'
    )
    bad = b"\x0a\x04\x0a\x02\xff\xfe"  # b { s: "\xff\xfe" }
    array, errors = ProtobufBatchDecoder(cls).decode([cls().SerializeToString(), bad], [0, 0])
    assert array.to_pylist() == [{"b": None}, None]
    assert errors[0] is None
    assert errors[1] is not None and errors[1].startswith("b.s: ")


def test_enum_numbers_the_schema_does_not_name_read_as_their_text_and_encode_back():
    cls = customer_class()
    message = cls(tier=9, tiers=[1, 12])
    decoder, encoder = ProtobufBatchDecoder(cls), ProtobufBatchEncoder(cls)
    array, _ = decoder.decode([message.SerializeToString()], [0])
    row = array.to_pylist()[0]
    assert row["tier"] == "9" and row["tiers"] == ["GOLD", "12"]
    encoded, errors = encoder.encode(array)
    assert errors == [None] and cls.FromString(encoded[0]) == message


def test_an_empty_batch_has_the_type_too():
    decoder = ProtobufBatchDecoder(customer_class())
    array, errors = decoder.decode([], [])
    assert len(array) == 0 and array.type == decoder.arrow_type and errors == []


def test_messages_and_offsets_must_pair_up():
    with pytest.raises(ValueError, match="2 messages but 1 offsets"):
        ProtobufBatchDecoder(customer_class()).decode([b"", b""], [0])


def test_encoder_round_trips_decoded_rows_and_keeps_null_rows_null():
    cls = customer_class()
    messages = [*bodies(FULL, {}), b"\xff\xff"]
    array, _ = ProtobufBatchDecoder(cls).decode(messages, [0, 0, 0])
    encoded, errors = ProtobufBatchEncoder(cls).encode(array)
    assert errors == [None, None, None] and encoded[2] is None
    assert [to_dict(cls.FromString(b)) for b in encoded[:2]] == [
        to_dict(cls.FromString(b)) for b in messages[:2]
    ]


def test_well_known_types_inside_containers_decode_and_encode_back():
    cls = message_class(WELL_KNOWN)
    messages = [from_dict(MIXED, cls), cls(after=3)]
    array, errors = ProtobufBatchDecoder(cls).decode(
        [m.SerializeToString() for m in messages], [0, 0]
    )
    assert errors == [None, None]
    first = array.to_pylist()[0]
    assert first["limits"] == [1, -(2**63)] and dict(first["colors"]) == {"x": "BLUE", "y": "RED"}
    assert dict(first["seen"]) == {"a": datetime.datetime(2020, 1, 1, tzinfo=UTC)}
    assert [from_variant(**v) for v in first["values"]] == [1.0, "a", None, [True, {"k": "v"}]]
    encoded, errors = ProtobufBatchEncoder(cls).encode(array)
    assert errors == [None, None]
    assert [cls.FromString(b) for b in encoded] == messages


def test_encoder_errors_name_the_row_field():
    cls = message_class(ORDER)
    struct = ProtobufBatchDecoder(cls).arrow_type
    rows = [
        {"id": 1, "status": "NEW", "tags": ["a"]},
        {"id": 2, "status": "LOST", "tags": []},
        {"id": 3, "ship_to": {"street": "s", "city": "c", "zip": "z"}, "points": UINT64_MAX},
    ]
    array = pa.array(rows, type=struct)
    encoded, errors = ProtobufBatchEncoder(cls).encode(array)
    assert errors[0] is None and errors[2] is None
    assert errors[1] is not None and errors[1].startswith("status: 'LOST' is not a value")
    assert encoded[1] is None
    third = to_dict(cls.FromString(encoded[2]))
    assert third["points"] == UINT64_MAX and third["ship_to"]["zip"] == "z"


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(CUSTOMERS, max_size=6))
def test_batch_decode_then_encode_gives_back_every_message(rows):
    cls = customer_class()
    messages = bodies(*rows)
    array, errors = ProtobufBatchDecoder(cls).decode(messages, [0] * len(messages))
    assert errors == [None] * len(rows)
    encoded, errors = ProtobufBatchEncoder(cls).encode(array)
    assert errors == [None] * len(rows)
    assert [to_dict(cls.FromString(b)) for b in encoded] == rows


@pytest.mark.spark
def test_spark_reads_the_batch_from_a_python_data_source(spark):
    from pyspark.sql.datasource import DataSource, DataSourceReader

    schema_text, references = CUSTOMER, REFERENCES
    # PySpark's collect() cannot hold year 1 in a datetime (local time): keep to later years
    row = {**FULL, "visits": [datetime.datetime(1970, 1, 1, tzinfo=UTC)]}
    messages = [*bodies(row, {"id": 5}), b"\xff\xff\xff"]
    struct = StructType(
        [
            StructField("value", message_struct(customer_class().DESCRIPTOR)),
            StructField("error", StringType()),
        ]
    )

    class Reader(DataSourceReader):
        def read(self, partition):
            import pyarrow as pa

            from cdc_connectors.schema.protobuf import message_class
            from cdc_connectors.spark.protobuf_batch import ProtobufBatchDecoder

            decoder = ProtobufBatchDecoder(message_class(schema_text, references))
            array, errors = decoder.decode(messages, [0] * len(messages))
            yield pa.RecordBatch.from_arrays(
                [array, pa.array(errors, pa.string())], names=["value", "error"]
            )

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "test-protobuf-batches"

        def schema(self):
            return struct

        def reader(self, schema):
            return Reader()

    spark.dataSource.register(Source)
    df = spark.read.format("test-protobuf-batches").load()
    assert df.schema == struct
    full, small, bad = df.collect()
    assert full.value.big == Decimal(UINT64_MAX) and full.value.id == -(2**63)
    assert full.value.extra.toPython() == {"a": 1.5, "b": [True, None, "x", {"c": 2.0}]}
    assert full.value.by_id[7].zip == "z" and full.value.previous[1].zip is None
    assert small.value.id == 5 and small.value.address is None and small.error is None
    assert bad.value is None and bad.error.startswith("not a test.v1.Customer message")
    typed = df.selectExpr(
        "value.tier",
        "try_element_at(value.counters, 'a')",
        "value.cap",
        "unix_micros(value.created_at)",
        "unix_micros(get(value.visits, 0))",
    ).collect()
    assert [tuple(r) for r in typed] == [
        ("SILVER", 2**63 - 1, Decimal(UINT64_MAX), 1709251199999999, 0),
        ("TIER_UNSPECIFIED", None, None, None, None),
        (None, None, None, None, None),
    ]


# --- the fast path (ptars) builds exactly what the message-by-message path builds -----------

NO_JSON = CUSTOMER.replace("  google.protobuf.Struct extra = 28;\n", "")


def _both(cls: Any) -> tuple[ProtobufBatchDecoder, ProtobufBatchDecoder]:
    fast, slow = ProtobufBatchDecoder(cls), ProtobufBatchDecoder(cls)
    slow._fast = None
    assert fast._fast is not None
    return fast, slow


@settings(max_examples=examples(100), deadline=None)
@given(CUSTOMERS)
def test_the_fast_path_builds_what_the_message_by_message_path_builds(data):
    cls = message_class(NO_JSON, REFERENCES)
    data = {k: v for k, v in data.items() if k != "extra"}
    payloads = [from_dict(data, cls).SerializeToString(), cls().SerializeToString()]
    fast, slow = _both(cls)
    (a, a_errors), (b, b_errors) = fast.decode(payloads, [0, 0]), slow.decode(payloads, [0, 0])
    assert a.type == b.type and _maps_as_dicts(a.to_pylist()) == _maps_as_dicts(b.to_pylist())
    assert a_errors == b_errors == [None, None]


def _maps_as_dicts(value: Any) -> Any:
    """Map entries (key, value) pairs as dicts: a protobuf map has no order to compare."""
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {k: _maps_as_dicts(v) for k, v in value}
        return [_maps_as_dicts(v) for v in value]
    if isinstance(value, dict):
        return {k: _maps_as_dicts(v) for k, v in value.items()}
    return value


def test_a_batch_the_fast_path_cannot_take_goes_message_by_message():
    cls = message_class(NO_JSON, REFERENCES)
    good = from_dict({"id": 5}, cls).SerializeToString()
    fast, _ = _both(cls)
    array, errors = fast.decode([good, b"\xff\xff\xff", None, good], [0, 0, 0, 0])
    assert [r["id"] if r else None for r in array.to_pylist()] == [5, None, None, 5]
    assert errors[0] is None and errors[1] and errors[2] is None and errors[3] is None
    past = from_dict({"visits": [datetime.datetime(9999, 12, 31, tzinfo=UTC)]}, cls)
    stamp = past.visits[0]
    stamp.seconds += 86_400  # year 10000: no Python datetime holds it
    array, errors = fast.decode([past.SerializeToString(), good], [0, 0])
    assert errors[0] and "visits" in errors[0] and errors[1] is None


def test_a_timestamp_with_nanos_beyond_a_second_is_refused_not_folded() -> None:
    """ptars would read nanos 1e9 as one more second; the row is refused as the slow way
    refuses it, and the batch's other rows keep their values."""
    cls = message_class(
        'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
        "message M { google.protobuf.Timestamp t = 1; }\n"
    )
    good = b"\x0a\x04\x08\x01\x10\x02"  # t {seconds: 1, nanos: 2}
    folded = b"\x0a\x06\x10\x80\x94\xeb\xdc\x03"  # t {nanos: 1e9}
    array, errors = ProtobufBatchDecoder(cls).decode([good, folded], [0, 0])
    assert errors[0] is None and errors[1] is not None and "1000000000ns" in errors[1]
    assert array.to_pylist()[0] == {"t": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)}
    assert array.to_pylist()[1] is None
