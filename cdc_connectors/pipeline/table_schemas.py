"""The registry a pipeline into a table types its columns by, where its file names none.

A table's column types come from the schemas its records name (``opencdc.payload.schema.*``);
records read without a registry name none, and the table types its columns from the values
alone: a Debezium ``decimal(10,2)`` a double, a timestamp its ISO text. So:

- when the source's messages carry their schema (a Debezium ``schema`` block) and neither
  connector names a registry, the schemas are kept in a SQLite store beside the table
  (``<path>/_cdc_schemas/``), at compatibility ``NONE`` (the table's own rules of schema
  evolution judge a change of a source's schema, not a registry's). A table that exists
  without such a store was typed by its values, and stays so (its columns would not take the
  schemas' types); so does a table at a remote path, and one whose ``registry`` is set
  empty;
- a registry named by one connector alone is given to the other: only the source registers
  the schemas its records name, and only the table reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from cdc_connectors import plugins
from cdc_connectors.formats.base import Format

__all__ = ["FOLDER", "Registries", "check_store", "make_store", "table_registries"]

#: The folder beside a table (in its path) of the store of its sources' schemas.
FOLDER = "_cdc_schemas"
_TABLE = "table"


@dataclass(frozen=True)
class Registries:
    """The registry each connector of a table pipeline is given (``None``: as it stands),
    and the store the pipeline keeps beside its table (to be made), if any."""

    source: str | None = None
    destination: str | None = None
    store: str | None = None


def _setting(settings: Mapping[str, str], name: str) -> str | None:
    """The value of a setting (any case), stripped; ``None`` where it is not given."""
    return next((v.strip() for k, v in settings.items() if k.lower() == name), None)


def table_registries(
    source_plugin: str,
    source: Mapping[str, str],
    destination_plugin: str,
    destination: Mapping[str, str],
) -> Registries:
    """The registries a pipeline's connectors are to be given (module docstring)."""
    if destination_plugin != _TABLE:
        return Registries()
    carries = source_plugin != _TABLE and _carries_schemas(source)
    given, wanted = _setting(source, "registry"), _setting(destination, "registry")
    if wanted == "":
        return Registries()  # the table's types from its values, as asked
    if wanted:
        return Registries(source=wanted if carries and not given else None)
    if given:
        return Registries(destination=given)
    if not carries:
        return Registries()
    store = _store(destination)
    return Registries(source=store, destination=store, store=store)


def _carries_schemas(settings: Mapping[str, str]) -> bool:
    try:
        fmt = plugins.load(plugins.FORMATS, _setting(settings, "format") or "raw", Format)
    except plugins.PluginError:
        return False  # the source's own check names it
    return bool(fmt.carries_schemas)


def _store(settings: Mapping[str, str]) -> str | None:
    """The URL of the store beside the table ``settings`` name; ``None`` for a table at a
    remote path, or one that exists without a store (typed by its values)."""
    from cdc_connectors.connectors.table_settings import Settings

    try:
        table = Settings.parse(settings)
    except Exception:  # the destination's own check names it
        return None
    if "://" in table.path:
        return None
    folder = os.path.join(os.path.abspath(table.path), FOLDER)
    name = "schemas" if table.format == "delta" else table.table
    path = os.path.join(folder, f"{name}.db")
    if not os.path.exists(path) and _exists(table):
        return None
    return "sqlite:///" + quote(path, safe="/")


def _exists(table: object) -> bool:
    """Whether the table is there already."""
    try:
        return table.store().schema() is not None  # type: ignore[attr-defined]
    except Exception:  # not a table (yet), or one the destination's check refuses
        return False


def check_store(url: str) -> None:
    """``ValueError`` in one line where the store of ``url`` cannot be made (nothing is made
    here: every store of a run is checked before any is)."""
    from cdc_connectors.registry.embedded import store_place

    path = store_place(url)
    above = path.parent if path is not None else None
    while above is not None and not above.exists():
        above = above.parent
    if above is not None and not above.is_dir():
        raise ValueError(f"the schema store {path} cannot be made: {above} is a file")


def make_store(url: str) -> None:
    """Make (or open) the store of ``url`` at compatibility ``NONE``; ``ValueError`` in one
    line when it cannot be."""
    from cdc_connectors.registry import checked_registry

    registry = checked_registry(url)
    try:
        registry.set_compatibility(level="NONE")
    except Exception as exc:  # a store that cannot be written: one line, no traceback
        raise ValueError(f"the schema store of {url} cannot be written: {exc}") from None
