"""Avro -> OpenCDC JSON -> Avro gives back the same bytes, binary values and unions included."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.formats import Message, load_format
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc.json_codec import record_from_json, record_to_json
from cdc_connectors.registry import open_registry

VALUE = SerializationContext("t", MessageField.VALUE)
ENUM = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
FIXED = {"type": "fixed", "name": "F", "size": 3}
SCHEMA = {
    "type": "record",
    "name": "Row",
    "fields": [
        {"name": "u", "type": ["null", "string", "bytes"]},
        {"name": "b", "type": "bytes"},
        {"name": "f", "type": FIXED},
        {"name": "fe", "type": [ENUM, "F"]},
        {
            "name": "nested",
            "type": {
                "type": "record",
                "name": "N",
                "fields": [
                    {"name": "nb", "type": "bytes"},
                    {"name": "list", "type": {"type": "array", "items": ["string", "bytes"]}},
                    {"name": "map", "type": {"type": "map", "values": "F"}},
                ],
            },
        },
        {
            "name": "d",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0},
        },
        {"name": "i", "type": ["int", "long"]},
    ],
}
ROWS: list[dict[str, Any]] = [
    {
        "u": b"\x00\xff",
        "b": b"\x00\x01",
        "f": b"\x01\x01\x01",
        "fe": b"\x01\x01\x01",
        "nested": {"nb": b"\xff", "list": ["AP8=", b"\x00\xff"], "map": {"k": b"abc"}},
        "d": Decimal(10**38 - 1),
        "i": 5,
    },
    {
        "u": "AP8=",
        "b": b"",
        "f": b"abc",
        "fe": "A",
        "nested": {"nb": b"", "list": [], "map": {}},
        "d": Decimal(-(10**38 - 1)),
        "i": 2**40,
    },
]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[str, list[bytes]]:
    url = f"sqlite:///{tmp_path}/registry.db"
    serializer = AvroSerializer(open_registry(url), json.dumps(SCHEMA))
    return url, [serializer(row, VALUE) for row in ROWS]


def _through_json(url: str, bodies: list[bytes]) -> list[bytes]:
    reader = load_format("avro")({"topic": "t"}, registry=url)
    writer = load_format("avro")({"topic": "t"}, registry=url)
    out = []
    for body in bodies:
        (record,) = reader.decode(Message(value=body))
        again = record_from_json(record_to_json(record))  # what a file or topic holds
        message = writer.encode(again)
        assert message.value is not None
        out.append(message.value)
    return out


def test_rows_come_back_byte_for_byte_through_opencdc_json(setup):
    url, bodies = setup
    assert _through_json(url, bodies) == bodies
    deserializer = AvroDeserializer(open_registry(url))
    assert [deserializer(b, VALUE) for b in _through_json(url, bodies)] == ROWS


def test_bytes_in_a_union_with_string_are_base64_in_json_and_the_branch_is_kept(setup):
    url, bodies = setup
    (record,) = load_format("avro")({"topic": "t"}, registry=url).decode(Message(value=bodies[0]))
    shown = json.loads(record_to_json(record))
    assert shown["payload"]["after"]["u"] == "AP8="
    assert shown["payload"]["after"]["b"] == "AAE="
    branches = json.loads(shown["metadata"]["avro.payload.after.branches"])
    assert branches == {
        "u": "bytes",
        "fe": "F",
        "nested.list[0]": "string",
        "nested.list[1]": "bytes",
    }


def test_base64_without_branches_goes_to_bytes_and_fixed_where_no_other_branch_takes_it(tmp_path):
    url = f"sqlite:///{tmp_path}/registry.db"
    schema = {
        "type": "record",
        "name": "Row",
        "fields": [
            {"name": "b", "type": "bytes"},
            {"name": "fe", "type": [ENUM, FIXED]},
            {
                "name": "n",
                "type": {"type": "record", "name": "N", "fields": [{"name": "f", "type": "F"}]},
            },
        ],
    }
    schema_file = tmp_path / "row.avsc"
    schema_file.write_text(json.dumps(schema))
    writer = load_format("avro")({"topic": "t", "value.schema": str(schema_file)}, registry=url)
    record = record_from_json(
        b'{"operation":"create","payload":{"after":{"b":"AP8=","fe":"AQEB","n":{"f":"YWJj"}}}}'
    )
    body = writer.encode(record).value
    assert AvroDeserializer(open_registry(url))(body, VALUE) == {
        "b": b"\x00\xff",
        "fe": b"\x01\x01\x01",
        "n": {"f": b"abc"},
    }


@pytest.mark.parametrize(
    ("branches", "reason"),
    [
        ("not json", "metadata avro.payload.after.branches: not a JSON object"),
        ('{"u": 3}', "metadata avro.payload.after.branches: not a JSON object"),
        ('{"u": "double"}', "u: the union has no branch 'double'"),
        ('{"u": "string"}', None),  # the text "AP8=" as a string: a valid choice
    ],
)
def test_branches_metadata_that_does_not_fit_is_an_error_naming_it(setup, branches, reason):
    url, bodies = setup
    (decoded,) = load_format("avro")({"topic": "t"}, registry=url).decode(Message(value=bodies[0]))
    record = record_from_json(record_to_json(decoded))
    record.metadata["avro.payload.after.branches"] = branches
    writer = load_format("avro")({"topic": "t"}, registry=url)
    if reason is None:
        body = writer.encode(record).value
        assert AvroDeserializer(open_registry(url))(body, VALUE)["u"] == "AP8="
        return
    with pytest.raises(CodecError, match=reason):
        writer.encode(record)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("AP8", "b: 'AP8' is not base64"),
        ("YWJjZA==", None),
    ],
)
def test_base64_that_is_not_base64_or_of_the_wrong_size_is_an_error(tmp_path, value, reason):
    url = f"sqlite:///{tmp_path}/registry.db"
    schema = {
        "type": "record",
        "name": "Row",
        "fields": [{"name": "b", "type": "bytes"}, {"name": "f", "type": FIXED}],
    }
    schema_file = tmp_path / "row.avsc"
    schema_file.write_text(json.dumps(schema))
    writer = load_format("avro")({"topic": "t", "value.schema": str(schema_file)}, registry=url)
    row = {"b": value, "f": "YWJjZA=="}  # four bytes for a fixed of three
    record = record_from_json(json.dumps({"operation": "create", "payload": {"after": row}}))
    with pytest.raises(CodecError, match=reason or "f: 4 bytes where the Avro fixed 'F' holds 3"):
        writer.encode(record)
