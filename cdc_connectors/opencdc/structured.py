"""What structured data may hold, checked before a codec writes it.

Structured data is a ``dict`` of JSON-like values. Before writing, the codecs
check the whole tree once, so that nothing is written that cannot be read
back and nothing changes silently:

- integers fit in 64 bits (``-2**63`` to ``2**64 - 1``, what OpenCDC JSON
  readers take as integers); larger ones are refused, never rounded to doubles;
- floats and ``Decimal`` values are finite: NaN and infinities have no JSON
  form (Conduit refuses them too), so they are refused rather than written as
  ``null``;
- with ``doubles=True`` (protobuf's ``Struct``, which holds every number as a
  double), integers must lie within +-2**53 and ``Decimal`` values must keep
  their digits as a double: anything else would come back as another number;
- object keys are strings;
- strings and keys are valid Unicode text (no lone surrogates: UTF-8 cannot
  encode them); the codecs check this with :func:`check_text` only once
  their encoder has refused the data;
- nesting stays within what the reader of the format accepts (each codec
  passes its own limit, see :func:`check`).

The check walks the tree iteratively up to the limit, so no depth of input
raises ``RecursionError``. Errors are :class:`CodecError` naming the path
(``payload.after.items[3].price``).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from cdc_connectors.errors import CodecError
from cdc_connectors.text import encodes

#: The range of integers structured data may hold.
MIN_INT = -(2**63)
MAX_INT = 2**64 - 1
#: The range of integers a double holds exactly.
MAX_EXACT_DOUBLE = 2**53


def _path(parts: list[str | int]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{_shown(p)}" for p in parts)


def _shown(text: str) -> str:
    """``text`` as valid UTF-8 for a message: lone surrogates escaped as ``\\ud800``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def check_text(data: dict[str, Any], what: str) -> None:
    """Raise :class:`CodecError` naming the first string or object key of ``data`` that
    is not valid Unicode text (it holds a lone surrogate, which UTF-8 cannot encode).

    The codecs call it once their encoder has refused the data, to name the place:
    the common all-valid case pays nothing.
    """
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        value, path = stack.pop()
        items: Any = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str) and not encodes(key):
                raise CodecError(
                    f"{what}{_path(path)}: object key {key!r} holds a lone surrogate, "
                    "which UTF-8 cannot encode"
                )
            if isinstance(item, str):
                if not encodes(item):
                    shown = item if len(item) <= 40 else f"{item[:37]}..."
                    raise CodecError(
                        f"{what}{_path([*path, key])}: string {shown!r} holds a lone surrogate, "
                        "which UTF-8 cannot encode"
                    )
            elif isinstance(item, dict | list | tuple):
                stack.append((item, [*path, key]))


def check(
    data: dict[str, Any],
    what: str,
    *,
    budget: int,
    dict_cost: int = 1,
    list_cost: int = 1,
    limit_reason: str = "",
    doubles: bool = False,
) -> None:
    """Raise :class:`CodecError` if ``data`` holds something a codec must not write.

    Nesting is measured as the sum of ``dict_cost`` for every object and
    ``list_cost`` for every array on the way down to a value; it must not
    exceed ``budget``. ``limit_reason`` says whose limit that is. ``doubles``:
    the format holds numbers as doubles, so only numbers a double keeps exactly
    may be written.
    """
    low, high = (-MAX_EXACT_DOUBLE, MAX_EXACT_DOUBLE) if doubles else (MIN_INT, MAX_INT)
    if _fine(data, budget, dict_cost, list_cost, low, high):
        return
    # Something may be wrong: walk again item by item, to name it and its path.
    # (container, path, cost so far); a stack, not recursion: no depth can overflow it
    stack: list[tuple[Any, list[str | int], int]] = [(data, [], 0)]
    while stack:
        value, path, used = stack.pop()
        items: Any
        if isinstance(value, dict):
            used += dict_cost
            items = value.items()
        else:
            used += list_cost
            items = enumerate(value)
        if used > budget:
            _too_deep(what, path, limit_reason)
        for key, item in items:
            if not isinstance(key, str) and not isinstance(value, list | tuple):
                raise CodecError(
                    f"{what}{_path(path)}: object key {key!r} is a "
                    f"{type(key).__name__}, keys must be strings"
                )
            kind = type(item)
            if kind is str or kind is bool or item is None:
                continue
            if kind is int:
                if low <= item <= high:
                    continue
            elif kind is float:
                if math.isfinite(item):
                    continue
            elif isinstance(item, dict | list | tuple):
                stack.append((item, [*path, key], used))
                continue
            problem = _problem(item, doubles)
            if problem:
                raise CodecError(f"{what}{_path([*path, key])}: {problem}")


