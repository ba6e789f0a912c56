"""Avro through Spark's ``expand`` as the specification says, checked against the oracle.

The cases of ``tests/schema/test_avro_spec.py`` (the issue's numbered cases and the
generated schemas, values and evolution pairs), written by confluent-kafka's
``AvroSerializer``, framed in Confluent's wire format in OpenCDC rows, and expanded with
``expand(df, registry, subject, reader="latest")``: each row's ``after`` must be the
oracle's Spark value (``tests/schema/avro_oracle.py``, spark-avro's type mapping) and its
``error`` null. In ``PERMISSIVE`` mode a bad value is that row's ``error``, never a failed
job.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from pyspark.sql import Row

from cdc_connectors.opencdc import Record
from cdc_connectors.registry import open_registry
from cdc_connectors.spark import records_dataframe
from cdc_connectors.spark.expand import expand
from tests.schema import avro_oracle as oracle
from tests.schema.test_avro_spec import (
    BATCH,
    BIG,
    CASE_1_BYTES_FIXED,
    CASE_1_DECIMAL_BYTES,
    CASE_1_DECIMAL_FIXED,
    CASE_1_EMPTY_DECIMAL,
    CASE_2_FLOAT,
    CASE_2_ROUNDED_ONCE,
    CASE_3_UNION,
    CASE_4_NAMED,
    CASE_5_PARTIAL_RECORD_DEFAULT,
    CASE_5_RECORD_DEFAULT,
    CASE_6_DECIMAL_38,
    CASE_7_BASE64,
    CASE_DEFAULTS_OF_EVERY_TYPE,
    CASE_ENUM_DEFAULT,
    CASE_EVOLVED_STRING_BYTES,
    CASE_FLOAT_DOUBLE_UNION,
    CASE_NESTED_ENUM_UNION,
    CASE_NESTED_UNION_DEFAULT,
    CASE_PROMOTIONS,
    CASE_UNION_DEFAULT_LATER_BRANCH,
    LOGICAL_EDGES,
    Case,
    assert_no_problems,
    batches,
    confluent_write,
    decimal,
    evolution_cases,
    fld,
    fresh_registry,
    identity_cases,
    record,
    registry_url,
    write_evolved,
)

pytestmark = pytest.mark.spark


def messages_of(registry: Any, case: Case) -> list[bytes]:
    """The case's values written by confluent-kafka: with its writer schema, which is also
    the subject's latest, or with version 1 and its reader schema registered as version 2."""
    if case.reader is None:
        return confluent_write(registry, case.topic, case.writer, case.values)
    return write_evolved(registry, case.topic, case.writer, case.reader, case.values)


def expand_rows(spark: Any, url: str, case: Case, messages: Sequence[bytes | None]) -> list[Row]:
    """The messages in OpenCDC rows (payload.after), expanded with the subject's latest
    version; the rows in the order of the messages."""
    records = [
        Record.new("create", position=b"%06d" % i, after=message)
        for i, message in enumerate(messages)
    ]
    df = expand(records_dataframe(spark, records), url, f"{case.topic}-value", reader="latest")
    return sorted(df.collect(), key=lambda row: row.position)


_EXCEPTION_LINE = re.compile(r"^\s*[\w.]*(Error|Exception|Warning)\b.*$", re.MULTILINE)


def _cause(exc: BaseException) -> str:
    """The Python worker's exception line in a failed job's message (else its first line)."""
    text = str(exc)
    found = [m.group(0).strip() for m in _EXCEPTION_LINE.finditer(text)]
    useful = [line for line in found if not line.startswith(("org.apache", "py4j"))]
    return (useful[-1] if useful else text.strip().splitlines()[0])[:600]


def problems_expanding(
    spark: Any, url: str, case: Case, messages: Sequence[bytes]
) -> tuple[list[str], list[Row]]:
    """How ``expand`` differs from the oracle's Spark values, one line per value (a failed
    job is a problem of every value), and the rows it gave."""
    reader = case.reader_node
    try:
        rows = expand_rows(spark, url, case, messages)
    except Exception as exc:  # the job failed: what PERMISSIVE must never do
        return [f"{case.describe(0)}\n    the job failed: {_cause(exc)}"], []
    if len(rows) != len(messages):
        return [f"{case.describe(0)}\n    {len(rows)} rows for {len(messages)} messages"], rows
    found = []
    for i, (datum, row) in enumerate(zip(case.datums(), rows, strict=True)):
        if row.error is not None or row.after is None:
            found.append(f"{case.describe(i)}\n    row error: {row.error}")
            continue
        expected = oracle.spark_value(reader, datum)
        diffs = oracle.differences(expected, row.after.asDict(recursive=True))
        if diffs:
            found.append(f"{case.describe(i)}\n    " + "\n    ".join(diffs))
    return found, rows


