"""Keys and payloads: raw bytes or structured data, and the before/after change.

``Data`` is ``bytes`` (raw data, e.g. a JSON document or Avro bytes), a
``dict`` of field names to JSON-like values (structured data: ``None``, bool,
int, float, ``Decimal``, str, bytes, lists and dicts of these), or ``None``
when absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

RawData: TypeAlias = bytes
StructuredData: TypeAlias = dict[str, Any]
Data: TypeAlias = RawData | StructuredData | None


@dataclass(slots=True)
class Change:
    """The entity before and after the change; either may be ``None``."""

    before: Data = None
    after: Data = None


def is_raw(data: Data) -> bool:
    """True for raw data (bytes)."""
    return isinstance(data, bytes | bytearray | memoryview)


def is_structured(data: Data) -> bool:
    """True for structured data (a dict)."""
    return isinstance(data, dict)
