"""Instants and times of day as exact counts of a unit, from ISO 8601 text or Python values.

Python reads ISO text to microseconds and drops the digits past them, and a count of
milliseconds made from a microsecond would drop the rest. Here every digit counts: a value
is taken into a unit only when that unit holds it (``12:00:00.123456789`` as nanoseconds, not
as microseconds); a finer one is refused, never cut. Text without an offset is UTC, as a
naive ``datetime`` is.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

__all__ = ["UNIT_NAMES", "count", "day_nanos", "epoch_nanos", "local_epoch_nanos"]

_NANOS = 1_000_000_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: Units by how many make a second.
UNIT_NAMES = {1: "seconds", 1_000: "milliseconds", 1_000_000: "microseconds", _NANOS: "nanoseconds"}
# The fraction of a second of ISO 8601 text: the one run of digits after '.' or ','.
_FRACTION = re.compile(r"[.,](\d+)")


def epoch_nanos(value: Any) -> int:
    """Nanoseconds since 1970-01-01 UTC of ISO 8601 date-time text or a ``datetime``;
    ValueError for anything else, or text with digits finer than nanoseconds."""
    moment: dt.datetime
    moment, beyond = _read(value, dt.datetime, "date-time")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - _EPOCH) // dt.timedelta(microseconds=1) * 1_000 + beyond


def local_epoch_nanos(value: Any) -> int:
    """Nanoseconds since 1970-01-01 of a wall-clock ISO 8601 date-time or ``datetime``
    (a local timestamp: no zone); ValueError for one with an offset from UTC (which a
    local timestamp cannot keep), anything else, or digits finer than nanoseconds."""
    moment: dt.datetime
    moment, beyond = _read(value, dt.datetime, "date-time")
    _without_offset(moment, value, "a local timestamp")
    return epoch_nanos(moment.replace(tzinfo=None)) + beyond


def day_nanos(value: Any) -> int:
    """Nanoseconds past midnight of ISO 8601 time text or a ``time``; ValueError for
    anything else, an offset from UTC (a time of day keeps none), or text with digits
    finer than nanoseconds."""
    moment: dt.time
    moment, beyond = _read(value, dt.time, "time")
    _without_offset(moment, value, "a time of day")
    seconds = (moment.hour * 60 + moment.minute) * 60 + moment.second
    return (seconds * 1_000_000 + moment.microsecond) * 1_000 + beyond


def _without_offset(moment: dt.datetime | dt.time, value: Any, what: str) -> None:
    """ValueError for a ``moment`` with an offset from UTC other than none or zero."""
    offset = moment.utcoffset()
    if offset:
        raise ValueError(
            f"{value!s:.60} has an offset from UTC, which {what} does not keep: write it "
            "without one"
        )


def _read(value: Any, kind: Any, what: str) -> tuple[Any, int]:
    """``value`` as a ``kind`` (``datetime`` or ``time``, read from its text by Python) and
    the nanoseconds past its microseconds that Python drops."""
    if isinstance(value, str):
        return kind.fromisoformat(value), _beyond_micros(value)
    if isinstance(value, kind):
        return value, 0
    raise ValueError(f"expected an ISO 8601 {what}, got {value!r:.60}")


def count(nanos: int, per_second: int, value: Any) -> int:
    """``nanos`` in units of which ``per_second`` make a second; ValueError naming
    ``value`` when the unit does not hold it exactly."""
    units, rest = divmod(nanos * per_second, _NANOS)
    if rest:
        unit = UNIT_NAMES.get(per_second, f"1/{per_second} s")
        raise ValueError(f"{value!s:.60} has a fraction of a second finer than {unit}")
    return units


def _beyond_micros(text: str) -> int:
    """The nanoseconds past the microseconds Python reads of ``text`` (0-999)."""
    found = _FRACTION.search(text)
    if found is None:
        return 0
    digits = found.group(1)
    if digits[9:].strip("0"):
        raise ValueError(f"{text!r:.60} has a fraction of a second finer than nanoseconds")
    return int(digits[6:9].ljust(3, "0"))
