"""ISO 8601 text of dates, times and timestamps, as Python's ``isoformat()`` writes it,
computed over numpy columns (years 1 to 9999).

Each function returns a :data:`~cdc_connectors.columnar.wire.Segment`: one row of ASCII
bytes per value and its length. As Python does, a time or timestamp carries its six-digit
fraction only when it is not zero; a timestamp is UTC (``+00:00``).
"""

from __future__ import annotations

import numpy as np

from cdc_connectors.columnar.wire import Segment

__all__ = ["dates", "times", "timestamps"]

_DAY = 86_400_000_000
_ZERO = ord("0")
# Days whose civil date 32-bit arithmetic computes without overflow (years -25,000 to
# 25,000 and more).
_INT32_DAYS = 10_000_000


def _civil(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of days since 1970-01-01 (Howard Hinnant's civil_from_days), in
    32-bit arithmetic for the days of years 1 to 9999 (which it holds)."""
    if len(days) and int(days.min()) > -_INT32_DAYS and int(days.max()) < _INT32_DAYS:
        days = days.astype(np.int32)
    z = days + 719_468
    era = np.floor_divide(z, 146_097)
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = yoe + era * 400 + (month <= 2)
    return year, month, day


def _digits(out: np.ndarray, column: int, number: np.ndarray, width: int) -> None:
    """``number`` (below ``10**width``, at most 9 digits) in ``width`` digits at ``column``:
    one 32-bit division a digit (a remainder kernel per digit costs three times more)."""
    rest = number.astype(np.int32)
    for k in range(width):
        tens = rest // 10
        out[:, column + width - 1 - k] = _ZERO + (rest - tens * 10)
        rest = tens


def _put(out: np.ndarray, column: int, text: str) -> None:
    for k, char in enumerate(text.encode("ascii")):
        out[:, column + k] = char


def _date_part(out: np.ndarray, days: np.ndarray) -> None:
    year, month, day = _civil(days)
    _digits(out, 0, year, 4)
    _put(out, 4, "-")
    _digits(out, 5, month, 2)
    _put(out, 7, "-")
    _digits(out, 8, day, 2)


def _time_part(out: np.ndarray, column: int, micros: np.ndarray) -> np.ndarray:
    """``HH:MM:SS`` at ``column``, then ``.ffffff`` where the fraction is not zero;
    whether each row has it."""
    seconds, fraction = (part.astype(np.int32) for part in np.divmod(micros, 1_000_000))
    _digits(out, column, seconds // 3600, 2)
    _put(out, column + 2, ":")
    _digits(out, column + 3, seconds // 60 % 60, 2)
    _put(out, column + 5, ":")
    _digits(out, column + 6, seconds % 60, 2)
    _put(out, column + 8, ".")
    _digits(out, column + 9, fraction, 6)
    has_fraction: np.ndarray = fraction != 0
    return has_fraction


def dates(days: np.ndarray) -> Segment:
    """``YYYY-MM-DD`` of days since 1970-01-01."""
    out = np.empty((len(days), 10), dtype=np.uint8)
    _date_part(out, days.astype(np.int64))
    return out, np.full(len(days), 10, dtype=np.int64)


def times(micros: np.ndarray) -> Segment:
    """``HH:MM:SS[.ffffff]`` of microseconds past midnight."""
    out = np.empty((len(micros), 15), dtype=np.uint8)
    fraction = _time_part(out, 0, micros.astype(np.int64))
    return out, np.where(fraction, 15, 8).astype(np.int64)


def timestamps(micros: np.ndarray) -> Segment:
    """``YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`` of microseconds since the epoch (UTC)."""
    micros = micros.astype(np.int64)
    days, within = np.divmod(micros, _DAY)
    out = np.empty((len(micros), 32), dtype=np.uint8)
    _date_part(out, days)
    _put(out, 10, "T")
    fraction = _time_part(out, 11, within)
    zone = np.frombuffer(b"+00:00", dtype=np.uint8)
    out[:, 26:32] = zone
    short = ~fraction
    out[short, 19:25] = zone
    return out, np.where(fraction, 32, 25).astype(np.int64)
