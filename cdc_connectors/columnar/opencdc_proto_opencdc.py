"""OpenCDC protobuf records (``opencdc-proto``) -> OpenCDC protobuf or JSON messages, from
columns.

:class:`OpenCDCProtoToOpenCDC` parses each ``opencdc.v1.Record`` as the per-message way
does (:func:`~cdc_connectors.opencdc.proto_codec.record_from_proto_bytes`: protobuf's C
parser, whole numbers back as integers) and writes those whose key and payload are flat
rows, raw keys or none with :class:`~cdc_connectors.columnar.flat_changes.FlatChanges`:
byte for byte what :meth:`OpenCDCProtoFormat.decode` then the destination's ``encode``
give. Left to the caller, for the per-message way: a message that does not parse, an
unspecified or unknown operation, a raw ``before`` or ``after``, and what
:mod:`~cdc_connectors.columnar.flat_changes` leaves (nested values, a column of whole and
fractional numbers: OpenCDC JSON writes them as they read back, ``1`` and ``1.5``).
"""

from __future__ import annotations

from collections.abc import Iterator

from cdc_connectors.columnar.flat_changes import FlatChange
from cdc_connectors.columnar.flat_converter import FlatToOpenCDC, record_change
from cdc_connectors.formats.opencdc import OpenCDCProtoFormat
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc.proto_codec import record_from_proto_bytes

__all__ = ["OpenCDCProtoToOpenCDC"]


class OpenCDCProtoToOpenCDC(FlatToOpenCDC):
    """``opencdc-proto`` -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    source = OpenCDCProtoFormat

    def read(
        self, values: list[bytes | None], places: list[bytes]
    ) -> Iterator[tuple[int, FlatChange]]:
        for row, value in enumerate(values):
            if value is None:
                continue  # a tombstone: skipped the per-message way
            try:
                record = record_from_proto_bytes(value)
            except CodecError:
                continue
            change = record_change(record, places[row])
            if change is not None:
                yield row, change
