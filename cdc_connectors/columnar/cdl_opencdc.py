"""Huawei CDL JSON messages -> OpenCDC protobuf or JSON messages, from Arrow columns.

:class:`CdlToOpenCDC` writes the messages of CDL's Debezium JSON (``message_version``
``2.0``) from columns: they are Debezium change events with ``cdl.*`` metadata, read by
:class:`~cdc_connectors.columnar.debezium_opencdc.DebeziumToOpenCDC` with CDL's envelope
(:class:`~cdc_connectors.formats.cdl.CdlDebeziumJson`), byte for byte what
:meth:`CdlJsonFormat.decode` then the destination's ``encode`` give. Every other message is
left to the caller, for the per-message way: CDL JSON 1.0, a message whose schema has a
``unique`` key, a heartbeat, a tombstone, and whatever Debezium's columns leave.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from cdc_connectors.columnar.debezium_opencdc import Columnar, DebeziumToOpenCDC
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.cdl import CdlJsonFormat

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

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        ``cdl-json`` itself, without ``key.fields``, to OpenCDC protobuf or JSON."""
        return type(source) is CdlJsonFormat and DebeziumToOpenCDC.serves(source.v2, destination)

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the rows the columns take; the others are the caller's."""
        return self._debezium.convert(values, keys, places, headers)
