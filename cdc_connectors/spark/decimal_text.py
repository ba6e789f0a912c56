"""Decimals Spark has no type for, as their exact decimal text.

Spark's ``decimal(p, s)`` holds at most 38 digits, with ``0 <= s <= p``. A Kafka Connect
``Decimal`` can say more: MySQL's ``DECIMAL(65,30)`` read by Debezium with
``decimal.handling.mode=precise`` is ``connect.decimal.precision`` 65, a Connect
``Decimal`` without that parameter is registered by Confluent's AvroData as 64 digits, and a
negative scale (Oracle's ``NUMBER(5,-2)``) is no Spark decimal at all. Such a column is a
``string`` column in Spark holding each number's exact decimal text, in plain notation with
the column's scale (``"19.990000000000000000000000000000"`` for ``DECIMAL(65,30)``,
``"12300"`` for scale -2): no digit is lost or rounded, and no row that the database held is
refused for being wider than Spark's decimal. ``CAST(col AS DECIMAL(38, 10))`` makes it a
number where the values fit (Spark's ANSI mode, on by default, fails the query on one that
does not, rather than making it null). ``VariableScaleDecimal`` (a scale per value) is
such text already (:mod:`cdc_connectors.schema.connect`).

The registered Avro schema stays as Confluent's AvroConverter writes it (``bytes``,
``decimal(65, 30)``); only the Spark side differs. :func:`text_avro` gives the Avro schema
Spark's columns are built from (those decimals as ``string``) and :func:`image_texts` the
matching change to structured values (``Decimal`` -> text). Avro bodies expanded through the
registry (:func:`cdc_connectors.spark.expand`) get the same columns: their Spark types
(:mod:`cdc_connectors.spark.avro_types`) follow :func:`spark_holds`, the decoder writes
:func:`unscaled_text` and the encoder reads the text back with :func:`text_unscaled`. In a
``VARIANT`` (the untyped OpenCDC rows, :mod:`cdc_connectors.spark.variant`) such a number
is a string of :func:`decimal_text`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_connectors.schema.connect import ConnectSchema

__all__ = [
    "MAX_PRECISION",
    "MAX_TEXT_DIGITS",
    "MAX_TEXT_SCALE",
    "beyond_scale",
    "check_text_scale",
    "decimal_text",
    "image_texts",
    "spark_holds",
    "text_avro",
    "text_unscaled",
    "unscaled_text",
]

#: The most digits a Spark decimal holds.
MAX_PRECISION = 38
#: The largest scale (either sign) written as text: PostgreSQL's numeric holds at most
#: 16383 digits after the point; a scale beyond any database's would only make a huge text
#: out of a small message. Such a schema has no typed columns (:class:`ValueError`).
MAX_TEXT_SCALE = 16_383
#: The most digits of a number written as text (Python's own limit for an int's text).
MAX_TEXT_DIGITS = 4_300

Convert = Callable[[Any], Any]
#: Decimal text as Spark's cast reads it: ASCII digits, a point, an exponent, spaces around.
_DECIMAL_TEXT = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*", re.ASCII)


def spark_holds(precision: int, scale: int) -> bool:
    """Whether ``decimal(precision, scale)`` is a Spark decimal type."""
    return 0 < precision <= MAX_PRECISION and 0 <= scale <= precision


def check_text_scale(precision: int, scale: int) -> None:
    """:class:`ValueError` when ``decimal(precision, scale)`` has a scale beyond
    :data:`MAX_TEXT_SCALE` (either sign): no column holds its text."""
    if abs(scale) > MAX_TEXT_SCALE:
        raise ValueError(
            f"decimal({precision}, {scale}): a scale beyond {MAX_TEXT_SCALE} digits "
            "(PostgreSQL's numeric limit) has no typed column"
        )


def _is_text(avro: Mapping[str, Any]) -> bool:
    """An Avro ``bytes`` decimal that Spark's decimal cannot hold; :class:`ValueError` for
    one whose scale is beyond :data:`MAX_TEXT_SCALE`."""
    if avro.get("logicalType") != "decimal" or avro.get("type") != "bytes":
        return False
    precision, scale = avro.get("precision"), avro.get("scale", 0)
    if not isinstance(precision, int) or not isinstance(scale, int):
        return False  # not a decimal Avro's parsers accept: its bytes, as they are
    if spark_holds(precision, scale):
        return False
    check_text_scale(precision, scale)
    return True


def text_avro(schema: Any) -> Any:
    """``schema`` (Avro JSON) with each decimal Spark cannot hold as a ``string`` (its other
    properties kept). A new structure; ``schema`` is left as it is. :class:`ValueError` for
    a decimal whose scale is beyond :data:`MAX_TEXT_SCALE`."""
    if isinstance(schema, list):
        return [text_avro(member) for member in schema]
    if not isinstance(schema, dict):
        return schema
    if _is_text(schema):
        dropped = ("type", "logicalType", "precision", "scale")
        return {"type": "string", **{k: v for k, v in schema.items() if k not in dropped}}
    out = dict(schema)
    kind = schema.get("type")
    if isinstance(kind, dict | list):
        out["type"] = text_avro(kind)
    if kind in ("record", "error") and isinstance(schema.get("fields"), list):
        out["fields"] = [
            {**f, "type": text_avro(f.get("type"))} if isinstance(f, dict) else f
            for f in schema["fields"]
        ]
    for key in ("items", "values"):
        if key in schema:
            out[key] = text_avro(schema[key])
    return out


def decimal_text(number: Decimal) -> str:
    """A decimal's exact text: plain notation, every digit of its scale (``1.50``).

    An exponent beyond :data:`MAX_TEXT_SCALE` either way (no database's number) is written
    in scientific notation (``1E+20000``): still exact, and never a text of thousands of
    zeros made from a few bytes."""
    exponent = number.as_tuple().exponent
    if isinstance(exponent, int) and abs(exponent) > MAX_TEXT_SCALE:
        return str(number)
    return f"{number:f}"


def unscaled_text(unscaled: int, scale: int) -> str:
    """The exact text of ``unscaled * 10**-scale`` (built from its digits: no rounding);
    :class:`ValueError` past :data:`MAX_TEXT_DIGITS` digits."""
    digits = tuple(int(d) for d in str(abs(unscaled)))
    return decimal_text(Decimal((1 if unscaled < 0 else 0, digits, -scale)))


def beyond_scale(scale: int) -> str:
    """What a number that does not fit ``scale`` has: ``more than 2 decimal places``, or
    for a negative scale ``nonzero digits below 1E+2``."""
    if scale >= 0:
        return f"more than {scale} decimal places"
    return f"nonzero digits below 1E+{-scale}"


def text_unscaled(text: str, scale: int, precision: int) -> int:
    """The unscaled integer of decimal ``text`` at ``scale`` (``"1.5"``, scale 2: 150),
    exactly: :class:`ValueError` saying why for text that is no decimal number (plain or
    scientific notation, ASCII digits), has a nonzero digit beyond ``scale`` or more than
    ``precision`` digits at it."""
    if not isinstance(text, str) or _DECIMAL_TEXT.fullmatch(text) is None:
        raise ValueError(f"{text!r:.60} is not a decimal number")
    try:
        number = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        raise ValueError(f"{text!r:.60} is not a decimal number") from None
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    shift = exponent + scale  # the digits' place at the wanted scale
    if shift < 0:
        kept, dropped = digits[: max(len(digits) + shift, 0)], digits[len(digits) + shift :]
        if any(dropped):
            raise ValueError(f"{text!r:.60} has {beyond_scale(scale)}")
        digits, shift = kept, 0
    significant = tuple(digits[next((i for i, d in enumerate(digits) if d), len(digits)) :])
    if not significant:
        return 0
    if len(significant) + shift > precision:  # checked before any power of ten is built
        raise ValueError(f"{text!r:.60} has more than {precision} digits at scale {scale}")
    # Built from its digits, not from its text: no limit on the digits an int holds.
    return int(Decimal((sign, significant, shift)))


def _leaf_text(value: Any) -> Any:
    return decimal_text(value) if isinstance(value, Decimal) else value


def image_texts(schema: ConnectSchema) -> Convert | None:
    """How a structured value of ``schema`` (what ``connect_value`` gives) becomes the
    value of :func:`text_avro` of its Avro schema: each decimal Spark cannot hold as its
    text. ``None`` when the schema has no such decimal."""
    if schema.semantic is not None:
        # Parameters were checked when the schema was parsed; a scale beyond
        # MAX_TEXT_SCALE raises ValueError here, as text_avro does.
        return _leaf_text if _is_text(schema.semantic.avro(schema.parameters)) else None
    if schema.type == "struct":
        children = [(name, image_texts(child)) for name, child in schema.fields]
        changes = [(name, convert) for name, convert in children if convert is not None]
        if not changes:
            return None

        def struct(value: Any) -> Any:
            if not isinstance(value, dict):
                return value
            out = dict(value)
            for name, convert in changes:
                if name in out:
                    out[name] = convert(out[name])
            return out

        return struct
    if schema.type == "array" and schema.items is not None:
        item = image_texts(schema.items)
        if item is None:
            return None
        return lambda value: [item(v) for v in value] if isinstance(value, list) else value
    if schema.type == "map" and schema.keys is not None and schema.values is not None:
        keys, values = image_texts(schema.keys), image_texts(schema.values)
        if keys is None and values is None:
            return None
        same: Convert = lambda v: v  # noqa: E731
        key, val = keys or same, values or same

        def entries(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: val(v) for k, v in value.items()}
            if isinstance(value, list):  # a map with other keys: key/value records
                return [
                    {**e, "key": key(e.get("key")), "value": val(e.get("value"))}
                    if isinstance(e, dict)
                    else e
                    for e in value
                ]
            return value

        return entries
    return None