def assert_expands_as_specified(spark: Any, tmp_path: Path, case: Case) -> list[Row]:
    url = registry_url(tmp_path)
    registry = open_registry(url)
    problems, rows = problems_expanding(spark, url, case, messages_of(registry, case))
    assert_no_problems(problems)
    return rows


# --- the numbered cases of the issue ----------------------------------------------------------


def test_bytes_and_fixed_defaults_expand_to_their_bytes(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_1_BYTES_FIXED)
    assert rows[0].after.b == b"\xff\x00\x80"
    assert rows[0].after.f == b"\x01\xfe\x00" and len(rows[1].after.f) == 3


def test_decimal_defaults_on_bytes_expand_without_failing_the_job(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_1_DECIMAL_BYTES)
    assert rows[0].after.minus_two == Decimal("-2.00") and rows[0].after.two_56 == Decimal("2.56")


def test_decimal_defaults_on_fixed_expand_without_failing_the_job(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_1_DECIMAL_FIXED)
    assert (rows[0].after.zero, rows[0].after.minus_two) == (Decimal("0.0"), Decimal("-2.00"))


def test_an_empty_decimal_default_expands_to_zero(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_1_EMPTY_DECIMAL)
    assert rows[0].after.empty == Decimal("0.00")


def test_int_and_long_read_as_float_expand_to_the_nearest_32_bit_float(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_2_FLOAT)
    assert (rows[0].after.i, rows[0].after.l) == (16777216.0, 2147483648.0)


def test_a_long_read_as_float_expands_rounded_once_not_through_a_double(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_2_ROUNDED_ONCE)
    assert rows[0].after.l == float(2**60 + 2**37)


def test_bytes_in_a_union_with_string_expand_to_the_bytes_member(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_3_UNION)
    assert rows[0].after.u.asDict() == {"member0": None, "member1": b"\x00\xff"}


def test_a_named_type_used_again_by_name_expands(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_4_NAMED)
    assert rows[0].after.second.x == 2 and rows[1].after.second is None


def test_a_record_field_added_with_a_default_expands_to_it_for_old_rows(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_5_RECORD_DEFAULT)
    assert [r.after.point.asDict() for r in rows] == [{"x": 1, "y": "z"}] * 2


def test_a_record_default_leaving_out_a_field_expands_to_that_fields_default(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_5_PARTIAL_RECORD_DEFAULT)
    assert rows[0].after.point.asDict() == {"x": 7, "y": "w", "b": b"\xfe"}


def test_decimal_38_extremes_expand_exactly(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_6_DECIMAL_38)
    assert rows[0].after.d == Decimal(BIG) and rows[1].after.d == Decimal(-BIG)


def test_bytes_and_fixed_expand_nested_and_in_unions(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_7_BASE64)
    assert rows[0].after.either.asDict() == {"member0": None, "member1": b"ABC"}


def test_defaults_of_every_type_expand_as_the_specification_says(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_DEFAULTS_OF_EVERY_TYPE)
    assert rows[0].after.f == 0.10000000149011612 and rows[0].after.fi == 16777216.0


