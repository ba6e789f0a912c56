"""Hypothesis strategies for OpenCDC records."""

from __future__ import annotations

from hypothesis import strategies as st

from cdc_connectors.opencdc import Operation, Record
from cdc_connectors.opencdc.data import Change
from cdc_connectors.opencdc.metadata import Metadata

#: The integers structured data may hold (what OpenCDC JSON reads as integers).
INT64_MIN, UINT64_MAX = -(2**63), 2**64 - 1


def json_values(max_int: int = 2**63 - 1, min_int: int | None = None) -> st.SearchStrategy[object]:
    """JSON-like values: what structured data holds after a JSON or protobuf trip."""
    ints = st.integers(-max_int if min_int is None else min_int, max_int)
    scalars = st.none() | st.booleans() | st.text(max_size=12) | ints
    scalars |= st.floats(allow_nan=False, allow_infinity=False)
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=12,
    )


def data(max_int: int = 2**63 - 1, min_int: int | None = None) -> st.SearchStrategy[object]:
    structured = st.dictionaries(st.text(max_size=8), json_values(max_int, min_int), max_size=5)
    return st.none() | st.binary(max_size=24) | structured


def records(max_int: int = 2**63 - 1, min_int: int | None = None) -> st.SearchStrategy[Record]:
    """Records with structured integers in ``[min_int, max_int]`` (``min_int`` = -``max_int``)."""
    return st.builds(
        Record,
        position=st.binary(max_size=16),
        operation=st.sampled_from(list(Operation)),
        metadata=st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=5).map(
            Metadata
        ),
        key=data(max_int, min_int),
        payload=st.builds(Change, before=data(max_int, min_int), after=data(max_int, min_int)),
    )


def nesting_paths(min_depth: int = 0, max_depth: int = 60) -> st.SearchStrategy[list[str]]:
    """Paths of objects and lists from the top of structured data down to one value."""
    return st.lists(st.sampled_from(["dict", "list"]), min_size=min_depth, max_size=max_depth)
