"""Plugins: the entry-point groups and the one loader used by everything.

| group | name -> object |
|---|---|
| ``cdc_connectors.connectors`` | connector name (``kafka``) -> Spark data source class |
| ``cdc_connectors.formats`` | format name (``opencdc-json``) -> ``Format`` subclass |
| ``cdc_connectors.registries`` | URL scheme (``sqlite``, ``http``) -> registry client class |

Another package adds a connector, format or registry by declaring an entry
point in one of these groups; nothing here changes. A group's installed entry points are read
once a process (reading them scans every installed distribution).
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoints, entry_points
from typing import Any

from cdc_connectors.errors import ConfigError

CONNECTORS = "cdc_connectors.connectors"
FORMATS = "cdc_connectors.formats"
REGISTRIES = "cdc_connectors.registries"

GROUPS = {"connectors": CONNECTORS, "formats": FORMATS, "registries": REGISTRIES}
_KINDS = {CONNECTORS: "connector", FORMATS: "format", REGISTRIES: "registry"}


class PluginError(ConfigError, LookupError):
    """No plugin of that name, or the entry point does not name the expected kind of object."""


@cache
def _installed(group: str) -> EntryPoints:
    return entry_points(group=group)


def available(group: str) -> dict[str, str]:
    """Name -> ``module:object`` of every entry point of ``group``, sorted by name."""
    found = _installed(group)
    return {ep.name: ep.value for ep in sorted(found, key=lambda e: e.name)}


def load(group: str, name: str, base: type[Any] | None = None) -> Any:
    """The object registered as ``name`` in ``group``, checked to be a subclass of ``base``.

    Raises :class:`PluginError` naming what is installed when there is no such
    plugin, when its module cannot be imported, or when it is not a ``base``.
    """
    kind = _KINDS.get(group, "plugin")
    found = _installed(group).select(name=name)
    if not found:
        known = ", ".join(available(group)) or "none installed"
        raise PluginError(f"unknown {kind} {name!r} ({kind} names: {known})")
    entry = next(iter(found))
    try:
        obj = entry.load()
    except (ImportError, AttributeError) as exc:
        raise PluginError(f"{kind} {name!r} ({entry.value}) cannot be loaded: {exc}") from None
    if base is not None and not (isinstance(obj, type) and issubclass(obj, base)):
        raise PluginError(
            f"{kind} {name!r} ({entry.value}) is not a {base.__module__}.{base.__qualname__}"
        )
    return obj


def load_all(group: str, base: type[Any] | None = None) -> dict[str, Any]:
    """Every plugin of ``group``, loaded and checked as :func:`load` does."""
    return {name: load(group, name, base) for name in available(group)}
