"""Rules for ``allOf``, ``anyOf``, ``oneOf`` and ``not``."""

from __future__ import annotations

from cdc_connectors.schema.json_schema_compat import walker
from cdc_connectors.schema.json_schema_compat.context import Context, Difference
from cdc_connectors.schema.json_schema_compat.model import CombinedNode, Node, NotNode

_SUMS = ("anyOf", "oneOf")


def compare_one_side(ctx: Context, original: Node, update: Node) -> bool:
    """A schema becoming or ceasing to be a combined one: True when a branch of the
    combined side matches the other schema (the change is then recorded)."""
    if isinstance(update, CombinedNode) and not isinstance(original, CombinedNode):
        subs = update.subschemas
        if len(subs) == 1:
            return _try(ctx, original, subs[0], None)
        if update.criterion in _SUMS:
            return any(_try(ctx, original, sub, "SUM_TYPE_EXTENDED") for sub in subs)
    elif isinstance(original, CombinedNode) and not isinstance(update, CombinedNode):
        subs = original.subschemas
        if len(subs) == 1:
            return _try(ctx, subs[0], update, None)
        if original.criterion == "allOf":
            return any(_try(ctx, sub, update, "PRODUCT_TYPE_NARROWED") for sub in subs)
    return False


def _try(ctx: Context, original: Node, update: Node, change: str | None) -> bool:
    sub = ctx.sub()
    walker.compare(sub, original, update)
    if not sub.compatible:
        return False
    ctx.extend(sub.differences)
    if change:
        ctx.add(change)
    return True


def compare_combined(ctx: Context, original: CombinedNode, update: CombinedNode) -> None:
    if _criterion_changed(ctx, original, update):
        return
    old, new = _distinct(original), _distinct(update)
    if len(old) < len(new):
        ctx.add("PRODUCT_TYPE_EXTENDED" if update.criterion == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(old) > len(new):
        ctx.add("SUM_TYPE_NARROWED" if original.criterion in _SUMS else "PRODUCT_TYPE_NARROWED")
    fits: dict[tuple[int, int], list[Difference]] = {}
    for i, was in enumerate(old):
        with ctx.at(f"{original.criterion}/{i}"):
            for j, now in enumerate(new):
                sub = ctx.sub()
                walker.compare(sub, was, now)
                if sub.compatible:
                    fits[i, j] = sub.differences
    matching = _maximum_matching(len(old), fits)
    for pair in sorted(matching.items(), key=lambda p: p[1]):
        ctx.extend(fits[pair[1], pair[0]])
    if len(matching) < min(len(old), len(new)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _criterion_changed(ctx: Context, original: CombinedNode, update: CombinedNode) -> bool:
    """Record a change of criterion; True when it is incompatible (nothing more to compare)."""
    was, now = original.criterion, update.criterion
    if was == now:
        return False
    one_was, one_now = len(original.subschemas) == 1, len(update.subschemas) == 1
    if (
        now == "anyOf"
        or (one_was and one_now)
        or (one_was and now == "oneOf")
        or (one_now and was == "allOf")
    ):
        ctx.add("COMBINED_TYPE_EXTENDED")
        return False
    ctx.add("COMBINED_TYPE_CHANGED")
    return True


def _distinct(schema: CombinedNode) -> list[Node]:
    """The subschemas, one of each written the same way."""
    if not schema.texts:
        return list(schema.subschemas)
    seen: dict[bytes, Node] = {}
    for text, node in zip(schema.texts, schema.subschemas, strict=True):
        seen.setdefault(text, node)
    return list(seen.values())


def _maximum_matching(left: int, fits: dict[tuple[int, int], list[Difference]]) -> dict[int, int]:
    """The most pairs (old branch, new branch) that fit, each branch used once: right -> left."""
    edges: dict[int, list[int]] = {}
    for i, j in fits:
        edges.setdefault(i, []).append(j)
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges.get(i, []):
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(left):
        augment(i, set())
    return owner


def compare_not(ctx: Context, original: NotNode, update: NotNode) -> None:
    with ctx.at("not"):
        sub = ctx.sub()
        walker.compare(sub, update.inner, original.inner)
        ctx.add("NOT_TYPE_NARROWED" if sub.compatible else "NOT_TYPE_EXTENDED")
