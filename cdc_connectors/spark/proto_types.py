"""Protobuf message descriptor -> Spark ``StructType``, for any message.

| protobuf | Spark |
|---|---|
| message | struct (nullable: a message field may be unset) |
| double, float | double, float |
| int32, sint32, sfixed32 | int |
| int64, sint64, sfixed64, uint32, fixed32 | bigint |
| uint64, fixed64 | decimal(20,0) (unsigned 64-bit does not fit bigint) |
| bool, string, bytes | boolean, string, binary |
| enum | string (the value's name) |
| ``map<K, V>`` | map<K, V> |
| ``repeated T`` | array<T> |
| oneof members, ``optional`` fields | nullable |
| ``google.protobuf.Struct``, ``Value``, ``ListValue`` | variant (keeps integers exact) |
| ``google.protobuf.Timestamp`` | timestamp |
| wrappers (``Int64Value``, ``StringValue``, ...) | the nullable scalar |

proto3 scalars without presence are never null (unset reads as the default),
so they are not nullable. Recursive messages have no StructType and raise
:class:`ValueError` naming the field path.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
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

_FD = FieldDescriptor

SCALARS: dict[int, DataType] = {
    _FD.TYPE_DOUBLE: DoubleType(),
    _FD.TYPE_FLOAT: FloatType(),
    _FD.TYPE_INT32: IntegerType(),
    _FD.TYPE_SINT32: IntegerType(),
    _FD.TYPE_SFIXED32: IntegerType(),
    _FD.TYPE_INT64: LongType(),
    _FD.TYPE_SINT64: LongType(),
    _FD.TYPE_SFIXED64: LongType(),
    _FD.TYPE_UINT32: LongType(),
    _FD.TYPE_FIXED32: LongType(),
    _FD.TYPE_UINT64: DecimalType(20, 0),
    _FD.TYPE_FIXED64: DecimalType(20, 0),
    _FD.TYPE_BOOL: BooleanType(),
    _FD.TYPE_STRING: StringType(),
    _FD.TYPE_BYTES: BinaryType(),
    _FD.TYPE_ENUM: StringType(),
}

#: Well-known message types with a Spark type of their own.
WELL_KNOWN: dict[str, DataType] = {
    "google.protobuf.Struct": VariantType(),
    "google.protobuf.Value": VariantType(),
    "google.protobuf.ListValue": VariantType(),
    "google.protobuf.Timestamp": TimestampType(),
    "google.protobuf.DoubleValue": DoubleType(),
    "google.protobuf.FloatValue": FloatType(),
    "google.protobuf.Int64Value": LongType(),
    "google.protobuf.UInt64Value": DecimalType(20, 0),
    "google.protobuf.Int32Value": IntegerType(),
    "google.protobuf.UInt32Value": LongType(),
    "google.protobuf.BoolValue": BooleanType(),
    "google.protobuf.StringValue": StringType(),
    "google.protobuf.BytesValue": BinaryType(),
}


def _is_repeated(fd: FieldDescriptor) -> bool:
    if hasattr(fd, "is_repeated"):  # protobuf >= 5.28; ``label`` is gone from upb
        return bool(fd.is_repeated)
    return bool(fd.label == _FD.LABEL_REPEATED)


def _is_map(fd: FieldDescriptor) -> bool:
    return (
        fd.type == _FD.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry and _is_repeated(fd)
    )


def _element_type(fd: FieldDescriptor, stack: tuple[str, ...], path: str) -> DataType:
    """The Spark type of one value of the field (ignoring repeated)."""
    if fd.type in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP):
        return message_type(fd.message_type, _stack=stack, _path=path)
    return SCALARS[fd.type]


def field_type(
    fd: FieldDescriptor, *, _stack: tuple[str, ...] = (), _path: str = ""
) -> StructField:
    """The Spark field of one protobuf field."""
    path = f"{_path}.{fd.name}" if _path else fd.name
    if _is_map(fd):
        entry = fd.message_type
        key = _element_type(entry.fields_by_name["key"], _stack, path)
        value_fd = entry.fields_by_name["value"]
        value = _element_type(value_fd, _stack, path)
        value_nullable = value_fd.type == _FD.TYPE_MESSAGE
        return StructField(fd.name, MapType(key, value, value_nullable), nullable=False)
    element = _element_type(fd, _stack, path)
    if _is_repeated(fd):
        return StructField(fd.name, ArrayType(element, containsNull=False), nullable=False)
    nullable = fd.type == _FD.TYPE_MESSAGE or fd.has_presence or fd.containing_oneof is not None
    return StructField(fd.name, element, nullable=bool(nullable))


def message_type(
    descriptor: Descriptor, *, _stack: tuple[str, ...] = (), _path: str = ""
) -> DataType:
    """The Spark type of a message: a well-known type's own, else a struct of its fields."""
    known = WELL_KNOWN.get(descriptor.full_name)
    if known is not None:
        return known
    if descriptor.full_name in _stack:
        raise ValueError(
            f"message {descriptor.full_name} is recursive at {_path or '<root>'}: "
            "a recursive message has no Spark struct type"
        )
    stack = (*_stack, descriptor.full_name)
    return StructType([field_type(fd, _stack=stack, _path=_path) for fd in descriptor.fields])


def message_struct(descriptor: Descriptor) -> StructType:
    """The ``StructType`` of a (non well-known) message descriptor."""
    result = message_type(descriptor)
    if not isinstance(result, StructType):
        raise ValueError(f"{descriptor.full_name} maps to {result.simpleString()}, not a struct")
    return result
