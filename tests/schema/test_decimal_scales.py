"""Avro decimals whose scale is below zero or above their precision, off the Spark path.

Oracle's ``NUMBER(5,-2)`` reaches the registry through Confluent's AvroConverter as
``{"type":"bytes","logicalType":"decimal","precision":5,"scale":-2}`` and PostgreSQL's
``numeric(3,5)`` as ``decimal(3, 5)``. Confluent's registry takes both; fastavro refuses
to parse them. Such a schema is registered, read and written exactly by the registry
encoder and decoder and by ``convert`` (``avro``, ``debezium-avro``): a value is a
``Decimal`` with the schema's scale (unscaled 123 at scale -2 is ``1.23E+4``), and a value
that does not fit is a dead letter naming its field, never the end of a read.
"""

from __future__ import annotations

import base64
import io
import json
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import orjson
import pytest

from cdc_connectors.formats import Message
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.registry import SchemaRegistry, open_registry
from cdc_connectors.registry.serde import RecordDecoder, RecordEncoder
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.schema import framing
from tests.conftest import run_cli


def decimal(precision: int, scale: int) -> dict[str, Any]:
    return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}


MEASURE: dict[str, Any] = {
    "type": "record",
    "name": "Measure",
    "namespace": "lab",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "hundreds", "type": decimal(5, -2)},  # Oracle NUMBER(5,-2)
        {"name": "tiny", "type": decimal(3, 5)},  # PostgreSQL numeric(3,5)
        {"name": "thousands", "type": ["null", decimal(7, -3)], "default": None},
        {
            "name": "packed",
            "type": {**decimal(5, -2), "type": "fixed", "name": "Hundreds", "size": 3},
        },
        {"name": "samples", "type": {"type": "array", "items": decimal(3, -1)}},
        {"name": "price", "type": decimal(10, 2)},  # an ordinary decimal beside them
    ],
}
#: Each value as a Decimal with its schema's scale (its text shows the scale), and the
#: unscaled integer its bytes hold.
ROW = {
    "id": 1,
    "hundreds": Decimal("1.23E+4"),
    "tiny": Decimal("-0.00123"),
    "thousands": Decimal("-4.567E+6"),
    "packed": Decimal("-9.9999E+6"),
    "samples": [Decimal("1.2E+2"), Decimal("0E+1"), Decimal("-9.99E+3")],
    "price": Decimal("12.30"),
}
UNSCALED = {
    "id": 1,
    "hundreds": 123,
    "tiny": -123,
    "thousands": -4567,
    "packed": -99999,
    "samples": [12, 0, -999],
    "price": 1230,
}
SUBJECT = "lab.measures-value"


