"""What a 32-bit float holds (:mod:`cdc_connectors.schema.float32`)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cdc_connectors.schema import float32

HELD = [0.1, 0.5, -0.0, 16777216, 2**60, 10**11, 0.10000000149011612, 3.4028235e38, 1e-45]
CHANGED = [0.123456789, 16777217, 2**60 + 1, 3.4028236e38, 3.5e38, 1.4e-45, 10**400]


def test_a_float_holds_itself_and_its_shortest_text_and_nothing_else() -> None:
    assert all(float32.holds(number) for number in HELD)
    assert not any(float32.holds(number) for number in CHANGED)
    assert float32.holds(math.nan) and float32.holds(-math.inf)
    doubles = np.array([float(n) for n in HELD + CHANGED[:-1]] + [math.nan, math.inf])
    assert float32.holds_each(doubles).tolist() == [
        *[True] * len(HELD),
        False,
        False,
        True,  # 2**60 + 1 is 2**60 as a double already: the double's value is held
        False,
        False,
        False,
        True,
        True,
    ]


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_what_a_reader_gives_a_writer_takes_back_unchanged(single: float) -> None:
    read = float32.shortest(single)
    assert float32.nearest(read) == single and float32.holds(read)
    assert float32.shortest_each(np.array([single], dtype=np.float32)).tolist() == [read]
    assert len(repr(read)) <= len(repr(single))
