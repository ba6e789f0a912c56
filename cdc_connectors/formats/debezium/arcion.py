"""Arcion JSON CDC (``arcion-json``): Arcion Replicant's Kafka messages as OpenCDC records.

Replicant's ``replication-format: JSON`` writes Debezium-shaped messages: the Kafka key is
``{"schema", "payload"}`` with the primary-key (or unique-key, or row-identifier) columns,
``null`` for a table without one; the value is ``{"schema", "payload": {before, after,
source, op, ts_ms}}``. :class:`~cdc_connectors.formats.debezium.DebeziumJsonFormat` reads
it with the metadata prefix ``arcion`` (decode only):

| Arcion | OpenCDC |
|---|---|
| ``op`` ``r`` (snapshot mode, ``source.snapshot`` ``"true"``) | ``snapshot`` |
| ``op`` ``c`` / ``u`` / ``d`` | ``create`` / ``update`` / ``delete`` |
| any other ``op`` | error record |
| ``before`` / ``after`` (``{}`` = absent) | ``payload.before`` / ``payload.after`` |
| Kafka key ``payload`` (typed by its ``schema``) | ``key`` (structured) |
| Kafka key ``null`` (no key columns) | no ``key``; ``key.fields=a,b``: those columns |
| ``source`` ``db``, ``schema``, ``table`` | ``opencdc.collection``: those set, dot-joined |
| ``source.ts_ms`` | ``opencdc.createdAt`` (ns; none in snapshot mode) |
| ``ts_ms`` | ``opencdc.readAt`` (ns); ``null``: the time of decoding |
| ``source.<field>`` (all fields) | ``arcion.source.<field>`` |
| other ``payload`` fields | ``arcion.<field>`` |
| value ``null`` (tombstone after a delete) | skipped, ``tombstone`` (or ``tombstones=delete``) |
| the message's place (``Message.where``, e.g. ``file:line``) | ``position`` (UTF-8) |

Collection is ``db.table`` (MySQL), ``db.schema.table`` where ``schema`` is set. The
``source`` fields are ``version``, ``connector``, ``name``, ``ts_ms``, ``db``, ``schema``,
``table``, ``query``, ``snapshot``, ``server_id``, ``gtid``, ``file``, ``pos``, ``row``,
``thread``. Metadata values are text (a string as is, anything else its compact JSON),
``null`` fields left out. The value's ``schema`` block types ``before``/``after``, the
key's the key (Kafka Connect JSON, as ``debezium-json`` reads it). A primary-key update
arrives as a delete, its tombstone and an insert: a ``delete`` and a ``create`` record,
in that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium.envelope import Envelope
from cdc_connectors.formats.debezium.json_format import DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record

__all__ = ["ArcionJsonFormat"]


class ArcionJsonFormat(DebeziumJsonFormat):
    """Arcion JSON CDC, read through Debezium's mapping (module docstring)."""

    name = "arcion-json"
    writable = False
    envelope: ClassVar[Envelope] = Envelope(
        prefix="arcion",
        operations={
            "c": Operation.CREATE,
            "u": Operation.UPDATE,
            "d": Operation.DELETE,
            "r": Operation.SNAPSHOT,
        },
        no_operation={},
        operations_said="Arcion's are c, u, d and r",
        position_is_place=True,
    )
    options: ClassVar[Mapping[str, str]] = {
        "tombstones": "skip (default): count and skip the tombstone after each delete; "
        "delete: a key-only delete",
        "key.fields": "comma-separated columns that make the key of a table without key "
        "columns (null Kafka key)",
        "subject.strategy": "conduit (default: <collection>.payload / .key), topic, record or "
        "topic-record; the topic is the collection",
    }

    def encode(self, record: Record) -> Message:
        raise CodecError(f"format {self.name!r} is read-only: records cannot be written as Arcion")
