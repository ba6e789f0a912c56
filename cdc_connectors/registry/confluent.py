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

``timeout`` is 30 seconds unless set. A registry that cannot be reached or does not answer
in time is a :class:`~cdc_connectors.registry.errors.RegistryUnavailableError` (a
``SchemaRegistryError`` without HTTP status) naming its URL without credentials; so is an
answer that is not the registry API's JSON (:class:`NotARegistryError`: the URL names
something else, a web server or a proxy's error page). A URL that is not one (no host, a
port that is no number, a password holding an unencoded ``/``, ``?``, ``#`` or ``@``, an
empty password) or settings that cannot be used (an unknown one, a TLS file that cannot be
read) are a ``ValueError`` when the registry is opened; no message holds a credential.

The registry is confluent-kafka's ``SchemaRegistryClient`` itself, with one change: it caches
only what cannot change (a schema by its id or GUID), so decoding a million records makes a
handful of requests while versions, subjects and registrations are asked of the server each
time and reflect what any process committed. ``cache.latest.ttl.sec`` opts back into caching
the latest version of a subject for that many seconds.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any, Literal, NoReturn
from urllib.parse import parse_qsl, quote, unquote, urlparse, urlunparse

from confluent_kafka.schema_registry import SchemaRegistryClient

from cdc_connectors.registry import errors, guards
from cdc_connectors.registry.base import (
    RegisteredSchema,
    Schema,
    SchemaRegistry,
    ServerConfig,
    Version,
    version_number,
    with_schema,
)
from cdc_connectors.registry.redact import is_secret, redact_line, redact_url

#: Seconds to connect, send or wait for an answer, unless ``timeout`` is set: without one,
#: a server that accepts and never answers would hold the client forever.
DEFAULT_TIMEOUT = 30.0


_ENCODE = (
    "a password holding '/', '?', '#', '@' or ',' must be percent-encoded (%2F, %3F, %23, %40, %2C)"
)
#: Settings naming a file the client loads when it is opened.
_TLS_FILES = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")


def check_url(url: str) -> None:
    """Raise ``ValueError`` unless every comma-separated part of ``url`` is an ``http://`` or
    ``https://`` URL with a host, a numeric port if any, user info (if any) with a user and a
    password, and a query of ``NAME=VALUE`` items without an empty credential.

    The message names the URL with its credentials masked and never quotes a part of it
    (the HTTP library's own message would: ``Invalid port: '<the password's start>'``).
    """

    def refuse(problem: str) -> NoReturn:
        raise errors.RegistryURLError(f"registry URL {redact_url(url)}: {problem}")

    for raw in url.split(","):
        part = raw.strip()
        if not part:
            refuse("an empty URL between commas")
        try:
            parsed = urlparse(part)
            parsed.port  # noqa: B018 - raises ValueError for a port that is no number
        except ValueError:
            hint = f"; {_ENCODE}" if "@" in part else ""
            refuse(f"its host and port do not parse (a port is a number 0..65535){hint}")
        if parsed.scheme.lower() not in ("http", "https"):
            refuse("each URL must start with http:// or https://")
        if not parsed.hostname:
            hint = f"; {_ENCODE}" if "@" in part else ""
            refuse(f"it names no host{hint}")
        if "@" in parsed.path or "@" in parsed.fragment:
            refuse(f"'@' after the host: {_ENCODE}")
        if "@" in parsed.netloc:
            userinfo = parsed.netloc.rpartition("@")[0]
            user, colon, password = userinfo.partition(":")
            if not colon:
                refuse("it names a user and no password (http://USER:PASSWORD@host)")
            try:
                guards.check_basic_auth(f"{unquote(user)}:{unquote(password)}")
            except ValueError as exc:
                refuse(f"its user info {exc}")
        for item in parsed.query.split("&"):
            if not item:
                continue
            key, eq, value = item.partition("=")
            name = unquote(key)
            if not eq:
                hint = f" ({_ENCODE})" if "@" in item else ""
                refuse(f"its query holds an item that is not NAME=VALUE{hint}")
            if is_secret(name) and not unquote(value).strip():
                refuse(f"setting {name} is empty")
            if name == "basic.auth.user.info":
                try:
                    guards.check_basic_auth(unquote(value))
                except ValueError as exc:
                    refuse(f"setting {name} {exc}")


