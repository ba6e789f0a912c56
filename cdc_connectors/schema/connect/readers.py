"""Connect JSON values (as orjson reads them) -> the Python values fastavro writes.

The plain checks (``checked_int``, ``checked_string``, ...) and the readers of the semantic
types (``read_*``, each ``(value, parameters)``). A value that does not fit raises
``InvalidValue``; the caller adds where.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
import re
import sys
import uuid
from collections.abc import Callable, Mapping
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from cdc_connectors.schema import float32
from cdc_connectors.schema.connect.avrodata import DEFAULT_DECIMAL_PRECISION

__all__ = [
    "EPOCH",
    "EPOCH_DAY",
    "TEXT_DECIMAL_SCALE",
    "WIDE",
    "InvalidValue",
    "Params",
    "base64_bytes",
    "checked_float",
    "checked_int",
    "checked_string",
    "int_param",
    "json_kind",
    "read_connect_decimal",
    "read_days",
    "read_enum",
    "read_plain_int",
    "read_plain_text",
    "read_since_epoch",
    "read_text_decimal",
    "read_text_timestamp",
    "read_time_of_day",
    "read_uuid",
    "read_variable_scale_decimal",
    "text_decimal_precision",
]

# PostgreSQL's numeric holds at most 16383 digits after the point: a scale beyond any
# database's would only make a huge text out of a small message.
_MAX_VARIABLE_SCALE = 16_383
_FRACTION = re.compile(r"[.,](\d{7,})")
#: CDL's decimal strings carry no precision or scale: Spark's default decimal(38, 18).
_TEXT_DECIMAL_PRECISION = 38
TEXT_DECIMAL_SCALE = 18

#: A Connect schema's parameters.
Params = Mapping[str, str]

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
# Decimal arithmetic here must never round: a context wider than any value it meets.
WIDE = Context(prec=100_000, Emax=999_999_999, Emin=-999_999_999)


class InvalidValue(ValueError):
    """A value does not fit its schema; the caller adds where."""


def checked_int(value: Any, bits: int = 64) -> int:
    # bool is an int subclass in Python but never a JSON number.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(f"expected an integer, got {json_kind(value)}")
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if not low <= value <= high:
        raise InvalidValue(f"{value} is outside the {bits}-bit range [{low}, {high}]")
    return value


def checked_float(value: Any, kind: str) -> float:
    """A JSON number as a float, only when the float holds it exactly: an integer beyond
    2^53 or a number with more digits than a double keeps is refused, never rounded."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise InvalidValue(f"expected a number, got {json_kind(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not (
        abs(number) < float32.RANGE if kind == "float32" else abs(number) <= sys.float_info.max
    ):
        raise InvalidValue(f"{value} is outside the {kind} range")
    if not isinstance(value, float) and Decimal(number) != Decimal(value):
        raise InvalidValue(f"{value} would change as a {kind} (it reads as {number!r})")
    return number


def checked_string(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidValue(f"expected a string, got {json_kind(value)}")
    return value


def base64_bytes(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    try:
        return base64.b64decode(checked_string(value), validate=True)
    except (binascii.Error, ValueError) as exc:  # ValueError: text that is not ASCII
        raise InvalidValue(f"not base64: {exc}") from None


def int_param(params: Params, key: str = "scale", default: int | None = None) -> int:
    text = params.get(key)
    if text is None:
        if default is None:
            raise InvalidValue(f"the schema has no {key!r} parameter")
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidValue(f"parameter {key!r} is not an integer: {text!r}") from None


def _exact(number: Decimal, scale: int, precision: int) -> Decimal:
    """``number`` with exactly ``scale`` fraction digits, or why it has no such form."""
    if not number.is_finite():
        raise InvalidValue(f"{number} is not a finite decimal")
    try:
        # Quantizing only pads zeros or drops them; a digit that would be lost is an error.
        exact = number.quantize(Decimal(1).scaleb(-scale), context=WIDE)
    except InvalidOperation:
        raise InvalidValue(f"{number} does not fit scale {scale}") from None
    if exact != number:
        raise InvalidValue(f"{number} has more than {scale} fraction digits")
    if len(exact.as_tuple().digits) > precision:
        raise InvalidValue(f"{number} has more than {precision} digits (precision)")
    return exact


def _unscaled(unscaled: int, scale: int) -> Decimal:
    # Built from its parts, so no context rounds it: exact for any size and scale.
    try:
        digits = tuple(int(d) for d in str(abs(unscaled)))
    except ValueError:  # past Python's int-to-text limit (4300 digits): no real decimal
        raise InvalidValue("the unscaled value has thousands of digits") from None
    return Decimal((1 if unscaled < 0 else 0, digits, -scale))


def _from_twos_complement(raw: bytes) -> int:
    return int.from_bytes(raw, "big", signed=True) if raw else 0


def _number_decimal(value: Any) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    if isinstance(value, float):
        # JsonConverter's NUMERIC decimal format: orjson reads such numbers as floats;
        # repr is the shortest text that reads back as the same float, i.e. the JSON
        # text for up to 15 significant digits. _exact refuses digits beyond the scale.
        return Decimal(repr(value))
    raise InvalidValue(f"expected base64 bytes or a number, got {json_kind(value)}")


def read_connect_decimal(value: Any, params: Params) -> Decimal:
    scale = int_param(params)
    precision = int_param(params, "connect.decimal.precision", DEFAULT_DECIMAL_PRECISION)
    if isinstance(value, str | bytes | bytearray):
        raw = base64_bytes(value)
        if not raw:
            raise InvalidValue(
                "empty bytes are no decimal (Connect's Decimal has at least one byte)"
            )
        number = _unscaled(_from_twos_complement(raw), scale)
    else:
        number = _number_decimal(value)
    return _exact(number, scale, precision)


def read_text_decimal(value: Any, params: Params) -> Decimal:
    scale = int_param(params, "scale", TEXT_DECIMAL_SCALE)
    precision = text_decimal_precision(params)
    if not isinstance(value, str):
        return _exact(_number_decimal(value), scale, precision)
    try:
        number = Decimal(value.strip())
    except InvalidOperation:
        raise InvalidValue(f"not a decimal number: {value!r}") from None
    return _exact(number, scale, precision)


def read_variable_scale_decimal(value: Any, params: Params) -> str:
    if not isinstance(value, Mapping):
        raise InvalidValue(f"expected an object with scale and value, got {json_kind(value)}")
    scale = checked_int(value.get("scale"), 32)
    if abs(scale) > _MAX_VARIABLE_SCALE:
        raise InvalidValue(
            f"scale {scale} is beyond {_MAX_VARIABLE_SCALE} (PostgreSQL's numeric limit)"
        )
    raw = base64_bytes(value.get("value"))
    if not raw:
        raise InvalidValue("empty bytes are no decimal")
    number = _unscaled(_from_twos_complement(raw), scale)
    # Plain notation keeps every digit and the scale ("1.50", never "1.5E+0").
    return f"{number:f}"


def read_days(value: Any, params: Params) -> dt.date:
    days = checked_int(value, 32)
    try:
        return dt.date.fromordinal(EPOCH_DAY + days)
    except (ValueError, OverflowError):
        raise InvalidValue(f"{days} days from 1970-01-01 is outside years 1-9999") from None


def read_since_epoch(per_second: int) -> Callable[[Any, Params], dt.datetime]:
    def convert(value: Any, params: Params) -> dt.datetime:
        count = checked_int(value)
        try:
            # Integer arithmetic: milliseconds and microseconds are exact in a timedelta.
            return EPOCH + dt.timedelta(microseconds=count * (1_000_000 // per_second))
        except OverflowError:
            raise InvalidValue(f"{count} is outside years 1-9999 as a timestamp") from None

    return convert


def read_time_of_day(per_second: int, bits: int) -> Callable[[Any, Params], dt.time]:
    def convert(value: Any, params: Params) -> dt.time:
        count = checked_int(value, bits)
        micros = count * (1_000_000 // per_second)
        if not 0 <= micros < 86_400_000_000:
            raise InvalidValue(f"{count} is not a time of day (0 to 24h exclusive)")
        seconds, micro = divmod(micros, 1_000_000)
        return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, micro)

    return convert


def read_plain_int(bits: int) -> Callable[[Any, Params], int]:
    return lambda value, params: checked_int(value, bits)


def read_plain_text(value: Any, params: Params) -> str:
    return checked_string(value)


def read_enum(value: Any, params: Params) -> str:
    text = checked_string(value)
    allowed = params.get("allowed")
    # Debezium joins the labels with commas without escaping, so a label holding a comma
    # is checked as a comma-bounded run of the list.
    if allowed is not None and f",{text}," not in f",{allowed},":
        raise InvalidValue(f"{text!r} is not one of the allowed values {allowed!r}")
    return text


def read_uuid(value: Any, params: Params) -> uuid.UUID:
    text = checked_string(value)
    try:
        return uuid.UUID(text)
    except ValueError:
        raise InvalidValue(f"not a UUID: {text!r}") from None


def read_text_timestamp(value: Any, params: Params) -> dt.datetime:
    text = checked_string(value)
    fraction = _FRACTION.search(text)
    if fraction is not None and fraction[1][6:].strip("0"):
        raise InvalidValue(f"{text!r} is finer than the microseconds a timestamp holds")
    try:
        parsed = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidValue(f"not an ISO-8601 date-time: {text!r}") from None
    # A wall-clock value without an offset is read as UTC, as Debezium's Timestamp types are.
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=dt.UTC)
    try:
        return parsed.astimezone(dt.UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is in year 0 in UTC
        raise InvalidValue(f"{text!r} is outside years 1..9999 in UTC") from None


def text_decimal_precision(params: Params) -> int:
    """A CDL decimal's precision: AvroData's parameter, else ``precision``, else 38."""
    key = "connect.decimal.precision" if "connect.decimal.precision" in params else "precision"
    return int_param(params, key, _TEXT_DECIMAL_PRECISION)


def json_kind(value: Any) -> str:
    """What a JSON value is, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
