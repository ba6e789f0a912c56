"""The semantic type table is the one description of Kafka Connect's named types: every
entry reads a JSON value, and writes what a record holds back to the same JSON value."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_connectors.schema.avro_values import to_structured
from cdc_connectors.schema.connect import AVRO_LOGICAL_CONNECT, SEMANTIC_TYPES

_CDL = "com.*.cdc.data."
# A JSON value of each semantic type as its producer writes it, with the parameters it needs.
SAMPLES: dict[str, tuple[Any, dict[str, str]]] = {
    "org.apache.kafka.connect.data.Decimal": ("AOJA", {"scale": "2"}),
    "org.apache.kafka.connect.data.Date": (19_000, {}),
    "org.apache.kafka.connect.data.Time": (3_723_004, {}),
    "org.apache.kafka.connect.data.Timestamp": (1_700_000_000_123, {}),
    "io.debezium.time.Date": (-719_162, {}),
    "io.debezium.time.Time": (86_399_999, {}),
    "io.debezium.time.MicroTime": (45_296_789_012, {}),
    "io.debezium.time.NanoTime": (45_296_789_012_345, {}),
    "io.debezium.time.Timestamp": (1_700_000_000_123, {}),
    "io.debezium.time.MicroTimestamp": (1_700_000_000_123_456, {}),
    "io.debezium.time.NanoTimestamp": (1_700_000_000_123_456_789, {}),
    "io.debezium.time.ZonedTimestamp": ("2024-01-02T03:04:05.123456+02:00", {}),
    "io.debezium.time.ZonedTime": ("03:04:05.123+02:00", {}),
    "io.debezium.time.Year": (2024, {}),
    "io.debezium.data.VariableScaleDecimal": ({"scale": 3, "value": "AeJA"}, {}),
    "io.debezium.data.Json": ('{"a": [1, 2]}', {}),
    "io.debezium.data.Enum": ("paid", {"allowed": "new,paid"}),
    "io.debezium.data.EnumSet": ("a,b", {}),
    "io.debezium.data.Uuid": ("0b1c7a2e-5f43-4a5e-9d35-3f0e2b6c9a10", {}),
    _CDL + "Decimal": ("12.500000000000000000", {}),
    _CDL + "timestamp": ("2024-01-02T03:04:05.123456+00:00", {}),
}


def test_every_semantic_type_has_a_sample() -> None:
    assert set(SAMPLES) == set(SEMANTIC_TYPES)


@pytest.mark.parametrize("name", sorted(SEMANTIC_TYPES))
def test_write_is_the_reverse_of_read(name: str) -> None:
    semantic = SEMANTIC_TYPES[name]
    value, params = SAMPLES[name]
    held = to_structured(semantic.convert(value, params))  # what a record holds
    assert semantic.write(held, params) == value


@pytest.mark.parametrize("name", sorted(SEMANTIC_TYPES))
def test_columnar_reading_matches_the_connect_type(name: str) -> None:
    semantic = SEMANTIC_TYPES[name]
    way = semantic.columnar
    if way is None:
        return
    numbers = {"int32", "int64"}
    expected = {
        "count": numbers,
        "time_of_day": numbers,
        "timestamp": {"int64"},
        "decimal": {"bytes"},
        "decimal_text": {"string"},
        "iso_timestamp": {"string"},
        "text": {"string"},
        "enum": {"string"},
        "uuid": {"string"},
        "by_value": {"struct"},
    }[way.kind]
    assert semantic.connect_type in expected


def test_avro_logical_types_read_back_as_their_connect_type() -> None:
    for logical, (connect_type, name) in AVRO_LOGICAL_CONNECT.items():
        semantic = SEMANTIC_TYPES[name]
        assert semantic.connect_type == connect_type
        assert semantic.avro({"scale": "0"}).get("logicalType") in (logical, None) or (
            logical.startswith("local-")
        )
