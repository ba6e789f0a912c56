"""AvroBatchDecoder: Avro bodies -> Arrow struct arrays, against fastavro; evolution, bad bytes."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.avro_types import arrow_type, avro_to_spark
from tests.spark.avro_cases import (
    ALL,
    COLOR,
    ROWS_IN,
    UTC,
    V1,
    V2,
    body,
    dec,
    decode,
    expected_row,
    logical,
    record,
)


def test_every_avro_type_decodes_to_what_fastavro_wrote():
    array, errors = AvroBatchDecoder(ALL).decode([body(ALL, r) for r in ROWS_IN], [0, 0, 0])
    assert errors == [None, None, None]
    assert array.type == arrow_type(avro_to_spark(ALL))
    assert array.to_pylist() == [expected_row(r) for r in ROWS_IN]


def test_decoded_timestamps_keep_the_instant_and_local_ones_stay_naive():
    array, _ = AvroBatchDecoder(ALL).decode([body(ALL, ROWS_IN[0])], [0])
    row = array.to_pylist()[0]
    assert row["tsms"].timestamp() == -0.001
    assert row["tsus"] == dt.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert row["ltus"].tzinfo is None
    assert array.type.field("tsus").type == pa.timestamp("us", tz="UTC")
    assert array.type.field("ltus").type == pa.timestamp("us")


def test_confluent_framed_messages_decode_from_their_offset():
    schema = record("R", ("a", "long"))
    framed = [b"\x00" + struct.pack(">I", 7) + body(schema, {"a": n}) for n in (1, -2)]
    array, errors = AvroBatchDecoder(schema).decode(framed, [5, 5])
    assert errors == [None, None]
    assert array.to_pylist() == [{"a": 1}, {"a": -2}]


# --- bad bytes ------------------------------------------------------------------------

ORDER = record(
    "Order",
    ("id", "long"),
    ("name", "string"),
    ("amount", logical("bytes", "decimal", precision=10, scale=2)),
    ("at", logical("long", "timestamp-micros")),
    ("note", ["null", "string"]),
    ("lines", {"type": "array", "items": record("Line", ("sku", "string"), ("qty", "int"))}),
)


def order(n: int) -> dict[str, Any]:
    return {
        "id": n,
        "name": f"order {n}",
        "amount": Decimal(n).scaleb(-2),
        "at": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=n),
        "note": None if n % 2 else "note",
        "lines": [{"sku": "a", "qty": n}],
    }


def test_garbage_truncated_and_trailing_bytes_are_null_rows_with_reasons():
    good = [body(ORDER, order(n)) for n in range(4)]
    messages = [good[0], b"\xff\xff\xff\xff\xff\xff\xff", good[1][:-3], good[2] + b"\x00", good[3]]
    array, errors = AvroBatchDecoder(ORDER).decode(messages, [0] * 5)
    assert errors[0] is None and errors[4] is None
    assert "does not decode" in errors[1] or "truncated or corrupt" in errors[1]
    assert "truncated or corrupt" in errors[2]
    assert errors[3] == "1 bytes left over after the record"
    rows = array.to_pylist()
    assert rows[1] is None and rows[2] is None and rows[3] is None
    assert rows[0]["amount"] == Decimal("0.00") and rows[4]["lines"] == [{"sku": "a", "qty": 3}]
    assert rows[4]["name"] == "order 3"
    # error rows hold placeholders, so non-nullable columns carry no nulls for Spark
    for field in ("id", "name", "amount", "at", "lines"):
        assert array.field(field).null_count == 0


def test_a_truncated_last_message_and_an_offset_past_the_end_are_row_errors():
    good = body(ORDER, order(1))
    array, errors = AvroBatchDecoder(ORDER).decode([good, good[:5], good], [0, 0, len(good) + 1])
    assert errors[0] is None
    assert "truncated or corrupt" in errors[1]
    assert "outside the" in errors[2]
    assert array.to_pylist()[0]["id"] == 1


def test_an_empty_batch_decodes_to_an_empty_array():
    array, errors = AvroBatchDecoder(ORDER).decode([], [])
    assert len(array) == 0 and errors == []
    assert array.type == arrow_type(avro_to_spark(ORDER))


# --- schema evolution -----------------------------------------------------------------


def test_reader_schema_adds_defaults_drops_removed_fields_and_promotes():
    bodies = [body(V1, {"id": 1, "name": "ann", "old": "x", "score": 3})]
    rows, errors = decode(V1, bodies, V2)
    assert errors == [None]
    assert rows == [{"id": 1, "name": b"ann", "score": 3.0, "email": None, "level": 7}]


def test_an_incompatible_writer_makes_every_row_an_error_naming_both_types():
    reader = record("User", ("id", "int"), ("name", "int"))
    bodies = [body(V1, {"id": n, "name": "n", "old": "", "score": 0}) for n in range(3)]
    rows, errors = decode(V1, bodies, reader)
    assert rows == [None, None, None]
    assert all(e is not None for e in errors)
    assert "name: writer type string cannot be read as reader type int" in str(errors[0])


def test_a_reader_field_without_default_missing_from_the_writer_fails_every_row():
    reader = record("User", ("id", "int"), ("missing", "string"))
    rows, errors = decode(V1, [body(V1, {"id": 1, "name": "", "old": "", "score": 0})], reader)
    assert rows == [None]
    assert "missing: reader field has no default" in str(errors[0])


def test_a_writer_null_read_as_a_non_nullable_field_fails_only_that_row():
    writer = record("R", ("s", ["null", "string"]))
    reader = record("R", ("s", "string"))
    rows, errors = decode(writer, [body(writer, {"s": "a"}), body(writer, {"s": None})], reader)
    assert rows[0] == {"s": "a"} and errors[0] is None
    assert rows[1] is None and errors[1] is not None


def test_a_plain_writer_type_read_as_a_union_sets_its_member():
    writer = record("R", ("v", "int"))
    reader = record("R", ("v", ["string", "long"]))
    rows, errors = decode(writer, [body(writer, {"v": 5})], reader)
    assert errors == [None]
    assert rows == [{"v": {"member0": None, "member1": 5}}]


def test_a_renamed_field_is_found_by_its_alias_and_an_unknown_symbol_takes_the_default():
    writer = record("U", ("old_name", "string"), ("c", {**COLOR, "symbols": ["RED", "BLUE"]}))
    reader = record(
        "U",
        ("new_name", "string"),
        ("c", {**COLOR, "default": "GREEN"}),
        new_name={"aliases": ["old_name"]},
    )
    rows, errors = decode(writer, [body(writer, {"old_name": "x", "c": "BLUE"})], reader)
    assert errors == [None] and rows == [{"new_name": "x", "c": "GREEN"}]


def test_a_writer_union_read_as_another_union_puts_each_value_in_its_member():
    writer = record("X", ("u", ["null", "int", "string"]))
    reader = record("X", ("u", ["null", "string", "long"]))
    values = [5, "s", None]
    rows, errors = decode(writer, [body(writer, {"u": v}) for v in values], reader)
    assert errors == [None, None, None]
    assert rows == [
        {"u": {"member0": None, "member1": 5}},
        {"u": {"member0": "s", "member1": None}},
        {"u": None},
    ]


def test_a_decimal_read_at_another_scale_is_rescaled_exactly():
    bodies = [body(dec(10, 2), {"v": Decimal(v)}) for v in ("12.34", "-0.01")]
    rows, errors = decode(dec(10, 2), bodies, dec(12, 3))
    assert errors == [None, None]
    assert rows == [{"v": Decimal("12.340")}, {"v": Decimal("-0.010")}]


def test_a_decimal_that_loses_digits_at_the_reader_scale_or_precision_is_a_row_error():
    values = ("12.30", "12.34", "123.40")
    rows, errors = decode(
        dec(10, 2), [body(dec(10, 2), {"v": Decimal(v)}) for v in values], dec(3, 1)
    )
    assert rows == [{"v": Decimal("12.3")}, None, None]
    assert errors[0] is None
    assert "more than 1 decimal places" in str(errors[1])
    assert "more than 3 digits" in str(errors[2])


def test_a_plain_bytes_writer_is_read_with_the_reader_decimal():
    writer = record("D", ("v", "bytes"))
    rows, errors = decode(writer, [body(writer, {"v": (1234).to_bytes(2, "big")})], dec(10, 2))
    assert errors == [None] and rows == [{"v": Decimal("12.34")}]


def ts(kind: str) -> dict[str, Any]:
    return record("T", ("t", logical("long", kind)))


def test_timestamp_millis_read_as_micros_keeps_the_instant():
    moment = dt.datetime(1960, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    rows, errors = decode(
        ts("timestamp-millis"),
        [body(ts("timestamp-millis"), {"t": moment})],
        ts("timestamp-micros"),
    )
    assert errors == [None] and rows == [{"t": moment}]
    rows, errors = decode(
        ts("timestamp-micros"),
        [body(ts("timestamp-micros"), {"t": moment})],
        ts("timestamp-millis"),
    )
    assert errors == [None] and rows == [{"t": moment}]


def test_an_instant_read_as_a_local_timestamp_is_refused_for_every_row():
    moment = dt.datetime(2020, 1, 1, tzinfo=UTC)
    bodies = [body(ts("timestamp-micros"), {"t": moment})] * 2
    rows, errors = decode(ts("timestamp-micros"), bodies, ts("local-timestamp-micros"))
    assert rows == [None, None]
    assert "timestamp-micros" in str(errors[0]) and "local-timestamp-micros" in str(errors[0])
    assert "logical types differ" in str(errors[1])


def test_a_date_read_as_a_timestamp_is_refused_not_reinterpreted():
    writer = record("T", ("t", logical("int", "date")))
    rows, errors = decode(
        writer, [body(writer, {"t": dt.date(2020, 1, 1)})], ts("timestamp-millis")
    )
    assert rows == [None] and "logical types differ" in str(errors[0])


def test_a_plain_long_read_as_a_timestamp_takes_the_reader_unit():
    writer = record("T", ("t", "long"))
    rows, errors = decode(writer, [body(writer, {"t": -1500})], ts("timestamp-millis"))
    assert errors == [None]
    assert rows == [{"t": dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC)}]


# --- Spark accepts the batches --------------------------------------------------------


@pytest.mark.spark
def test_a_python_data_source_serves_decoded_batches_with_the_avro_spark_schema(spark):
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    messages = [body(ALL, r) for r in ROWS_IN] + [b"\x00garbage"]

    class Reader(DataSourceReader):
        def partitions(self):
            return [InputPartition(0)]

        def read(self, partition):
            # runs in a Python worker: the decoder is built there, as a connector would
            decoder = AvroBatchDecoder(ALL)
            array, errors = decoder.decode(messages, [0] * len(messages))
            valid = pa.array([e is None for e in errors])
            yield pa.RecordBatch.from_struct_array(array.filter(valid))

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "test-avro-batches"

        def schema(self):
            return avro_to_spark(ALL)

        def reader(self, schema):
            return Reader()

    spark.dataSource.register(Source)
    df = spark.read.format("test-avro-batches").load()
    assert df.schema == avro_to_spark(ALL)
    rows = [r.asDict(recursive=True) for r in df.collect()]
    expected = [expected_row(r) for r in ROWS_IN]
    for row in expected:
        row["m"] = dict(row["m"])
        # Spark hands timestamps back as naive datetimes in the session time zone (UTC)
        for name in ("tsms", "tsus"):
            row[name] = row[name].astimezone(UTC).replace(tzinfo=None)
    assert rows == expected
