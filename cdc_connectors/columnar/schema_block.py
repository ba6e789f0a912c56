"""The leading ``{"schema": ...,`` block of a Kafka Connect JSON message, as the message
spells it.

JsonConverter writes ``{"schema":{...},"payload":...}`` without spaces; other writers
(Python's ``json.dumps``, hand-made test data, pretty printers) put whitespace around the
colons and commas. The columns match every message of one schema by the text it starts
with, so that text is taken from a sample message as it is written, whatever its spacing.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.errors import CodecError
from cdc_connectors.opencdc.json_codec import load_exact

if TYPE_CHECKING:
    from cdc_connectors.formats.debezium import DebeziumJsonFormat
    from cdc_connectors.schema.connect import ConnectSchema

__all__ = ["leading_block", "learn_key", "rows_by_prefix"]

T = TypeVar("T")

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


def rows_by_prefix(
    texts: pa.Array,
    rows: np.ndarray,
    known: OrderedDict[bytes, T | None],
    learn: Callable[[bytes | None], bytes | None],
    looks: int,
) -> list[tuple[T, np.ndarray]]:
    """Each schema of ``known`` (keyed by the text its messages start with, ``None`` for one
    the columns do not take) with the rows (of ``rows``, indexes into ``texts``) that start
    with it; known prefixes first (each one met moves to the end: the least recently used
    goes first when the caller bounds ``known``), then up to ``looks`` sample rows of the
    rest taught to ``known`` by ``learn`` (the prefix of a sample now known, or ``None``)."""
    unmatched = np.zeros(len(texts), dtype=bool)
    unmatched[rows] = True
    found: list[tuple[T, np.ndarray]] = []

    def match(prefix: bytes) -> None:
        hits = unmatched & wire.mask(pc.starts_with(texts, prefix))
        if hits.any():
            known.move_to_end(prefix)
            schema = known[prefix]
            if schema is not None:
                found.append((schema, np.flatnonzero(hits)))
            unmatched[hits] = False

    for prefix in list(known):
        if not unmatched.any():
            break
        match(prefix)
    for _ in range(looks):
        if not unmatched.any():
            break
        row = int(np.argmax(unmatched))
        learnt = learn(texts[row].as_py())
        if learnt is not None:
            match(learnt)
        unmatched[row] = False
    return found


def learn_key(
    fmt: DebeziumJsonFormat,
    key: bytes | None,
    known: OrderedDict[bytes, T | None],
    build: Callable[[dict[str, Any], ConnectSchema, bytes], T | None],
    limit: int,
) -> bytes | None:
    """The schema block prefix of a sample Kafka key as it is spelt, its schema now in
    ``known`` (what ``build`` makes of the block, its Connect schema and the prefix; ``None``
    for a schema the columns do not take; the least recently used goes once ``known``
    holds more than ``limit``); ``None`` for a key that does not start with a schema block,
    or whose payload the per-message way refuses (another key may teach its schema).
    The ``learn`` of :func:`rows_by_prefix` for keys."""
    found = leading_block(key or b"")
    if found is None:
        return None
    prefix, block = found
    if prefix not in known:
        try:
            _, connect = fmt.kafka_key(key)
        except CodecError:
            return None
        if connect is None:
            return None
        known[prefix] = build(block, connect, prefix)
        while len(known) > limit:
            known.popitem(last=False)
    return prefix
