"""Decimals wider than Spark's 38 digits off the typed Debezium path: Avro bodies expanded
through the registry (string columns of exact text) and the untyped OpenCDC rows (a VARIANT
string of the exact text where no VARIANT decimal holds the number).

The inputs are MySQL's ``DECIMAL(65,30)`` as Debezium sends it with
``decimal.handling.mode=precise`` (``examples/debezium/edge/mysql_measures.jsonl``) and the
Avro schemas Confluent's AvroConverter registers for such columns.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import DecimalType, StringType

from cdc_connectors.opencdc import Record
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.serde import RecordEncoder
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.schema import framing
from cdc_connectors.spark import records_dataframe, records_from_batch, records_to_batch, register
from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.avro_encode import AvroBatchEncoder
from cdc_connectors.spark.avro_types import avro_to_spark, without_logical_types
from cdc_connectors.spark.decimal_text import text_unscaled, unscaled_text
from cdc_connectors.spark.expand import encode, expand
from cdc_connectors.spark.variant import from_variant, to_variant
from tests.hypothesis_profiles import examples

EDGE = Path("examples/debezium/edge")
DLQ_ERROR = "conduit.dlq.nack.error"
#: The second event's total in mysql_measures.jsonl: 65 digits, 30 after the point.
TOTAL_2 = "12345678901234567890123456789012345.123456789012345678901234567890"
NINES_38 = "9" * 28 + "." + "9" * 10  # decimal(38, 10) at its largest


def decimal(precision: int, scale: int = 0) -> dict[str, Any]:
    return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}


def record(*fields: tuple[str, Any], name: str = "Measure") -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": n, "type": t, **({"default": None} if isinstance(t, list) else {})}
            for n, t in fields
        ],
    }


def twos(unscaled: int, size: int = 0) -> bytes:
    """Big-endian two's complement: ``size`` bytes, else the fewest (as Java writes)."""
    width = size or (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(width, "big", signed=True)


def unscaled(text: str, scale: int) -> int:
    """The unscaled value of ``text`` at ``scale`` (at least its own), from its digits."""
    sign, digits, exponent = Decimal(text).as_tuple()
    assert isinstance(exponent, int) and exponent + scale >= 0
    number = int("".join(map(str, digits))) * 10 ** (exponent + scale)
    return -number if sign else number


def bodies(schema: dict[str, Any], rows: list[dict[str, Any]]) -> list[bytes]:
    """Avro bodies as any Avro writer writes them (logical types are only annotations)."""
    parsed = fastavro.parse_schema(without_logical_types(schema))
    out = []
    for row in rows:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, row)
        out.append(buffer.getvalue())
    return out


# MySQL DECIMAL(65,30) next to a decimal(38,10), Oracle's NUMBER(5,-2), PostgreSQL's
# numeric(3,5) and a fixed decimal(65,30), as the registry holds them.
WIDE = record(
    ("id", "int"),
    ("total", ["null", decimal(65, 30)]),
    ("exact", decimal(38, 10)),
    ("hundreds", decimal(5, -2)),
    ("tiny", decimal(3, 5)),
    ("fixed", {**decimal(65, 30), "type": "fixed", "name": "D28", "size": 28}),
)
WIDE_ROWS = [
    {
        "id": 1,
        "total": twos(unscaled(TOTAL_2, 30)),
        "exact": twos(unscaled(NINES_38, 10)),
        "hundreds": twos(123),
        "tiny": twos(-123),
        "fixed": twos(-unscaled(TOTAL_2, 30), 28),
    },
    {
        "id": 2,
        "total": None,
        "exact": twos(0),
        "hundreds": twos(-99999),
        "tiny": twos(999),
        "fixed": twos(unscaled("19.99", 30), 28),
    },
]
WIDE_TEXTS = [
    {
        "id": 1,
        "total": TOTAL_2,
        "exact": Decimal(NINES_38),
        "hundreds": "12300",
        "tiny": "-0.00123",
        "fixed": "-" + TOTAL_2,
    },
    {
        "id": 2,
        "total": None,
        "exact": Decimal("0E-10"),
        "hundreds": "-9999900",
        "tiny": "0.00999",
        "fixed": "19.990000000000000000000000000000",
    },
]


# --- Avro -> Spark types and Arrow, without Spark -------------------------------------------


