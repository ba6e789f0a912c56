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

:func:`checked_registry` opens a registry and asks it one question before anything depends
on it; whatever keeps it from being used is one ``ValueError`` line without credentials, and
:func:`describe_error` is the same line for a registry error met later.

Beside the client, as confluent-kafka keeps its serializers in ``schema_registry/``:
:mod:`~cdc_connectors.registry.store` (registered schemas with their references, cached
for a process) and :mod:`~cdc_connectors.registry.serde` (OpenCDC records' keys and
payloads encoded and decoded through a registry).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from cdc_connectors import plugins
from cdc_connectors.errors import ConfigError
from cdc_connectors.lazy import lazy_names
from cdc_connectors.registry.redact import redact_line, redact_url
from cdc_connectors.registry.url_error import RegistryURLError

if TYPE_CHECKING:
    from cdc_connectors.registry.base import (
        RegisteredSchema,
        Schema,
        SchemaReference,
        SchemaRegistry,
        SchemaVersion,
    )
    from cdc_connectors.registry.errors import RegistryUnavailableError, SchemaRegistryError

GROUP = plugins.REGISTRIES
DEFAULT_URL = "sqlite:///.cdc/registry.db"

__all__ = [
    "DEFAULT_URL",
    "GROUP",
    "RegisteredSchema",
    "RegistryURLError",
    "RegistryUnavailableError",
    "Schema",
    "SchemaReference",
    "SchemaRegistry",
    "SchemaRegistryError",
    "SchemaVersion",
    "check_url",
    "checked_registry",
    "describe_error",
    "open_registry",
    "registry_for",
    "url_scheme",
]

# The client types come from confluent-kafka's schema_registry package, whose import takes
# longer than the rest of ours (its HTTP and OAuth stacks): they are imported when first
# named, so a Spark task of a format without a registry never pays for it.
_LAZY = {
    "RegisteredSchema": "base",
    "Schema": "base",
    "SchemaReference": "base",
    "SchemaRegistry": "base",
    "SchemaVersion": "base",
    "RegistryUnavailableError": "errors",
    "SchemaRegistryError": "errors",
}


__getattr__ = lazy_names(__name__, _LAZY)


def open_registry(url: str, **conf: Any) -> SchemaRegistry:
    """A new registry client for ``url``; ``conf`` goes to the implementation."""
    scheme = _scheme(url)
    from cdc_connectors.registry.base import SchemaRegistry

    try:
        cls = plugins.load(GROUP, scheme, SchemaRegistry)
    except plugins.PluginError as exc:
        raise RegistryURLError(
            f"no registry for URL scheme {scheme!r} in {redact_url(url)!r}: {exc}"
        ) from None
    registry: SchemaRegistry = cls(url, **conf)
    return registry


def _scheme(url: str) -> str:
    """The scheme of ``url``; :class:`RegistryURLError` for a URL without one."""
    scheme = url_scheme(url)
    if not scheme:
        raise RegistryURLError(
            f"registry URL {redact_url(url)!r} has no scheme (sqlite:///..., memory://, http://)"
        )
    return scheme


def url_scheme(url: str) -> str:
    """The scheme of ``url`` ("" for none), also of a URL ``urlparse`` refuses."""
    try:
        return urlparse(url).scheme
    except ValueError:  # an unclosed IPv6 bracket, ...
        scheme, sep, _ = url.partition("://")
        return scheme.lower() if sep else ""


_shared: dict[str, SchemaRegistry] = {}
#: The file each shared store of a SQLite URL had open, as (path, its identity).
_files: dict[str, tuple[str, tuple[int, int] | None]] = {}
_shared_lock = threading.Lock()


def registry_for(url: str) -> SchemaRegistry:
    """The registry of ``url`` shared by this process (and its cache), opened on first use.

    This is how Spark tasks reach the registry: they get the URL, not a client, and every
    task of an executor process reuses one client and its cache of schemas by id. A store
    whose SQLite file was removed or replaced since it was opened (``rm -r .cdc`` between
    two runs of one session) is opened anew: else its schemas would go to a file no other
    process sees. (A relative store stays the file it named when it was opened.)
    """
    with _shared_lock:
        registry = _shared.get(url)
        if registry is not None and url in _files:
            path, identity = _files[url]
            if _identity(path) != identity:
                registry = None  # (not closed: a holder of the old client goes on with it)
        if registry is None:
            registry = _shared[url] = open_registry(url)
            if url_scheme(url) == "sqlite":
                from cdc_connectors.registry.embedded import store_place

                path = os.path.abspath(str(store_place(url)))  # the file opened, wherever
                _files[url] = (path, _identity(path))  # the process goes later
        return registry


