"""The schema registry URLs a pipeline file names, checked before Spark starts: a URL that
cannot be one (an empty password, an unknown option, a directory for a store) is one line
naming the file's line, as ``convert`` says it for ``--registry``, instead of a failure
inside the first batch. Nothing is opened nor asked here: a registry that does not answer
fails the pipeline that uses it, when it uses it (one that names a registry it never needs
still runs)."""

from __future__ import annotations

from cdc_connectors.errors import ConfigError
from cdc_connectors.pipeline.config import Config

__all__ = ["check_registries", "registry_places"]


def registry_places(config: Config) -> dict[str, str]:
    """Each registry URL of ``config`` and where the file gives it first: the top-level
    ``schema-registry.url``, then a connector's own ``registry`` setting (not the store a
    table pipeline keeps its schemas in, which the file does not name: the run opens it)."""
    places: dict[str, str] = {}
    if config.registry:
        places[config.registry] = config.registry_at
    for pipeline in config.pipelines:
        for connector in (pipeline.source, pipeline.destination, pipeline.dead_letters):
            for key, url in connector.settings.items():
                if url == pipeline.schemas:
                    continue
                if key.lower() == "registry" and url.strip() and url not in places:
                    places[url] = connector.locate(key)
    return places


def check_registries(config: Config) -> None:
    """:class:`ConfigError` (``file:line: key: problem``) for the first registry URL of
    ``config`` that cannot be one (:func:`~cdc_connectors.registry.check_url`)."""
    from cdc_connectors.registry import check_url

    for url, where in registry_places(config).items():
        try:
            check_url(url)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