def _fine(data: Any, budget: int, dict_cost: int, list_cost: int, low: int, high: int) -> bool:
    """True when ``data`` surely holds nothing wrong: the common case, one lean pass.

    False sends the data to the item-by-item walk of :func:`check`, which decides
    and names the place (bytes, ``Decimal`` and subclasses always go there).
    """
    if type(data) is not dict or not _string_keys(data) or dict_cost > budget:
        return False
    stack: list[tuple[Any, int]] = [(data, dict_cost)]
    pop, push = stack.pop, stack.append
    while stack:
        value, used = pop()
        for item in value.values() if type(value) is dict else value:
            kind = type(item)
            if kind is str or kind is bool or item is None:
                continue
            if kind is int:
                if low <= item <= high:
                    continue
                return False
            if kind is float:
                if math.isfinite(item):
                    continue
                return False
            if kind is dict:
                if used + dict_cost > budget or not _string_keys(item):
                    return False
                push((item, used + dict_cost))
            elif kind is list:
                if used + list_cost > budget:
                    return False
                push((item, used + list_cost))
            else:
                return False
    return True


def _string_keys(value: dict[Any, Any]) -> bool:
    try:
        "".join(value)  # type-checks every key in C
    except TypeError:
        return False
    return True


def _problem(value: Any, doubles: bool = False) -> str:
    """What is wrong with a scalar of structured data, or ``""``."""
    if isinstance(value, bool | str | bytes | bytearray | memoryview) or value is None:
        return ""
    if isinstance(value, int):
        if doubles and not -MAX_EXACT_DOUBLE <= value <= MAX_EXACT_DOUBLE:
            return (
                f"integer {value} is beyond +-2^53 and would change as a protobuf Struct "
                "number (a double); write it as a string, or use opencdc-json"
            )
        if MIN_INT <= value <= MAX_INT:
            return ""
        return f"integer {value} does not fit in 64 bits (write it as a string or a decimal)"
    if isinstance(value, float):
        return "" if math.isfinite(value) else f"{value} has no JSON form (numbers must be finite)"
    if isinstance(value, Decimal):
        if not value.is_finite():  # math.isfinite raises ValueError for a signaling NaN
            return f"{value} has no JSON form (numbers must be finite)"
        if doubles and Decimal(repr(float(value))) != value:
            return (
                f"decimal {value} would change as a protobuf Struct number (a double: "
                f"{float(value)!r}); write it as a string, or use opencdc-json"
            )
        return decimal_problem(value)
    return f"type {type(value).__name__} cannot be structured data"


def json_number(value: Decimal) -> str:
    """The JSON number text of a finite ``value``, exact for readers that keep numbers
    exact: an integer beyond 64 bits gets an exponent (``9.99E+37``), since readers take a
    plain integer token as a 64-bit integer."""
    text = str(value)
    if "E" not in text and "." not in text and not MIN_INT <= int(value) <= MAX_INT:
        return f"{value:E}"
    return text


def decimal_problem(value: Decimal) -> str:
    """Why a JSON reader would not read ``value`` back as itself, or ``""``."""
    if value == value.to_integral_value() and "E" not in str(value).upper():
        return ""  # beyond 64 bits it is written with an exponent (``json_number``)
    as_double = float(value)
    if not math.isfinite(as_double) or (as_double == 0 and value != 0):
        return f"decimal {value} is beyond the range of a JSON number (write it as a string)"
    return ""


def _too_deep(what: str, path: list[str | int], reason: str) -> None:
    shown = _path(path[:6]) + (f" (and {len(path) - 6} levels more)" if len(path) > 6 else "")
    raise CodecError(
        f"{what}{shown}: structured data nested too deeply{f' ({reason})' if reason else ''}"
    )
