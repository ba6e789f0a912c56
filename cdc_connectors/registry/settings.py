"""Confluent's config fields beyond the compatibility level, and the metadata of a schema.

A config (global or a subject's) may hold, besides its level, as Confluent's names them:
``alias`` (a subject read and written as another), ``validateFields`` (reserved fields are
enforced), ``compatibilityGroup`` (the metadata property that splits a subject into lineages
checked apart), ``defaultMetadata`` and ``overrideMetadata`` (merged into the metadata of
every schema registered). A subject's fields are merged over the global ones.

A schema's metadata is Confluent's ``{"properties": {..}, "tags": {..}, "sensitive": [..]}``,
kept here as a plain dict in a canonical form (sorted, no empty parts, ``None`` for none).
A registration without metadata takes the previous version's; the config's default is merged
under it and its override over it. ``confluent:version`` is a hint for the version to
register, not kept. ``confluent:reserved`` lists field names (comma-separated) that a schema
must not have and a later version must keep reserving, when ``validateFields`` is on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from cdc_connectors.registry import errors
from cdc_connectors.schema.languages import ParsedSchema

__all__ = [
    "CONFIG_FIELDS",
    "RESERVED",
    "config_changes",
    "effective_metadata",
    "in_group",
    "merge_metadata",
    "merged_config",
    "metadata_dict",
    "metadata_hash",
    "reserved_problems",
    "updated_config",
]

#: The config fields kept besides the level, as Confluent's REST API names them.
CONFIG_FIELDS = (
    "alias",
    "validateFields",
    "compatibilityGroup",
    "defaultMetadata",
    "overrideMetadata",
)
#: Rule sets are not kept: a config naming one is refused rather than half honoured.
_RULE_SET_FIELDS = ("defaultRuleSet", "overrideRuleSet")
RESERVED = "confluent:reserved"
_VERSION_HINT = "confluent:version"


# --- metadata ------------------------------------------------------------------------------


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise errors.unprocessable(f"{where} must be a list of strings")
    return sorted(set(value))


def metadata_dict(value: Any, where: str = "metadata") -> dict[str, Any] | None:
    """Metadata in canonical form (``None`` for none or empty); 422 naming ``where`` for
    anything that is not Confluent's metadata object."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise errors.unprocessable(f"{where} must be an object")
    out: dict[str, Any] = {}
    properties = value.get("properties") or {}
    if not isinstance(properties, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in properties.items()
    ):
        raise errors.unprocessable(f"{where}.properties must map names to strings")
    if properties:
        out["properties"] = dict(sorted(properties.items()))
    tags = value.get("tags") or {}
    if not isinstance(tags, Mapping):
        raise errors.unprocessable(f"{where}.tags must map paths to lists of tags")
    if tags:
        out["tags"] = {str(k): _strings(v, f"{where}.tags.{k}") for k, v in sorted(tags.items())}
    sensitive = _strings(value.get("sensitive") or [], f"{where}.sensitive")
    if sensitive:
        out["sensitive"] = sensitive
    return out or None


def merge_metadata(
    under: dict[str, Any] | None, over: dict[str, Any] | None
) -> dict[str, Any] | None:
    """Confluent's merge: properties and tags of ``over`` win by key, sensitive is the union."""
    if not under or not over:
        return over or under
    merged = {
        "properties": {**under.get("properties", {}), **over.get("properties", {})},
        "tags": {**under.get("tags", {}), **over.get("tags", {})},
        "sensitive": [*under.get("sensitive", []), *over.get("sensitive", [])],
    }
    return metadata_dict(merged)


