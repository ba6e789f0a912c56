"""Whether a text is one JSON value, exactly as orjson reads it, checked without building it.

:func:`is_json` asks simdjson first, which validates a change event five times sooner than
orjson parses it, and orjson only about what simdjson refuses (a broken text, an integer
beyond 64 bits, which orjson reads): simdjson takes nothing orjson refuses once the text
starts as a value does.
"""

from __future__ import annotations

import threading

import orjson
import simdjson

__all__ = ["ESCAPE", "is_json", "parses"]

#: A pattern (RE2's) of a ``\\u`` escape: where it spells a name (``"\\u0061"`` for ``"a"``),
#: a pattern of that name does not find it, which readers of names in JSON text look for.
ESCAPE = r"\\u"

# What a JSON value starts with: simdjson would also take a byte order mark first.
_VALUE_STARTS = frozenset(b'{["-0123456789tfn')
# simdjson's parser keeps a buffer as large as the largest text it parsed: larger texts
# (rare) are orjson's.
_SIMDJSON_AT_MOST = 1 << 20
_validators = threading.local()


def parses(text: bytes | memoryview) -> bool:
    """Whether orjson reads ``text`` as one JSON value."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def is_json(text: bytes | memoryview) -> bool:
    """Whether ``text`` is one JSON value, as :func:`parses` says (module docstring)."""
    try:  # (called once a message: kept lean)
        parser = _validators.parser
    except AttributeError:
        parser = _validators.parser = simdjson.Parser()
    if 0 < len(text) <= _SIMDJSON_AT_MOST and text[0] in _VALUE_STARTS:
        try:
            parser.parse(text, False)
        except (ValueError, RuntimeError):
            pass
        else:
            return True
    return parses(text)
