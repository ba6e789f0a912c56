"""The map columns of a Debezium row, read apart from Arrow's JSON reader."""

from __future__ import annotations

import numpy as np
import orjson
import pyarrow as pa
import pytest

from cdc_connectors.spark.envelope_columns import NotColumnar
from cdc_connectors.spark.map_columns import MAX_KEYS, MapColumn, MapColumns


def _columns() -> MapColumns:
    type_ = pa.map_(pa.string(), pa.string())
    column = MapColumn(
        "attrs", type_, True, "string", pa.string(), lambda a: (a, np.zeros(len(a), dtype=bool))
    )
    target = pa.struct([pa.field("id", pa.int64()), pa.field("attrs", type_)])
    return MapColumns([column], target)


def _rest(after: object) -> bytes:
    """A message's text after its schema block, as the typed read slices it."""
    return orjson.dumps({"payload": {"before": None, "after": after}})[1:]


def test_maps_are_taken_as_each_message_holds_them() -> None:
    rest = pa.array(
        [_rest({"id": 1, "attrs": {"b": "2", "a": None}}), _rest({"id": 2}), b"not json"],
        pa.binary(),
    )
    found, bad = _columns().parse(rest)
    assert found["after"]["attrs"] == [{"b": "2", "a": None}, None, None]
    assert found["before"]["attrs"] == [None, None, None]
    assert bad.tolist() == [False, False, True]


def test_a_batch_of_more_distinct_keys_than_arrow_should_make_columns_of_is_refused() -> None:
    rest = pa.array(
        [_rest({"id": n, "attrs": {f"key{n}": "v"}}) for n in range(MAX_KEYS + 1)], pa.binary()
    )
    with pytest.raises(NotColumnar, match=f"more than {MAX_KEYS} keys"):
        _columns().parse(rest)
    _columns().parse(rest.slice(0, MAX_KEYS))
