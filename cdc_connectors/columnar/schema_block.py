"""The leading ``{"schema": ...,`` block of a Kafka Connect JSON message, as the message
spells it.

JsonConverter writes ``{"schema":{...},"payload":...}`` without spaces; other writers
(Python's ``json.dumps``, hand-made test data, pretty printers) put whitespace around the
colons and commas. The columns match every message of one schema by the text it starts
with, so that text is taken from a sample message as it is written, whatever its spacing.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from cdc_connectors.errors import CodecError
from cdc_connectors.opencdc.json_codec import load_exact

__all__ = ["leading_block"]

_WHITESPACE = rb"[ \t\n\r]*"
_START = re.compile(rb"\{" + _WHITESPACE + rb'"schema"' + _WHITESPACE + rb":" + _WHITESPACE)
_COMMA = re.compile(_WHITESPACE + rb",")
# Strings (skipped whole, escapes included) and the brackets that open and close values.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]]')


def leading_block(text: bytes) -> tuple[bytes, dict[str, Any]] | None:
    """``text`` up to and including the comma after its leading schema block, and that
    block parsed; ``None`` when ``text`` does not start with ``{"schema": {...},``.

    Every message of the same block spelt the same way starts with the same bytes, so
    what follows them (``"payload": ...}``) can be read with ``{`` put in front.
    """
    start = _START.match(text)
    if start is None or text[start.end() : start.end() + 1] != b"{":
        return None
    depth = 0
    end = -1
    for token in _TOKEN.finditer(text, start.end()):
        kind = token.group()[:1]
        if kind == b'"':
            continue
        depth += 1 if kind in b"{[" else -1
        if depth == 0:
            end = token.end()
            break
    if end < 0:
        return None
    comma = _COMMA.match(text, end)
    if comma is None:
        return None
    try:
        # numbers as the per-message way reads them: exact, or the message refused there
        block = load_exact(text[start.end() : end])
    except (orjson.JSONDecodeError, CodecError):
        return None
    if not isinstance(block, dict):
        return None
    return text[: comma.end()], block
