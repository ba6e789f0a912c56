"""OpenCDC JSON records (``opencdc-json``) -> OpenCDC protobuf or JSON messages, from columns.

:class:`OpenCDCJsonToOpenCDC` reads each record as the per-message way reads it
(:func:`~cdc_connectors.opencdc.json_codec.load_exact`, then the rules of
:func:`~cdc_connectors.opencdc.json_codec.record_from_obj`) and writes those whose key
and payload are flat rows, raw keys or none with
:class:`~cdc_connectors.columnar.flat_changes.FlatChanges`: byte for byte what
:meth:`OpenCDCJsonFormat.decode` then the destination's ``encode`` give. Left to the
caller, for the per-message way, so that its record or dead letter stays what it is
there: anything that is no JSON object, a field the per-message way refuses (a position
or raw key that is no base64, metadata that is not text, an unknown operation), an
unspecified operation, a raw ``before`` or ``after``, and what
:mod:`~cdc_connectors.columnar.flat_changes` leaves (nested values, numbers a double
would change, columns of mixed kinds).
"""

from __future__ import annotations

import binascii
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from cdc_connectors.columnar.flat_changes import FlatChange
from cdc_connectors.columnar.flat_converter import FlatToOpenCDC
from cdc_connectors.columnar.flat_json import RecordColumns
from cdc_connectors.columnar.opencdc_json_columns import RecordColumnsReader
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.opencdc import CodecError, Operation
from cdc_connectors.opencdc.json_codec import load_exact

__all__ = ["OpenCDCJsonToOpenCDC"]

_RECORD_FIELDS = frozenset(("operation", "payload", "position"))
_UNREAD = object()  # a key or image the columns do not read


class OpenCDCJsonToOpenCDC(FlatToOpenCDC):
    """``opencdc-json`` -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    source = OpenCDCJsonFormat
    fmt: OpenCDCJsonFormat

    def __init__(
        self,
        fmt: OpenCDCJsonFormat,
        destination: Any,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        super().__init__(fmt, destination, topic)
        self._columns = RecordColumnsReader(fmt.raw_as_string)

    def read_columns(self, values: pa.Array, places: pa.Array) -> RecordColumns | None:
        return self._columns.read(values, places)

    def read(
        self, values: list[bytes | None], places: list[bytes]
    ) -> Iterator[tuple[int, FlatChange]]:
        for row, value in enumerate(values):
            change = self._change(value)
            if change is not None:
                if not change.position:
                    change.position = places[row]
                yield row, change

    def _change(self, value: bytes | None) -> FlatChange | None:
        """The record ``value`` holds, as the per-message way reads it, if the columns may
        write it (module docstring)."""
        if value is None or not value.startswith(b"{"):
            return None
        try:
            obj = load_exact(value)
        except (CodecError, ValueError):
            return None
        if not isinstance(obj, dict):
            return None
        if "value" in obj and not obj.keys() & _RECORD_FIELDS:
            return None  # a kv line given as a record: the per-message way says so
        position = obj.get("position")
        if position is None:
            position = b""
        elif type(position) is str:
            try:
                position = binascii.a2b_base64(position, strict_mode=True)
            except (binascii.Error, ValueError):
                return None
        else:
            return None
        metadata = obj.get("metadata")
        if metadata is None:
            metadata = {}
        elif type(metadata) is not dict or not _texts(metadata):
            return None
        payload = obj.get("payload")
        if payload is None:
            payload = {}
        elif type(payload) is not dict:
            return None
        try:
            operation = Operation.parse(obj.get("operation"))
        except CodecError:
            return None
        if operation is Operation.UNSPECIFIED:
            return None  # protobuf leaves the default out: the per-message way writes it
        key = self._data(obj.get("key"))
        before, after = payload.get("before"), payload.get("after")
        if key is _UNREAD or not _row(before) or not _row(after):
            return None
        return FlatChange(position, str(operation), metadata, key, before, after)

    def _data(self, data: Any) -> Any:
        """A key as the per-message way reads it; :data:`_UNREAD` for one it refuses."""
        if data is None or type(data) is dict:
            return data
        if type(data) is not str:
            return _UNREAD
        if self.fmt.raw_as_string:
            return data.encode("utf-8")
        try:
            return binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError):
            return _UNREAD


def _row(image: Any) -> bool:
    """An image the columns write: none or structured (raw data goes the other way)."""
    return image is None or type(image) is dict


def _texts(metadata: dict[str, Any]) -> bool:
    """Whether every metadata value is text (JSON's keys are, and orjson's text is valid
    Unicode)."""
    try:
        "".join(metadata.values())
    except TypeError:
        return False
    return True
