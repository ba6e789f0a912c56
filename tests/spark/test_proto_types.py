"""The generic protobuf descriptor -> Spark StructType converter."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

from cdc_connectors.spark.proto_types import message_struct
from cdc_connectors.spark.schema import OPENCDC_SCHEMA
from tests.protoc import compile_proto


@pytest.fixture(scope="module")
def pool():
    return compile_proto("all_types.proto")


def test_every_protobuf_shape_maps_to_its_spark_type(pool):
    struct = message_struct(pool.FindMessageTypeByName("typecheck.v1.AllTypes"))
    inner = StructType([StructField("name", StringType(), False)])
    expected = {
        "f_double": (DoubleType(), False),
        "f_float": (FloatType(), False),
        "f_int32": (IntegerType(), False),
        "f_int64": (LongType(), False),
        "f_uint32": (LongType(), False),
        "f_uint64": (DecimalType(20, 0), False),
        "f_sint32": (IntegerType(), False),
        "f_sint64": (LongType(), False),
        "f_fixed32": (LongType(), False),
        "f_fixed64": (DecimalType(20, 0), False),
        "f_sfixed32": (IntegerType(), False),
        "f_sfixed64": (LongType(), False),
        "f_bool": (BooleanType(), False),
        "f_string": (StringType(), False),
        "f_bytes": (BinaryType(), False),
        "f_enum": (StringType(), False),
        "f_message": (inner, True),
        "f_repeated": (ArrayType(StringType(), False), False),
        "f_repeated_message": (ArrayType(inner, False), False),
        "f_map": (MapType(StringType(), LongType(), False), False),
        "f_map_message": (MapType(IntegerType(), inner, True), False),
        "f_oneof_string": (StringType(), True),
        "f_oneof_int": (IntegerType(), True),
        "f_optional": (IntegerType(), True),
        "f_struct": (VariantType(), True),
        "f_timestamp": (TimestampType(), True),
        "f_wrapped": (LongType(), True),
    }
    assert {f.name: (f.dataType, f.nullable) for f in struct.fields} == expected
    assert [f.name for f in struct.fields] == list(expected)  # field order kept


def test_recursive_message_is_refused_with_the_field_path(pool):
    with pytest.raises(ValueError, match=r"typecheck\.v1\.Node is recursive at children"):
        message_struct(pool.FindMessageTypeByName("typecheck.v1.Node"))


def test_opencdc_schema_is_compiled_from_the_record_descriptor():
    data = StructType(
        [
            StructField("raw_data", BinaryType(), True),
            StructField("structured_data", VariantType(), True),
        ]
    )
    assert (
        StructType(
            [
                StructField("position", BinaryType(), False),
                StructField("operation", StringType(), False),
                StructField("metadata", MapType(StringType(), StringType(), False), False),
                StructField("key", data, True),
                StructField(
                    "payload",
                    StructType(
                        [StructField("before", data, True), StructField("after", data, True)]
                    ),
                    True,
                ),
            ]
        )
        == OPENCDC_SCHEMA
    )
