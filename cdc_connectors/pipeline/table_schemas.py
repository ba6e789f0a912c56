"""The registry a pipeline into a table types its columns by, where its file names none.

A table's column types come from the schemas its records name (``opencdc.payload.schema.*``);
records read without a registry name none, and the table types its columns from the values
alone: a Debezium ``decimal(10,2)`` a double, a timestamp its ISO text. So:

- when the source's messages carry their schema (a Debezium ``schema`` block) and neither
  connector names a registry, the schemas are kept in a SQLite store beside the table
  (``<path>/_cdc_schemas/``), at compatibility ``NONE`` (the table's own rules of schema
  evolution judge a change of a source's schema, not a registry's);
- a registry named by one connector alone is given to the other: only the source registers
  the schemas its records name, and only the table reads them.

Neither is done for a table that exists and was not typed so by its first writer (a table
made before that was kept with it, :attr:`~cdc_connectors.table.store.TableSettings.typed`):
its columns are of its values' types, and stay so. A table at a remote path gets no store,
and a ``registry`` set empty asks for none of this.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from cdc_connectors import plugins
from cdc_connectors.formats.base import Format
from cdc_connectors.options import Options

__all__ = [
    "FOLDER",
    "Registries",
    "check_store",
    "made_by_making",
    "make_store",
    "table_registries",
    "unmake_unused",
]

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
    value = Options(settings).get(name)
    return None if value is None else value.strip()


def table_registries(
    source_plugin: str,
    source: Mapping[str, str],
    destination_plugin: str,
    destination: Mapping[str, str],
) -> Registries:
    """The registries a pipeline's connectors are to be given (module docstring)."""
    if destination_plugin != _TABLE:
        return Registries()
    given, wanted = _setting(source, "registry"), _setting(destination, "registry")
    if wanted == "" or given == "":
        return Registries()  # no registry, as asked
    table = _table(destination)
    if table is not None and table[1] is not True:
        return Registries()  # a table typed by its values, which its columns keep
    carries = source_plugin != _TABLE and _carries_schemas(source)
    if wanted:
        return Registries(source=wanted if carries and not given else None)
    if given:
        return Registries(destination=given)
    if not carries or table is None or table[0] is None:
        return Registries()
    return Registries(source=table[0], destination=table[0], store=table[0])


def _carries_schemas(settings: Mapping[str, str]) -> bool:
    try:
        fmt = plugins.load(plugins.FORMATS, _setting(settings, "format") or "raw", Format)
    except plugins.PluginError:
        return False  # the source's own check names it
    return bool(fmt.carries_schemas)


def _table(settings: Mapping[str, str]) -> tuple[str | None, bool | None] | None:
    """The URL of the store beside the table ``settings`` name (``None`` at a remote path),
    and whether the table there is typed by registered schemas (``None``: it was made
    before that was kept; ``True`` where there is no table yet); ``None`` for settings the
    destination's own check refuses."""
    from cdc_connectors.connectors.table_settings import Settings

    try:
        table = Settings.parse(settings)
        held = None if table.fresh_warehouse() else table.store().settings()
    except Exception:  # the destination's own check names it
        return None
    typed = True if held is None else held.typed
    if "://" in table.path:
        return None, typed
    folder = os.path.join(os.path.abspath(table.path), FOLDER)
    name = "schemas" if table.format == "delta" else table.table
    return "sqlite:///" + quote(os.path.join(folder, f"{name}.db"), safe="/"), typed


def check_store(url: str) -> None:
    """``ValueError`` in one line where the store of ``url`` cannot be made or opened
    (nothing is made here: every store of a run is checked before any is)."""
    from cdc_connectors.registry import checked_registry
    from cdc_connectors.registry.embedded import store_place

    path = store_place(url)
    if path is None:
        return
    if path.exists():
        checked_registry(url)  # (made already: opened, as it will be)
        return
    above = path.parent
    while not above.exists():
        above = above.parent
    if not above.is_dir():
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


def made_by_making(url: str) -> list[Path]:
    """What making the store of ``url`` makes: its file and the folders above it that are
    not there yet, the deepest first (nothing for a store that exists)."""
    from cdc_connectors.registry.embedded import store_place

    try:
        path = store_place(url)
    except ValueError:  # (said by check_store)
        return []
    if path is None or path.exists():
        return []
    made = [path]
    above = path.parent
    while not above.exists():
        made.append(above)
        above = above.parent
    return made


def unmake_unused(made: list[Path], destination: Mapping[str, str]) -> None:
    """Remove what making a store beside a table made (:func:`made_by_making`) where the
    run made no table there (its first batch refused, say): a run that wrote nothing
    leaves nothing behind. Only the store's own file (and its journal) goes, and a folder
    only where it is empty: the stores of a warehouse's other tables share the folder."""
    from cdc_connectors.registry.embedded import JOURNALS

    if not made or _table_there(destination):
        return
    for path in made:  # the store's file first, then the folders above it
        try:
            if path.is_dir():
                path.rmdir()
            else:
                for part in ("", *JOURNALS):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f"{path}{part}")
        except OSError:  # a folder not empty, a file not ours to remove: left as it is
            return


def _table_there(destination: Mapping[str, str]) -> bool:
    from cdc_connectors.connectors.table_settings import Settings

    try:
        table = Settings.parse(destination)
        if table.fresh_warehouse():
            return False  # (opening its catalog would make the catalog's file)
        return table.store().settings() is not None
    except Exception:  # unreadable: whatever is there is left as it is
        return True
