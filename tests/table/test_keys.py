"""A set of keys asked of batch after batch: the same rows as a join picks."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc_connectors.table.keys import KeySet, among

TYPES = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "uint64": (pa.uint64(), st.integers(0, 2**64 - 1)),
    "date": (pa.date32(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    "time": (pa.timestamp("us", tz="UTC"), st.datetimes(timezones=st.just(dt.UTC))),
    "text": (pa.string(), st.text(max_size=4)),
}


def _picked(keys: pa.Table, rows: pa.Table) -> list[int]:
    numbered = rows.append_column("__n", pa.array(np.arange(rows.num_rows), pa.int64()))
    return among(numbered, keys).column("__n").to_pylist()


@pytest.mark.parametrize("name", sorted(TYPES))
@given(data=st.data())
def test_a_key_set_holds_the_rows_a_join_picks(name: str, data: st.DataObject) -> None:
    kind, values = TYPES[name]
    pool = data.draw(st.lists(values, min_size=1, max_size=12, unique=True))
    keys = data.draw(st.lists(st.sampled_from(pool), max_size=8))
    rows = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(pool)), max_size=20))
    key_table = pa.table({"k": pa.array(keys, kind)})
    row_table = pa.table({"k": pa.array(rows, kind), "v": pa.array(range(len(rows)))})
    found = KeySet(key_table).holds(row_table)
    assert np.flatnonzero(found).tolist() == _picked(key_table, row_table)
    # asked of a batch, as a table's files give them
    for batch in row_table.to_batches(max_chunksize=7):
        assert len(KeySet(key_table).holds(batch)) == batch.num_rows


@given(
    keys=st.lists(st.tuples(st.integers(0, 3), st.sampled_from("abc")), max_size=6),
    rows=st.lists(st.tuples(st.integers(0, 3), st.sampled_from("abc")), max_size=15),
)
def test_a_key_of_two_columns_is_matched_whole(
    keys: list[tuple[int, str]], rows: list[tuple[int, str]]
) -> None:
    key_table = pa.table(
        {"a": pa.array([k[0] for k in keys], pa.int64()), "b": [k[1] for k in keys]}
    )
    row_table = pa.table(
        {"a": pa.array([r[0] for r in rows], pa.int64()), "b": [r[1] for r in rows]}
    )
    found = KeySet(key_table).holds(row_table)
    assert np.flatnonzero(found).tolist() == [n for n, r in enumerate(rows) if r in set(keys)]


def test_an_empty_key_set_holds_nothing() -> None:
    keys = pa.table({"k": pa.array([], pa.int64())})
    assert KeySet(keys).holds(pa.table({"k": [1, 2]})).tolist() == [False, False]
