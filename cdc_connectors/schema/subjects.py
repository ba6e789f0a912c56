"""Subject name strategies: under which registry subject a key or payload schema lives.

| strategy | key subject | payload subject |
|---|---|---|
| ``conduit`` (default) | ``<context>:<collection>.key`` | ``<context>:<collection>.payload`` |
| ``topic`` (Confluent's default) | ``<topic>-key`` | ``<topic>-value`` |
| ``record`` | ``<record name>`` | ``<record name>`` |
| ``topic-record`` | ``<topic>-<record name>`` | ``<topic>-<record name>`` |

Conduit's naming drops the collection when a record has none (``<context>:payload``)
and the context when there is none. The record name is the schema's full name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Part = Literal["key", "payload"]


@dataclass(frozen=True, slots=True)
class SubjectContext:
    """What a strategy may name a subject after."""

    part: Part
    topic: str | None = None
    context: str | None = None
    collection: str | None = None
    record_name: str | None = None


def _conduit(ctx: SubjectContext) -> str:
    name = f"{ctx.collection}.{ctx.part}" if ctx.collection else ctx.part
    return f"{ctx.context}:{name}" if ctx.context else name


def _topic(ctx: SubjectContext) -> str:
    return f"{_needs(ctx.topic, 'topic')}-{'key' if ctx.part == 'key' else 'value'}"


def _record(ctx: SubjectContext) -> str:
    return _needs(ctx.record_name, "record name")


def _topic_record(ctx: SubjectContext) -> str:
    return f"{_needs(ctx.topic, 'topic')}-{_needs(ctx.record_name, 'record name')}"


def _needs(value: str | None, what: str) -> str:
    if not value:
        raise ValueError(f"this subject name strategy needs a {what}, and there is none")
    return value


STRATEGIES: dict[str, Callable[[SubjectContext], str]] = {
    "conduit": _conduit,
    "topic": _topic,
    "record": _record,
    "topic-record": _topic_record,
}


def strategy(name: str) -> Callable[[SubjectContext], str]:
    """The strategy called ``name``; ``ValueError`` listing the known ones otherwise."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown subject name strategy {name!r}; use one of {', '.join(STRATEGIES)}"
        ) from None
