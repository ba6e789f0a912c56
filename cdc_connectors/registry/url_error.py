"""The error of a registry URL that names no registry we can open, in a module of its own:
it is bad configuration, and raising it needs no registry client imported."""

from __future__ import annotations

from cdc_connectors.errors import ConfigError

__all__ = ["RegistryURLError"]


class RegistryURLError(ConfigError):
    """A registry URL that names no registry we can open: no or an unknown scheme, a form,
    option or file it cannot have. The message names the URL without its credentials."""
