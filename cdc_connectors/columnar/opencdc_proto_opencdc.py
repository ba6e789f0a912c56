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

from collections.abc import Iterator, Sequence

import pyarrow as pa

from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of
from cdc_connectors.columnar.flat_changes import FlatChange, FlatChanges
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.opencdc import OpenCDCProtoFormat
from cdc_connectors.opencdc import CodecError, Operation
from cdc_connectors.opencdc.proto_codec import record_from_proto_bytes

__all__ = ["OpenCDCProtoToOpenCDC"]


class OpenCDCProtoToOpenCDC:
    """``opencdc-proto`` -> OpenCDC protobuf or JSON, column by column (module docstring)."""

    def __init__(
        self,
        fmt: OpenCDCProtoFormat,
        destination: Format,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        layout = layout_of(destination)
        assert layout is not None, "see serves()"
        self.fmt = fmt
        self._changes = FlatChanges(layout, None if topic is None else tuple(topic))

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        ``opencdc-proto`` itself, to OpenCDC protobuf or JSON."""
        return type(source) is OpenCDCProtoFormat and layout_of(destination) is not None

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the rows the columns take; the others are the caller's. A
        record carries its own key: the Kafka keys and headers do not change it; a record
        without a position is given its message's place, as the per-message way gives it."""
        return self._changes.write(_read(values.to_pylist(), places.to_pylist()))


def _read(values: list[bytes | None], places: list[bytes]) -> Iterator[tuple[int, FlatChange]]:
    for row, value in enumerate(values):
        if value is None:
            continue  # a tombstone: skipped the per-message way
        try:
            record = record_from_proto_bytes(value)
        except CodecError:
            continue
        payload = record.payload
        if record.operation is Operation.UNSPECIFIED or not (
            _row(payload.before) and _row(payload.after)
        ):
            continue
        yield (
            row,
            FlatChange(
                record.position or places[row],
                str(record.operation),
                record.metadata,
                record.key,
                payload.before,  # type: ignore[arg-type]
                payload.after,  # type: ignore[arg-type]
            ),
        )


def _row(image: object) -> bool:
    """An image the columns write: none or structured (raw data goes the other way)."""
    return image is None or type(image) is dict
