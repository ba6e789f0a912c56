"""Connect schemas at the edges of the typed path: decimals Spark has no type for, a
variable scale, one named type used by several columns with their own parameters.

Inputs are Debezium JSON as its JsonConverter writes it (``examples/debezium/edge``):
MySQL with ``decimal.handling.mode=precise``, ``bigint.unsigned.handling.mode=precise``
and ``column.propagate.source.type=.*`` (a ``DECIMAL(65,30)``, a ``BIGINT UNSIGNED``, a
``GEOMETRY`` and a ``POINT`` column, two ``ENUM`` columns), and PostgreSQL's ``numeric``
without precision (``VariableScaleDecimal``) next to ``numeric(50,10)``.
"""

from __future__ import annotations

import base64
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import orjson
import pyarrow as pa
import pytest
from pyspark.sql.types import (
    BinaryType,
    DecimalType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from cdc_connectors.connectors.files import FilesDataSource
from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.schema.connect import connect_to_avro
from cdc_connectors.spark import register, typed_view
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder

EDGE = Path("examples/debezium/edge")
MYSQL = (EDGE / "mysql_measures.jsonl").read_bytes().splitlines()
PG = (EDGE / "pg_readings.jsonl").read_bytes().splitlines()
DLQ_ERROR = "conduit.dlq.nack.error"
TOTAL_2 = "12345678901234567890123456789012345.123456789012345678901234567890"
BIG_1 = "1234567890123456789012345678901234567890.0123456789"


def decode(lines: list[bytes], sample: bytes | None = None) -> tuple[list[dict[str, Any]], Any]:
    decoder = TypedDebeziumDecoder.from_message(DebeziumJsonFormat(), Message(sample or lines[0]))
    batch, errors = decoder.decode_arrays(pa.array(lines, pa.binary()))
    return batch.column("after").to_pylist(), errors


def resorted(line: bytes) -> bytes:
    """The same event with its keys in another order: not the batch's own schema text, so
    it takes the per-message way."""
    return orjson.dumps(orjson.loads(line), option=orjson.OPT_SORT_KEYS)


def row_schema(line: bytes) -> dict[str, Any]:
    after = orjson.loads(line)["schema"]["fields"][1]
    return {**{k: v for k, v in after.items() if k != "field"}, "optional": False}


# --- ITEM 14: decimals Spark has no type for -----------------------------------------------


def test_a_decimal_of_65_digits_is_its_exact_text_and_unsigned_bigint_a_decimal_20() -> None:
    decoder = TypedDebeziumDecoder.from_message(DebeziumJsonFormat(), Message(MYSQL[0]))
    row = decoder.row_type
    assert row.field("total").type == pa.string()  # DECIMAL(65,30): no Spark decimal
    assert row.field("price").type == pa.decimal128(10, 2)
    assert row.field("counter").type == pa.decimal128(20, 0)  # BIGINT UNSIGNED, precise
    afters, errors = decode(MYSQL)
    assert afters[0]["total"] == "19.990000000000000000000000000000"
    assert afters[0]["counter"] == Decimal("18446744073709551615")
    assert afters[1]["total"] == TOTAL_2  # 65 digits, every one kept
    # The fifth event's total has 66 digits: more than DECIMAL(65,30) holds.
    ((index, error),) = errors
    assert index == 4
    assert "after.total" in error.reason and "65 digits" in error.reason


def test_the_per_message_way_gives_the_same_text_and_the_same_refusal() -> None:
    fast, fast_errors = decode(MYSQL)
    slow, slow_errors = decode([resorted(line) for line in MYSQL], sample=MYSQL[0])
    assert slow == fast
    assert [i for i, _ in slow_errors] == [i for i, _ in fast_errors] == [4]
    assert "after.total" in slow_errors[0][1].reason


def test_a_decimal_without_precision_is_exact_text_and_a_negative_scale_too() -> None:
    # Connect's Decimal.builder(30) alone: AvroData's 64 digits, which Spark cannot hold.
    document = orjson.loads(MYSQL[0])
    for side in document["schema"]["fields"][:2]:
        del side["fields"][1]["parameters"]["connect.decimal.precision"]
    no_precision = orjson.dumps(document)
    for side in document["schema"]["fields"][:2]:
        side["fields"][2]["parameters"]["scale"] = "-2"  # Oracle's NUMBER(10,-2)
    document["payload"]["after"]["price"] = base64.b64encode(bytes([123])).decode()
    negative = orjson.dumps(document)
    for line in (no_precision, negative):
        afters, errors = decode([line])  # its own schema
        assert errors == []
        assert afters[0]["total"] == "19.990000000000000000000000000000"
    assert afters[0]["price"] == "12300"
    # Read as the columns of another message's schema (schema resolution): the same text.
    afters, errors = decode([no_precision], sample=MYSQL[1])
    assert errors == [] and afters[0]["total"] == "19.990000000000000000000000000000"
    # More digits than the 64 AvroData assumes: refused, naming the column.
    document = orjson.loads(MYSQL[1])
    for side in document["schema"]["fields"][:2]:
        del side["fields"][1]["parameters"]["connect.decimal.precision"]
    _, errors = decode([orjson.dumps(document)])
    assert len(errors) == 1 and "after.total" in errors[0][1].reason


def test_a_variable_scale_decimal_is_exact_text_with_its_own_scale() -> None:
    decoder = TypedDebeziumDecoder.from_message(DebeziumJsonFormat(), Message(PG[0]))
    assert decoder.row_type.field("reading").type == pa.string()
    assert decoder.row_type.field("big").type == pa.string()  # numeric(50,10)
    assert decoder.row_type.field("ratio").type == pa.decimal128(5, 4)
    afters, errors = decode(PG)
    assert errors == []
    assert [a["reading"] for a in afters] == [
        "12.345",
        "1.50",
        "-98765432109876543210987654321098765432109876543210.5",
    ]
    assert [a["big"] for a in afters] == [BIG_1, "-0.0000000001", None]
    assert [a["ratio"] for a in afters] == [Decimal("0.5000"), Decimal("-0.0001"), None]


# --- ITEM 15: one named type, several columns, parameters of their own -----------------


def test_geometry_columns_with_their_own_parameters_share_one_avro_record() -> None:
    avro = connect_to_avro(row_schema(MYSQL[0]))
    assert isinstance(avro, dict)
    fields = {f["name"]: f for f in avro["fields"]}
    area = fields["area"]["type"][1]
    assert area["name"] == "Geometry" and area["namespace"] == "io.debezium.data.geometry"
    assert area["connect.parameters"]["__debezium.source.column.type"] == "GEOMETRY"
    # The second use refers to it by name, as Confluent's AvroConverter registers it; the
    # column's own parameters stay with the field.
    assert fields["spot"]["type"] == ["null", "io.debezium.data.geometry.Geometry"]
    assert fields["spot"]["connect.parameters"]["__debezium.source.column.type"] == "POINT"
    fastavro.parse_schema(avro)


def test_geometry_and_enum_columns_are_typed() -> None:
    afters, _ = decode(MYSQL[:4])
    first, second = afters[0], afters[1]
    assert first["area"]["srid"] is None and first["area"]["wkb"][:5] == b"\x01\x03\x00\x00\x00"
    assert first["spot"]["srid"] == 4326 and len(first["spot"]["wkb"]) == 21
    assert second["area"] is None and second["spot"]["srid"] == 0
    assert (first["state"], first["mode"], second["mode"]) == ("on", "a", "c")


def test_columns_keep_their_own_parameters_through_the_registry_and_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/registry.db"
    (record,) = DebeziumJsonFormat({}, registry=url).decode(Message(MYSQL[0]))
    assert record.metadata.payload_schema_subject == "inventory.measures.payload"
    writer = DebeziumJsonFormat({"schemas.enable": "true"}, registry=url)
    written = orjson.loads(writer.encode(record).value)
    after = next(f for f in written["schema"]["fields"] if f["field"] == "after")
    columns = {f["field"]: f for f in after["fields"]}
    for name, kind in (("area", "GEOMETRY"), ("spot", "POINT"), ("total", "DECIMAL")):
        assert columns[name]["parameters"]["__debezium.source.column.type"] == kind
        assert columns[name]["parameters"]["__debezium.source.column.name"] == name
    assert columns["counter"]["parameters"]["__debezium.source.column.type"] == "BIGINT UNSIGNED"
    assert written["payload"]["after"]["spot"] == orjson.loads(MYSQL[0])["payload"]["after"]["spot"]


def test_two_different_structs_of_one_name_stay_a_dead_letter_of_their_own() -> None:
    document = orjson.loads(MYSQL[1])
    for side in document["schema"]["fields"][:2]:
        spot = side["fields"][5]
        spot["fields"] = [*spot["fields"], {"type": "int32", "optional": True, "field": "z"}]
    other = orjson.dumps(document)
    afters, errors = decode([MYSQL[0], other, MYSQL[2]])
    assert len(afters) == 2
    ((index, error),) = errors
    assert (
        index == 1 and "io.debezium.data.geometry.Geometry is defined differently" in error.reason
    )


# --- through Spark ----------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_reads_the_edge_examples_with_their_types(spark: Any) -> None:
    spark.dataSource.register(FilesDataSource)

    def read(collection: str) -> Any:
        return (
            spark.read.format("cdc-files")
            .option("format", "debezium-json")
            .option("typed", "true")
            .option("collection", collection)
            .load(str(EDGE))
        )

    measures = read("inventory.measures")
    after = measures.schema["after"].dataType
    assert after["total"].dataType == StringType()
    assert after["counter"].dataType == DecimalType(20, 0)
    geometry = StructType(
        [StructField("wkb", BinaryType(), False), StructField("srid", IntegerType(), True)]
    )
    assert after["area"].dataType == geometry and after["spot"].dataType == geometry
    rows = measures.collect()
    totals = {r.after.id: r.after.total for r in rows if r.dead_letter is None and r.after}
    assert totals == {1: "19.990000000000000000000000000000", 2: TOTAL_2}
    (letter,) = [r for r in rows if r.dead_letter is not None]
    assert "after.total" in dict(letter.metadata)[DLQ_ERROR]
    exact = measures.selectExpr("CAST(after.total AS DECIMAL(38, 2)) AS t").where("t < 100")
    assert [r.t for r in exact.collect()] == [Decimal("19.99")]

    readings = read("postgres.public.readings").orderBy("after.id").collect()
    assert [r.after.reading for r in readings] == [
        "12.345",
        "1.50",
        "-98765432109876543210987654321098765432109876543210.5",
    ]
    assert readings[0].after.big == BIG_1


@pytest.mark.spark
def test_typed_view_of_a_subject_with_a_65_digit_decimal_gives_its_text(
    spark: Any, tmp_path: Path
) -> None:
    register(spark)
    url = f"sqlite:///{tmp_path}/registry.db"
    records = (
        spark.read.format("cdc-files")
        .option("format", "debezium-json")
        .option("registry", url)
        .load(str(EDGE / "mysql_measures.jsonl"))
        .cache()
    )
    records.count()  # read: the row schema is registered
    view = typed_view(records, url, "inventory.measures.payload")
    assert view.schema["after"].dataType["total"].dataType == StringType()
    assert view.schema["after"].dataType["price"].dataType == DecimalType(10, 2)
    totals = {r.after.id: r.after.total for r in view.collect() if r.after}
    # The number exactly, as Spark writes a VARIANT decimal: no trailing zeros.
    assert totals[1] == "19.99"


def test_a_decimal_scale_no_database_has_is_the_dead_letter_of_its_message() -> None:
    # A schema block whose total has scale 20000, beyond any database's (PostgreSQL: 16383).
    document = orjson.loads(MYSQL[1])
    for side in document["schema"]["fields"][:2]:
        side["fields"][1]["parameters"]["scale"] = "20000"
    document["payload"]["after"]["total"] = "AQ=="  # 1E-20000: one digit
    afters, errors = decode([MYSQL[0], orjson.dumps(document), MYSQL[2]])
    assert [a["id"] for a in afters] == [1, 2]
    ((index, error),) = errors
    assert index == 1 and "scale beyond 16383" in error.reason


def test_a_float32_number_spark_s_float_would_change_is_refused_not_rounded() -> None:
    """Spark's ``float`` holds what a Connect ``float32`` holds: ``0.1`` as written, but
    ``16777217`` it would read as ``16777216``: that message is refused, both ways, never
    rounded."""
    schema = {
        "type": "struct",
        "fields": [
            {
                "type": "struct",
                "optional": True,
                "field": "after",
                "fields": [
                    {"type": "int32", "field": "id"},
                    {"type": "float", "optional": True, "field": "f"},
                ],
            },
            {"type": "string", "field": "op"},
        ],
    }
    numbers = [0.1, 16777217, 0.123456789, 1e-46, 3.5, None, 3.4e38, 3.4028235e38, 3.5e38]
    lines = [
        orjson.dumps({"schema": schema, "payload": {"after": {"id": n, "f": f}, "op": "c"}})
        for n, f in enumerate(numbers)
    ]
    for batch in (lines, [resorted(line) for line in lines]):  # the columns; per message
        rows, errors = decode(batch, sample=lines[0])
        assert [(r["id"], r["f"]) for r in rows] == [
            (0, pytest.approx(0.1, rel=1e-7)),
            (4, 3.5),
            (5, None),
            (6, pytest.approx(3.4e38, rel=1e-7)),
            (7, pytest.approx(3.4028235e38, rel=1e-7)),  # (Java's text of the largest float)
        ]
        assert sorted(index for index, _ in errors) == [1, 2, 3, 8]
        assert all("would change" in str(e) or "range" in str(e) for _, e in errors), errors
