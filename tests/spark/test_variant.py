"""Our VARIANT encoder writes what PySpark decodes and what Spark itself reads."""

from __future__ import annotations

import json
from base64 import b64encode
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructField, StructType, VariantType

from cdc_connectors.spark.variant import MAX_DEPTH, VariantError, from_variant, to_variant
from tests.hypothesis_profiles import examples

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.decimals(
        allow_nan=False, allow_infinity=False, places=4, min_value=-(10**20), max_value=10**20
    )
    | st.text(max_size=80)
    | st.binary(max_size=20)
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=6), children, max_size=6)
    ),
    max_leaves=25,
)


def expected(value: Any) -> Any:
    """What decoding gives back: bytes as base64 text, ints beyond 64 bits as decimals."""
    if isinstance(value, dict):
        return {k: expected(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [expected(v) for v in value]
    if isinstance(value, bytes):
        return b64encode(value).decode()
    if type(value) is int and not -(2**63) <= value < 2**63:
        return Decimal(value)
    return value


@settings(max_examples=examples(300), deadline=None)
@given(values)
def test_round_trip_through_pysparks_decoder(value):
    assert from_variant(*to_variant(value)) == expected(value)


@pytest.mark.parametrize(
    "value",
    [
        {f"k{i:03d}": i for i in range(300)},  # more than 255 fields
        list(range(1000)),  # more than 255 elements, 2-byte offsets
        {"long": "x" * 100_000},  # long string, 3-byte offsets
        {"ünïcödé": 1, "b": {"a": [1, {"c": None}]}, "": "empty key"},
        Decimal(
            "1234567890123456789.123456789"
        ),  # 28 digits: PySpark decodes in a 28-digit context
        Decimal("1E+3"),
        Decimal("-0.000001"),
        2**63 - 1,
        -(2**63),
        (1, 2),
    ],
)
def test_edge_shapes_round_trip(value):
    assert from_variant(*to_variant(value)) == expected(value)


def test_values_beyond_the_size_limit_are_refused():
    with pytest.raises(ValueError, match="VARIANT limit"):
        to_variant({"big": "x" * (16 * 1024 * 1024 + 1)})


def test_unsupported_types_are_named():
    with pytest.raises(TypeError, match="type set has no VARIANT form"):
        to_variant({"s": {1, 2}})


@pytest.mark.spark
def test_spark_reads_what_we_write(spark):
    samples: list[Any] = [
        {"id": 9007199254740993, "amount": Decimal("12.50"), "ok": True, "tags": ["a", "b"]},
        {f"f{i:03d}": i for i in range(300)},
        {"ünïcödé": "x" * 70, "nested": {"z": 1, "a": [None, 1.5, {"q": "r"}]}},
        [1, "two", 3.25, None, False],
        "plain",
        {"d38": Decimal("12345678901234567890.123456789012345678")},  # exact in Spark
    ]
    schema = StructType([StructField("v", VariantType())])
    rows = [{"v": dict(zip(("value", "metadata"), to_variant(s), strict=True))} for s in samples]
    table = pa.Table.from_pylist(rows, schema=to_arrow_schema(schema))
    df = spark.createDataFrame(table)
    out = df.selectExpr(
        "to_json(v) AS j",
        "variant_get(v, '$.id', 'bigint') AS id",
        "variant_get(v, '$.f299', 'int') AS f299",
        "variant_get(v, '$.ünïcödé', 'string') AS u",
        "variant_get(v, '$.nested.a[2].q', 'string') AS q",
    ).collect()
    assert [json.loads(r.j, parse_float=Decimal) for r in out] == [expected(s) for s in samples]
    assert out[0].id == 9007199254740993
    assert out[1].f299 == 299
    assert out[2].u == "x" * 70 and out[2].q == "r"


def test_nesting_is_capped_below_what_pysparks_decoder_reads_back():
    value: Any = 1
    for _ in range(MAX_DEPTH - 1):
        value = {"a": value}
    assert from_variant(*to_variant({"top": value})) == {"top": value}
    for deeper in ({"top": {"a": value}}, [[value]]):
        with pytest.raises(VariantError, match=f"deeper than {MAX_DEPTH} levels"):
            to_variant(deeper)


def test_nesting_far_beyond_pythons_recursion_limit_is_a_variant_error():
    value: Any = 1
    for _ in range(5000):
        value = [value]
    with pytest.raises(VariantError, match="deeper than"):
        to_variant(value)


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (10**38, "1" + "0" * 38),
        (-(10**40), "-1" + "0" * 40),
        (Decimal("1" * 39), "1" * 39),
        (Decimal("0." + "1" * 39), "0." + "1" * 39),
        (Decimal("1e38"), "1" + "0" * 38),
    ],
)
def test_numbers_beyond_38_digits_are_their_exact_text_not_doubles(number, text):
    assert from_variant(*to_variant({"n": number})) == {"n": text}


def test_a_variant_too_deep_for_pysparks_decoder_is_a_variant_error():
    # Spark itself builds such values (parse_json); built by hand here: [[[...[0]...]]]
    deep = b"\x0c\x00"  # int8 0
    for _ in range(2000):  # array header with 2-byte offsets, one element
        deep = b"\x07\x01\x00\x00" + len(deep).to_bytes(2, "little") + deep
    with pytest.raises(VariantError, match="too deeply to read"):
        from_variant(deep, b"\x01\x00\x00")
    shallow = deep[-6 * 3 - 2 :]  # the innermost three levels
    assert from_variant(shallow, b"\x01\x00\x00") == [[[0]]]


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({1: "a"}, []),
        ({"a": [0, {None: 1}]}, ["a", 1]),
        ({"a": [0, "x\udcff"]}, ["a", 1]),
        ({"a": {"\ud800": 1}}, ["a"]),
        ({"a": [Decimal("sNaN")]}, ["a", 0]),
    ],
)
def test_what_has_no_variant_form_is_a_variant_error_with_its_path(value, path):
    with pytest.raises(VariantError) as error:
        to_variant(value)
    assert error.value.path == path


def test_decimals_with_positive_exponents_do_not_depend_on_the_decimal_context():
    assert from_variant(*to_variant({"n": Decimal("1e37")})) == {"n": Decimal(10**37)}
    assert from_variant(*to_variant({"n": Decimal("-12e35")})) == {"n": Decimal(-12 * 10**35)}


def test_decimals_read_back_with_all_their_digits():
    for text in ["1234567890123456789012345678901234.5678", "-" + "9" * 38, "0." + "1" * 38]:
        (back,) = from_variant(*to_variant([Decimal(text)]))
        assert str(back) == text