def twos(unscaled: int, size: int = 0) -> bytes:
    """Two's complement, big-endian: ``size`` bytes, else the fewest (as Java writes)."""
    width = size or (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(width, "big", signed=True)


def without_decimals(schema: Any) -> Any:
    """The schema with decimals as their bare bytes / fixed (fastavro parses it)."""
    if isinstance(schema, list):
        return [without_decimals(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: without_decimals(v) for k, v in schema.items() if k != "logicalType"}
    if "fields" in schema:
        out["fields"] = [{**f, "type": without_decimals(f["type"])} for f in schema["fields"]]
    return out


def body(unscaled: dict[str, Any], schema: dict[str, Any] = MEASURE) -> bytes:
    """The Avro body Java's serializer writes for a row given by unscaled values."""
    raw = {}
    for name, value in unscaled.items():
        if name == "id" or value is None:
            raw[name] = value
        elif isinstance(value, list):
            raw[name] = [twos(v) for v in value]
        else:
            raw[name] = twos(value, 3 if name == "packed" else 0)
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(without_decimals(schema)), raw)
    return buffer.getvalue()


def same(value: Any, expected: Any) -> bool:
    """Equal, and every Decimal with the same scale (its text, ``1.23E+4``, is the same)."""
    if isinstance(expected, dict):
        return (
            isinstance(value, dict)
            and value.keys() == expected.keys()
            and all(same(value[k], expected[k]) for k in expected)
        )
    if isinstance(expected, list):
        return (
            isinstance(value, list)
            and len(value) == len(expected)
            and all(same(v, e) for v, e in zip(value, expected, strict=True))
        )
    if isinstance(expected, Decimal):
        return isinstance(value, Decimal) and str(value) == str(expected)
    return bool(value == expected)


@pytest.fixture(params=["memory", "sqlite"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SchemaRegistry]:
    url = (
        f"memory://{uuid.uuid4().hex}"
        if request.param == "memory"
        else f"sqlite:///{tmp_path}/registry.db"
    )
    reg = open_registry(url)
    yield reg
    reg.close()


def _named(record: Record, subject: str, version: int) -> Record:
    metadata = record.metadata.copy()
    framing.set_conduit_schema(metadata, "payload", subject, version)
    return replace(record, metadata=metadata)


# --- the registry ----------------------------------------------------------------------------


def test_the_embedded_registry_takes_such_schemas_quietly(registry: SchemaRegistry) -> None:
    store = SchemaStore(registry)
    with warnings.catch_warnings(record=True) as shown:
        first = store.register(SUBJECT, json.dumps(MEASURE))
        # The same schema spelled otherwise is the same schema; another scale is not.
        again = SchemaStore(registry).register(SUBJECT, json.dumps(MEASURE, indent=1))
        fields = [dict(f) for f in MEASURE["fields"]]
        fields[1] = {**fields[1], "type": decimal(5, -3)}
        other = SchemaStore(registry).register(
            "lab.other-value", json.dumps(dict(MEASURE, fields=fields))
        )
    assert again.schema_id == first.schema_id and other.schema_id != first.schema_id
    # The avro package says it ignores such decimals; they are honoured here, so it is not shown.
    assert [str(w.message) for w in shown] == []
    assert json.loads(registry.get_schema(first.schema_id).schema_str or "") == MEASURE


# --- RecordEncoder / RecordDecoder -----------------------------------------------------------


@pytest.mark.parametrize("framing_name", ["conduit", "confluent"])
def test_values_round_trip_exactly_through_the_encoder_and_decoder(
    registry: SchemaRegistry, framing_name: Any
) -> None:
    store = SchemaStore(registry)
    schema_id = store.register(SUBJECT, json.dumps(MEASURE)).schema_id
    expected = body(UNSCALED)
    # Decimals, their text, integers, and numbers of another exponent: one value each.
    given = [
        ROW,
        {
            **ROW,
            "hundreds": "12300",
            "tiny": "-0.001230",
            "thousands": -4567000,
            "packed": "-9999900",
            "samples": [120, "0", Decimal("-9990.00")],
            "price": "12.3",
        },
    ]
    for row in given:
        record = _named(Record.new("create", after=row), SUBJECT, 1)
        encoded = RecordEncoder(store, framing=framing_name).encode(record)
        data = encoded.payload.after
        assert isinstance(data, bytes)
        assert data == (
            framing.frame(schema_id, expected) if framing_name == "confluent" else expected
        )
        decoded = RecordDecoder(store).decode(encoded)
        assert same(decoded.payload.after, ROW), decoded.payload.after
    # A zero, and the null of the union.
    zero = {**ROW, "hundreds": 0, "tiny": Decimal("0"), "thousands": None}
    encoded = RecordEncoder(store).encode(_named(Record.new("create", after=zero), SUBJECT, 1))
    after = RecordDecoder(store).decode(encoded).payload.after
    assert isinstance(after, dict)
    assert str(after["hundreds"]) == "0E+2" and str(after["tiny"]) == "0.00000"
    assert after["thousands"] is None


def test_what_java_writes_reads_as_decimals_with_the_schema_scale(registry: SchemaRegistry) -> None:
    schema_id = SchemaStore(registry).register(SUBJECT, json.dumps(MEASURE)).schema_id
    record = Record.new("create", after=framing.frame(schema_id, body(UNSCALED)))
    after = RecordDecoder(SchemaStore(registry)).decode(record).payload.after
    assert same(after, ROW) and isinstance(after, dict)
    assert after["hundreds"] == 12300  # the number, whatever its notation


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("hundreds", Decimal("12345"), r"hundreds: 12345 has nonzero digits below 1E\+2"),
        ("hundreds", 10**7, r"hundreds: 10000000 has more digits than decimal\(5,-2\)"),
        ("tiny", Decimal("0.01"), r"tiny: 0.01 has more digits than decimal\(3,5\)"),
        ("tiny", "0.000001", r"tiny: 0.000001 has more than 5 decimal places"),
        ("packed", "12.5", r"packed: 12.5 has nonzero digits below 1E\+2"),
        ("hundreds", "a lot", r"hundreds: 'a lot' is not a decimal number"),
    ],
)
def test_a_value_the_schema_cannot_hold_is_a_codec_error_naming_the_field(
    registry: SchemaRegistry, field: str, value: Any, reason: str
) -> None:
    store = SchemaStore(registry)
    store.register(SUBJECT, json.dumps(MEASURE))
    record = _named(Record.new("create", after={**ROW, field: value}), SUBJECT, 1)
    with pytest.raises(CodecError, match=reason):
        RecordEncoder(store).encode(record)


