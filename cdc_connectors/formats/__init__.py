"""CDC formats: one module per format, found through the ``cdc_connectors.formats`` entry points."""

from __future__ import annotations

from importlib.metadata import entry_points

from cdc_connectors.formats.base import Format, FormatOptionError, Message, SkipMessage

GROUP = "cdc_connectors.formats"

__all__ = [
    "GROUP",
    "Format",
    "FormatOptionError",
    "Message",
    "SkipMessage",
    "available_formats",
    "load_format",
]


def available_formats() -> dict[str, str]:
    """Format name -> ``module:object`` of every installed format entry point."""
    return {ep.name: ep.value for ep in entry_points(group=GROUP)}


def load_format(name: str) -> type[Format]:
    """The format class registered under ``name``; :class:`FormatOptionError` if none is."""
    found = entry_points(group=GROUP, name=name)
    if not found:
        known = ", ".join(sorted(available_formats())) or "none installed"
        raise FormatOptionError(f"unknown format {name!r} (formats: {known})")
    cls = next(iter(found)).load()
    if not (isinstance(cls, type) and issubclass(cls, Format)):
        raise FormatOptionError(f"entry point {name!r} does not name a Format class")
    return cls
