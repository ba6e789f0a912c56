"""Protobuf messages as the columns take them: which schemas, which rows, which Connect types.

What the columnar Protobuf readers (rows and keys) share: :func:`readable` tells a message
type whose every field the columns write as the per-message way reads it (no real ``oneof``,
map, group, aliased enum, recursion, message without fields, well-known type but
``Timestamp`` and the wrappers, or ``edition`` file, on which ptars panics);
:func:`first_message` the framed bodies of a file's first message type (index path
``[0]``); :func:`unnamed_enums` the rows holding an enum number the schema gives no name;
:func:`connect_block` the Kafka Connect schema the record writers take for an Arrow type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from cdc_connectors.columnar.proto_records import NotColumnar
from cdc_connectors.schema.protobuf import TIMESTAMP, WRAPPERS, synthetic_oneofs
from cdc_connectors.spark.arrow_lists import item_rows, list_sizes
from cdc_connectors.spark.arrow_names import member
from cdc_connectors.spark.envelope_columns import mask

__all__ = ["FIRST_MESSAGE", "connect_block", "first_message", "readable", "unnamed_enums"]

#: The magic byte, a 4-byte schema id and the index path [0] (one zero byte).
FIRST_MESSAGE = 6
_NUMBER = "^-?[0-9]+$"
_FD = FieldDescriptor


def readable(descriptor: Descriptor) -> bool:
    """Whether the columns write messages of ``descriptor`` (module docstring)."""
    file = descriptor_pb2.FileDescriptorProto()
    descriptor.file.CopyToProto(file)
    if file.syntax not in ("", "proto2", "proto3"):
        return False  # ptars panics on editions
    return plain_message(descriptor, ())


def first_message(values: pa.Array) -> np.ndarray:
    """Values whose index path is ``[0]``: a zero byte after the schema id."""
    sixth = pc.binary_slice(values, 5, 6)
    found: np.ndarray = mask(pc.equal(sixth, pa.scalar(b"\x00", pa.binary())))
    return found


def plain_message(descriptor: Descriptor, seen: tuple[str, ...]) -> bool:
    """Whether every field of messages of ``descriptor`` is written from columns as the
    per-message way writes it: no real oneof, map, recursion, or well-known type but
    ``Timestamp`` and the wrappers."""
    if descriptor.full_name in seen or not descriptor.fields:
        return False  # recursive, or no field (ptars gives no column to count rows by)
    if descriptor.extension_ranges:
        return False  # extensions, which ptars does not read
    real = {o.name for o in descriptor.oneofs} - synthetic_oneofs(descriptor)
    if real:
        return False
    for fd in descriptor.fields:
        if fd.type == _FD.TYPE_GROUP:
            return False  # ptars does not read groups
        if fd.enum_type is not None and _aliased(fd.enum_type):
            return False  # the per-message way names a number by its last name
        child = fd.message_type
        if child is None:
            continue
        if child.GetOptions().map_entry:
            return False
        name = child.full_name
        if name == TIMESTAMP or name in WRAPPERS:
            continue
        if name.startswith("google.protobuf."):
            return False
        if not plain_message(child, (*seen, descriptor.full_name)):
            return False
    return True


def _aliased(enum: Any) -> bool:
    """Whether an enum gives a number more than one name (``allow_alias``)."""
    numbers = [value.number for value in enum.values]
    return len(set(numbers)) < len(numbers)


def unnamed_enums(descriptor: Descriptor, array: pa.Array) -> np.ndarray:
    """Rows holding an enum number the schema has no name for (read as its decimal text;
    the per-message way writes the number)."""
    found = np.zeros(len(array), dtype=bool)
    for fd in descriptor.fields:
        if fd.type not in (_FD.TYPE_ENUM, _FD.TYPE_MESSAGE):
            continue
        column = member(array, fd.name)
        repeated = bool(fd.is_repeated)
        if repeated:
            sizes = list_sizes(column)
            column = pc.list_flatten(column)
        if fd.type == _FD.TYPE_ENUM:
            hits = mask(pc.match_substring_regex(column, _NUMBER))
        elif fd.message_type.full_name == TIMESTAMP or fd.message_type.full_name in WRAPPERS:
            continue
        else:
            hits = unnamed_enums(fd.message_type, column)
        if repeated:
            if hits.any():
                found[item_rows(sizes)[hits]] = True
        else:
            found |= hits
    return found


def connect_block(type_: pa.DataType, where: str) -> dict[str, Any]:
    """The Kafka Connect schema of a column of Arrow type ``type_``, for the writers: plain
    types, a ``decimal(20,0)`` (a uint64) as an integer, a timestamp as its
    ``Timestamp``."""
    block: dict[str, Any]
    if pa.types.is_struct(type_):
        fields = [{**connect_block(f.type, f"{where}.{f.name}"), "field": f.name} for f in type_]
        block = {"type": "struct", "fields": fields}
    elif pa.types.is_list(type_):
        block = {"type": "array", "items": connect_block(type_.value_type, f"{where}[]")}
    elif pa.types.is_decimal(type_) or pa.types.is_integer(type_):
        block = {"type": "int64"}  # decimal(20,0): a uint64, an integer the way per message
    elif pa.types.is_timestamp(type_) and type_.tz is not None:
        block = {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"}
    elif type_ == pa.float64():
        block = {"type": "double"}
    elif type_ == pa.bool_():
        block = {"type": "boolean"}
    elif type_ == pa.string():
        block = {"type": "string"}
    elif type_ == pa.binary():
        block = {"type": "bytes"}
    else:
        raise NotColumnar(f"{where}: {type_} has no columnar writer")
    block["optional"] = True
    return block
