"""Text made safe to show and to write as UTF-8: the one home of these checks.

Python holds a file name that is not UTF-8 with surrogate escapes, and JSON may carry a
lone surrogate (``"\\ud800"``): neither encodes as UTF-8, so a message or a record holding
one would fail where it is written. This module imports nothing of the package, so every
layer may use it.
"""

from __future__ import annotations

import re

__all__ = ["encodes", "printable", "printable_bytes"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def encodes(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` as valid UTF-8 text: a file name that is not UTF-8 (which Python holds with
    surrogate escapes) shows those bytes as ``\\xff``, any other lone surrogate as
    ``\\ud800``."""
    if encodes(text):
        return text
    return _SURROGATE.sub(_escape, text)


def printable_bytes(data: bytes) -> str:
    """``data`` (a position, a name) as text: UTF-8 where it is, other bytes as ``\\xff``."""
    return data.decode("utf-8", "backslashreplace")
