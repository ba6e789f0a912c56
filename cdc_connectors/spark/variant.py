"""Python values <-> Spark VARIANT binary (value, metadata), using PySpark's own builder.

Structured OpenCDC data becomes a VARIANT column. Numbers keep their kind:
ints stay exact integers (up to 64 bits; larger ones become decimals, as
Spark's ``parse_json`` does), floats are doubles, ``Decimal`` values decimals;
bytes are written as base64 strings, as in OpenCDC JSON.
"""

from __future__ import annotations

from base64 import b64encode
from decimal import Decimal
from typing import Any

from pyspark.sql.types import VariantVal
from pyspark.sql.variant_utils import VariantBuilder

_INT64 = (-(2**63), 2**63 - 1)


def _prepare(value: Any) -> Any:
    """Values the builder takes: bytes -> base64 text; ints beyond 64 bits -> Decimal."""
    if isinstance(value, dict):
        return {str(k): _prepare(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_prepare(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return b64encode(value).decode("ascii")
    if type(value) is int and not _INT64[0] <= value <= _INT64[1]:
        return Decimal(value)
    return value


class _ValueBuilder(VariantBuilder):
    """PySpark's builder, fed an already-parsed value instead of JSON text.

    ``VariantBuilder.build`` parses JSON and hands the result to
    ``_process_parsed_json``; substituting the value at that first call skips
    a serialize + parse round trip per record. Nested calls go straight to
    the base implementation.
    """

    def __init__(self, value: Any):
        super().__init__()
        self._root: Any = value

    def _process_parsed_json(self, parsed: Any) -> None:
        process = super()._process_parsed_json
        self._process_parsed_json = process  # type: ignore[method-assign]
        process(self._root)


def to_variant(value: Any) -> tuple[bytes, bytes]:
    """The (value, metadata) VARIANT encoding of a JSON-like Python value."""
    return _ValueBuilder(_prepare(value)).build("null")


def from_variant(value: bytes, metadata: bytes) -> Any:
    """The Python value of a VARIANT (dicts, lists, str, int, float, Decimal, bool, None)."""
    return VariantVal(value, metadata).toPython()