def test_a_decimal_spark_cannot_hold_is_a_string_and_38_digits_stay_a_decimal() -> None:
    schema = avro_to_spark(WIDE)
    assert schema["total"].dataType == StringType() and schema["total"].nullable
    assert schema["exact"].dataType == DecimalType(38, 10)  # the boundary: still a decimal
    assert [schema[n].dataType for n in ("hundreds", "tiny", "fixed")] == [StringType()] * 3
    decoder = AvroBatchDecoder(WIDE)
    assert decoder.arrow_type.field("exact").type == pa.decimal128(38, 10)
    array, errors = decoder.decode(bodies(WIDE, WIDE_ROWS), [0, 0])
    assert errors == [None, None]
    assert array.to_pylist() == WIDE_TEXTS


def test_per_row_fallback_gives_the_same_text_and_a_value_too_wide_fails_its_row() -> None:
    too_wide = {**WIDE_ROWS[0], "id": 3, "total": twos(10**65)}  # 66 digits
    unforeseen = {**WIDE_ROWS[1], "id": 4}  # stands for a value no converter foresaw
    rows = [*WIDE_ROWS, too_wide, unforeseen]
    decoder = AvroBatchDecoder(WIDE)
    batch = decoder._convert

    def convert(values: list[Any]) -> Any:
        if any(v["id"] == 4 for v in values):
            raise pa.ArrowInvalid("a value no converter foresaw")
        return batch(values)

    for fallback in (False, True):
        if fallback:  # the batch does not convert: each row on its own, then the rest at once
            decoder._convert = convert  # type: ignore[method-assign]
        array, errors = decoder.decode(bodies(WIDE, rows), [0] * len(rows))
        assert array.to_pylist()[:3] == [*WIDE_TEXTS, None]
        assert errors[:2] == [None, None]
        assert str(errors[2]).startswith("total:") and "65 digits" in str(errors[2])
        assert (errors[3] is None) is not fallback
        if fallback:
            assert "no converter foresaw" in str(errors[3]) and array.to_pylist()[3] is None


def test_a_decimal_widened_across_38_digits_reads_every_version_exactly() -> None:
    v1 = record(("id", "int"), ("total", decimal(20, 2)))
    v2 = record(("id", "int"), ("total", decimal(65, 30)))
    # Version 1's rows read as version 2: the text at version 2's scale.
    old = bodies(v1, [{"id": 1, "total": twos(150)}, {"id": 2, "total": twos(-(10**20) + 1)}])
    array, errors = AvroBatchDecoder(v1, v2).decode(old, [0, 0])
    assert errors == [None, None]
    assert array.to_pylist() == [
        {"id": 1, "total": "1.500000000000000000000000000000"},
        {"id": 2, "total": "-999999999999999999.99" + "0" * 28},
    ]
    # Version 2's rows read as version 1: a decimal where it fits, else that row's error.
    new = bodies(
        v2,
        [
            {"id": 3, "total": twos(unscaled("19.99", 30))},
            {"id": 4, "total": twos(unscaled("123456789012345678901234.5", 30))},
            {"id": 5, "total": twos(unscaled("0.001", 30))},
        ],
    )
    array, errors = AvroBatchDecoder(v2, v1).decode(new, [0, 0, 0])
    assert array.to_pylist()[0] == {"id": 3, "total": Decimal("19.99")}
    assert errors[0] is None and "more than 20 digits" in str(errors[1])
    assert "more than 2 decimal places" in str(errors[2])