def test_a_union_default_of_a_later_branch_expands_to_its_member(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    assert_expands_as_specified(spark, tmp_path, CASE_UNION_DEFAULT_LATER_BRANCH)


def test_an_enum_symbol_the_reader_lacks_expands_to_the_readers_enum_default(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_ENUM_DEFAULT)
    assert [r.after.e for r in rows] == ["A", "B"]


def test_promotions_aliases_and_removed_fields_expand_as_the_specification_says(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path
):
    assert_expands_as_specified(spark, tmp_path, CASE_PROMOTIONS)


def test_bytes_in_an_evolved_union_with_string_expand_to_the_bytes_member(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_EVOLVED_STRING_BYTES)
    assert rows[0].after.u.asDict() == {"member0": None, "member1": b"\xff\xfe"}


def test_an_enum_in_a_union_in_a_record_made_nullable_expands_to_its_symbol(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_NESTED_ENUM_UNION)
    assert rows[0].after.r.g.asDict() == {"member0": "A", "member1": None}


def test_a_default_holding_a_union_value_of_a_later_branch_expands(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_NESTED_UNION_DEFAULT)
    items = [i and i.asDict(recursive=True) for i in rows[0].after["items"]]
    assert items == [
        {"member0": {"a": 1}, "member1": None},
        None,
        {"member0": None, "member1": {"a": "x", "b": b"\xff"}},
    ]


def test_a_float_double_union_expands_to_one_double(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = assert_expands_as_specified(spark, tmp_path, CASE_FLOAT_DOUBLE_UNION)
    assert rows[1].after.n == 0.1


def test_logical_types_at_their_edges_expand_as_the_specification_says(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    # PySpark cannot show a timestamp (with a time zone) of 0001-01-01: a day later here.
    first = dict(LOGICAL_EDGES.values[0])
    first["ts_ms"] = first["ts_us"] = dt.datetime(1, 1, 2, tzinfo=dt.UTC)
    case = Case(LOGICAL_EDGES.writer, [first, *LOGICAL_EDGES.values[1:]], topic="edges")
    rows = assert_expands_as_specified(spark, tmp_path, case)
    assert rows[0].after.date == dt.date(1, 1, 1) and rows[1].after.t_us == 86399999999
    assert rows[1].after.lts_us == dt.datetime(9999, 12, 31, 23, 59, 59, 999999)


# --- PERMISSIVE: a bad value is its row's error -----------------------------------------------


def test_permissive_mode_turns_bad_values_into_row_errors_not_a_failed_job(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    schema = record(
        "Row",
        fld("id", "int"),
        fld("name", "string"),
        fld("price", decimal(4, 2)),
        fld("tags", {"type": "array", "items": "string"}),
    )
    url = registry_url(tmp_path)
    registry = open_registry(url)
    good = confluent_write(
        registry, "bad", schema, [{"id": 1, "name": "a", "price": Decimal("1.50"), "tags": ["x"]}]
    )[0]
    schema_id = good[1:5]
    too_wide = (8388607).to_bytes(3, "big", signed=True)  # 83886.07: more than 4 digits
    bodies = {
        "too wide a decimal": b"\x02" + b"\x02a" + bytes([len(too_wide) * 2]) + too_wide + b"\x00",
        "not UTF-8": b"\x02" + b"\x04\xff\xfe" + b"\x02\x96" + b"\x00",
        "truncated": good[5:-2],
        "bytes left over": good[5:] + b"\x00",
        "a negative length": b"\x02" + b"\x01" + b"\x00",
        "a huge array": b"\x02\x02a\x02\x96" + b"\xfe\xff\xff\xff\x0f",
    }
    messages: list[bytes | None] = [good]
    messages += [b"\x00" + schema_id + body for body in bodies.values()]
    messages.append(b"\x00\x00\x00\x03\xe7" + good[5:])  # an unknown schema id
    messages.append(b"\x07garbage")  # not Confluent's framing
    case = Case(schema, [], topic="bad")
    rows = expand_rows(spark, url, case, messages)  # must not raise
    assert len(rows) == len(messages)
    assert rows[0].error is None and rows[0].after.price == Decimal("1.50")
    for row, what in zip(rows[1:], [*bodies, "unknown schema id", "garbage"], strict=True):
        assert row.error, f"{what}: no error, after={row.after}"
        assert row.after is None, what


def test_failfast_mode_fails_the_job_on_a_bad_value(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    schema = record("Row", fld("id", "int"))
    url = registry_url(tmp_path)
    registry = open_registry(url)
    good = confluent_write(registry, "ff", schema, [{"id": 1}])[0]
    records = [Record.new("create", position=b"1", after=good[:-1])]
    df = expand(records_dataframe(spark, records), url, "ff-value", mode="FAILFAST")
    with pytest.raises(Exception, match="position"):
        df.collect()


def test_a_float_default_expands_to_its_32_bit_value(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    third = struct.unpack("<f", struct.pack("<f", 1 / 3))[0]
    case = Case(
        record("Row", fld("id", "int")),
        [{"id": 1}],
        reader=record("Row", fld("id", "int"), fld("x", "float", 1 / 3)),
        topic="floatdefault",
    )
    rows = assert_expands_as_specified(spark, tmp_path, case)
    assert rows[0].after.x == third


# --- generated cases ------------------------------------------------------------------------


def _expand_batch(spark: Any, cases: list[Case]) -> list[str]:
    with fresh_registry() as (url, registry):
        written = [messages_of(registry, case) for case in cases]
        problems = []
        for case, messages in zip(cases, written, strict=True):
            problems.extend(problems_expanding(spark, url, case, messages)[0])
    return problems


@BATCH
@given(cases=batches(identity_cases, 6))
def test_generated_values_expand_as_the_oracle_says(spark, cases: list[Case]):  # type: ignore[no-untyped-def]
    assert_no_problems(_expand_batch(spark, cases))


@BATCH
@given(cases=batches(evolution_cases, 6))
def test_evolved_schemas_expand_as_the_oracle_says(spark, cases: list[Case]):  # type: ignore[no-untyped-def]
    assert_no_problems(_expand_batch(spark, cases))
