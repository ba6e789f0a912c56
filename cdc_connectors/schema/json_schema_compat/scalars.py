"""Rules for strings, numbers, enums and consts."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from cdc_connectors.schema.json_schema_compat.context import Context
from cdc_connectors.schema.json_schema_compat.model import (
    ConstNode,
    EnumNode,
    NumberNode,
    StringNode,
)


def compare_limit(ctx: Context, word: str, name: str, old: float | None, new: float | None) -> None:
    """A bound ``word`` added, removed, increased or decreased (``name``: its change prefix)."""
    if old == new:
        return
    if old is None:
        ctx.add(f"{name}_ADDED", word)
    elif new is None:
        ctx.add(f"{name}_REMOVED", word)
    elif old < new:
        ctx.add(f"{name}_INCREASED", word)
    elif old > new:
        ctx.add(f"{name}_DECREASED", word)


def compare_strings(ctx: Context, original: StringNode, update: StringNode) -> None:
    compare_limit(ctx, "maxLength", "MAX_LENGTH", original.max_length, update.max_length)
    compare_limit(ctx, "minLength", "MIN_LENGTH", original.min_length, update.min_length)
    if original.pattern is None and update.pattern is not None:
        ctx.add("PATTERN_ADDED", "pattern")
    elif original.pattern is not None and update.pattern is None:
        ctx.add("PATTERN_REMOVED", "pattern")
    elif original.pattern != update.pattern:
        ctx.add("PATTERN_CHANGED", "pattern")


def compare_numbers(ctx: Context, original: NumberNode, update: NumberNode) -> None:
    compare_limit(ctx, "maximum", "MAXIMUM", original.maximum, update.maximum)
    compare_limit(ctx, "minimum", "MINIMUM", original.minimum, update.minimum)
    compare_limit(
        ctx,
        "exclusiveMaximum",
        "EXCLUSIVE_MAXIMUM",
        original.exclusive_maximum,
        update.exclusive_maximum,
    )
    compare_limit(
        ctx,
        "exclusiveMinimum",
        "EXCLUSIVE_MINIMUM",
        original.exclusive_minimum,
        update.exclusive_minimum,
    )
    _compare_multiple_of(ctx, _decimal(original.multiple_of), _decimal(update.multiple_of))
    if original.integer and not update.integer:
        ctx.add("TYPE_EXTENDED")
    elif update.integer and not original.integer:
        ctx.add("TYPE_NARROWED")


def _compare_multiple_of(ctx: Context, old: Decimal | None, new: Decimal | None) -> None:
    """A multiple of the old step is narrower (expanded); a divisor of it is wider."""
    if old == new:
        return
    if old is None:
        ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
    elif new is None:
        ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
    elif old != 0 and new % old == 0:
        ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
    elif new != 0 and old % new == 0:
        ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
    else:
        ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")


def _decimal(value: object) -> Decimal | None:
    if value is None:
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def compare_enums(ctx: Context, original: EnumNode, update: EnumNode) -> None:
    old, new = original.values, update.values
    if old == new:
        return
    if new >= old:
        ctx.add("ENUM_ARRAY_EXTENDED", "enum")
    elif old >= new:
        ctx.add("ENUM_ARRAY_NARROWED", "enum")
    else:
        ctx.add("ENUM_ARRAY_CHANGED", "enum")


def compare_consts(ctx: Context, original: ConstNode, update: ConstNode) -> None:
    if original.value != update.value:
        ctx.add("ENUM_ARRAY_CHANGED", "const")
