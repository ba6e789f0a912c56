"""The ``map`` columns of a Debezium row, which Arrow's JSON reader does not read.

A Kafka Connect ``map`` with string keys (PostgreSQL's ``hstore`` read with
``hstore.handling.mode=map``) is a JSON object whose members are its entries. Arrow reads
an object only as a struct, whose members it infers, and a struct does not tell an entry
holding null from no entry. So the typed read (:mod:`cdc_connectors.spark.debezium_typed`)
reads the row's other columns with Arrow, and a table's top-level map columns from each
message parsed again by orjson (:meth:`MapColumns.parse`): the objects the per-message way
reads, their entries in the message's order, each value converted as the column's values
are. A batch whose maps hold more than :data:`MAX_KEYS` distinct keys is not read so
(:class:`~cdc_connectors.spark.envelope_columns.NotColumnar`): Arrow's reader would make a
column of each key before the maps are dropped from what it read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from cdc_connectors.spark.envelope_columns import NotColumnar

__all__ = ["IMAGES", "MAX_KEYS", "MapColumn", "MapColumns", "Parsed"]

#: Distinct keys over a batch's maps that the typed read takes (module docstring).
MAX_KEYS = 256
IMAGES = ("before", "after")
_INT64 = (-(2**63), 2**63 - 1)

#: Converts a column of values (of a map column's JSON type) to the column's values, and
#: says which of them the per-message way must read instead.
ConvertItems = Callable[[pa.Array], tuple[pa.Array, np.ndarray]]
#: Each image's maps, by column name, one entry a row (``None``: no map there).
Parsed = dict[str, dict[str, list[dict[str, Any] | None]]]


@dataclass(frozen=True)
class MapColumn:
    """One map column of the row: its member ``name``, its Arrow ``type``, whether it may
    be null, the JSON kind of its values (``string``, ``integer`` or ``boolean``) with
    their Arrow type as read, and how they are converted."""

    name: str
    type: pa.MapType
    optional: bool
    kind: str
    json_type: pa.DataType
    convert: ConvertItems

    def holds(self, value: Any) -> bool:
        """Whether a parsed value is of this column's JSON kind (null is left to
        ``convert``, which knows whether the values may be null)."""
        if value is None:
            return True
        if self.kind == "string":
            return isinstance(value, str)
        if self.kind == "boolean":
            return isinstance(value, bool)
        return type(value) is int and _INT64[0] <= value <= _INT64[1]


class MapColumns:
    """The top-level map columns of a row type (``target``) and its other members."""

    def __init__(self, columns: list[MapColumn], target: pa.StructType):
        self.columns = columns
        self.target = target
        self._names = frozenset(column.name for column in columns)

    def without_maps(self, payload: pa.StructArray) -> pa.StructArray:
        """``payload`` (``before``, ``after`` and the envelope's members as Arrow read
        them) without the map members Arrow inferred in its images."""
        fields, children = [], []
        for index in range(payload.type.num_fields):
            field, child = payload.type.field(index), payload.field(index)
            if field.name in IMAGES and pa.types.is_struct(field.type):
                child = self._image_without_maps(child)
                field = field.with_type(child.type)
            fields.append(field)
            children.append(child)
        return pa.StructArray.from_arrays(children, fields=fields)

    def _image_without_maps(self, image: pa.StructArray) -> pa.StructArray:
        names = [image.type.field(i).name for i in range(image.type.num_fields)]
        kept = [i for i, name in enumerate(names) if name not in self._names]
        if len(kept) == image.type.num_fields:
            return image
        nulls = image.is_null() if image.null_count else None
        return pa.StructArray.from_arrays(
            [image.field(i) for i in kept], fields=[image.type.field(i) for i in kept], mask=nulls
        )

    def parse(self, rest: pa.Array) -> tuple[Parsed, np.ndarray]:
        """Each message's maps (``rest``: each message's text after its schema block, which
        ``{`` before it makes ``{"payload": ...}``), and the messages the per-message way
        must read: those orjson does not parse, or whose images or maps are not objects.
        :class:`NotColumnar` for maps of more than :data:`MAX_KEYS` distinct keys."""
        count = len(rest)
        bad = np.zeros(count, dtype=bool)
        found: Parsed = {
            image: {column.name: [None] * count for column in self.columns} for image in IMAGES
        }
        keys: set[str] = set()
        for row, text in enumerate(rest.to_pylist()):
            try:
                payload = orjson.loads(b"{" + text)["payload"]
            except (orjson.JSONDecodeError, TypeError, KeyError):
                bad[row] = True
                continue
            if not isinstance(payload, dict):
                bad[row] = True
                continue
            for image in IMAGES:
                values = payload.get(image)
                if values is None:
                    continue
                if not isinstance(values, dict):
                    bad[row] = True
                    continue
                for column in self.columns:
                    entries = values.get(column.name)
                    if entries is None:
                        continue
                    if not isinstance(entries, dict):
                        bad[row] = True
                        continue
                    keys.update(entries)
                    found[image][column.name][row] = entries
            if len(keys) > MAX_KEYS:
                raise NotColumnar(f"maps of more than {MAX_KEYS} keys in one batch")
        return found, bad

    def with_maps(
        self, image: pa.StructArray, parsed: Parsed, name: str
    ) -> tuple[pa.StructArray, np.ndarray]:
        """The typed ``image`` (``before`` or ``after``, of the row's other columns) with
        its map columns from ``parsed``, in the row type's order, and the rows whose maps
        the per-message way must read."""
        count = len(image)
        present = np.asarray(image.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        bad = np.zeros(count, dtype=bool)
        maps: dict[str, pa.Array] = {}
        for column in self.columns:
            maps[column.name], refused = _map_array(column, parsed[name][column.name], present)
            bad |= refused
        children = [
            maps[field.name] if field.name in maps else image.field(field.name)
            for field in self.target
        ]
        nulls = None if present.all() else pa.array(~present)
        return pa.StructArray.from_arrays(children, fields=list(self.target), mask=nulls), bad


def _map_array(
    column: MapColumn, values: list[dict[str, Any] | None], present: np.ndarray
) -> tuple[pa.Array, np.ndarray]:
    """The map column of the rows' parsed ``values`` (null where a row has none, or has no
    image: ``present``), and the rows the per-message way must read: a required map that
    is null, a value of another kind, a value ``convert`` refuses."""
    count = len(values)
    bad = np.zeros(count, dtype=bool)
    nulls = np.zeros(count, dtype=bool)
    offsets = np.zeros(count + 1, dtype=np.int32)
    keys: list[str] = []
    items: list[Any] = []
    for row, entries in enumerate(values):
        if entries is None or not present[row]:
            nulls[row] = True
            bad[row] = present[row] and not column.optional
        else:
            for key, value in entries.items():
                if not column.holds(value):
                    bad[row] = True
                    value = None
                keys.append(key)
                items.append(value)
        offsets[row + 1] = len(keys)
    converted, refused = column.convert(pa.array(items, column.json_type))
    if refused.any():
        rows = np.repeat(np.arange(count), np.diff(offsets))
        bad[rows[refused]] = True
    array = pa.MapArray.from_arrays(
        pa.array(offsets),
        pa.array(keys, pa.string()),
        converted,
        type=column.type,
        mask=pa.array(nulls) if nulls.any() else None,
    )
    return array, bad & present
