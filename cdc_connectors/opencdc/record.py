"""The OpenCDC record: one change of one entity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_connectors.errors import CodecError
from cdc_connectors.opencdc import keys
from cdc_connectors.opencdc.data import Change, Data
from cdc_connectors.opencdc.metadata import Metadata, StandardKey
from cdc_connectors.opencdc.operation import Operation


@dataclass(slots=True)
class Record:
    """An OpenCDC record, as Conduit defines it.

    ``position`` says where the record comes from (opaque bytes), ``key``
    identifies the entity, ``payload`` holds it before and after the change.
    """

    position: bytes = b""
    operation: Operation = Operation.UNSPECIFIED
    metadata: Metadata = field(default_factory=Metadata)
    key: Data = None
    payload: Change = field(default_factory=Change)

    def __post_init__(self) -> None:
        if type(self.metadata) is not Metadata:
            self.metadata = Metadata(self.metadata or {})
        if type(self.operation) is not Operation:
            self.operation = Operation.parse(self.operation)

    @classmethod
    def new(
        cls,
        operation: Operation | str,
        *,
        position: bytes = b"",
        key: Data = None,
        before: Data = None,
        after: Data = None,
        metadata: dict[str, str] | None = None,
        **standard: Any,
    ) -> Record:
        """A record with ``opencdc.version`` set; ``standard`` sets typed metadata
        (``collection=``, ``created_at=``, ``read_at=``, ...)."""
        md = Metadata(metadata or {})
        md.setdefault(keys.VERSION, keys.OPENCDC_VERSION)
        for name, value in standard.items():
            if not isinstance(getattr(Metadata, name, None), StandardKey):
                raise TypeError(f"unknown standard metadata {name!r}")
            setattr(md, name, value)
        return cls(position, Operation.parse(operation), md, key, Change(before, after))


def checked_position(position: Any) -> bytes:
    """A record's position as bytes for a writer; :class:`CodecError` if it is not bytes."""
    if isinstance(position, bytes | bytearray | memoryview):
        return bytes(position)
    raise CodecError(f"position must be bytes, not {type(position).__name__}")
