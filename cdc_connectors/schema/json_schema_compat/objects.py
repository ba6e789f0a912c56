"""Rules for objects: properties against open, closed and partially open content models,
``required``, dependencies and the property counts."""

from __future__ import annotations

import re

from cdc_connectors.schema.json_schema_compat import walker
from cdc_connectors.schema.json_schema_compat.context import Context
from cdc_connectors.schema.json_schema_compat.model import NO_DEFAULT, Node, ObjectNode
from cdc_connectors.schema.json_schema_compat.scalars import compare_limit


def compare_objects(ctx: Context, original: ObjectNode, update: ObjectNode) -> None:
    _compare_required(ctx, original, update)
    _compare_properties(ctx, original, update)
    _compare_dependencies(ctx, original, update)
    _compare_additional(ctx, original, update)
    compare_unevaluated(ctx, "PROPERTIES", original.unevaluated, update.unevaluated)
    compare_limit(
        ctx, "maxProperties", "MAX_PROPERTIES", original.max_properties, update.max_properties
    )
    compare_limit(
        ctx, "minProperties", "MIN_PROPERTIES", original.min_properties, update.min_properties
    )


def is_open(schema: ObjectNode) -> bool:
    """Any property not named is allowed, whatever its value."""
    if schema.additional is not True or schema.patterns:
        return False
    return schema.unevaluated is None or schema.unevaluated.is_empty


def _partial(schema: ObjectNode, name: str) -> Node | None:
    """The schema a property not named must match, in a partially open content model."""
    for pattern, node in schema.patterns:
        if _matches(pattern, name):
            return node
    if isinstance(schema.additional, Node):
        return schema.additional
    unevaluated = schema.unevaluated
    if schema.additional is not True or unevaluated is None:
        return None
    return None if unevaluated.kind == "false" or unevaluated.is_empty else unevaluated


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False


def _compare_required(ctx: Context, original: ObjectNode, update: ObjectNode) -> None:
    with ctx.at("required"):
        for name in original.properties:
            if name not in update.properties:
                continue
            was, now = name in original.required, name in update.required
            if was and not now:
                ctx.add("REQUIRED_ATTRIBUTE_REMOVED", name)
            elif now and not was:
                has_default = update.properties[name].default is not NO_DEFAULT
                kind = (
                    "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                    if has_default
                    else "REQUIRED_ATTRIBUTE_ADDED"
                )
                ctx.add(kind, name)


def _compare_properties(ctx: Context, original: ObjectNode, update: ObjectNode) -> None:
    with ctx.at("properties"):
        for name in {**original.properties, **update.properties}:
            old, new = original.properties.get(name), update.properties.get(name)
            with ctx.at(name):
                if new is None:
                    assert old is not None
                    _property_removed(ctx, old, update, name)
                elif old is None:
                    _property_added(ctx, original, update, new, name)
                else:
                    walker.compare(ctx, old, new)


def _property_removed(ctx: Context, old: Node, update: ObjectNode, name: str) -> None:
    removed(ctx, "PROPERTY", old, is_open(update), _partial(update, name))