def client_config(url: str, **settings: Any) -> dict[str, Any]:
    """The ``SchemaRegistryClient`` configuration for a URL and keyword settings.

    ``timeout`` is :data:`DEFAULT_TIMEOUT` unless the URL or the settings give one.
    ``ValueError`` (:func:`check_url`) for a URL that is not one.
    """
    check_url(url)
    urls = []
    conf: dict[str, Any] = {}
    for part in url.split(","):
        parsed = urlparse(part.strip())
        conf.update(parse_qsl(parsed.query, keep_blank_values=True))
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
        value = conf.get(key)
        if isinstance(value, str):
            try:
                conf[key] = float(value) if "." in value else int(value)
            except ValueError:
                raise errors.RegistryURLError(
                    f"registry URL {redact_url(url)}: {key} must be a number, not {value!r}"
                ) from None
    conf.update(settings)
    conf.setdefault("timeout", DEFAULT_TIMEOUT)
    return conf


class NotARegistryError(errors.RegistryUnavailableError):
    """An answer that is not the registry API's: no JSON, or an error without Confluent's
    error code. The URL names something else (a web server, a proxy's error page), so this
    is no "not found" of a schema; like an unanswered request, it has no HTTP status."""


def _http_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """The exceptions of a request that got no answer, and those of one that could not be
    made (a URL the library refuses, ...), of whichever HTTP library the client uses
    (confluent-kafka prefers ``httpx2`` and falls back to ``httpx``)."""
    transport: list[type[BaseException]] = []
    failed: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        transport.append(module.TransportError)
        failed.extend(
            getattr(module, each)
            for each in ("HTTPError", "InvalidURL", "StreamError", "CookieConflict")
            if hasattr(module, each)
        )
    return tuple(transport), tuple(failed)


_TRANSPORT_ERRORS, _REQUEST_ERRORS = _http_errors()
#: What else a request may raise: the HTTP library refusing it, a value it cannot send.
_UNSENT: tuple[type[BaseException], ...] = (*_REQUEST_ERRORS, ValueError)