def test_bytes_holding_more_digits_than_the_precision_are_a_codec_error_naming_the_field(
    registry: SchemaRegistry,
) -> None:
    store = SchemaStore(registry)
    schema_id = store.register(SUBJECT, json.dumps(MEASURE)).schema_id
    for field, unscaled in (("hundreds", 123456), ("packed", -100000), ("tiny", 1000)):
        framed = framing.frame(schema_id, body({**UNSCALED, field: unscaled}))
        with pytest.raises(CodecError, match=rf"payload.after: .*{field}: decimal with unscaled"):
            RecordDecoder(store).decode(Record.new("create", after=framed))


def test_versions_resolve_and_a_default_of_such_a_decimal_is_read_exactly(
    registry: SchemaRegistry,
) -> None:
    store = SchemaStore(registry)
    v1 = {**MEASURE, "fields": MEASURE["fields"][:3]}
    v2 = {
        **MEASURE,
        "fields": [
            *MEASURE["fields"][:3],
            {"name": "tens", "type": decimal(4, -1), "default": "\u0001"},  # unscaled 1
        ],
    }
    store.register(SUBJECT, json.dumps(v1))
    store.register(SUBJECT, json.dumps(v2))
    row = {"id": 7, "hundreds": Decimal("1.23E+4"), "tiny": Decimal("0.00999")}
    written = RecordEncoder(store).encode(_named(Record.new("create", after=row), SUBJECT, 1))
    after = RecordDecoder(store, reader="latest").decode(written).payload.after
    assert same(after, {**row, "tens": Decimal("1E+1")})


# --- convert ---------------------------------------------------------------------------------


def _kv_lines(values: list[bytes | None]) -> bytes:
    return b"".join(
        orjson.dumps({"key": None, "value": None if v is None else base64.b64encode(v).decode()})
        + b"\n"
        for v in values
    )


