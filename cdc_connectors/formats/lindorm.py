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
from typing import Any, ClassVar

from cdc_connectors.formats.base import FormatOptionError, Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat, Envelope, json_kind, unwrap
from cdc_connectors.opencdc import CodecError, Operation, Record

__all__ = ["LindormJsonFormat"]

ROW = "ROW"  # the row key column of an HBase table


class LindormJsonFormat(DebeziumJsonFormat):
    """Lindorm's Debezium Format V2.0, SQL and HBase tables (module docstring)."""

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
            self.hbase: bool | None = None
        else:
            try:
                self.hbase = self.flag("hbase")
            except FormatOptionError:
                raise FormatOptionError(
                    f"format {self.name!r} option 'hbase': {self.settings['hbase']!r} is not "
                    "one of auto, true, false"
                ) from None

    def records_from_envelope(
        self, envelope: Mapping[str, Any], key: Any, message: Message
    ) -> list[Record]:
        """Debezium's records of a Lindorm message: empty schema dropped, HBase rows decoded,
        column deletions made explicit."""
        if not isinstance(envelope, Mapping):
            return super().records_from_envelope(envelope, key, message)
        schema, payload = unwrap(envelope, "value")
        if not isinstance(payload, Mapping):
            return super().records_from_envelope(envelope, key, message)
        op = payload.get("op")
        if "op" in payload and op not in self.envelope.operations:
            raise CodecError(f"unknown op {op!r}: {self.envelope.operations_said}")
        if isinstance(schema, Mapping) and not schema:
            schema = None
        if self._is_hbase(payload):
            schema = _hbase_schema(payload)
            key = _hbase_key(payload)
        records = super().records_from_envelope(
            {"schema": schema, "payload": payload}, key, message
        )
        if op == "u":
            for record in records:
                _mark_deleted_columns(record, self.prefix)
        return records

    def _is_hbase(self, payload: Mapping[str, Any]) -> bool:
        if self.hbase is not None:
            return self.hbase
        image = _image(payload, "after") or _image(payload, "before")
        if image is None or ROW not in image:
            return False
        families = all(_family_column(name) for name in image if name != ROW)
        return families and all(v is None or isinstance(v, str) for v in image.values())

    def encode(self, record: Record) -> Message:
        raise CodecError(f"format {self.name!r} is read-only: records cannot be written as Lindorm")


def _image(payload: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """A row image; ``None`` when absent (``null`` or ``{}``) or not an object."""
    value = payload.get(name)
    return value if isinstance(value, Mapping) and value else None


def _family_column(name: str) -> bool:
    family, _, qualifier = name.partition("_")
    return bool(family) and bool(qualifier)


def _hbase_schema(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A Connect envelope schema whose row images have ``bytes`` columns: Debezium's
    mapping decodes the base64 values with it (and registers it)."""
    fields = []
    for name in ("before", "after"):
        image = _image(payload, name)
        if image is None:
            continue
        columns = [{"type": "bytes", "optional": True, "field": column} for column in image]
        fields.append({"type": "struct", "optional": True, "fields": columns, "field": name})
    return {"type": "struct", "optional": False, "fields": fields}


def _hbase_key(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The key ``{"ROW": ...}`` as a Connect key message, typed ``bytes``."""
    for name in ("before", "after"):
        value = payload.get(name)
        if value is not None and not isinstance(value, Mapping):
            raise CodecError(f"{name}: expected an object or null, got {json_kind(value)}")
    order = ("before", "after") if payload.get("op") == "d" else ("after", "before")
    for name in order:
        image = _image(payload, name)
        if image is not None and ROW in image:
            key_schema = {
                "type": "struct",
                "optional": False,
                "fields": [{"type": "bytes", "optional": False, "field": ROW}],
            }
            return {"schema": key_schema, "payload": {ROW: image[ROW]}}
        if image is not None:
            columns = ", ".join(sorted(map(str, image))) or "none"
            raise CodecError(f"{name}: an HBase row has no {ROW} column (columns: {columns})")
    raise CodecError(f"an HBase change has no row image to take its {ROW} key from")


def _mark_deleted_columns(record: Record, prefix: str) -> None:
    """Columns of ``before`` missing from ``after``: null in ``after``, and named."""
    before, after = record.payload.before, record.payload.after
    if not isinstance(before, dict) or not isinstance(after, dict):
        return
    deleted = [name for name in before if name not in after]
    if not deleted:
        return
    full = {name: after.get(name) for name in before}
    full.update(after)
    record.payload.after = full
    record.metadata[f"{prefix}.deleted.columns"] = ",".join(deleted)
