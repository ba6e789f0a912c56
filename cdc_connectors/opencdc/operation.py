"""What caused a record: create, update, delete or snapshot."""

from __future__ import annotations

import enum
from typing import Any

from cdc_connectors.errors import CodecError
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2

_PREFIX = "OPERATION_"


class Operation(enum.IntEnum):
    """The proto enum ``opencdc.v1.Operation``; ``str()`` is the JSON name."""

    UNSPECIFIED = opencdc_pb2.OPERATION_UNSPECIFIED
    CREATE = opencdc_pb2.OPERATION_CREATE
    UPDATE = opencdc_pb2.OPERATION_UPDATE
    DELETE = opencdc_pb2.OPERATION_DELETE
    SNAPSHOT = opencdc_pb2.OPERATION_SNAPSHOT

    def __str__(self) -> str:
        return _NAMES[self]

    @classmethod
    def parse(cls, value: Any) -> Operation:
        """Read an operation the way Conduit does.

        Accepts the names (``"create"`` ...), ``"Operation(N)"``, a decimal string
        or an integer; ``""`` and ``None`` are UNSPECIFIED. Anything else raises
        :class:`CodecError`.
        """
        if isinstance(value, Operation):
            return value
        if value is None or value == "":
            return cls.UNSPECIFIED
        if isinstance(value, str):
            op = _BY_NAME.get(value)
            if op is not None:
                return op
            number = value.removeprefix("Operation(").removesuffix(")")
            try:
                value = int(number)
            except ValueError:
                raise CodecError(f"unknown operation {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise CodecError(f"unknown operation {value!r}")
        try:
            return cls(value)
        except ValueError:
            raise CodecError(f"unknown operation number {value}") from None


# Conduit's JSON names: the proto enum value names without the prefix, lower
# case; the unspecified value prints as Go's stringer does for it.
_NAMES = {
    op: (
        f"Operation({op.value})"
        if op.value == 0
        else opencdc_pb2.Operation.Name(op.value).removeprefix(_PREFIX).lower()
    )
    for op in Operation
}
_BY_NAME = {name: op for op, name in _NAMES.items() if op.value != 0}
