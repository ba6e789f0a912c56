"""Binary Arrow columns built with one copy, and read back as zero-copy slices: the same
values as pyarrow's own conversions, nulls included."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.connectors.arrow_bytes import binary_array, binary_slices

values = st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=60)


@settings(deadline=None)  # pyarrow's first conversion in a process is slow
@given(values)
def test_binary_array_equals_pyarrows_own(items: list[bytes | None]) -> None:
    built = binary_array(items)
    built.validate(full=True)
    assert built.equals(pa.array(items, pa.binary()))


@settings(deadline=None)
@given(values, st.integers(0, 10), st.integers(0, 10))
def test_slices_give_every_value_of_a_sliced_column(
    items: list[bytes | None], start: int, length: int
) -> None:
    column = pa.array(items, pa.binary()).slice(start, length)
    found = [None if s is None else s.to_pybytes() for s in binary_slices(column)]
    assert found == column.to_pylist()


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string(), pa.large_binary()])
def test_slices_of_text_are_its_utf8_bytes(kind: pa.DataType) -> None:
    texts = ["a", None, "", "zürich"]
    column = pa.array(
        texts
        if pa.types.is_string(kind) or pa.types.is_large_string(kind)
        else [None if t is None else t.encode() for t in texts],
        kind,
    )
    found = [None if s is None else s.to_pybytes() for s in binary_slices(column)]
    assert found == [b"a", None, b"", "zürich".encode()]


def test_slices_refuse_other_columns() -> None:
    with pytest.raises(TypeError, match="not a binary or string column"):
        binary_slices(pa.array([1, 2]))


def test_more_than_a_binary_column_holds_is_refused() -> None:
    class Huge(bytes):
        def __len__(self) -> int:
            return 2**31

    with pytest.raises(ValueError, match="do not fit one binary column"):
        binary_array([Huge(b"x")])
