"""Schema text that is JSON (Avro, JSON Schema): load it, refusing junk and deep nesting.

Parsers and checkers downstream (the ``avro`` package, compatibility checks,
Spark type converters) recurse once per level of nesting, so a schema nested
deeper than ``MAX_DEPTH`` JSON levels is refused here, before any of them runs,
with a reason instead of a ``RecursionError``.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_connectors.schema.errors import SchemaError

# JSON levels (objects and arrays inside each other). A record field costs three
# (record, fields list, field), an array or map one: ~40 nested records.
MAX_DEPTH = 128


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep objects and arrays nest in ``value`` (0 for a scalar); stops past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def load(text: object, what: str) -> Any:
    """Parse ``text`` as JSON; SchemaError naming ``what`` if not text, not JSON or too deep."""
    if not isinstance(text, str | bytes):
        raise SchemaError(f"{what} must be a string, not {type(text).__name__}")
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"{what} is not valid JSON: {exc}") from None
    if nesting_depth(value) > MAX_DEPTH:
        raise SchemaError(f"{what} nests deeper than {MAX_DEPTH} levels")
    return value


def dumps(value: Any) -> str:
    """Compact JSON with object keys sorted: one text for equal values."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
