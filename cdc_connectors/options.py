"""Option values as text (format options, connector settings, query parameters)."""

from __future__ import annotations

TRUE = frozenset({"true", "1", "yes", "on"})
FALSE = frozenset({"false", "0", "no", "off"})


def parse_bool(value: str, name: str) -> bool:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``, any case).

    Raises :class:`ValueError` naming the option ``name`` for anything else.
    """
    lowered = value.strip().lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise ValueError(f"{name} must be true or false, not {value!r}")
