"""Confluent compatibility levels, applied to parsed schemas of any language.

``BACKWARD``: the new schema reads data written with the latest one.
``FORWARD``: the latest schema reads data written with the new one.
``FULL``: both. ``*_TRANSITIVE``: against every earlier version, not only the
latest. ``NONE``: no check. Every language is checked by its own rules (JSON Schema's
as Confluent's schema diff).
"""

from __future__ import annotations

from collections.abc import Sequence

from cdc_connectors.schema.languages import ParsedSchema

LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
DEFAULT_LEVEL = "BACKWARD"


def check(level: str, new: ParsedSchema, existing: Sequence[ParsedSchema]) -> list[str]:
    """Why ``new`` may not follow ``existing`` (oldest first) under ``level``; empty if it may."""
    if level not in LEVELS:
        raise ValueError(f"unknown compatibility level {level!r}")
    if level == "NONE" or not existing:
        return []
    against = existing if level.endswith("_TRANSITIVE") else existing[-1:]
    problems: list[str] = []
    for old in against:
        if level.startswith(("BACKWARD", "FULL")):
            problems += new.incompatibilities(old)
        if level.startswith(("FORWARD", "FULL")):
            problems += old.incompatibilities(new, names=("old", "new"))
    return problems
