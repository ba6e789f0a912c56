"""What a Debezium-shaped dialect writes, as data (:class:`Envelope`), and Debezium's own
tables: its ``op`` letters, the events that change no row, the fields of an envelope."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from cdc_connectors.opencdc.operation import Operation

__all__ = [
    "CONNECTOR_TEXT_MEMBERS",
    "ENVELOPE_FIELDS",
    "LETTERS",
    "NO_OPERATION",
    "OPERATIONS",
    "TEXT_MEMBERS",
    "TIME_FIELDS",
    "UNAVAILABLE_VALUE",
    "Envelope",
]

#: What Debezium's PostgreSQL connector writes for an unchanged TOASTed column.
UNAVAILABLE_VALUE = "__debezium_unavailable_value"

#: Debezium's ``op`` letters and the operations they are.
OPERATIONS = {
    "c": Operation.CREATE,
    "u": Operation.UPDATE,
    "d": Operation.DELETE,
    "r": Operation.SNAPSHOT,
}
#: The letter each operation is written as.
LETTERS = {operation: letter for letter, operation in OPERATIONS.items()}
#: ``op`` letters that change no row: letter -> (the option that skips them, what it is).
NO_OPERATION = {"t": ("truncate", "truncate"), "m": ("message", "logical decoding message")}
#: The envelope's times of one instant, coarsest first (Debezium 2.6 added the finer two).
TIME_FIELDS = ("ts_ms", "ts_us", "ts_ns")
#: Envelope fields with a place of their own; any other payload field goes to metadata.
ENVELOPE_FIELDS = frozenset(("before", "after", "source", "op", "transaction", *TIME_FIELDS))
#: Members of ``source`` and ``transaction`` Debezium's connectors declare as strings,
#: whatever their text looks like (an Oracle SCN of digits; ``sequence`` and Vitess'
#: ``vgtid`` hold JSON text), by block; metadata keeps only their text.
TEXT_MEMBERS: Mapping[str, frozenset[str]] = {
    "source": frozenset(
        (
            *("version", "connector", "name", "snapshot", "db", "sequence", "schema", "table"),
            *("gtid", "file", "query"),  # MySQL
            *("change_lsn", "commit_lsn", "begin_lsn"),  # SQL Server, Db2, Informix
            *("scn", "commit_scn", "lcr_position", "rs_id", "user_name", "redo_sql", "row_id"),
            *("collection", "lsid"),  # MongoDB
            *("keyspace", "shard", "vgtid"),  # Vitess
        )
    ),
    "transaction": frozenset(("id",)),
}
#: Per connector, the ``source`` members it declares as strings besides :data:`TEXT_MEMBERS`
#: (``txId`` is a number in PostgreSQL's).
CONNECTOR_TEXT_MEMBERS: Mapping[str, frozenset[str]] = {"oracle": frozenset(("txId",))}


@dataclass(frozen=True)
class Envelope:
    """What a Debezium-shaped dialect writes, as data. The per-message, lean and columnar
    decoders all read it, so a dialect described by its envelope alone (no hook of
    :class:`~cdc_connectors.formats.debezium.DebeziumJsonFormat` overridden:
    :meth:`~cdc_connectors.formats.debezium.DebeziumJsonFormat.described_by_envelope`)
    gets every fast path."""

    #: The metadata prefix: ``<prefix>.source.<field>``, ``<prefix>.transaction.<field>``.
    prefix: str = "debezium"
    #: ``op`` letter -> operation: the dialect's own set.
    operations: Mapping[str, Operation] = dataclasses.field(
        default_factory=lambda: dict(OPERATIONS)
    )
    #: ``op`` letters that change no row: letter -> (the option that skips them, what it is).
    no_operation: Mapping[str, tuple[str, str]] = dataclasses.field(
        default_factory=lambda: dict(NO_OPERATION)
    )
    #: How an unknown ``op`` is explained.
    operations_said: str = "Debezium's are c, u, d, r (and t, m)"
    #: ``source`` fields dot-joined before the table (those that are set), and the fields
    #: that name the table (the first one set); without a table, ``source``'s own
    #: ``opencdc.collection`` when ``collection_fallback`` (what Conduit writes).
    collection_parts: tuple[str, ...] = ("db", "schema")
    table_fields: tuple[str, ...] = ("table", "collection")
    collection_fallback: bool = True
    #: Every record's position is its message's place (``Message.where``).
    position_is_place: bool = False
    #: A create, update or snapshot needs its ``after`` image; a delete ``before`` or a key.
    images_required: bool = True
    #: Metadata names the dialect spells its own way: ``<prefix>.source.x`` -> another name.
    renamed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: A ``source`` field of milliseconds (a non-negative integer) that is
    #: ``opencdc.createdAt`` when the source has no time of its own (YDB's ``step``).
    step_time: str | None = None
    #: A ``schema`` block that is ``{}`` means none (Lindorm writes so).
    empty_schema_is_none: bool = False
    #: Rows may be HBase rows (:mod:`~cdc_connectors.formats.debezium.hbase_rows`), told by
    #: their shape unless the format's ``hbase`` setting says: typed as bytes, keyed by ``ROW``.
    hbase_rows: bool = False
    #: An update's ``after`` without columns its ``before`` has deleted them: they are null
    #: in ``after`` and named in ``<prefix>.deleted.columns`` (Lindorm's column deletion).
    deleted_columns: bool = False
    #: A payload field that holds the record's key, not metadata (CDL's ``unique``).
    key_field: str | None = None
    #: Payload fields whose values mark the dialect's own messages (CDL's
    #: ``message_version`` ``2.0``); a reader of several layouts reads the others its way.
    marks: Mapping[str, str] = dataclasses.field(default_factory=dict)
