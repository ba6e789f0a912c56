"""Any Confluent-compatible registry over HTTP, through ``confluent_kafka.schema_registry``.

URL forms: ``http://host:8081``, ``https://user:password@host``, several
URLs separated by commas (tried in turn), and client settings as query
parameters (``https://host?ssl.ca.location=/etc/ca.pem``). Keyword settings:

- ``basic_auth="user:password"`` (or credentials in the URL);
- ``bearer_token="..."`` with optional ``logical_cluster`` and ``identity_pool``
  (sent as Confluent Cloud's headers);
- any ``confluent_kafka`` client key as is: ``ssl.ca.location``,
  ``ssl.certificate.location``, ``ssl.key.location``, ``timeout``,
  ``cache.latest.ttl.sec``, ``max.retries``, ...

The client caches schemas by id and by (subject, version), so decoding a
million records makes a handful of requests.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlparse, urlunparse

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from cdc_connectors.registry.base import (
    RegisteredSchema,
    Schema,
    SchemaRegistry,
    SchemaVersion,
    Version,
)


def client_config(url: str, **settings: Any) -> dict[str, Any]:
    """The ``SchemaRegistryClient`` configuration for a URL and keyword settings."""
    urls = []
    conf: dict[str, Any] = {}
    for part in url.split(","):
        parsed = urlparse(part.strip())
        conf.update(parse_qsl(parsed.query))
        urls.append(urlunparse(parsed._replace(query="", fragment="")))
    conf["url"] = ",".join(urls)
    basic = settings.pop("basic_auth", None)
    if basic:
        conf["basic.auth.user.info"] = basic
    token = settings.pop("bearer_token", None)
    if token:
        conf["bearer.auth.credentials.source"] = "STATIC_TOKEN"
        conf["bearer.auth.token"] = token
        conf["bearer.auth.logical.cluster"] = settings.pop("logical_cluster", "default")
        pool = settings.pop("identity_pool", None)
        if pool:
            conf["bearer.auth.identity.pool.id"] = pool
    for key in ("timeout", "max.retries", "cache.capacity", "cache.latest.ttl.sec"):
        if isinstance(conf.get(key), str):
            conf[key] = float(conf[key]) if "." in conf[key] else int(conf[key])
    conf.update(settings)
    return conf


class ConfluentRegistry(SchemaRegistry):
    """A remote Confluent-compatible schema registry."""

    def __init__(self, url: str, **settings: Any):
        self.url = url
        self.client = SchemaRegistryClient(client_config(url, **settings))

    def close(self) -> None:
        self.client.close()

    def register_schema(
        self, subject: str, schema: Schema, normalize: bool = False
    ) -> RegisteredSchema:
        registered = self.client.register_schema_full_response(
            subject, schema, normalize_schemas=normalize
        )
        if registered.version is not None:
            return registered
        # The client answered from its cache, or the server sent the id alone: find the
        # version. A cache entry can outlive a deleted subject; then register for real.
        try:
            found = self.client.lookup_schema(subject, schema, normalize_schemas=normalize)
        except SchemaRegistryError as exc:
            if exc.error_code not in (40401, 40403):
                raise
            self.client.clear_caches()  # type: ignore[no-untyped-call]
            registered = self.client.register_schema_full_response(
                subject, schema, normalize_schemas=normalize
            )
            if registered.version is not None:
                return registered
            found = self.client.lookup_schema(subject, schema, normalize_schemas=normalize)
        return RegisteredSchema(
            schema_id=registered.schema_id,
            guid=registered.guid,
            schema=schema,
            subject=subject,
            version=found.version,
        )

    def get_schema(self, schema_id: int) -> Schema:
        return self.client.get_schema(schema_id)

    def get_schema_by_guid(self, guid: str) -> Schema:
        return self.client.get_schema_by_guid(guid)

    def get_version(
        self, subject: str, version: Version = "latest", deleted: bool = False
    ) -> RegisteredSchema:
        if version in ("latest", -1, "-1"):
            return (
                self.client.get_latest_version(subject)
                if not deleted
                else (self.client.get_version(subject, "latest", deleted=True))
            )
        return self.client.get_version(subject, int(version), deleted=deleted)

    def lookup_schema(
        self, subject: str, schema: Schema, deleted: bool = False
    ) -> RegisteredSchema:
        return self.client.lookup_schema(subject, schema, deleted=deleted)

    def get_subjects(self, deleted: bool = False) -> list[str]:
        return list(self.client.get_subjects(deleted=deleted))

    def get_versions(self, subject: str, deleted: bool = False) -> list[int]:
        return list(self.client.get_versions(subject, deleted=deleted))

    def get_schema_versions(self, schema_id: int) -> list[SchemaVersion]:
        return list(self.client.get_schema_versions(schema_id))

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        return list(self.client.delete_subject(subject, permanent=permanent))

    def delete_version(self, subject: str, version: Version, permanent: bool = False) -> int:
        number = version if version == "latest" else int(version)
        return int(self.client.delete_version(subject, number, permanent=permanent))  # type: ignore[arg-type]

    def get_compatibility(self, subject: str | None = None, default_to_global: bool = False) -> str:
        if subject is not None and default_to_global:
            path = f"config/{_quote(subject)}?defaultToGlobal=true"
            return str(self.client._rest_client.get(path)["compatibilityLevel"])
        return str(self.client.get_compatibility(subject))

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        result = self.client.set_compatibility(subject, level)
        return str(result["compatibility"]) if isinstance(result, dict) else str(result)

    def delete_compatibility(self, subject: str) -> str:
        config = self.client.delete_config(subject)
        level = config.compatibility_level or config.compatibility
        return str(level.value if level is not None else "")

    def test_compatibility(
        self, subject: str, schema: Schema, version: Version | None = "latest"
    ) -> list[str]:
        # The client's own test_compatibility drops the reasons; ask for them (verbose).
        target = "versions" if version is None else f"versions/{version}"
        response = self.client._rest_client.post(
            f"compatibility/subjects/{_quote(subject)}/{target}?verbose=true", body=schema.to_dict()
        )
        if response.get("is_compatible"):
            return []
        return [str(m) for m in response.get("messages") or ["incompatible"]]

    def get_schema_types(self) -> list[str]:
        return list(self.client.get_schema_types())


def _quote(subject: str) -> str:
    from urllib.parse import quote

    return quote(subject, safe="")
