"""Huawei CDL JSON messages -> OpenCDC protobuf or JSON messages, from Arrow columns.

:class:`CdlToOpenCDC` writes the messages of CDL's Debezium JSON (``message_version``
``2.0``) from columns: they are Debezium change events with ``cdl.*`` metadata, read by
:class:`~cdc_connectors.columnar.debezium_opencdc.DebeziumToOpenCDC` with CDL's envelope
(:class:`~cdc_connectors.formats.debezium.cdl.CdlDebeziumJson`). CDL JSON 1.0 messages are read one
by one as :meth:`CdlJsonFormat.decode` reads them (their schema converts decimals and
times) and written from columns by
:class:`~cdc_connectors.columnar.flat_changes.FlatChanges`. Either way, byte for byte what
:meth:`CdlJsonFormat.decode` then the destination's ``encode`` give. Every other message
is left to the caller, for the per-message way: a message whose 2.0 schema has a
``unique`` key, a heartbeat, a tombstone, a bad message, and whatever the columns leave.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.debezium_opencdc import (
    Columnar,
    DebeziumToOpenCDC,
    layout_of,
    merged_columnar,
)
from cdc_connectors.columnar.flat_changes import FlatChange, FlatChanges
from cdc_connectors.columnar.flat_converter import record_change
from cdc_connectors.formats.base import Format, Message, SkipMessage
from cdc_connectors.formats.debezium.cdl import CdlJsonFormat
from cdc_connectors.opencdc import CodecError

# What every CDL JSON 1.0 message holds (however spaced, its value is spelt so).
_VERSION_1 = '"1.0"'

__all__ = ["CdlToOpenCDC"]


class CdlToOpenCDC:
    """CDL JSON -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    def __init__(
        self,
        fmt: CdlJsonFormat,
        destination: Format,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        self.fmt = fmt
        self._debezium = DebeziumToOpenCDC(fmt.v2, destination, topic)
        layout = layout_of(destination)
        assert layout is not None, "see serves()"
        self._v1 = FlatChanges(layout, None if topic is None else tuple(topic))

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        ``cdl-json`` itself, without ``key.fields``, to OpenCDC protobuf or JSON."""
        return (
            type(source) is CdlJsonFormat
            and layout_of(destination) is not None
            and DebeziumToOpenCDC.serves(source.v2, destination)
        )

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the rows the columns take; the others are the caller's."""
        found = self._debezium.convert(values, keys, places, headers)
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        left = np.ones(len(values), dtype=bool)
        left[found.rows] = False
        left &= wire.mask(pc.match_substring(values, _VERSION_1))
        if not left.any():
            return found
        rows = np.flatnonzero(left)
        v1 = self._v1.write(self._v1_changes(rows, values, keys, places, headers))
        if not len(v1.rows):
            return found
        return merged_columnar([found, v1])

    def _v1_changes(
        self,
        rows: np.ndarray,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None,
    ) -> Iterator[tuple[int, FlatChange]]:
        """The CDL JSON 1.0 records of ``rows``, read the per-message way."""
        taken = pa.array(rows)
        found_values = values.take(taken).to_pylist()
        found_keys = keys.take(taken).to_pylist() if keys is not None else [None] * len(rows)
        found_places = places.take(taken).to_pylist()
        found_headers = (
            headers.take(taken).to_pylist() if headers is not None else [None] * len(rows)
        )
        decode = self.fmt.decode
        for row, value, key, place, pairs in zip(
            rows, found_values, found_keys, found_places, found_headers, strict=True
        ):
            message = Message(
                value,
                key,
                [(h["key"], h["value"]) for h in pairs or ()],
                place.decode("utf-8", "backslashreplace"),
            )
            try:
                records = decode(message)
            except (CodecError, SkipMessage):
                continue
            if len(records) != 1:
                continue
            change = record_change(records[0], place)
            if change is not None:
                yield int(row), change
