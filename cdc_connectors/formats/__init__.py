"""CDC formats: the Format interface and one module per format.

Formats are found through the ``cdc_connectors.formats`` entry points
(:mod:`cdc_connectors.plugins`).
"""

from __future__ import annotations

from cdc_connectors import plugins
from cdc_connectors.formats.base import Format, FormatOptionError, Message, SkipMessage

GROUP = plugins.FORMATS

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
    return plugins.available(GROUP)


def load_format(name: str) -> type[Format]:
    """The format class registered under ``name``; :class:`FormatOptionError` if none is."""
    try:
        cls: type[Format] = plugins.load(GROUP, name, Format)
    except plugins.PluginError as exc:
        raise FormatOptionError(str(exc)) from None
    return cls