def test_convert_from_avro_shows_them_as_decimals_are_shown_and_writes_them_back(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/registry.db"
    schema_id = SchemaStore(open_registry(url)).register(SUBJECT, json.dumps(MEASURE)).schema_id
    good = framing.frame(schema_id, body(UNSCALED))
    other = framing.frame(schema_id, body({**UNSCALED, "id": 2, "thousands": None}))
    too_wide = framing.frame(schema_id, body({**UNSCALED, "id": 3, "hundreds": 123456}))
    source = tmp_path / "rows.jsonl"
    source.write_bytes(_kv_lines([good, too_wide, other]))
    errors = tmp_path / "dead.jsonl"
    done = run_cli(
        "convert", "--from", "avro", "--to", "opencdc-json", "--registry", url,
        "--opt", "topic=lab.measures", "--errors", str(errors), str(source),
    )  # fmt: skip
    # One bad message is a dead letter naming its field; the read goes on.
    assert done.returncode == 1, done.stderr
    assert b"read 3 messages, wrote 2 records, skipped 0, errors 1" in done.stderr
    (letter,) = [orjson.loads(line) for line in errors.read_bytes().splitlines()]
    reason = letter["metadata"]["conduit.dlq.nack.error"]
    assert "hundreds: decimal with unscaled value 123456 has more digits" in reason
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    # Each number as an ordinary decimal is shown: its exact text at its schema's scale.
    text = lines[0].decode()
    for shown in (
        '"hundreds":1.23E+4',
        '"tiny":-0.00123',
        '"thousands":-4.567E+6',
        '"packed":-9.9999E+6',
        '"samples":[1.2E+2,0E+1,-9.99E+3]',
        '"price":12.30',
    ):
        assert shown in text, text
    # Read back and written with the registered schema, they are the same bytes.
    schema_file = tmp_path / "measure.avsc"
    schema_file.write_text(json.dumps(MEASURE))
    opencdc = tmp_path / "records.jsonl"
    opencdc.write_bytes(done.stdout)
    back = run_cli(
        "convert", "--from", "opencdc-json", "--to", "avro", "--registry", url,
        "--opt", "topic=lab.measures", "--opt", f"value.schema={schema_file}", str(opencdc),
    )  # fmt: skip
    assert back.returncode == 0, back.stderr
    values = [base64.b64decode(orjson.loads(line)["value"]) for line in back.stdout.splitlines()]
    assert values == [good, other]


ROW_SCHEMA = {
    "type": "record",
    "name": "Value",
    "namespace": "lab.public.measures",
    "fields": [
        {"name": "id", "type": "int"},
        {
            "name": "hundreds",
            "type": [
                "null",
                {
                    **decimal(5, -2),
                    "connect.version": 1,
                    "connect.parameters": {"scale": "-2", "connect.decimal.precision": "5"},
                    "connect.name": "org.apache.kafka.connect.data.Decimal",
                },
            ],
            "default": None,
        },
        {"name": "tiny", "type": ["null", decimal(3, 5)], "default": None},
    ],
}
ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "namespace": "lab.public.measures",
    "fields": [
        {"name": "before", "type": ["null", ROW_SCHEMA], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {
            "name": "source",
            "type": {
                "type": "record",
                "name": "Source",
                "namespace": "io.debezium.connector.oracle",
                "fields": [
                    {"name": "db", "type": "string"},
                    {"name": "schema", "type": "string"},
                    {"name": "table", "type": "string"},
                    {"name": "ts_ms", "type": "long"},
                ],
            },
        },
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
}


def _envelope(registry: SchemaRegistry, after: dict[str, Any] | None) -> bytes:
    schema_id = (
        SchemaStore(registry).register("lab.public.measures-value", json.dumps(ENVELOPE)).schema_id
    )
    raw = {
        "before": None,
        "after": None
        if after is None
        else {k: v if k == "id" or v is None else twos(v) for k, v in after.items()},
        "source": {
            "db": "LAB",
            "schema": "public",
            "table": "measures",
            "ts_ms": 1_700_000_000_000,
        },
        "op": "c",
        "ts_ms": 1_700_000_000_100,
    }
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(without_decimals(ENVELOPE)), raw)
    return framing.frame(schema_id, buffer.getvalue())


def test_debezium_avro_reads_them_through_convert_and_writes_them_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/registry.db"
    registry = open_registry(url)
    value = _envelope(registry, {"id": 1, "hundreds": -99999, "tiny": 123})
    source = tmp_path / "events.jsonl"
    source.write_bytes(_kv_lines([value]))
    done = run_cli(
        "convert", "--from", "debezium-avro", "--to", "opencdc-json", "--registry", url,
        str(source),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert b'"after":{"hundreds":-9.9999E+6,"id":1,"tiny":0.00123}' in line, line
    record = orjson.loads(line)
    # The row schema is registered as it is (Conduit's subject), its scales as written.
    subject = record["metadata"]["opencdc.payload.schema.subject"]
    registered = json.loads(registry.get_latest_version(subject).schema.schema_str or "")
    assert registered["fields"][1]["type"][1]["scale"] == -2
    # Decoded, written back with that row schema, and decoded again: the same numbers.
    fmt = DebeziumAvroFormat({"topic": "copy"}, registry=url)
    (decoded,) = fmt.decode(Message(value))
    want = {"id": 1, "hundreds": Decimal("-9.9999E+6"), "tiny": Decimal("0.00123")}
    assert same(decoded.payload.after, want)
    (again,) = fmt.decode(fmt.encode(decoded))
    assert same(again.payload.after, want)


def test_a_schema_fastavro_refuses_otherwise_is_a_codec_error_not_the_end_of_a_read(
    registry: SchemaRegistry,
) -> None:
    # A fixed of 2 bytes cannot hold 10 digits: Java's parser ignores such a logical type,
    # Confluent's registry takes the schema, fastavro refuses it.
    odd = {
        "type": "record",
        "name": "Odd",
        "fields": [
            {"name": "n", "type": {**decimal(10, 2), "type": "fixed", "name": "Two", "size": 2}}
        ],
    }
    store = SchemaStore(registry)
    schema_id = store.register("odd-value", json.dumps(odd)).schema_id
    framed = framing.frame(schema_id, b"\x00\x01")
    with pytest.raises(CodecError, match=r"payload.after: schema id \d+ is not an Avro schema"):
        RecordDecoder(store).decode(Record.new("create", after=framed))
    record = _named(Record.new("create", after={"n": "0.01"}), "odd-value", 1)
    with pytest.raises(CodecError, match=r"payload.after: 'odd-value' version 1 .*is not an Avro"):
        RecordEncoder(store).encode(record)


@pytest.mark.spark
def test_expand_reads_them_as_exact_text_through_the_registry_and_encode_writes_them_back(
    spark: Any, tmp_path: Path
) -> None:
    from cdc_connectors.spark import records_dataframe
    from cdc_connectors.spark.expand import encode, expand

    url = f"sqlite:///{tmp_path}/registry.db"
    store = SchemaStore(open_registry(url))
    schema_id = store.register(SUBJECT, json.dumps(MEASURE)).schema_id
    framed = framing.frame(schema_id, body(UNSCALED))
    typed = expand(
        records_dataframe(spark, [Record.new("create", position=b"1", after=framed)]), url, SUBJECT
    )
    (row,) = typed.collect()
    assert row.error is None
    assert (row.after.hundreds, row.after.tiny, row.after.packed) == (
        "12300",
        "-0.00123",
        "-9999900",
    )
    assert row.after.samples == ["120", "0", "-9990"] and row.after.price == Decimal("12.30")
    (written,) = encode(typed.drop("error"), url, SUBJECT, "after").collect()
    assert (written.value, written.error) == (framed, None)
