"""The walk over a writer's and a reader's schema: kinds first, then each kind's rules."""

from __future__ import annotations

from cdc_connectors.schema.json_schema_compat import arrays, combined, objects, scalars
from cdc_connectors.schema.json_schema_compat.context import Context, Difference, Shared
from cdc_connectors.schema.json_schema_compat.model import (
    ArrayNode,
    CombinedNode,
    ConstNode,
    EnumNode,
    Node,
    NotNode,
    NumberNode,
    ObjectNode,
    RefNode,
    StringNode,
)

# A chain of references longer than this is taken as unresolved.
_MAX_REF_CHAIN = 64


def differences(original: Node, update: Node) -> list[Difference]:
    """Every change from ``original`` (the writer's) to ``update`` (the reader's).

    Cycles are first taken as compatible; passes repeat, feeding back the pairs found
    incompatible, until those pairs stop changing.
    """
    seed: dict[tuple[int, int], list[Difference]] = {}
    while True:
        ctx = Context(Shared(seed))
        compare(ctx, original, update)
        found = ctx.incompatible_pairs()
        if not ctx.shared.assumed or found.keys() == seed.keys():
            return ctx.differences
        seed = found


def compare(ctx: Context, original: Node | None, update: Node | None) -> None:
    """Add the changes from ``original`` to ``update`` at the context's path."""
    if original is None and update is None:
        return
    if original is None:
        ctx.add("SCHEMA_ADDED")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED")
        return
    old, new = _followed(original), _followed(update)
    ctx.memoized(old, new, lambda sub: _compare_kinds(sub, old, new))


def _followed(node: Node) -> Node:
    """The schema a reference names (an unresolved one stays a reference)."""
    for _ in range(_MAX_REF_CHAIN):
        if not isinstance(node, RefNode):
            return node
        target = node.target()
        if target is None:
            return node
        node = target
    return node


def _compare_kinds(ctx: Context, original: Node, update: Node) -> None:
    if combined.compare_one_side(ctx, original, update):
        return
    if not _same_kind(original, update):
        if original.kind == "false" or update.is_empty:
            return
        if original.connect_type == update.connect_type == "bytes":
            return
        ctx.add("TYPE_CHANGED")
        return
    _compare_annotations(ctx, original, update)
    if isinstance(original, StringNode) and isinstance(update, StringNode):
        scalars.compare_strings(ctx, original, update)
    elif isinstance(original, NumberNode) and isinstance(update, NumberNode):
        scalars.compare_numbers(ctx, original, update)
    elif isinstance(original, ConstNode) and isinstance(update, ConstNode):
        scalars.compare_consts(ctx, original, update)
    elif isinstance(original, EnumNode) and isinstance(update, EnumNode):
        scalars.compare_enums(ctx, original, update)
    elif isinstance(original, CombinedNode) and isinstance(update, CombinedNode):
        combined.compare_combined(ctx, original, update)
    elif isinstance(original, NotNode) and isinstance(update, NotNode):
        combined.compare_not(ctx, original, update)
    elif isinstance(original, ObjectNode) and isinstance(update, ObjectNode):
        objects.compare_objects(ctx, original, update)
    elif isinstance(original, ArrayNode) and isinstance(update, ArrayNode):
        arrays.compare_arrays(ctx, original, update)


def _same_kind(a: Node, b: Node) -> bool:
    if isinstance(a, RefNode) and isinstance(b, RefNode):
        return a.ref == b.ref
    return a.kind == b.kind


def _compare_annotations(ctx: Context, original: Node, update: Node) -> None:
    for kind, old, new in (
        ("ID_CHANGED", original.id, update.id),
        ("TITLE_CHANGED", original.title, update.title),
        ("DESCRIPTION_CHANGED", original.description, update.description),
        ("DEFAULT_CHANGED", original.default, update.default),
    ):
        if old != new:
            ctx.add(kind)
