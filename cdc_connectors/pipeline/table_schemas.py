"""Where a pipeline into a table keeps its source's schemas when its file names no registry.

A table's column types come from the schemas its records name (``opencdc.payload.schema.*``),
so a table written without a registry would type its columns from the values alone: a
Debezium ``decimal(10,2)`` a double, a timestamp its ISO text. When the source's messages
carry their schema (a Debezium ``schema`` block) and neither connector names a registry, the
pipeline keeps those schemas in a SQLite store of its own, ``.cdc/schemas/<pipeline id>.db``
(from the directory it runs in), at compatibility ``NONE``: the table's own rules of schema
evolution judge a change of a source's schema, not a registry's. A destination naming no
registry where the source names one takes the source's: only it knows the schemas the
records name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cdc_connectors import plugins
from cdc_connectors.formats.base import Format

__all__ = ["SCHEMAS", "prepare", "table_registry"]

#: The folder of the stores pipelines into tables keep their sources' schemas in.
SCHEMAS = os.path.join(".cdc", "schemas")
_TABLE = "table"


def _setting(settings: Mapping[str, str], name: str) -> str | None:
    return next((v.strip() for k, v in settings.items() if k.lower() == name and v.strip()), None)


def table_registry(
    pipeline_id: str,
    source_plugin: str,
    source: Mapping[str, str],
    destination_plugin: str,
    destination: Mapping[str, str],
) -> tuple[str | None, bool]:
    """The registry URL a table destination is to be given, and whether it is the pipeline's
    own store (which the source is then given too); ``(None, False)`` when the destination
    is no table, names a registry, or the source has no schemas to keep."""
    if destination_plugin != _TABLE or _setting(destination, "registry"):
        return None, False
    given = _setting(source, "registry")
    if given:
        return given, False
    if source_plugin == _TABLE:
        return None, False
    name = _setting(source, "format") or "raw"
    try:
        fmt = plugins.load(plugins.FORMATS, name, Format)
    except plugins.PluginError:
        return None, False  # the source's own check names it
    if not fmt.carries_schemas:
        return None, False
    store = os.path.abspath(os.path.join(SCHEMAS, f"{pipeline_id}.db"))
    return f"sqlite:///{store}", True


def prepare(url: str) -> None:
    """Open the pipeline's own store (made where missing) at compatibility ``NONE``;
    ``ValueError`` in one line when it cannot be."""
    from cdc_connectors.registry import checked_registry

    registry = checked_registry(url)
    try:
        registry.set_compatibility(level="NONE")
    except Exception as exc:  # a store that cannot be written: one line, not a traceback
        where = url[len("sqlite:///") :]
        raise ValueError(f"the schema store {where} cannot be written: {exc}") from None
