"""YDB changefeeds in their Debezium-compatible JSON format: ``ydb-debezium-json`` (read only).

A changefeed created with ``FORMAT = 'DEBEZIUM_JSON'`` writes, per change, the Kafka key
``{"payload": {<key columns>}}`` and the value::

    {"payload": {"op": "u", "before": {...}, "after": {...},
                 "source": {"connector": "ydb", "version": "1.0.0", "ts_ms": 1670792400890,
                            "step": 1670792400890, "txId": 562949953607163, "snapshot": false}}}

It is read as ``debezium-json`` reads Debezium (:class:`DebeziumJsonFormat`), with
metadata prefixed ``ydb``:

| YDB | OpenCDC |
|---|---|
| ``op`` ``c`` (only in ``NEW_AND_OLD_IMAGES``: a row without ``before``) | ``create`` |
| ``op`` ``u`` / ``d`` | ``update`` / ``delete`` |
| ``op`` ``r`` (a row of the initial scan, ``source.snapshot`` true) | ``snapshot`` |
| ``before`` (``OLD_IMAGE``, ``NEW_AND_OLD_IMAGES``) | ``payload.before`` |
| ``after`` (``NEW_IMAGE``, ``NEW_AND_OLD_IMAGES``) | ``payload.after`` |
| Kafka key's ``payload`` | ``key`` (column -> value) |
| ``source.step`` / ``source.txId`` | ``ydb.step`` / ``ydb.txId`` (as ``ydb-json``) |
| ``source.ts_ms`` (else ``source.step``, coordinator ms) | ``opencdc.createdAt`` (ns) |
| other ``source`` fields (``connector``, ``version``, ``snapshot``) | ``ydb.source.<field>`` |
| (none: the envelope names no table) | ``opencdc.collection``: option ``collection`` |
| (none) | ``opencdc.readAt``: when the message was decoded |
| value ``null`` | skipped, ``tombstone`` (``tombstones=delete``: a key-only delete) |

YDB adds the key columns to both images. ``UPDATES`` and ``KEYS_ONLY`` changefeeds carry
no image: an update or delete then has only its key. With option ``mode`` set, a message
that does not fit it is an error: ``c`` outside ``NEW_AND_OLD_IMAGES``, a ``before`` the
mode does not carry, an ``after`` likewise. Metadata values are strings, as in
``debezium-json`` (``ydb.source.snapshot`` is ``true`` or ``false``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from cdc_connectors.formats.base import FormatOptionError, Message
from cdc_connectors.formats.debezium.envelope import Envelope
from cdc_connectors.formats.debezium.json_format import DebeziumJsonFormat
from cdc_connectors.formats.ydb import MODES
from cdc_connectors.opencdc import CodecError, Record

__all__ = ["YdbDebeziumJsonFormat"]

# images each mode carries
_BEFORE_MODES = frozenset({"OLD_IMAGE", "NEW_AND_OLD_IMAGES"})
_AFTER_MODES = frozenset({"NEW_IMAGE", "NEW_AND_OLD_IMAGES"})


class YdbDebeziumJsonFormat(DebeziumJsonFormat):
    """YDB's Debezium-compatible changefeed records (module docstring)."""

    name = "ydb-debezium-json"
    writable = False
    # KEYS_ONLY and UPDATES changefeeds carry no images: the key says which row changed.
    # ``ydb.step`` / ``ydb.txId``: the names ydb-json gives the same values.
    envelope: ClassVar[Envelope] = Envelope(
        prefix="ydb",
        images_required=False,
        renamed={"ydb.source.step": "ydb.step", "ydb.source.txId": "ydb.txId"},
        step_time="step",
    )
    options: ClassVar[Mapping[str, str]] = {
        "collection": "opencdc.collection of every record (the table or changefeed name)",
        "mode": "the changefeed's mode, checked per message: " + ", ".join(MODES),
        "tombstones": "skip (default): count and skip null values; delete: a key-only delete",
    }

    def configure(self) -> None:
        super().configure()
        self.mode: str | None = None
        mode = self.settings.get("mode")
        if mode is None:
            return
        self.mode = mode.strip().upper()
        if self.mode not in MODES:
            raise FormatOptionError(
                f"format {self.name!r} option 'mode' must be one of {', '.join(MODES)}, "
                f"not {mode!r}"
            )
        # What the mode does not carry, as data every decoder (columns too) checks.
        if self.mode != "NEW_AND_OLD_IMAGES":
            self.refused_ops["c"] = (
                f"op 'c' in {self.mode} mode: YDB writes it only in NEW_AND_OLD_IMAGES"
            )
        for image, modes in (("before", _BEFORE_MODES), ("after", _AFTER_MODES)):
            if self.mode not in modes:
                self.refused_images[image] = f"{image} in {self.mode} mode, which does not carry it"

    def encode(self, record: Record) -> Message:
        raise CodecError(f"format {self.name!r} is read-only: it has no encoder")
