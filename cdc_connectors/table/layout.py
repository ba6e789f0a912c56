"""The columns a change carries to a table, and those the table keeps beside its own.

A batch of *changes* is an Arrow table: the row's columns (the after image, or the before
image of a delete), then

```
_cdc_op       string     create | update | delete | snapshot
_cdc_stream   string     the part of the source the change came from (topic/partition, file)
_cdc_offset   int64      its place in that stream: the source's own order
_cdc_at       timestamp  when the change happened at the source (UTC, microseconds)
_cdc_unset    list<string>  columns the image does not carry (a TOAST placeholder, a YDB
                         update of some columns): the table keeps their values; ``*``: any
                         other column as well (an image of the changed columns alone)
```

A table keeps ``_cdc_stream`` and ``_cdc_offset`` of the change each row is from: a change
whose ``(stream, offset)`` is not past the row's (or a deleted key's tombstone) is older and
changes nothing. With ``deletes: soft`` a deleted row stays, ``_cdc_deleted`` true and
``_cdc_deleted_at`` its time. A row a partial change wrote (one leaving columns unset) notes
in ``_cdc_inherited`` each column it kept from before with the order of the change its
value came from (null: none did), after a mark (column ``""``, offset: how many columns
the table had), so that a change older than the row that arrives late still gives it those
columns (the column is added with the first such change). In ``history`` mode every
version of a row stays, with ``_cdc_valid_from``, ``_cdc_valid_to`` (null while current)
and ``_cdc_is_current``; a version notes in ``_cdc_deleted_before`` the deletes of its key
since the version before it that closed nothing (the key was gone already, or had no
version yet), so that a change older than them that arrives late is closed by them (the
column is added with the first such delete); a version a delete closed notes that delete's
order in ``_cdc_closed_by``, so that another delete of the same time that arrives later is
told from it (tables made before the column tell deletes by their time alone).
"""

from __future__ import annotations

import pyarrow as pa

__all__ = [
    "AT",
    "CHANGE_COLUMNS",
    "CLOSED_BY",
    "CLOSED_BY_TYPE",
    "DELETED",
    "DELETED_AT",
    "DELETES_BEFORE",
    "DELETES_BEFORE_TYPE",
    "INHERITED",
    "INHERITED_TYPE",
    "IS_CURRENT",
    "OFFSET",
    "OP",
    "ORDER",
    "STREAM",
    "TIME",
    "UNSET",
    "UNSET_OTHERS",
    "VALID_FROM",
    "VALID_TO",
    "plain",
    "plain_schema",
    "plain_type",
]

OP, STREAM, OFFSET, AT, UNSET = "_cdc_op", "_cdc_stream", "_cdc_offset", "_cdc_at", "_cdc_unset"
DELETED, DELETED_AT = "_cdc_deleted", "_cdc_deleted_at"
VALID_FROM, VALID_TO, IS_CURRENT = "_cdc_valid_from", "_cdc_valid_to", "_cdc_is_current"
#: In ``_cdc_unset``: every column the image does not hold, the table's later ones too.
UNSET_OTHERS = "*"
INHERITED = "_cdc_inherited"
#: Of each column a row keeps from before its change, the order of the change it came from.
INHERITED_TYPE = pa.list_(
    pa.struct(
        [
            pa.field("column", pa.string()),
            pa.field("stream", pa.string()),
            pa.field("offset", pa.int64()),
        ]
    )
)
DELETES_BEFORE = "_cdc_deleted_before"
#: Of each delete before a version that closed nothing, its order and time.
DELETES_BEFORE_TYPE = pa.list_(
    pa.struct(
        [
            pa.field("stream", pa.string()),
            pa.field("offset", pa.int64()),
            pa.field("at", pa.timestamp("us", tz="UTC")),
        ]
    )
)
CLOSED_BY = "_cdc_closed_by"
#: The order of the delete that closed a version (null: open, or closed by the next one).
CLOSED_BY_TYPE = pa.struct([pa.field("stream", pa.string()), pa.field("offset", pa.int64())])
#: The order of a change, compared as a pair.
ORDER = (STREAM, OFFSET)
#: The columns of a change that are not the row's.
CHANGE_COLUMNS = (OP, STREAM, OFFSET, AT, UNSET)
#: Time as the table keeps it.
TIME = pa.timestamp("us", tz="UTC")


def plain_type(datatype: pa.DataType) -> pa.DataType:
    """``datatype`` with text, bytes and lists in their plain Arrow form: table formats read
    them back as views (Delta) or large types (Iceberg); the planner compares them as one."""
    if (
        pa.types.is_string(datatype)
        or pa.types.is_large_string(datatype)
        or pa.types.is_string_view(datatype)
    ):
        return pa.string()
    if (
        pa.types.is_binary(datatype)
        or pa.types.is_large_binary(datatype)
        or pa.types.is_binary_view(datatype)
    ):
        return pa.binary()
    if (
        pa.types.is_list(datatype)
        or pa.types.is_large_list(datatype)
        or pa.types.is_list_view(datatype)
        or pa.types.is_large_list_view(datatype)
    ):
        item = datatype.value_field
        return pa.list_(item.with_type(plain_type(item.type)))
    if pa.types.is_struct(datatype):
        return pa.struct([f.with_type(plain_type(f.type)) for f in datatype])
    if pa.types.is_map(datatype):
        return pa.map_(
            plain_type(datatype.key_type),
            datatype.item_field.with_type(plain_type(datatype.item_type)),
        )
    return datatype


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every column's type plain (:func:`plain_type`), metadata dropped."""
    return pa.schema([pa.field(f.name, plain_type(f.type), f.nullable) for f in schema])


def plain(table: pa.Table) -> pa.Table:
    """``table`` with plain types."""
    schema = plain_schema(table.schema)
    return table if table.schema.equals(schema) else table.cast(schema)