def removed(ctx: Context, what: str, old: Node, open_model: bool, covering: Node | None) -> None:
    """A property or tuple item (``what``) the new schema no longer names: free in an open
    content model, checked against what a partially open one still takes, else gone from a
    closed one."""
    if open_model:
        ctx.add(f"{what}_REMOVED_FROM_OPEN_CONTENT_MODEL")
    elif covering is not None:
        sub = ctx.sub()
        walker.compare(sub, old, covering)
        ctx.extend(sub.differences)
        covered = "IS" if sub.compatible else "NOT"
        ctx.add(f"{what}_REMOVED_{covered}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
    elif old.kind == "false":
        ctx.add(f"{what}_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    else:
        ctx.add(f"{what}_REMOVED_FROM_CLOSED_CONTENT_MODEL")


def _property_added(
    ctx: Context, original: ObjectNode, update: ObjectNode, new: Node, name: str
) -> None:
    required = name in update.required
    has_default = new.default is not NO_DEFAULT
    if is_open(original):
        if new.is_empty:
            ctx.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
        elif required:
            with_default = "_WITH_DEFAULT" if has_default else ""
            ctx.add(f"REQUIRED_PROPERTY{with_default}_ADDED_TO_OPEN_CONTENT_MODEL")
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
        return
    covering = _partial(original, name)
    if covering is not None:
        sub = ctx.sub()
        walker.compare(sub, covering, new)
        ctx.extend(sub.differences)
        covered = "IS" if sub.compatible else "NOT"
        ctx.add(f"PROPERTY_ADDED_{covered}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
    if not required:
        ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
    elif has_default:
        ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL")
    else:
        ctx.add("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")


def _compare_dependencies(ctx: Context, original: ObjectNode, update: ObjectNode) -> None:
    with ctx.at("dependencies"):
        for name in {**original.property_deps, **update.property_deps}:
            old, new = original.property_deps.get(name), update.property_deps.get(name)
            if new is None:
                ctx.add("DEPENDENCY_ARRAY_REMOVED", name)
            elif old is None:
                ctx.add("DEPENDENCY_ARRAY_ADDED", name)
            elif old != new:
                change = "EXTENDED" if new >= old else "NARROWED" if old >= new else "CHANGED"
                ctx.add(f"DEPENDENCY_ARRAY_{change}", name)
        for name in {**original.schema_deps, **update.schema_deps}:
            was, now = original.schema_deps.get(name), update.schema_deps.get(name)
            if now is None:
                ctx.add("DEPENDENCY_SCHEMA_REMOVED", name)
            elif was is None:
                ctx.add("DEPENDENCY_SCHEMA_ADDED", name)
            else:
                with ctx.at(name):
                    walker.compare(ctx, was, now)


def _compare_additional(ctx: Context, original: ObjectNode, update: ObjectNode) -> None:
    compare_additional(ctx, "additionalProperties", original.additional, update.additional)


def compare_additional(ctx: Context, word: str, old: bool | Node, new: bool | Node) -> None:
    """``additionalProperties`` or ``additionalItems``: allowed or not, and with which schema."""
    kind = "ADDITIONAL_PROPERTIES" if word == "additionalProperties" else "ADDITIONAL_ITEMS"
    with ctx.at(word):
        if (old is not False) != (new is not False):
            ctx.add(f"{kind}_ADDED" if new is not False else f"{kind}_REMOVED")
        elif old is True and isinstance(new, Node):
            ctx.add(f"{kind}_NARROWED")
        elif new is True and isinstance(old, Node):
            ctx.add(f"{kind}_EXTENDED")
        elif isinstance(old, Node) and isinstance(new, Node):
            walker.compare(ctx, old, new)


def compare_unevaluated(ctx: Context, what: str, old: Node | None, new: Node | None) -> None:
    """``unevaluatedProperties`` or ``unevaluatedItems`` (``what``: PROPERTIES or ITEMS)."""
    if old is None and new is None:
        return
    word = "unevaluatedProperties" if what == "PROPERTIES" else "unevaluatedItems"
    kind = f"UNEVALUATED_{what}"
    with ctx.at(word):
        if old is None:
            assert new is not None
            ctx.add(f"{kind}_REMOVED" if new.kind == "false" else f"{kind}_NARROWED")
        elif new is None:
            ctx.add(f"{kind}_ADDED" if old.kind == "false" else f"{kind}_EXTENDED")
        elif old.kind == "false" and new.kind != "false":
            ctx.add(f"{kind}_ADDED")
        elif old.kind != "false" and new.kind == "false":
            ctx.add(f"{kind}_REMOVED")
        elif old.is_empty and not new.is_empty:
            ctx.add(f"{kind}_NARROWED")
        elif new.is_empty and not old.is_empty:
            ctx.add(f"{kind}_EXTENDED")
        else:
            walker.compare(ctx, old, new)
