"""Debezium records typed through the registry expand to Spark's own types."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql.types import DateType, DecimalType, IntegerType, TimestampType

from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.serde import RecordEncoder
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.spark import expand, records_dataframe
from tests.formats.test_debezium_json import decode_one, message, pg_event

pytestmark = pytest.mark.spark


def test_a_debezium_decimal_timestamp_and_date_are_spark_types(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path}/registry.db"
    record = decode_one(DebeziumJsonFormat({}, registry=url), message(pg_event()))
    subject = record.metadata.payload_schema_subject
    assert subject is not None
    encoded = RecordEncoder(SchemaStore(open_registry(url))).encode(record)
    assert isinstance(encoded.payload.after, bytes)  # Avro of the registered version
    df = expand(records_dataframe(spark, [encoded]), url, subject)
    after = df.schema["after"].dataType
    assert after["id"].dataType == IntegerType()
    assert after["price"].dataType == DecimalType(10, 2)
    assert after["updated_at"].dataType == TimestampType()
    assert after["ship_date"].dataType == DateType()
    (row,) = df.collect()
    assert row.error is None
    assert row.after.price == Decimal("12.34")
    assert row.after.ship_date == dt.date(1970, 1, 1) + dt.timedelta(days=19_700)
    (micros,) = df.selectExpr("unix_micros(after.updated_at) AS us").first()
    assert micros == 1_700_000_000_123_456  # exact, in whatever time zone the machine is