def test_the_encoder_writes_the_text_back_exactly_and_refuses_other_text() -> None:
    encoder = AvroBatchEncoder(WIDE)
    array = pa.array(WIDE_TEXTS, encoder.arrow_type)
    written, errors = encoder.encode(array)
    assert errors == [None, None] and written == bodies(WIDE, WIDE_ROWS)
    bad = [
        {**WIDE_TEXTS[0], "total": "1e35"},  # 36 digits before the point, 30 after: too many
        {**WIDE_TEXTS[0], "total": "0." + "0" * 30 + "1"},  # beyond scale 30
        {**WIDE_TEXTS[0], "hundreds": "12345"},  # not whole hundreds (scale -2)
        {**WIDE_TEXTS[0], "tiny": "12.5"},
        {**WIDE_TEXTS[0], "fixed": "NaN"},
        {**WIDE_TEXTS[0], "total": "1_000"},
    ]
    written, errors = encoder.encode(pa.array(bad, encoder.arrow_type))
    assert written == [None] * len(bad)
    assert "total:" in str(errors[0]) and "more than 65 digits" in str(errors[0])
    assert "more than 30 decimal places" in str(errors[1])
    assert "hundreds:" in str(errors[2]) and "nonzero digits below 1E+2" in str(errors[2])
    assert "tiny:" in str(errors[3]) and "more than 3 digits" in str(errors[3])
    assert "fixed:" in str(errors[4]) and "is not a decimal number" in str(errors[4])
    assert "is not a decimal number" in str(errors[5])


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(-(10**70), 10**70), st.integers(-5, 45))
def test_text_and_unscaled_values_round_trip_exactly(number: int, scale: int) -> None:
    text = unscaled_text(number, scale)
    assert text_unscaled(text, scale, 71) == number
    assert Decimal(text) == Decimal(number).scaleb(-scale, Context(prec=100))
    if scale > 0:
        assert len(text.partition(".")[2]) == scale  # every digit of the scale
    # In a VARIANT: the same number as a decimal, or this very text.
    (back,) = from_variant(*to_variant([Decimal(text)]))
    _, digits, exponent = Decimal(text).normalize(Context(prec=100)).as_tuple()
    assert isinstance(exponent, int)
    needed = len(digits) + exponent if exponent >= 0 else max(len(digits), -exponent)
    if number and needed > 38:  # no VARIANT decimal holds it, even without trailing zeros
        assert back == text
    else:
        assert isinstance(back, Decimal) and back == Decimal(text)


# --- VARIANT ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "back"),
    [
        # More digits only as trailing zeros after the point: the same number, fewer zeros.
        (Decimal("123456789.5" + "0" * 29), Decimal("123456789.5")),
        (Decimal("0E-50"), Decimal(0)),
        # Anything else wider: the exact text, every digit and its own scale.
        (Decimal(TOTAL_2), TOTAL_2),
        (Decimal("-" + TOTAL_2), "-" + TOTAL_2),
        (Decimal("9" * 39), "9" * 39),
        (10**38, "1" + "0" * 38),
        (Decimal("1.0E-39"), "0." + "0" * 38 + "10"),
        (Decimal("12.3E+40"), "123" + "0" * 39),
        (Decimal("1E+20000"), "1E+20000"),  # no database's exponent: short, still exact
    ],
)
def test_a_number_no_variant_decimal_holds_is_its_exact_text(number: Any, back: Any) -> None:
    (value,) = from_variant(*to_variant([number]))
    assert value == back and type(value) is type(back)
    if isinstance(back, Decimal):
        assert str(value) == str(back)  # the scale too


def test_38_digits_stay_a_variant_decimal_with_their_scale_and_39_are_text() -> None:
    numbers = [Decimal("9" * 38), Decimal("0." + "1" * 38), Decimal("9" * 39)]
    back = from_variant(*to_variant(numbers))
    assert back == [Decimal("9" * 38), Decimal("0." + "1" * 38), "9" * 39]
    assert str(back[1]) == "0." + "1" * 38


def test_records_holding_wide_numbers_go_into_a_batch_and_come_back_as_their_text() -> None:
    after = {"a": Decimal("1e38"), "b": {"c": [Decimal(TOTAL_2)]}, "n": 10**40}
    records = [Record.new("create", after={"ok": 1}), Record.new("create", key=after, after=after)]
    back = list(records_from_batch(records_to_batch(records)))
    text = {"a": "1" + "0" * 38, "b": {"c": [TOTAL_2]}, "n": "1" + "0" * 40}
    assert back[1].key == text and back[1].payload.after == text
    assert back[0].payload.after == {"ok": 1}


# --- through Spark ---------------------------------------------------------------------------


def _named(rec: Record, subject: str, version: int) -> Record:
    metadata = rec.metadata.copy()
    framing.set_conduit_schema(metadata, "payload", subject, version)
    return replace(rec, metadata=metadata)


