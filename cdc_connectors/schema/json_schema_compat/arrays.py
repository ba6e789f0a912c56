"""Rules for arrays: the items' schema, tuples against open, closed and partially open
content models, and the item counts."""

from __future__ import annotations

from cdc_connectors.schema.json_schema_compat import walker
from cdc_connectors.schema.json_schema_compat.context import Context
from cdc_connectors.schema.json_schema_compat.model import ArrayNode, Node
from cdc_connectors.schema.json_schema_compat.objects import (
    compare_additional,
    compare_unevaluated,
    removed,
)
from cdc_connectors.schema.json_schema_compat.scalars import compare_limit


def compare_arrays(ctx: Context, original: ArrayNode, update: ArrayNode) -> None:
    with ctx.at("items"):
        walker.compare(ctx, original.all_items, update.all_items)
    _compare_tuples(ctx, original, update)
    compare_additional(ctx, "additionalItems", original.additional, update.additional)
    compare_unevaluated(ctx, "ITEMS", original.unevaluated, update.unevaluated)
    compare_limit(ctx, "maxItems", "MAX_ITEMS", original.max_items, update.max_items)
    compare_limit(ctx, "minItems", "MIN_ITEMS", original.min_items, update.min_items)
    if original.unique != update.unique:
        ctx.add("UNIQUE_ITEMS_REMOVED" if original.unique else "UNIQUE_ITEMS_ADDED", "uniqueItems")
    compare_limit(ctx, "maxContains", "MAX_CONTAINS", original.max_contains, update.max_contains)
    compare_limit(ctx, "minContains", "MIN_CONTAINS", original.min_contains, update.min_contains)


def is_open(schema: ArrayNode) -> bool:
    """Items past the tuple are allowed, whatever their value."""
    if schema.additional is not True:
        return False
    return schema.unevaluated is None or schema.unevaluated.is_empty


def _partial(schema: ArrayNode) -> Node | None:
    """The schema items past the tuple must match, in a partially open content model."""
    if isinstance(schema.additional, Node):
        return schema.additional
    unevaluated = schema.unevaluated
    if schema.additional is not True or unevaluated is None:
        return None
    return None if unevaluated.kind == "false" or unevaluated.is_empty else unevaluated


def _compare_tuples(ctx: Context, original: ArrayNode, update: ArrayNode) -> None:
    old, new = original.item_list, update.item_list
    for index in range(max(len(old), len(new))):
        with ctx.at("items", str(index)):
            if index < len(old) and index < len(new):
                walker.compare(ctx, old[index], new[index])
            elif index < len(old):
                _item_removed(ctx, old[index], update)
            else:
                _item_added(ctx, original, new[index])


def _item_removed(ctx: Context, old: Node, update: ArrayNode) -> None:
    removed(ctx, "ITEM", old, is_open(update), _partial(update))


def _item_added(ctx: Context, original: ArrayNode, new: Node) -> None:
    if is_open(original):
        empty = "_WITH_EMPTY_SCHEMA" if new.is_empty else ""
        ctx.add(f"ITEM{empty}_ADDED_TO_OPEN_CONTENT_MODEL")
        return
    covering = _partial(original)
    if covering is None:
        ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
        return
    sub = ctx.sub()
    walker.compare(sub, covering, new)
    ctx.extend(sub.differences)
    covered = "IS" if sub.compatible else "NOT"
    ctx.add(f"ITEM_ADDED_{covered}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
