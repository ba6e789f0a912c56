"""YDB changefeed records (``ydb-json``) -> OpenCDC protobuf or JSON messages, from columns.

:class:`YdbToOpenCDC` writes the change records of a batch whose rows are flat (integers,
doubles, text, booleans, nulls) from Arrow columns: byte for byte what
:meth:`~cdc_connectors.formats.ydb.YdbJsonFormat.decode` then the destination's
``encode`` give. YDB's JSON has no schema block, so each record is first read as the
per-message way reads it (:func:`~cdc_connectors.opencdc.json_codec.load_exact`) and
checked against the format's own rules (:meth:`YdbJsonFormat.check_shape`), then written
by :class:`~cdc_connectors.columnar.flat_changes.FlatChanges` (records of one row shape
from columns). Left to the caller, for the per-message way, so that its dead letter or
skip stays what it is there: anything that is no JSON object, a resolved timestamp, a
record the format refuses, an image holding a key column, and what
:mod:`~cdc_connectors.columnar.flat_changes` leaves (nested values, numbers a double would
change, columns of mixed kinds).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from cdc_connectors.columnar.flat_changes import FlatChange
from cdc_connectors.columnar.flat_converter import FlatToOpenCDC
from cdc_connectors.columnar.flat_json import RecordColumns
from cdc_connectors.columnar.ydb_json_columns import YdbColumnsReader
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.ydb import IMAGE_MODES, OPERATIONS, YdbJsonFormat
from cdc_connectors.opencdc import CodecError, keys
from cdc_connectors.opencdc.json_codec import load_exact

__all__ = ["YdbToOpenCDC"]

_INT64_MAX = 2**63 - 1
_NS_PER_MS = 1_000_000


class YdbToOpenCDC(FlatToOpenCDC):
    """``ydb-json`` -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    source = YdbJsonFormat
    fmt: YdbJsonFormat

    def __init__(
        self,
        fmt: YdbJsonFormat,
        destination: Format,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        super().__init__(fmt, destination, topic)
        self._key_names = frozenset(fmt.key_columns or ())
        standard = {keys.VERSION: keys.OPENCDC_VERSION}
        if fmt.collection is not None:
            standard[keys.COLLECTION] = fmt.collection
        self._standard = standard
        self._columns = YdbColumnsReader(fmt) if fmt.key_columns is not None else None

    def read_columns(self, values: pa.Array, places: pa.Array) -> RecordColumns | None:
        if self._columns is None:
            return None
        return self._columns.read(values, places, str(time.time_ns()))

    def read(
        self, values: list[bytes | None], places: list[bytes]
    ) -> Iterator[tuple[int, FlatChange]]:
        read_at = str(time.time_ns())
        for row, value in enumerate(values):
            change = self._change(value, places[row], read_at)
            if change is not None:
                yield row, change

    def _change(self, value: bytes | None, place: bytes, read_at: str) -> FlatChange | None:
        """The record ``value`` holds, as :meth:`YdbJsonFormat.decode` reads it, if the
        columns may write it (module docstring)."""
        if value is None or not value.startswith(b"{"):
            return None
        fmt = self.fmt
        try:
            obj = load_exact(value)
        except (CodecError, ValueError):
            return None
        if not isinstance(obj, dict) or "resolved" in obj:
            return None
        key = obj.get("key")
        if not isinstance(key, list) or not key:
            return None
        if fmt.key_columns is not None and len(key) != len(fmt.key_columns):
            return None
        present = [name for name in OPERATIONS if name in obj]
        if len(present) != 1 or not isinstance(obj[present[0]], dict):
            return None
        op = present[0]
        changed = obj[op]
        old, new = obj.get("oldImage"), obj.get("newImage")
        if ("oldImage" in obj and not isinstance(old, dict)) or (
            "newImage" in obj and not isinstance(new, dict)
        ):
            return None
        try:
            fmt.check_shape(op, changed, old, new)
        except CodecError:
            return None
        metadata = dict(self._standard)
        if "ts" in obj:
            ts = obj["ts"]
            if not isinstance(ts, list) or len(ts) != 2:
                return None
            step, tx_id = ts
            if not (_unsigned(step) and _unsigned(tx_id)) or step * _NS_PER_MS > _INT64_MAX:
                return None
            metadata["ydb.step"], metadata["ydb.txId"] = str(step), str(tx_id)
            metadata[keys.CREATED_AT] = str(step * _NS_PER_MS)
        metadata[keys.READ_AT] = read_at
        images = old is not None or new is not None or fmt.mode in IMAGE_MODES
        before, after = old, new
        if op == "erase":
            operation = "delete"
        elif images:
            new_row = fmt.mode == "NEW_AND_OLD_IMAGES" and old is None
            operation = "create" if new_row else "update"
        else:
            operation = "update"
            if fmt.mode != "KEYS_ONLY":
                after = changed
                if op == "update":
                    metadata["ydb.partial"] = "true"
        columns = fmt.key_columns
        if columns is None:
            return FlatChange(place, operation, metadata, {"key": key}, before, after)
        row_key = dict(zip(columns, key, strict=True))
        for image in (before, after):
            if image is not None and not self._key_names.isdisjoint(image):
                return None  # checked against the key by the per-message way
        return FlatChange(
            place,
            operation,
            metadata,
            row_key,
            _with_key(row_key, before),
            _with_key(row_key, after),
        )


def _with_key(key: dict[str, Any], image: dict[str, Any] | None) -> dict[str, Any] | None:
    """``image`` with the key columns first, as the per-message way adds them."""
    return None if image is None else {**key, **image}


def _unsigned(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _INT64_MAX