def _without_version_hint(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    if not metadata or _VERSION_HINT not in metadata.get("properties", {}):
        return metadata
    properties = {k: v for k, v in metadata["properties"].items() if k != _VERSION_HINT}
    return metadata_dict({**metadata, "properties": properties})


def effective_metadata(
    requested: dict[str, Any] | None,
    previous: dict[str, Any] | None,
    config: Mapping[str, Any],
) -> dict[str, Any] | None:
    """The metadata a registration stores: the request's (else the previous version's),
    over the config's default, under its override."""
    specific = _without_version_hint(requested) if requested is not None else previous
    merged = merge_metadata(config.get("defaultMetadata"), specific)
    return merge_metadata(merged, config.get("overrideMetadata"))


def metadata_hash(metadata: dict[str, Any] | None) -> str:
    """What metadata adds to a schema's fingerprint: nothing for none."""
    if not metadata:
        return ""
    text = orjson.dumps(metadata, option=orjson.OPT_SORT_KEYS)
    return "+m" + hashlib.sha256(text).hexdigest()


# --- configs -------------------------------------------------------------------------------


def _config_value(key: str, value: Any) -> Any:
    """One config field checked; ``None`` removes it."""
    if value is None:
        return None
    if key == "alias":
        if not isinstance(value, str):
            raise errors.unprocessable("alias must be a subject name")
        return value or None
    if key == "validateFields":
        if not isinstance(value, bool):
            raise errors.unprocessable("validateFields must be true or false")
        return value
    if key == "compatibilityGroup":
        if not isinstance(value, str):
            raise errors.unprocessable("compatibilityGroup must be a metadata property name")
        return value or None
    return metadata_dict(value, key)


def config_changes(body: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a ``PUT /config`` body sets (a value) or removes (``None``); fields it does
    not name are left as they are. 422 for a rule set or a field of the wrong kind."""
    for key in _RULE_SET_FIELDS:
        if body.get(key) is not None:
            raise errors.unprocessable(f"{key}: this registry keeps no rule sets")
    return {key: _config_value(key, body[key]) for key in CONFIG_FIELDS if key in body}


def updated_config(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``current`` with ``changes`` applied (``None`` removes a field)."""
    fields = {**current, **changes}
    return {k: v for k, v in fields.items() if v is not None}


def merged_config(global_fields: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """A subject's fields over the global ones; an alias is a subject's own only."""
    inherited = {k: v for k, v in global_fields.items() if k != "alias"}
    return {**inherited, **own}


# --- what the fields enforce ------------------------------------------------------------------


def in_group(group: str | None, new: dict[str, Any] | None, old: dict[str, Any] | None) -> bool:
    """True when an earlier version is in the new schema's compatibility group."""
    if not group:
        return True

    def value(metadata: dict[str, Any] | None) -> str | None:
        found = (metadata or {}).get("properties", {}).get(group)
        return found if isinstance(found, str) else None

    return value(new) == value(old)


def _reserved(metadata: dict[str, Any] | None) -> list[str]:
    text = (metadata or {}).get("properties", {}).get(RESERVED, "")
    return sorted({name.strip() for name in text.split(",") if name.strip()})


def _top_level_fields(schema: ParsedSchema) -> set[str]:
    """The names of a schema's top-level fields: an Avro record's, a JSON Schema's
    properties, the first message's of a Protobuf file."""
    parsed = schema.parsed
    if schema.schema_type == "AVRO":
        return {str(f.name) for f in getattr(parsed, "fields", None) or []}
    if schema.schema_type == "JSON":
        root = getattr(parsed, "schema", None)
        properties = root.get("properties") if isinstance(root, dict) else None
        return set(properties) if isinstance(properties, dict) else set()
    files = getattr(parsed, "file", None)
    if files and files[-1].message_type:
        return {str(f.name) for f in files[-1].message_type[0].field}
    return set()


def reserved_problems(
    schema: ParsedSchema, new: dict[str, Any] | None, previous: dict[str, Any] | None
) -> list[str]:
    """Why a schema breaks its reserved fields (Confluent's ``validateFields``): one of its
    fields is reserved, or it no longer reserves a field the previous version reserved."""
    reserved = _reserved(new)
    fields = _top_level_fields(schema)
    problems = [
        f"The new schema has field that conflicts with the reserved field {name}."
        for name in reserved
        if name in fields
    ]
    problems += [
        f"The new schema has reserved field {name} removed from its metadata which is "
        "present in the old schema's metadata."
        for name in _reserved(previous)
        if name not in reserved
    ]
    return problems