def _answering(rest_client: Any) -> None:
    """Make the failures of ``rest_client`` to get a registry's answer one error type.

    A connection refused, a DNS failure, a TLS failure or a timeout (after the client's own
    retries and fail-over to the other URLs) becomes a :class:`RegistryUnavailableError`
    naming the registry without its credentials, rather than an ``httpx`` exception; so
    does a request the HTTP library refuses to make. An answer that is not the registry
    API's (not JSON, or an error without Confluent's error code: a web server's page) is
    a :class:`NotARegistryError`, never an error with the page's status (a 404 would read
    as "no such schema"). No message quotes a library's text unredacted, nor an answer.
    """
    send = rest_client.send_request
    base_urls = [str(u) for u in rest_client.base_urls]
    where = redact_url(",".join(base_urls))

    def send_request(url: str, method: str, *args: Any, **kwargs: Any) -> Any:
        request = f"{method} /{url.lstrip('/')}"
        try:
            return send(url, method, *args, **kwargs)
        except errors.SchemaRegistryError as exc:
            code, status = exc.error_code, exc.http_status_code
            if isinstance(code, int) and code > 0:
                raise
            if status in (401, 403):
                problem = f"refused {request} (HTTP {status}): check the credentials"
            else:
                problem = f"answered {request} with HTTP {status} and no registry error"
            raise NotARegistryError(
                f"{where} is not a schema registry, or not at this URL: it {problem}"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise NotARegistryError(
                f"{where} is not a schema registry, or not at this URL: it answered {request} "
                "with something that is not JSON"
            ) from None
        except _TRANSPORT_ERRORS as exc:
            detail = redact_line(str(exc), urls=base_urls) or "no answer"
            raise errors.RegistryUnavailableError(
                f"schema registry {where} did not answer {request}: {type(exc).__name__}: {detail}"
            ) from None
        except _UNSENT as exc:
            # the library's text may quote the URL's parts: a password cut at a delimiter
            raise errors.RegistryUnavailableError(
                f"schema registry {where}: {request} could not be sent ({type(exc).__name__})"
            ) from None

    rest_client.send_request = send_request


def _check_files(url: str, conf: dict[str, Any]) -> None:
    """``ValueError`` naming a TLS file setting whose file cannot be read (before the client
    loads it: its error would name no file)."""
    for key in _TLS_FILES:
        path = conf.get(key)
        if not isinstance(path, str):
            continue
        try:
            if os.path.isdir(path):
                os.listdir(path)
            else:
                with open(path, "rb"):
                    pass
        except OSError as exc:
            raise errors.RegistryURLError(
                f"registry URL {redact_url(url)}: {key} {path}: cannot be read "
                f"({exc.strerror or type(exc).__name__})"
            ) from None


class ConfluentRegistry(SchemaRegistry):
    """A remote Confluent-compatible schema registry: confluent-kafka's client, fresh answers."""

    def __init__(self, url: str, **settings: Any):
        self.url = url
        conf = client_config(url, **settings)
        self._cache_latest = "cache.latest.ttl.sec" in conf
        self._by_format: dict[tuple[int, str], Schema] = {}
        _check_files(url, conf)
        try:
            SchemaRegistryClient.__init__(self, conf)
        except (TypeError, ValueError) as exc:
            detail = redact_line(str(exc), urls=[url], secrets=_secrets(conf))
            raise errors.RegistryURLError(f"registry URL {redact_url(url)}: {detail}") from None
        except OSError as exc:  # ssl.SSLError: a certificate or key that does not load
            detail = redact_line(str(exc), urls=[url], secrets=_secrets(conf))
            raise errors.RegistryURLError(
                f"registry URL {redact_url(url)}: its TLS settings cannot be loaded ({detail})"
            ) from None
        _answering(self._rest_client)

    def get_schema(
        self,
        schema_id: int,
        subject_name: str | None = None,
        fmt: str | None = None,
        reference_format: str | None = None,
    ) -> Schema:
        if fmt is None:
            return super().get_schema(schema_id, subject_name, fmt, reference_format)
        # The client's cache keys schemas by id alone: a schema asked for in another format
        # (Protobuf's "serialized") would come back as first fetched. Cached apart.
        found = self._by_format.get((schema_id, fmt))
        if found is None:
            response = self._rest_client.get(f"schemas/ids/{schema_id}", {"format": fmt})
            found = self._by_format[(schema_id, fmt)] = RegisteredSchema.from_dict(response).schema
        return found

    def register_schema_full_response(
        self,
        subject_name: str,
        schema: Schema,
        normalize_schemas: bool = False,
        *,
        schema_id: int | None = None,
        version: int | None = None,
    ) -> RegisteredSchema:
        # Always asked of the server: a cached answer could outlive a deleted subject.
        body = schema.to_dict()
        if schema_id is not None:
            body["id"] = schema_id
        if version is not None:
            body["version"] = version
        response = self._rest_client.post(
            f"subjects/{_quote(subject_name)}/versions?normalize={normalize_schemas}", body=body
        )
        registered = RegisteredSchema.from_dict(response)
        registered = with_schema(
            registered,
            schema if registered.schema.schema_str is None else registered.schema,
            registered.subject or subject_name,
        )
        self._cache.set_schema(None, registered.schema_id, registered.guid, registered.schema)
        return registered

    def get_version(
        self,
        subject_name: str,
        version: int | Literal["latest"] = "latest",
        deleted: bool = False,
        fmt: str | None = None,
    ) -> RegisteredSchema:
        number = version_number(version)
        query: dict[str, Any] = {"deleted": deleted}
        if fmt is not None:
            query["format"] = fmt
        target = "latest" if number == -1 else number
        response = self._rest_client.get(
            f"subjects/{_quote(subject_name)}/versions/{target}", query
        )
        return RegisteredSchema.from_dict(response)

    def get_latest_version(self, subject_name: str, fmt: str | None = None) -> RegisteredSchema:
        if self._cache_latest:
            return super().get_latest_version(subject_name, fmt)
        return self.get_version(subject_name, "latest", fmt=fmt)

    def lookup_schema(
        self,
        subject_name: str,
        schema: Schema,
        normalize_schemas: bool = False,
        fmt: str | None = None,
        deleted: bool = False,
    ) -> RegisteredSchema:
        query = f"normalize={normalize_schemas}&deleted={deleted}"
        if fmt is not None:
            query += f"&format={quote(fmt)}"
        response = self._rest_client.post(
            f"subjects/{_quote(subject_name)}?{query}", body=schema.to_dict()
        )
        return with_schema(RegisteredSchema.from_dict(response), schema)

    # confluent-kafka sends deleted_only; Confluent's server reads deletedOnly

    def get_subjects(
        self,
        subject_prefix: str | None = None,
        deleted: bool = False,
        deleted_only: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[str]:
        query: dict[str, Any] = {
            "deleted": deleted,
            "deletedOnly": deleted_only,
            "offset": offset,
            "limit": limit,
        }
        if subject_prefix is not None:
            query["subjectPrefix"] = subject_prefix
        return list(self._rest_client.get("subjects", query))

    def get_versions(
        self,
        subject_name: str,
        deleted: bool = False,
        deleted_only: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[int]:
        query = {"deleted": deleted, "deletedOnly": deleted_only, "offset": offset, "limit": limit}
        return list(self._rest_client.get(f"subjects/{_quote(subject_name)}/versions", query))

    def delete_version(
        self, subject_name: str, version: int | Literal["latest"], permanent: bool = False
    ) -> int:
        number = version_number(version)
        target = "latest" if number == -1 else number
        suffix = "?permanent=true" if permanent else ""
        return int(
            self._rest_client.delete(f"subjects/{_quote(subject_name)}/versions/{target}{suffix}")
        )

    def get_compatibility(
        self, subject_name: str | None = None, *, default_to_global: bool = False
    ) -> str:
        config = self.get_config(subject_name, default_to_global=default_to_global)
        level = config.compatibility_level or config.compatibility
        return "" if level is None else str(level.value)

    def set_compatibility(self, subject_name: str | None = None, level: str | None = None) -> str:
        # The client answers the response body (a dict), not the level its signature names.
        result: Any = super().set_compatibility(subject_name, level)
        return str(result["compatibility"]) if isinstance(result, dict) else str(result)

    def get_config(
        self, subject_name: str | None = None, *, default_to_global: bool = False
    ) -> ServerConfig:
        path = "config" if subject_name is None else f"config/{_quote(subject_name)}"
        query = {"defaultToGlobal": "true"} if default_to_global else None
        return ServerConfig.from_dict(self._rest_client.get(path, query))

    def set_config(
        self, subject_name: str | None = None, config: ServerConfig | None = None
    ) -> ServerConfig:
        if config is not None and config.compatibility is None:
            # Confluent's PUT /config reads the level from "compatibility" only (and ignores
            # "compatibilityLevel", which confluent-kafka sends for compatibility_level)
            config = ServerConfig(
                compatibility=config.compatibility_level,
                compatibility_level=config.compatibility_level,
                compatibility_group=config.compatibility_group,
                default_metadata=config.default_metadata,
                override_metadata=config.override_metadata,
                default_rule_set=config.default_rule_set,
                override_rule_set=config.override_rule_set,
            )
        result: Any = super().set_config(subject_name, config)
        return ServerConfig.from_dict(result) if isinstance(result, dict) else result

    def config_document(
        self, subject_name: str | None = None, *, default_to_global: bool = False
    ) -> dict[str, Any]:
        path = "config" if subject_name is None else f"config/{_quote(subject_name)}"
        query = {"defaultToGlobal": "true"} if default_to_global else None
        return dict(self._rest_client.get(path, query))

    def update_config(
        self, subject_name: str | None, level: str | None, changes: dict[str, Any]
    ) -> dict[str, Any]:
        path = "config" if subject_name is None else f"config/{_quote(subject_name)}"
        body = {**({} if level is None else {"compatibility": level}), **changes}
        return dict(self._rest_client.put(path, body))

    def get_mode(self, subject_name: str | None, *, default_to_global: bool = False) -> str:
        path = "mode" if subject_name is None else f"mode/{_quote(subject_name)}"
        query = {"defaultToGlobal": "true"} if default_to_global else None
        return str(self._rest_client.get(path, query)["mode"])

    def update_mode(self, subject_name: str | None, mode: str, force: bool = False) -> str:
        if subject_name is None:
            return self.update_global_mode(mode, force)
        return str(SchemaRegistryClient.update_mode(self, subject_name, mode, force))

    def delete_mode(self, subject_name: str | None) -> str:
        path = "mode" if subject_name is None else f"mode/{_quote(subject_name)}"
        return str(self._rest_client.delete(path)["mode"])

    def get_referenced_by(
        self,
        subject_name: str,
        version: int | Literal["latest"] = "latest",
        offset: int = 0,
        limit: int = -1,
        *,
        deleted: bool = False,
    ) -> list[int]:
        number = version_number(version)
        target = "latest" if number == -1 else number
        query = {"offset": offset, "limit": limit, "deleted": deleted}
        return [
            int(i)
            for i in self._rest_client.get(
                f"subjects/{_quote(subject_name)}/versions/{target}/referencedby", query
            )
        ]

    def compatibility_problems(
        self,
        subject_name: str,
        schema: Schema,
        version: Version | None = "latest",
        normalize: bool = False,
    ) -> list[str]:
        # The client's own test_compatibility drops the reasons; ask for them (verbose).
        if version is None:
            target = "versions"
        else:
            number = version_number(version)
            target = f"versions/{'latest' if number == -1 else number}"
        response = self._rest_client.post(
            f"compatibility/subjects/{_quote(subject_name)}/{target}"
            f"?verbose=true&normalize={normalize}",
            body=schema.to_dict(),
        )
        if response.get("is_compatible"):
            return []
        return [str(m) for m in response.get("messages") or ["incompatible"]]

    def get_schemas(
        self,
        subject_prefix: str = "",
        deleted: bool = False,
        latest_only: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[RegisteredSchema]:
        query = {
            "subjectPrefix": subject_prefix,
            "deleted": deleted,
            "latestOnly": latest_only,
            "offset": offset,
            "limit": limit,
        }
        return [RegisteredSchema.from_dict(s) for s in self._rest_client.get("schemas", query)]

    def get_max_schema_id(self) -> int:
        """The highest id, as Confluent answers ``fetchMaxId`` (asked alongside schema 1)."""
        try:
            response = self._rest_client.get("schemas/ids/1", {"fetchMaxId": "true"})
        except errors.SchemaRegistryError as exc:
            if exc.error_code == 40403:
                return 0
            raise
        return int(response.get("maxId") or 0)


def _secrets(conf: dict[str, Any]) -> list[str]:
    """The values of secret settings, to scrub out of a message."""
    return [str(v) for k, v in conf.items() if is_secret(str(k)) and v]


def _quote(subject: str) -> str:
    return quote(subject, safe="")
