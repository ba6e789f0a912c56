"""Schema evolution of a table: which changes of the rows' columns apply, and which refuse.

A column the table lacks is added (nullable). A column's type may widen safely: integers to
wider integers, ``float`` to ``double``, a decimal to more digits at the same scale; a
narrower value is cast up to the table's type. Any other difference (a text column that
becomes a number, a decimal's scale, an integer that would narrow) is a
:class:`SchemaChangeError` naming the column, and nothing of that batch is written.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.types as pt

from cdc_connectors.errors import CdcError

__all__ = [
    "BatchTypes",
    "Evolution",
    "SchemaChangeError",
    "evolution",
    "numeric",
    "takes",
    "widens",
]


class SchemaChangeError(CdcError, ValueError):
    """A change of a column's type the table cannot take: the message names the column."""


@dataclass(frozen=True)
class Evolution:
    """What a batch of rows does to a table's columns."""

    added: list[pa.Field]
    widened: list[pa.Field]  # each the column's new type

    def __bool__(self) -> bool:
        return bool(self.added or self.widened)


_INTEGERS = (pa.int8(), pa.int16(), pa.int32(), pa.int64())


def widens(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether a column of type ``old`` may become ``new`` with every value kept."""
    if old == new:
        return True
    if old in _INTEGERS and new in _INTEGERS:
        return _INTEGERS.index(new) > _INTEGERS.index(old)
    if pt.is_float32(old) and pt.is_float64(new):
        return True
    if pt.is_decimal(old) and pt.is_decimal(new):
        return bool(new.scale == old.scale and new.precision > old.precision)
    return False


def _same(old: pa.DataType, new: pa.DataType) -> bool:
    """Types a table stores alike (text of either size, a timestamp's zone spelt otherwise)."""
    if old == new:
        return True
    if (pt.is_string(old) or pt.is_large_string(old)) and (
        pt.is_string(new) or pt.is_large_string(new)
    ):
        return True
    if (pt.is_binary(old) or pt.is_large_binary(old)) and (
        pt.is_binary(new) or pt.is_large_binary(new)
    ):
        return True
    if pt.is_timestamp(old) and pt.is_timestamp(new):
        return bool(old.unit == new.unit and (old.tz is None) == (new.tz is None))
    return False


def numeric(datatype: pa.DataType) -> bool:
    """Whether ``datatype`` holds numbers: an integer, a float or a decimal."""
    return bool(pt.is_integer(datatype) or pt.is_floating(datatype) or pt.is_decimal(datatype))


def takes(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether a column of type ``old`` takes values of type ``new`` (as they are, cast up,
    or widened): whether :func:`evolution` lets them by."""
    return bool(pt.is_null(new) or _same(old, new) or widens(new, old) or widens(old, new))


def _combined(old: pa.DataType, new: pa.DataType) -> pa.DataType | None:
    """The type a column of values of ``old`` and of ``new`` takes: the one the other
    widens to; ``None`` when neither does."""
    if pt.is_null(new) or _same(old, new) or widens(new, old):
        return old
    if pt.is_null(old) or widens(old, new):
        return new
    return None


class BatchTypes:
    """The columns' types the registered schemas of a batch's records give, gathered record
    by record and batch by batch: two schemas of one batch may differ as the table may
    (a new column, a safe widening: the wider type is the column's); any other difference
    is noted, and the batch refused (:meth:`check`)."""

    def __init__(self) -> None:
        self.types: dict[str, pa.DataType] = {}
        self.conflicts: dict[str, tuple[pa.DataType, pa.DataType]] = {}

    def __bool__(self) -> bool:
        return bool(self.types)

    def get(self, name: str) -> pa.DataType | None:
        return self.types.get(name)

    def add(self, name: str, datatype: pa.DataType) -> None:
        held = self.types.get(name)
        if held is None:
            self.types[name] = datatype
            return
        wider = _combined(held, datatype)
        if wider is None:
            self.conflicts.setdefault(name, (held, datatype))
        else:
            self.types[name] = wider

    def update(self, other: BatchTypes) -> None:
        """Take ``other``'s types and conflicts as this one's."""
        for name, datatype in other.types.items():
            self.add(name, datatype)
        for name, pair in other.conflicts.items():
            self.conflicts.setdefault(name, pair)

    def check(self, where: str) -> None:
        """:class:`SchemaChangeError` naming a column two of the schemas type apart."""
        for name, (first, second) in self.conflicts.items():
            raise SchemaChangeError(
                f"{where}: column {name!r} is {first} in one record's registered schema and "
                f"{second} in another's of the same batch; only new columns and safe "
                "widening (int -> long, float -> double, decimal precision up) are applied: "
                "nothing of this batch was written"
            )


def evolution(table: pa.Schema, rows: pa.Schema, where: str) -> Evolution:
    """How the table of schema ``table`` must change to take ``rows`` (the columns of a
    batch); :class:`SchemaChangeError` naming the column of ``where`` when it cannot."""
    added, widened = [], []
    for field in rows:
        if field.name not in table.names:
            if not pt.is_null(field.type):
                added.append(pa.field(field.name, field.type, True))
            continue
        old = table.field(field.name).type
        if not takes(old, field.type):
            raise SchemaChangeError(
                f"{where}: column {field.name!r} is {old} in the table and {field.type} in "
                "the changes; only new columns and safe widening (int -> long, float -> "
                "double, decimal precision up) are applied: nothing of this batch was written"
            )
        if widens(old, field.type) and not _same(old, field.type):
            widened.append(pa.field(field.name, field.type, True))
    return Evolution(added, widened)
