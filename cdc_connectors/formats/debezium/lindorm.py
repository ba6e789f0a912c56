"""Lindorm change tracking (``lindorm-json``): Lindorm's Kafka messages as OpenCDC records.

Lindorm writes Debezium Format V2.0: ``{"payload": {op, ts_ms, before, after, source:
{version, db, namespace, table, ts_ms}}, "schema": ...}``, read by
:class:`~cdc_connectors.formats.debezium.DebeziumJsonFormat` with the metadata prefix
``lindorm`` (decode only):

| Lindorm | OpenCDC |
|---|---|
| ``op`` ``c`` / ``u`` / ``d`` | ``create`` / ``update`` / ``delete`` |
| ``op`` ``r`` (full-data export; Lindorm does not write it yet) | ``snapshot`` |
| any other ``op`` | error record |
| ``before`` / ``after`` (``{}`` = absent) | ``payload.before`` / ``payload.after`` |
| ``u``: ``after`` lacks columns of ``before`` | they are ``null`` in ``after`` (see below) |
| ``source.namespace`` + ``source.table`` | ``opencdc.collection`` = ``namespace.table`` |
| ``source.ts_ms`` (change time) | ``opencdc.createdAt`` (ns) |
| ``ts_ms`` (written to Kafka) | ``opencdc.readAt`` (ns) |
| ``source.<field>`` (``version``, ``db``, ...) | ``lindorm.source.<field>`` |
| other ``payload`` fields | ``lindorm.<field>`` |
| SQL table: Kafka key (JSON object or raw bytes) | ``key``; none: the ``key.fields`` columns |
| HBase table: ``ROW`` (base64) | ``key`` = ``{"ROW": <bytes>}`` |
| HBase table: ``<family>_<qualifier>`` columns (base64) | columns of ``bytes`` |
| the message's place (``Message.where``, e.g. ``file:line``) | ``position`` (UTF-8) |

Column deletion: an update whose ``after`` lacks columns that ``before`` has deleted them;
they are added to ``after`` as ``null`` (in ``before``'s column order) and named,
comma-separated, in ``lindorm.deleted.columns``, so a table destination clears them.

HBase tables: option ``hbase`` ``true`` or ``false``; ``auto`` (the default) decides per
message: it is an HBase row when its image (``after``, else ``before``) has a ``ROW`` column,
every other column is named ``<family>_<qualifier>`` (both parts non-empty) and every value
is a string or ``null``. Values are base64 of the raw bytes (a value that is not base64 is an
error naming the column); the row schema, all ``bytes``, replaces the message's ``schema``.

An empty ``schema`` (``{}``, as in Lindorm's samples) means none; a non-empty one types the
images as ``debezium-json`` does. Metadata values are text, ``null`` fields left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from cdc_connectors.formats.base import FormatOptionError, Message
from cdc_connectors.formats.debezium.envelope import Envelope
from cdc_connectors.formats.debezium.json_format import DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record

__all__ = ["LindormJsonFormat"]


class LindormJsonFormat(DebeziumJsonFormat):
    """Lindorm's Debezium Format V2.0, SQL and HBase tables (module docstring): its
    envelope alone, so every decoder (the columns too) serves it."""

    name = "lindorm-json"
    writable = False
    envelope: ClassVar[Envelope] = Envelope(
        prefix="lindorm",
        operations={
            "c": Operation.CREATE,
            "u": Operation.UPDATE,
            "d": Operation.DELETE,
            "r": Operation.SNAPSHOT,
        },
        no_operation={},
        operations_said="Lindorm's are c, u, d and r",
        collection_parts=("namespace",),
        table_fields=("table",),
        collection_fallback=False,
        position_is_place=True,
        empty_schema_is_none=True,
        hbase_rows=True,
        deleted_columns=True,
    )
    options: ClassVar[Mapping[str, str]] = {
        "hbase": "auto (default: told by the row's shape), true or false: values are base64 "
        "bytes and the key is ROW",
        "key.fields": "comma-separated columns that make the key of a SQL table's message "
        "without a Kafka key",
        "tombstones": "skip (default): count and skip null values; delete: a key-only delete",
        "subject.strategy": "conduit (default: <collection>.payload / .key), topic, record or "
        "topic-record; the topic is the collection",
    }

    def configure(self) -> None:
        super().configure()
        hbase = self.settings.get("hbase", "auto").strip().lower()
        if hbase == "auto":
            self.hbase = None
        else:
            try:
                self.hbase = self.flag("hbase")
            except FormatOptionError:
                raise FormatOptionError(
                    f"format {self.name!r} option 'hbase': {self.settings['hbase']!r} is not "
                    "one of auto, true, false"
                ) from None

    def encode(self, record: Record) -> Message:
        raise CodecError(f"format {self.name!r} is read-only: records cannot be written as Lindorm")
