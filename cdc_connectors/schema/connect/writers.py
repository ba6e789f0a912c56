"""Structured values (what records hold) -> Connect JSON, per semantic type."""

from __future__ import annotations

import base64
import datetime as dt
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_connectors.schema import instants
from cdc_connectors.schema.connect.readers import EPOCH_DAY

__all__ = [
    "Write",
    "write_as_is",
    "write_days",
    "write_decimal",
    "write_since_epoch",
    "write_text_decimal",
    "write_text_instant",
    "write_time_of_day",
    "write_variable_decimal",
]

Write = Callable[[Any, Mapping[str, str]], Any]


def _as_decimal(value: Any) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"not a decimal number: {value!r:.60}") from None


def _unscaled_base64(number: Decimal, scale: int) -> str:
    if not number.is_finite():
        raise ValueError(f"{number} is not a finite decimal")
    # From the digits, not arithmetic: a decimal context would round long numbers.
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    shift = exponent + scale
    if shift < 0 and any(digits[shift:]):
        raise ValueError(f"{number} has more than {scale} fraction digits")
    whole = int("".join(map(str, digits)) or "0")
    whole = whole * 10**shift if shift >= 0 else whole // 10**-shift
    whole = -whole if sign else whole
    raw = whole.to_bytes((whole.bit_length() + 8) // 8, "big", signed=True)
    return base64.b64encode(raw).decode("ascii")


def write_decimal(value: Any, params: Mapping[str, str]) -> str:
    return _unscaled_base64(_as_decimal(value), int(params.get("scale", "0")))


def write_variable_decimal(value: Any, params: Mapping[str, str]) -> dict[str, Any]:
    number = _as_decimal(value)
    scale = max(0, -int(number.as_tuple().exponent))
    return {"scale": scale, "value": _unscaled_base64(number, scale)}


def _as_instant(value: Any) -> dt.datetime:
    moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(moment, dt.datetime):
        raise ValueError(f"expected an ISO 8601 date-time, got {value!r:.60}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def write_since_epoch(per_second: int) -> Write:
    """A count of units since the epoch; a value the unit does not hold exactly (a
    microsecond for milliseconds) is refused, not cut."""

    def write(value: Any, params: Mapping[str, str]) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return instants.count(instants.epoch_nanos(value), per_second, value)

    return write


def write_time_of_day(per_second: int) -> Write:
    """A count of units past midnight; a finer value is refused, not cut."""

    def write(value: Any, params: Mapping[str, str]) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return instants.count(instants.day_nanos(value), per_second, value)

    return write


def write_days(value: Any, params: Mapping[str, str]) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    day = dt.date.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(day, dt.date):
        raise ValueError(f"expected an ISO 8601 date, got {value!r:.60}")
    return day.toordinal() - EPOCH_DAY


def write_as_is(value: Any, params: Mapping[str, str]) -> Any:
    return str(value) if isinstance(value, uuid.UUID) else value


def write_text_instant(value: Any, params: Mapping[str, str]) -> str:
    return value if isinstance(value, str) else _as_instant(value).isoformat()


def write_text_decimal(value: Any, params: Mapping[str, str]) -> str:
    return f"{_as_decimal(value):f}"
