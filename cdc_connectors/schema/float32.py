"""What a 32-bit float (Avro ``float``, Protobuf ``float``, Connect ``float32``) holds.

A writer takes a number into a 32-bit float only when reading the float back gives the
number: the float itself (``0.5``), or its shortest text (``0.1``, as Java prints the float
``0.1f``, and as JSON converters write it); ``0.123456789`` and ``16777217`` it refuses,
never rounds. A reader gives a 32-bit float as that shortest text's double
(:func:`shortest`), so that ``0.1`` written is ``0.1`` read.
"""

from __future__ import annotations

import math
import struct

import numpy as np

__all__ = ["MAX", "RANGE", "holds", "holds_each", "nearest", "shortest", "shortest_each"]

#: The largest finite 32-bit float.
MAX = 3.4028234663852886e38
#: The least double a 32-bit float rounds to infinity: a number below it in size is in range
#: (``3.4028235E38``, Java's text of :data:`MAX`, is).
RANGE = 3.4028235677973366e38


def nearest(value: float) -> float:
    """``value`` rounded to the nearest 32-bit float (infinite beyond its range)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def shortest(single: float) -> float:
    """The double of the shortest text that reads back as the 32-bit float ``single``."""
    if not math.isfinite(single):
        return single
    for digits in range(1, 10):
        candidate = float(f"{single:.{digits}g}")
        if nearest(candidate) == single:
            return candidate
    return single


def holds(number: float | int) -> bool:
    """Whether a 32-bit float reads back as ``number`` (module docstring); NaN and the
    infinities are held, an integer only where a double holds it too."""
    if isinstance(number, int):
        as_double = float(number) if abs(number) < 2**1024 else math.inf
        return as_double == number and holds(as_double)
    if not math.isfinite(number):
        return True
    single = nearest(number)
    return single == number or shortest(single) == number


def holds_each(doubles: np.ndarray) -> np.ndarray:
    """:func:`holds` of each of ``doubles`` (a float64 array)."""
    with np.errstate(over="ignore", invalid="ignore"):
        singles = doubles.astype(np.float32)
    found: np.ndarray = ~np.isfinite(doubles) | (singles.astype(np.float64) == doubles)
    rest = np.flatnonzero(~found & np.isfinite(singles))
    if len(rest):
        found[rest] = shortest_each(singles[rest]) == doubles[rest]
    return found


def shortest_each(singles: np.ndarray) -> np.ndarray:
    """:func:`shortest` of each of ``singles`` (a float32 array), as float64."""
    # numpy prints a float32 as its shortest text that reads back as it
    return np.asarray(singles.astype(np.str_), dtype=np.float64)