def _identity(path: str) -> tuple[int, int] | None:
    """Which file ``path`` is (device and inode), ``None`` where there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def check_url(url: str) -> None:
    """ValueError (one line, no secret) for a registry URL that cannot name a registry,
    found without opening the registry or asking it anything: no or an unknown scheme, an
    HTTP URL that does not parse or holds an empty credential, an embedded store's URL with
    options, a host or no file, or a path that is a directory or cannot be read."""
    scheme = _scheme(url)
    known = plugins.available(GROUP)
    if scheme not in known:
        raise RegistryURLError(
            f"no registry serves the scheme {scheme!r} of {redact_url(url)!r} "
            f"(schemes: {', '.join(known)})"
        )
    if scheme in ("http", "https"):
        from cdc_connectors.registry.confluent import check_url as check_http_url

        check_http_url(url)
    elif scheme in ("memory", "sqlite"):
        from cdc_connectors.registry.embedded import store_place

        store_place(url)


#: Asked of a registry to check it: every Confluent registry and store of ours answers it.
_PROBE = "GET /schemas/types"
_NOT_FOUND = 404


def checked_registry(url: str) -> SchemaRegistry:
    """The registry of ``url`` as :func:`registry_for` shares it, opened and asked which
    schema types it takes, so that a URL that names no usable registry is found before
    anything depends on it.

    ``ValueError`` with one line naming the registry without its credentials for whatever
    keeps it from being used: a URL that is not one (a :class:`RegistryURLError`, bad
    configuration), a store that cannot be opened (a directory, not SQLite, unreadable), a
    registry that does not answer, refuses the credentials or answers as no schema
    registry does. A registry that answers the question with Confluent's "not found" is
    one (older than the question) and passes.
    """
    from cdc_connectors.registry.errors import SchemaRegistryError

    try:
        registry = registry_for(url)
    except ConfigError as exc:  # the URL's own problem: bad configuration
        raise RegistryURLError(_opening_failure(url, exc)) from None
    except Exception as exc:  # an implementation's failure, whatever it is: one line
        raise ValueError(_opening_failure(url, exc)) from None
    try:
        types: Any = registry.get_schema_types()
    except SchemaRegistryError as exc:
        if exc.http_status_code == _NOT_FOUND:
            return registry
        raise ValueError(describe_error(exc, url, _PROBE)) from None
    except Exception as exc:
        raise ValueError(_opening_failure(url, exc)) from None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise ValueError(
            f"{redact_url(url)} is not a schema registry, or not at this URL: it answered "
            f"{_PROBE} with something other than a list of schema types"
        )
    return registry


def _opening_failure(url: str, exc: BaseException) -> str:
    if isinstance(exc, ValueError):  # the implementation's own message, naming the URL
        return redact_line(str(exc), urls=[url])
    detail = redact_line(str(exc), urls=[url])
    return redact_line(
        f"registry {redact_url(url)} cannot be opened: {type(exc).__name__}"
        f"{f': {detail}' if detail else ''}",
        urls=[url],
    )


def describe_error(exc: SchemaRegistryError, url: str, request: str | None = None) -> str:
    """One line for a registry error, naming the registry without credentials.

    An error without HTTP status (no answer, or not a registry's) already names the
    registry; one with a status says which registry answered it, and to which request.
    """
    message = str(exc.error_message or "").strip()
    status = exc.http_status_code
    if not isinstance(status, int) or status < 0:
        return redact_line(message or f"schema registry {redact_url(url)} failed", urls=[url])
    code = f", error code {exc.error_code}" if exc.error_code not in (None, -1) else ""
    asked = f", to {request}" if request else ""
    return redact_line(
        f"schema registry {redact_url(url)}: {message or 'failed'} (HTTP {status}{code}{asked})",
        urls=[url],
    )
