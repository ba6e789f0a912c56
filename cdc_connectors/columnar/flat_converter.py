"""What the converters of formats without a schema share: one message read at a time into
a :class:`~cdc_connectors.columnar.flat_changes.FlatChange`, the changes written from
columns by :class:`~cdc_connectors.columnar.flat_changes.FlatChanges`.

:class:`FlatToOpenCDC` is their base (a subclass says which format it serves and how it
reads a batch's messages); :func:`record_change` is the change of a record the
per-message way read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from cdc_connectors.columnar.debezium_opencdc import Columnar, layout_of, merged_columnar
from cdc_connectors.columnar.flat_changes import FlatChange, FlatChanges
from cdc_connectors.columnar.flat_json import RecordColumns
from cdc_connectors.formats.base import Format
from cdc_connectors.opencdc import Operation, Record

__all__ = ["FlatToOpenCDC", "record_change"]


class FlatToOpenCDC:
    """Messages of :attr:`source` -> OpenCDC protobuf or JSON, from columns."""

    #: The format served: itself, not a subclass (which may read otherwise).
    source: ClassVar[type[Format]]
    fmt: Any

    def __init__(
        self,
        fmt: Format,
        destination: Format,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        layout = layout_of(destination)
        assert layout is not None, "see serves()"
        self.fmt = fmt
        self.changes = FlatChanges(layout, None if topic is None else tuple(topic))

    @classmethod
    def serves(cls, source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        :attr:`source` itself, to OpenCDC protobuf or JSON."""
        return type(source) is cls.source and layout_of(destination) is not None

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the rows the columns take; the others are the caller's. Each
        record gives its own key; a record without a position is given its message's place,
        as the per-message way gives it. The records :meth:`read_columns` holds are
        written as they are, the others read one at a time (:meth:`read`)."""
        found = self.read_columns(values, places)
        if found is None:
            return self.changes.write(self.read(values.to_pylist(), places.to_pylist()))
        parts = []
        written = self.changes.write_columns(
            found.rows, found.batch, found.row_kinds, found.keys, found.key_kinds, found.raw_keys
        )
        left = np.ones(len(values), dtype=bool)
        if written is not None:
            parts.append(written)
            left[found.rows] = False  # those the writers refuse: the per-message way's
        rest = np.flatnonzero(left)
        if len(rest):
            pick = pa.array(rest)
            some = self.changes.write(
                self.read(values.take(pick).to_pylist(), places.take(pick).to_pylist())
            )
            parts.append(Columnar(rest[some.rows], some.values, some.keys, some.topics))
        return merged_columnar(parts, routed=self.changes.topic is not None)

    def read_columns(self, values: pa.Array, places: pa.Array) -> RecordColumns | None:
        """The records of the batch read as columns, where the format has a reader of
        them; ``None``: all are read one at a time."""
        return None

    def read(
        self, values: list[bytes | None], places: list[bytes]
    ) -> Iterable[tuple[int, FlatChange]]:
        """The change of each message (with its row) the columns may write."""
        raise NotImplementedError


def record_change(record: Record, place: bytes) -> FlatChange | None:
    """A record the per-message way read, as a change; ``None`` for one the columns do not
    write (an unspecified operation, raw data as ``before`` or ``after``)."""
    payload = record.payload
    before, after = payload.before, payload.after
    if record.operation is Operation.UNSPECIFIED or not (_row(before) and _row(after)):
        return None
    return FlatChange(
        record.position or place,
        str(record.operation),
        record.metadata,
        record.key,
        before,  # type: ignore[arg-type]
        after,  # type: ignore[arg-type]
    )


def _row(image: object) -> bool:
    """An image the columns write: none or structured (raw data goes the other way)."""
    return image is None or type(image) is dict
