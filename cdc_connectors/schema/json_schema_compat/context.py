"""Differences found so far, where they were found, and the pairs already compared."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

from cdc_connectors.schema.json_schema_compat import messages
from cdc_connectors.schema.json_schema_compat.model import Node

# Confluent's names of the changes it accepts (its strict policy); every other one is not.
COMPATIBLE_CHANGES = frozenset(
    {
        "ID_CHANGED",
        "DESCRIPTION_CHANGED",
        "TITLE_CHANGED",
        "DEFAULT_CHANGED",
        "SCHEMA_REMOVED",
        "TYPE_EXTENDED",
        "MAX_LENGTH_INCREASED",
        "MAX_LENGTH_REMOVED",
        "MIN_LENGTH_DECREASED",
        "MIN_LENGTH_REMOVED",
        "PATTERN_REMOVED",
        "MAXIMUM_INCREASED",
        "MAXIMUM_REMOVED",
        "MINIMUM_DECREASED",
        "MINIMUM_REMOVED",
        "EXCLUSIVE_MAXIMUM_INCREASED",
        "EXCLUSIVE_MAXIMUM_REMOVED",
        "EXCLUSIVE_MINIMUM_DECREASED",
        "EXCLUSIVE_MINIMUM_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "DEPENDENCY_ARRAY_NARROWED",
        "DEPENDENCY_ARRAY_REMOVED",
        "DEPENDENCY_SCHEMA_REMOVED",
        "MAX_PROPERTIES_INCREASED",
        "MAX_PROPERTIES_REMOVED",
        "MIN_PROPERTIES_DECREASED",
        "MIN_PROPERTIES_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "UNEVALUATED_PROPERTIES_ADDED",
        "UNEVALUATED_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "MAX_ITEMS_INCREASED",
        "MAX_ITEMS_REMOVED",
        "MIN_ITEMS_DECREASED",
        "MIN_ITEMS_REMOVED",
        "MAX_CONTAINS_INCREASED",
        "MAX_CONTAINS_REMOVED",
        "MIN_CONTAINS_DECREASED",
        "MIN_CONTAINS_REMOVED",
        "UNIQUE_ITEMS_REMOVED",
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "UNEVALUATED_ITEMS_ADDED",
        "UNEVALUATED_ITEMS_EXTENDED",
        "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ENUM_ARRAY_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_NARROWED",
    }
)


class Difference(NamedTuple):
    """One change from the writer's schema to the reader's, at a JSON path (``#/...``)."""

    type: str
    path: str

    @property
    def compatible(self) -> bool:
        return self.type in COMPATIBLE_CHANGES

    def message(self, reader: str = "new", writer: str = "old") -> str:
        """Confluent's text for the change; ``reader`` and ``writer`` name the two schemas."""
        return messages.text(self.type, self.path, reader, writer)


def all_compatible(differences: list[Difference]) -> bool:
    return all(d.compatible for d in differences)


Pair = tuple[int, int]
PairCompare = Callable[["Context"], None]


@dataclass
class Shared:
    """What every context of one comparison shares: results by pair, pairs under way."""

    seed: dict[Pair, list[Difference]]
    memo: dict[Pair, list[Difference]] = field(default_factory=dict)
    busy: set[Pair] = field(default_factory=set)
    assumed: bool = False  # a cycle was taken as compatible
    keep: list[tuple[Node, Node]] = field(default_factory=list)


class Context:
    """The path being compared and the differences found under it."""

    def __init__(self, shared: Shared, path: list[str] | None = None):
        self.shared = shared
        self.path = list(path or [])
        self.differences: list[Difference] = []

    def sub(self) -> Context:
        """A context at the same path whose differences are kept apart."""
        return Context(self.shared, self.path)

    @contextmanager
    def at(self, *steps: str) -> Iterator[None]:
        self.path += steps
        try:
            yield
        finally:
            del self.path[len(self.path) - len(steps) :]

    def add(self, kind: str, *steps: str) -> None:
        self.differences.append(Difference(kind, _path([*self.path, *steps])))

    def extend(self, differences: list[Difference]) -> None:
        self.differences += differences

    @property
    def compatible(self) -> bool:
        return all_compatible(self.differences)

    def memoized(self, original: Node, update: Node, compare: PairCompare) -> None:
        """Compare a pair once per comparison: a pair met again inside itself is a cycle,
        taken as compatible unless an earlier pass found it not to be."""
        shared, key = self.shared, (id(original), id(update))
        found = shared.memo.get(key)
        if found is None and key in shared.busy:
            found = shared.seed.get(key)
            if found is None:
                shared.assumed = True
                return
        if found is None:
            shared.busy.add(key)
            shared.keep.append((original, update))
            try:
                inner = Context(shared)
                compare(inner)
                found = shared.memo[key] = inner.differences
            finally:
                shared.busy.discard(key)
        prefix = _path(self.path)
        self.differences += [Difference(d.type, _rebased(prefix, d.path)) for d in found]

    def incompatible_pairs(self) -> dict[Pair, list[Difference]]:
        return {k: v for k, v in self.shared.memo.items() if not all_compatible(v)}


def _path(steps: list[str]) -> str:
    return "#/" + "/".join(steps)


def _rebased(prefix: str, path: str) -> str:
    if prefix == "#/":
        return path
    return prefix if len(path) <= 2 else f"{prefix}/{path[2:]}"
