"""HBase rows in Debezium-shaped change events (Lindorm's HBase tables).

An HBase row image has a ``ROW`` column (the row key) and ``<family>_<qualifier>`` columns,
every value base64 of the raw bytes (or ``null``). :func:`is_hbase_row` tells such a change
by its shape, :func:`hbase_schema` types its images as ``bytes`` columns (Debezium's mapping
then decodes the base64) and :func:`hbase_key` keys it by ``ROW``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc.jsonkinds import json_kind

__all__ = ["ROW", "hbase_key", "hbase_schema", "is_hbase_row"]

ROW = "ROW"  # the row key column of an HBase table


def image_of(payload: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """A row image; ``None`` when absent (``null`` or ``{}``) or not an object."""
    value = payload.get(name)
    return value if isinstance(value, Mapping) and value else None


def is_hbase_row(payload: Mapping[str, Any]) -> bool:
    """Whether a change's image (``after``, else ``before``) has the shape of an HBase row:
    a ``ROW`` column, every other one ``<family>_<qualifier>``, every value text or null."""
    image = image_of(payload, "after") or image_of(payload, "before")
    if image is None or ROW not in image:
        return False
    families = all(_family_column(name) for name in image if name != ROW)
    return families and all(v is None or isinstance(v, str) for v in image.values())


def _family_column(name: str) -> bool:
    family, _, qualifier = name.partition("_")
    return bool(family) and bool(qualifier)


def hbase_schema(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A Connect envelope schema whose row images have ``bytes`` columns: Debezium's
    mapping decodes the base64 values with it (and registers it)."""
    fields = []
    for name in ("before", "after"):
        image = image_of(payload, name)
        if image is None:
            continue
        columns = [{"type": "bytes", "optional": True, "field": column} for column in image]
        fields.append({"type": "struct", "optional": True, "fields": columns, "field": name})
    return {"type": "struct", "optional": False, "fields": fields}


def hbase_key(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The key ``{"ROW": ...}`` as a Connect key message, typed ``bytes``."""
    for name in ("before", "after"):
        value = payload.get(name)
        if value is not None and not isinstance(value, Mapping):
            raise CodecError(f"{name}: expected an object or null, got {json_kind(value)}")
    order = ("before", "after") if payload.get("op") == "d" else ("after", "before")
    for name in order:
        image = image_of(payload, name)
        if image is not None and ROW in image:
            key_schema = {
                "type": "struct",
                "optional": False,
                "fields": [{"type": "bytes", "optional": False, "field": ROW}],
            }
            return {"schema": key_schema, "payload": {ROW: image[ROW]}}
        if image is not None:
            columns = ", ".join(sorted(map(str, image))) or "none"
            raise CodecError(f"{name}: an HBase row has no {ROW} column (columns: {columns})")
    raise CodecError(f"an HBase change has no row image to take its {ROW} key from")


def mark_deleted_columns(before: Any, after: Any) -> tuple[Any, list[str]]:
    """Columns of ``before`` missing from ``after`` (Lindorm's column deletion): ``after``
    with them null (in ``before``'s column order), and their names."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return after, []
    deleted = [name for name in before if name not in after]
    if not deleted:
        return after, []
    full = {name: after.get(name) for name in before}
    full.update(after)
    return full, deleted