@pytest.mark.spark
def test_expand_gives_the_exact_text_of_a_decimal_65_30_and_encode_writes_it_back(
    spark: Any, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/registry.db"
    registry = open_registry(url)
    store = SchemaStore(registry)
    subject = "inventory.measures-value"
    v1 = record(("id", "int"), ("total", ["null", decimal(20, 2)]))
    v2 = record(
        ("id", "int"), ("total", ["null", decimal(65, 30)]), ("exact", ["null", decimal(38, 10)])
    )
    store.register(subject, json.dumps(v1))
    v2_id = store.register(subject, json.dumps(v2)).schema_id
    rows = [
        (1, {"id": 1, "total": Decimal("1.50")}),
        (2, {"id": 2, "total": Decimal(TOTAL_2), "exact": Decimal(NINES_38)}),
        (2, {"id": 3, "total": Decimal("19.990000000000000000000000000000"), "exact": None}),
    ]
    records = [
        RecordEncoder(store).encode(
            _named(Record.new("create", position=b"%d" % n, after=row), subject, version)
        )
        for n, (version, row) in enumerate(rows)
    ]
    # Several writer versions (Conduit's framing): each read as the latest, version 2.
    typed = expand(records_dataframe(spark, records), url, subject)
    after = typed.schema["after"].dataType
    assert after["total"].dataType == StringType()
    assert after["exact"].dataType == DecimalType(38, 10)
    got = {r.after.id: (r.after.total, r.after.exact, r.error) for r in typed.collect()}
    assert got == {
        1: ("1.500000000000000000000000000000", None, None),
        2: (TOTAL_2, Decimal(NINES_38), None),
        3: ("19.990000000000000000000000000000", None, None),
    }
    # One writer, Confluent-framed (the whole batch decoded at once): the same text, and
    # encoded back it is the same bytes.
    framed = [
        Record.new("create", position=b"%d" % n, after=framing.frame(v2_id, r.payload.after or b""))
        for n, r in enumerate(records[1:])
    ]
    typed = expand(records_dataframe(spark, framed), url, subject)
    assert [r.after.total for r in typed.orderBy("position").collect()] == [
        TOTAL_2,
        "19.990000000000000000000000000000",
    ]
    # (expand's own error column goes first: encode adds one of its own)
    written = encode(typed.drop("error"), url, subject, "after").orderBy("position").collect()
    assert [(r.value, r.error) for r in written] == [(f.payload.after, None) for f in framed]


@pytest.mark.spark
def test_a_plain_read_keeps_wide_decimals_as_their_exact_text(spark: Any) -> None:
    register(spark)
    records = (
        spark.read.format("cdc-files")
        .option("format", "debezium-json")
        .load(str(EDGE / "mysql_measures.jsonl"))
    )
    rows = (
        records.orderBy("position")
        .selectExpr(
            "operation",
            f"metadata['{DLQ_ERROR}'] AS error",
            "variant_get(payload.after.structured_data, '$.id', 'int') AS id",
            "variant_get(payload.after.structured_data, '$.total', 'string') AS total",
            "variant_get(payload.before.structured_data, '$.total', 'string') AS before",
            "schema_of_variant(variant_get(payload.after.structured_data, '$.total', 'variant'))"
            " AS kind",
            "variant_get(payload.after.structured_data, '$.counter', 'decimal(20,0)') AS counter",
        )
        .collect()
    )
    # Events 2 and 3 (create, update) hold a 65-digit total: changes, not dead letters.
    assert [r.operation for r in rows] == ["snapshot", "create", "update", "delete", "dead-letter"]
    assert [r.error is None for r in rows] == [True] * 4 + [False]
    # The fifth holds 66 digits, more than its DECIMAL(65,30): a bad message, named.
    assert "after.total" in rows[4].error and "65 digits" in rows[4].error
    assert rows[1].id == 2 and rows[1].total == TOTAL_2 and rows[1].kind == "STRING"
    assert rows[2].total == TOTAL_2 and rows[2].before == TOTAL_2
    # A total that fits 38 digits stays a VARIANT decimal, as before.
    assert rows[0].total == "19.99" and rows[0].kind.startswith("DECIMAL")
    assert rows[0].counter == Decimal("18446744073709551615")
    # Read back into records, the text is the value: nothing rounded.
    (create,) = [
        r.payload.after.structured_data for r in records.where("operation = 'create'").collect()
    ]
    assert from_variant(create.value, create.metadata)["total"] == TOTAL_2
