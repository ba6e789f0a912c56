"""Records <-> Arrow batches <-> Spark rows, in a real local Spark session."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings

from cdc_connectors.opencdc import CodecError, Record, record_from_json
from cdc_connectors.spark import (
    OPENCDC_ARROW_SCHEMA,
    OPENCDC_SCHEMA,
    record_from_row,
    records_dataframe,
    records_from_batch,
    records_to_batch,
)
from tests.hypothesis_profiles import examples
from tests.opencdc.canonical import CANONICAL
from tests.strategies import records

BIG = 9007199254740993  # 2**53 + 1: a double cannot hold it


@settings(max_examples=examples(60), deadline=None)
@given(records())
def test_arrow_round_trip(record: Record):
    batch = records_to_batch([record])
    assert batch.schema == OPENCDC_ARROW_SCHEMA
    assert list(records_from_batch(batch)) == [record]


@pytest.mark.spark
def test_a_batch_of_all_null_columns_is_accepted_by_spark_and_reads_back(spark):
    # inferred from the values alone these columns would be Arrow type null, which Spark refuses
    only_nulls = [Record.new("delete", position=b"p"), Record.new("delete", position=b"q")]
    assert pa.Table.from_pylist([{"k": None}]).schema.field("k").type == pa.null()
    df = records_dataframe(spark, only_nulls)
    assert df.schema == OPENCDC_SCHEMA
    assert [record_from_row(r) for r in df.orderBy("position").collect()] == only_nulls


def test_structured_data_with_no_variant_form_names_the_record_and_field():
    deep: dict = {"a": 1}
    for _ in range(200):
        deep = {"a": deep}
    records = [Record.new("create", after={"ok": 1}), Record.new("create", before=deep)]
    with pytest.raises(
        CodecError,
        match=r"record 1: payload\.before(\.a){6} \(and \d+ levels more\): value nests deeper than",
    ):
        records_to_batch(records)
    with pytest.raises(CodecError, match=r"record 0: key\.n: sNaN \(a signaling NaN\)"):
        records_to_batch([Record.new("create", key={"n": Decimal("sNaN")})])


@pytest.mark.spark
def test_dataframe_has_the_opencdc_schema_and_rows_convert_back(spark):
    originals = [record_from_json(doc) for doc in CANONICAL]
    originals.append(Record.new("delete", position=b"d", key={"id": BIG}, before={"id": BIG}))
    df = records_dataframe(spark, originals)
    assert df.schema == OPENCDC_SCHEMA
    back = [record_from_row(row) for row in df.orderBy("position").collect()]
    by_position = {r.position: r for r in originals}
    assert back == [by_position[r.position] for r in back]
    assert len(back) == len(originals)


@pytest.mark.spark
def test_variant_get_reads_typed_payload_fields_and_keeps_large_ints_exact(spark):
    records = [
        Record.new(
            "create", position=b"1", key={"id": 1}, after={"id": BIG, "amount": "12.50", "ok": True}
        ),
        Record.new("update", position=b"2", key=b"raw", after=b"raw-bytes"),
    ]
    records_dataframe(spark, records).createOrReplaceTempView("t")
    rows = spark.sql(
        """
        SELECT operation,
               variant_get(payload.after.structured_data, '$.id', 'bigint') AS id,
               variant_get(payload.after.structured_data, '$.amount', 'decimal(10,2)') AS amount,
               variant_get(payload.after.structured_data, '$.ok', 'boolean') AS ok,
               payload.after.raw_data AS raw
        FROM t ORDER BY position
        """
    ).collect()
    assert rows[0].operation == "create" and rows[0].id == BIG and str(rows[0].amount) == "12.50"
    assert rows[0].ok is True and rows[0].raw is None
    assert rows[1].id is None and bytes(rows[1].raw) == b"raw-bytes"


@pytest.mark.spark
def test_python_data_source_yielding_arrow_batches_serves_the_opencdc_schema(spark):
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Reader(DataSourceReader):
        def partitions(self):
            return [InputPartition(i) for i in range(2)]

        def read(self, partition):
            from cdc_connectors.opencdc import Record
            from cdc_connectors.spark import records_to_batch

            i = partition.value
            # an all-null key column in the first batch: the explicit schema keeps it typed
            yield records_to_batch([Record.new("delete", position=f"{i}-a".encode())])
            yield records_to_batch(
                [Record.new("create", position=f"{i}-b".encode(), key={"id": i}, after={"id": i})]
            )

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "test-opencdc-batches"

        def schema(self):
            return OPENCDC_SCHEMA

        def reader(self, schema):
            return Reader()

    spark.dataSource.register(Source)
    df = spark.read.format("test-opencdc-batches").load()
    rows = sorted(df.collect(), key=lambda r: bytes(r.position))
    records = [record_from_row(r) for r in rows]
    assert [r.position for r in records] == [b"0-a", b"0-b", b"1-a", b"1-b"]
    assert records[3].key == {"id": 1} and records[0].key is None


@pytest.mark.parametrize(
    ("after", "match"),
    [
        ({1: "a"}, r"record 1: payload\.after: object key 1 is a int, keys must be strings"),
        ({None: 1}, r"record 1: payload\.after: object key None is a NoneType"),
        ({"x": [{"y": {2: 3}}]}, r"record 1: payload\.after\.x\[0\]\.y: object key 2"),
        ({"a": [Decimal("sNaN")]}, r"record 1: payload\.after\.a\[0\]: sNaN"),
        ({"a": "\ud800"}, r"record 1: payload\.after\.a: string .* lone surrogate"),
        ({"s": {1, 2}}, r"record 1: payload\.after\.s: type set has no VARIANT form"),
    ],
)
def test_structured_data_the_codecs_refuse_is_refused_naming_record_and_path(after, match):
    with pytest.raises(CodecError, match=match):
        records_to_batch([Record.new("create", after={"ok": 1}), Record.new("create", after=after)])


def test_raw_data_that_is_not_bytes_is_refused_not_made_into_zero_bytes():
    record = Record.new("create")
    record.key = 5  # type: ignore[assignment]
    with pytest.raises(CodecError, match="record 0: key must be bytes, a dict or None, not int"):
        records_to_batch([record])


def test_decimals_of_up_to_38_digits_read_back_from_a_batch_exactly():
    after = {
        "a": Decimal("1234567890123456789012345678901234.5678"),
        "b": Decimal("-0." + "1" * 38),
        "c": Decimal("1e37"),
        "d": [Decimal("9" * 38)],
    }
    (back,) = records_from_batch(records_to_batch([Record.new("create", after=after)]))
    assert back.payload.after == after
    assert [str(v) for v in back.payload.after.values()][:2] == [str(after["a"]), str(after["b"])]
