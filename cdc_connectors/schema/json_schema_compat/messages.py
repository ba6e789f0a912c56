"""Confluent's wording of an incompatible JSON Schema change, by the change's group."""

from __future__ import annotations

_KEYWORD_ADDED = frozenset(
    {
        "MAXIMUM_ADDED",
        "MINIMUM_ADDED",
        "EXCLUSIVE_MAXIMUM_ADDED",
        "EXCLUSIVE_MINIMUM_ADDED",
        "MULTIPLE_OF_ADDED",
        "MAX_LENGTH_ADDED",
        "MIN_LENGTH_ADDED",
        "PATTERN_ADDED",
        "REQUIRED_ATTRIBUTE_ADDED",
        "MAX_PROPERTIES_ADDED",
        "MIN_PROPERTIES_ADDED",
        "DEPENDENCY_ARRAY_ADDED",
        "DEPENDENCY_SCHEMA_ADDED",
        "MAX_ITEMS_ADDED",
        "MIN_ITEMS_ADDED",
        "MAX_CONTAINS_ADDED",
        "MIN_CONTAINS_ADDED",
        "UNIQUE_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_REMOVED",
        "ADDITIONAL_PROPERTIES_REMOVED",
        "UNEVALUATED_PROPERTIES_REMOVED",
        "UNEVALUATED_ITEMS_REMOVED",
    }
)
_INCREASED = frozenset(
    {
        "MIN_LENGTH_INCREASED",
        "MINIMUM_INCREASED",
        "EXCLUSIVE_MINIMUM_INCREASED",
        "MIN_PROPERTIES_INCREASED",
        "MULTIPLE_OF_EXPANDED",
        "MIN_ITEMS_INCREASED",
        "MIN_CONTAINS_INCREASED",
    }
)
_DECREASED = frozenset(
    {
        "MAX_LENGTH_DECREASED",
        "MAXIMUM_DECREASED",
        "MAX_ITEMS_DECREASED",
        "MAX_CONTAINS_DECREASED",
        "EXCLUSIVE_MAXIMUM_DECREASED",
        "MAX_PROPERTIES_DECREASED",
    }
)
_NARROWED = frozenset(
    {
        "ADDITIONAL_ITEMS_NARROWED",
        "ENUM_ARRAY_NARROWED",
        "SUM_TYPE_NARROWED",
        "ADDITIONAL_PROPERTIES_NARROWED",
        "UNEVALUATED_PROPERTIES_NARROWED",
        "UNEVALUATED_ITEMS_NARROWED",
    }
)
_VALUE_CHANGED = frozenset({"PATTERN_CHANGED", "MULTIPLE_OF_CHANGED", "DEPENDENCY_ARRAY_CHANGED"})
_TYPE_CHANGED = frozenset(
    {
        "TYPE_CHANGED",
        "TYPE_NARROWED",
        "COMBINED_TYPE_CHANGED",
        "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
        "ENUM_ARRAY_CHANGED",
    }
)
_EXTENDED = frozenset(
    {"DEPENDENCY_ARRAY_EXTENDED", "PRODUCT_TYPE_EXTENDED", "SUM_TYPE_EXTENDED", "NOT_TYPE_EXTENDED"}
)
_ADDED_TO_OPEN = frozenset(
    {
        "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
    }
)
# Wordings by group: {p} is the path, {r} the reader's schema, {w} the writer's.
_GROUPS = (
    (
        _KEYWORD_ADDED,
        "The keyword at path '{p}' in the {r} schema is not present in the {w} schema",
    ),
    (
        _INCREASED,
        "The value at path '{p}' in the {r} schema is more than its value in the {w} schema",
    ),
    (
        _DECREASED,
        "The value at path '{p}' in the {r} schema is less than its value in the {w} schema",
    ),
    (_VALUE_CHANGED, "The value at path '{p}' is different between the {r} and {w} schema"),
    (
        _NARROWED,
        "An array or combined type at path '{p}' has fewer elements in the {r} schema than the "
        "{w} schema",
    ),
    (
        _EXTENDED,
        "An array or combined type at path '{p}' has more elements in the {r} schema than the "
        "{w} schema",
    ),
    (_TYPE_CHANGED, "A type at path '{p}' is different between the {r} schema and the {w} schema"),
    (
        _ADDED_TO_OPEN,
        "The {r} schema has an open content model and has a property or item at path '{p}' "
        "which is missing in the {w} schema",
    ),
)
_SINGLE = {
    "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL": "The {r} schema has an unopen content "
    "model and has a required property at path '{p}' which is missing in the {w} schema",
    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL": "The {r} has a closed content model and is "
    "missing a property or item present at path '{p}' in the {w} schema",
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": "A property or item is "
    "missing in the {r} schema but present at path '{p}' in the {w} schema and is not covered "
    "by its partially open content model",
    "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": "The {r} schema has a property "
    "or item at path '{p}' which is missing in the {w} schema and is not covered by its "
    "partially open content model",
}
for _property, _item in (
    ("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    (
        "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ),
    (
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ),
):
    _SINGLE[_item] = _SINGLE[_property]


def text(kind: str, path: str, reader: str, writer: str) -> str:
    """``{errorType:"KIND", description:"..."}`` as Confluent writes it (its closing quote
    included)."""
    wording = _SINGLE.get(kind, "")
    for group, words in _GROUPS:
        if kind in group:
            wording = words
            break
    description = wording.format(p=path, r=reader, w=writer)
    return f'{{errorType:"{kind}", description:"{description}\'}}'
