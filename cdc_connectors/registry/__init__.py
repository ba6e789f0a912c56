"""Schema registries: one interface, implementations chosen by URL.

| URL | registry |
|---|---|
| ``sqlite:///path/registry.db`` | embedded store on disk (the default) |
| ``memory://`` / ``memory://name`` | embedded store in memory (private / shared by name) |
| ``http://host:8081``, ``https://...`` | any Confluent-compatible registry |

Every one is a :class:`SchemaRegistry`: confluent-kafka's ``SchemaRegistryClient`` (its
method names and signatures), so confluent-kafka's serializers and deserializers take any of
them. Implementations are found through the ``cdc_connectors.registries`` entry points by URL
scheme, so another package can add one (a ``SchemaRegistry`` subclass).
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlparse

from cdc_connectors import plugins
from cdc_connectors.registry.base import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistry,
    SchemaVersion,
)
from cdc_connectors.registry.errors import RegistryUnavailableError, SchemaRegistryError
from cdc_connectors.registry.redact import redact_url

GROUP = plugins.REGISTRIES
DEFAULT_URL = "sqlite:///.cdc/registry.db"

__all__ = [
    "DEFAULT_URL",
    "GROUP",
    "RegisteredSchema",
    "RegistryUnavailableError",
    "Schema",
    "SchemaReference",
    "SchemaRegistry",
    "SchemaRegistryError",
    "SchemaVersion",
    "open_registry",
    "registry_for",
]


def open_registry(url: str, **conf: Any) -> SchemaRegistry:
    """A new registry client for ``url``; ``conf`` goes to the implementation."""
    scheme = urlparse(url).scheme
    if not scheme:
        raise ValueError(
            f"registry URL {redact_url(url)!r} has no scheme (sqlite:///..., memory://, http://)"
        )
    try:
        cls = plugins.load(GROUP, scheme, SchemaRegistry)
    except plugins.PluginError as exc:
        raise ValueError(
            f"no registry for URL scheme {scheme!r} in {redact_url(url)!r}: {exc}"
        ) from None
    registry: SchemaRegistry = cls(url, **conf)
    return registry


_shared: dict[str, SchemaRegistry] = {}
_shared_lock = threading.Lock()


def registry_for(url: str) -> SchemaRegistry:
    """The registry of ``url`` shared by this process (and its cache), opened on first use.

    This is how Spark tasks reach the registry: they get the URL, not a client, and every
    task of an executor process reuses one client and its cache of schemas by id.
    """
    with _shared_lock:
        registry = _shared.get(url)
        if registry is None:
            registry = _shared[url] = open_registry(url)
        return registry
