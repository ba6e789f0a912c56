"""The Confluent Schema Registry REST API over any registry (the embedded store by default).

``cdc-connectors registry serve`` runs it (:mod:`cdc_connectors.registry.serve`);
authentication and request limits are in :mod:`cdc_connectors.registry.guards`. Responses use
Confluent's content type and error bodies (``{"error_code": 40401,
"message": ...}``). Every write goes through the store's transactions, so a
bad request never leaves a half-written registration behind.

Protobuf schemas are served as stored (``.proto`` text or base64 descriptor);
``?format=serialized`` returns the base64 ``FileDescriptorProto`` either way,
which is what confluent-kafka's Protobuf deserializer asks for. Bad client input is
always a 4xx with Confluent's error code, never a 500. A subject may hold ``/``: clients
send it encoded (``a%2Fb``) and every subject route takes it (:class:`EncodedSlashes`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any, Literal
from urllib.parse import unquote, unquote_to_bytes

import orjson
from confluent_kafka.schema_registry.common.schema_registry_client import Metadata
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from cdc_connectors.options import parse_bool
from cdc_connectors.registry import errors, guards, settings
from cdc_connectors.registry.base import (
    LATEST,
    LEVELS,
    MAX_ID,
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistry,
    ServerConfig,
    version_number,
)
from cdc_connectors.registry.guards import CONTENT_TYPE

log = logging.getLogger(__name__)


class RegistryResponse(Response):
    media_type = CONTENT_TYPE

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


# set on a request whose path parameters are escaped by ``EncodedSlashes``
_ESCAPED = "cdc_connectors.escaped_path"


class EncodedSlashes:
    """Routes a path by its segments as sent, so a subject may hold an encoded ``/``.

    The server decodes ``%2F`` before routing: ``/subjects/a%2Fb/versions`` would be
    ``/subjects/a/b/versions``, a path no route has. For a path holding ``%2F``, this
    rewrites the path the router sees with each segment decoded except ``%`` and ``/``
    (``%25``, ``%2F``); the endpoint decodes those in its path parameters. Other paths are
    left as they are.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if isinstance(raw, bytes) and b"%2f" in raw.lower():
            segments = [unquote_to_bytes(s).decode("utf-8", "replace") for s in raw.split(b"/")]
            # only when the server's path is the plain decoding of the raw one
            if "/".join(segments) == scope["path"]:
                escaped = (s.replace("%", "%25").replace("/", "%2F") for s in segments)
                scope = {**scope, "path": "/".join(escaped), _ESCAPED: True}
        await self.app(scope, receive, send)


#: Confluent's code for a request this registry could not get answered by the one behind it
#: (``REQUEST_FORWARDING_FAILED_ERROR_CODE``).
FORWARDING_FAILED = 50003


def _error(exc: errors.SchemaRegistryError) -> RegistryResponse:
    """Confluent's error body; an error without an HTTP error status is the 502 of a gateway.

    A registry client raises errors with no HTTP status (status -1, e.g.
    :class:`~cdc_connectors.registry.errors.RegistryUnavailableError`: the registry it
    talks to did not answer); these, and any status that is not an HTTP error status
    (400..599), are answered 502 with error code 50003, never passed to the response.
    """
    status, code = exc.http_status_code, exc.error_code
    if not (isinstance(status, int) and 400 <= status <= 599):
        status, code = 502, FORWARDING_FAILED
    return RegistryResponse({"error_code": code, "message": exc.error_message}, status)


# --- request parameters ---------------------------------------------------------------------


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name)
    if value is None:
        return False
    try:
        return parse_bool(value, f"query parameter {name}")
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None


def _number(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    if value is None:
        return default
    digits = value.removeprefix("-")
    if not (digits.isascii() and digits.isdigit() and len(digits) < 10):
        raise errors.bad_request(f"query parameter {name} must be an integer, not {value!r}")
    return int(value)


def _id(request: Request) -> int:
    """A schema id from the path; anything that is not one is an unknown schema (40403)."""
    raw = str(request.path_params["id"])
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 10 or int(raw) > MAX_ID:
        raise errors.schema_not_found(raw)
    return int(raw)


def _version(request: Request) -> int | Literal["latest"]:
    number = version_number(str(request.path_params["version"]))
    return "latest" if number == LATEST else number


def _json_body(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.unprocessable(f"Malformed JSON request body: {exc}") from None


def _optional_int(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.unprocessable(f"{key} must be an integer")
    return value if value >= 0 else None


def _config_body(raw: bytes) -> tuple[str | None, dict[str, Any]]:
    """The level a ``PUT /config`` body sets, and the other fields it sets or removes
    (:func:`~cdc_connectors.registry.settings.config_changes`).

    The level is ``compatibility``, as Confluent's ``ConfigUpdateRequest`` reads it, or
    ``compatibilityLevel``, which confluent-kafka's ``set_config`` sends for a
    ``ServerConfig(compatibility_level=...)``; in any case (``full`` is ``FULL``). A level
    that is not one, or two keys naming different levels, is 42203.
    """
    parsed = _json_body(raw)
    if not isinstance(parsed, dict):
        raise errors.unprocessable("The request body must be a JSON object")
    levels: dict[str, str] = {}
    for key in ("compatibility", "compatibilityLevel"):
        value = parsed.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or value.upper() not in LEVELS:
            raise errors.invalid_compatibility_level(value)
        levels[key] = value.upper()
    if len(set(levels.values())) > 1:
        raise errors.invalid_compatibility_level(
            f"compatibility {levels['compatibility']} and compatibilityLevel "
            f"{levels['compatibilityLevel']} differ"
        )
    level = levels.get("compatibility") or levels.get("compatibilityLevel")
    return level, settings.config_changes(parsed)


def _schema_body(raw: bytes) -> tuple[Schema, int | None, int | None]:
    """The schema of a request body, and the id and version it asks for (IMPORT mode)."""
    body = _json_body(raw)
    if not isinstance(body, dict):
        raise errors.unprocessable("The request body must be a JSON object")
    text = body.get("schema")
    if not isinstance(text, str) or not text.strip():
        raise errors.invalid_schema("Empty schema")
    refs = body.get("references") or []
    if not isinstance(refs, list) or not all(isinstance(r, dict) for r in refs):
        raise errors.unprocessable("references must be a list of objects")
    references = []
    for ref in refs:
        name, subject, version = ref.get("name"), ref.get("subject"), ref.get("version")
        if not (isinstance(name, str) and isinstance(subject, str)) or not isinstance(version, int):
            raise errors.unprocessable("a reference needs name, subject and version")
        references.append(SchemaReference(name, subject, version))
    schema_type = body.get("schemaType")
    if schema_type is None:
        schema_type = "AVRO"
    if not isinstance(schema_type, str):
        raise errors.invalid_schema(f"unknown schema type {schema_type!r}")
    version = _optional_int(body, "version")
    metadata = settings.metadata_dict(body.get("metadata"))
    schema = Schema(
        text,
        schema_type,
        references,
        metadata=None if metadata is None else Metadata.from_dict(metadata),
    )
    return schema, _optional_int(body, "id"), version or None


# --- response bodies ------------------------------------------------------------------------


def _schema_dict(schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {"schemaType": schema.schema_type or "AVRO", "schema": schema.schema_str}
    if schema.references:
        out["references"] = [
            {"name": r.name, "subject": r.subject, "version": r.version} for r in schema.references
        ]
    metadata = schema.metadata
    if metadata is not None:
        out["metadata"] = settings.metadata_dict(metadata.to_dict())
    return out


def _registered_dict(registered: RegisteredSchema) -> dict[str, Any]:
    out: dict[str, Any] = {
        "subject": registered.subject,
        "version": registered.version,
        "id": registered.schema_id,
    }
    if registered.guid:
        out["guid"] = registered.guid
    out.update(_schema_dict(registered.schema))
    return out


def _level(config: ServerConfig) -> str:
    level = config.compatibility_level or config.compatibility
    return "" if level is None else str(level.value)


def _server_version() -> str:
    try:
        return package_version("cdc-connectors")
    except PackageNotFoundError:
        return "unknown"


def create_app(
    registry: SchemaRegistry,
    *,
    basic_auth: str | None = None,
    bearer_token: str | None = None,
    max_body: int = guards.DEFAULT_MAX_BODY,
) -> Starlette:
    """The ASGI app serving ``registry``: optional basic auth (``user:password``) or token,
    request bodies up to ``max_body`` bytes."""
    return Starlette(
        routes=_routes(_Api(registry)),
        middleware=[
            Middleware(EncodedSlashes),
            *guards.middleware(basic_auth=basic_auth, bearer_token=bearer_token, max_body=max_body),
        ],
        exception_handlers={HTTPException: _http_error},
    )


def _endpoint(fn: Callable[[Request, bytes], Any]) -> Callable[[Request], Awaitable[Response]]:
    """An ASGI endpoint running ``fn(request, body)`` off the event loop (the store blocks)."""

    async def handle(request: Request) -> Response:
        if request.scope.get(_ESCAPED):
            request.scope["path_params"] = {
                k: unquote(v) if isinstance(v, str) else v for k, v in request.path_params.items()
            }
        body = await request.body()
        try:
            result = await run_in_threadpool(fn, request, body)
        except errors.SchemaRegistryError as exc:
            return _error(exc)
        except RecursionError:
            return _error(errors.invalid_schema("the request nests too deeply to be processed"))
        except Exception as exc:
            # Confluent's answer to a server fault; the traceback goes to the log.
            log.exception("%s %s failed", request.method, request.url.path)
            return _error(errors.SchemaRegistryError(500, 50001, f"Error in the backend: {exc}"))
        return result if isinstance(result, Response) else RegistryResponse(result)

    return handle


def _page(request: Request) -> dict[str, int]:
    """The ``offset`` and ``limit`` query parameters of a listing."""
    return {"offset": _number(request, "offset", 0), "limit": _number(request, "limit", -1)}


class _Api:
    """The REST API's operations on one registry: each takes the request and its body and
    returns the JSON answer (or a :class:`Response`); :func:`_endpoint` runs them."""

    def __init__(self, registry: SchemaRegistry):
        self.registry = registry

    def root(self, request: Request, body: bytes) -> Any:
        return {}

    def schemas(self, request: Request, body: bytes) -> Any:
        found = self.registry.get_schemas(
            request.query_params.get("subjectPrefix", ""),
            deleted=_flag(request, "deleted"),
            latest_only=_flag(request, "latestOnly"),
            **_page(request),
        )
        return [_registered_dict(s) for s in found]

    def schema_types(self, request: Request, body: bytes) -> Any:
        return self.registry.get_schema_types()

    def schema_by_id(self, request: Request, body: bytes) -> Any:
        schema_id = _id(request)
        schema = self.registry.get_schema(schema_id, fmt=request.query_params.get("format"))
        out = _schema_dict(schema)
        guid = getattr(self.registry, "get_schema_guid", None)
        if guid is not None:
            out["guid"] = guid(schema_id)
        if _flag(request, "fetchMaxId"):
            out["maxId"] = self.registry.get_max_schema_id()
        return out

    def schema_by_guid(self, request: Request, body: bytes) -> Any:
        schema = self.registry.get_schema_by_guid(
            request.path_params["guid"], fmt=request.query_params.get("format")
        )
        return _schema_dict(schema)

    def schema_text_by_id(self, request: Request, body: bytes) -> Any:
        schema = self.registry.get_schema(_id(request), fmt=request.query_params.get("format"))
        return Response(schema.schema_str, media_type=CONTENT_TYPE)

    def id_versions(self, request: Request, body: bytes) -> Any:
        found = self.registry.get_schema_versions(
            _id(request),
            request.query_params.get("subject"),
            deleted=_flag(request, "deleted"),
            **_page(request),
        )
        return [{"subject": v.subject, "version": v.version} for v in found]

    def id_subjects(self, request: Request, body: bytes) -> Any:
        return self.registry.get_subjects_by_schema_id(
            _id(request),
            request.query_params.get("subject"),
            deleted=_flag(request, "deleted"),
            **_page(request),
        )

    def subjects(self, request: Request, body: bytes) -> Any:
        return self.registry.get_subjects(
            request.query_params.get("subjectPrefix"),
            deleted=_flag(request, "deleted"),
            deleted_only=_flag(request, "deletedOnly"),
            **_page(request),
        )

    def subject_versions(self, request: Request, body: bytes) -> Any:
        return self.registry.get_versions(
            request.path_params["subject"],
            deleted=_flag(request, "deleted"),
            deleted_only=_flag(request, "deletedOnly"),
            **_page(request),
        )

    def subject_version(self, request: Request, body: bytes) -> Any:
        registered = self.registry.get_version(
            request.path_params["subject"],
            _version(request),
            deleted=_flag(request, "deleted"),
            fmt=request.query_params.get("format"),
        )
        return _registered_dict(registered)

    def subject_version_schema(self, request: Request, body: bytes) -> Any:
        registered = self.registry.get_version(
            request.path_params["subject"],
            _version(request),
            deleted=_flag(request, "deleted"),
            fmt=request.query_params.get("format"),
        )
        return Response(registered.schema.schema_str, media_type=CONTENT_TYPE)

    def referenced_by(self, request: Request, body: bytes) -> Any:
        return self.registry.get_referenced_by(
            request.path_params["subject"],
            _version(request),
            deleted=_flag(request, "deleted"),
            **_page(request),
        )

    def register(self, request: Request, body: bytes) -> Any:
        schema, schema_id, version = _schema_body(body)
        registered = self.registry.register_schema_full_response(
            request.path_params["subject"],
            schema,
            normalize_schemas=_flag(request, "normalize"),
            schema_id=schema_id,
            version=version,
        )
        return _registered_dict(registered)

    def lookup(self, request: Request, body: bytes) -> Any:
        parsed = _json_body(body)
        text = parsed.get("schema") if isinstance(parsed, dict) else None
        if isinstance(text, str) and not text.strip():
            raise errors.schema_not_found()  # Confluent's answer: no such schema
        schema, _, _ = _schema_body(body)
        registered = self.registry.lookup_schema(
            request.path_params["subject"],
            schema,
            normalize_schemas=_flag(request, "normalize"),
            fmt=request.query_params.get("format"),
            deleted=_flag(request, "deleted"),
        )
        return _registered_dict(registered)

    def delete_subject(self, request: Request, body: bytes) -> Any:
        return self.registry.delete_subject(
            request.path_params["subject"], permanent=_flag(request, "permanent")
        )

    def delete_version(self, request: Request, body: bytes) -> Any:
        return self.registry.delete_version(
            request.path_params["subject"],
            _version(request),
            permanent=_flag(request, "permanent"),
        )

    def config(self, request: Request, body: bytes) -> Any:
        subject = request.path_params.get("subject")
        if request.method == "PUT":
            # without a change, nothing changes, but it is refused as a change would be
            # (read-only mode); Confluent answers the scope's config as it now is
            level, changes = _config_body(body)
            return self.registry.update_config(subject, level, changes)
        if request.method == "DELETE":
            return {"compatibilityLevel": _level(self.registry.delete_config(subject))}
        return self.registry.config_document(
            subject, default_to_global=_flag(request, "defaultToGlobal")
        )

    def mode(self, request: Request, body: bytes) -> Any:
        subject = request.path_params.get("subject")
        if request.method == "PUT":
            parsed = _json_body(body)
            wanted = parsed.get("mode") if isinstance(parsed, dict) else None
            if not isinstance(wanted, str):
                raise errors.invalid_mode(wanted)
            return {
                "mode": self.registry.update_mode(subject, wanted, force=_flag(request, "force"))
            }
        if request.method == "DELETE":
            return {"mode": self.registry.delete_mode(subject)}
        return {
            "mode": self.registry.get_mode(
                subject, default_to_global=_flag(request, "defaultToGlobal")
            )
        }

    def compatibility(self, request: Request, body: bytes) -> Any:
        schema, _, _ = _schema_body(body)
        version = _version(request) if "version" in request.path_params else None
        verbose = _flag(request, "verbose")
        try:
            problems = self.registry.compatibility_problems(
                request.path_params["subject"], schema, version, _flag(request, "normalize")
            )
        except errors.SchemaRegistryError as exc:
            if not (verbose and exc.error_code == 42201):
                raise
            problems = [exc.error_message]
        result: dict[str, Any] = {"is_compatible": not problems}
        if verbose:
            result["messages"] = problems
        return result

    def contexts(self, request: Request, body: bytes) -> Any:
        return self.registry.get_contexts(**_page(request))

    def metadata_id(self, request: Request, body: bytes) -> Any:
        clusters = {"kafka-cluster": "", "schema-registry-cluster": "schema-registry"}
        return {"id": "", "scope": {"path": [], "clusters": clusters}}

    def metadata_version(self, request: Request, body: bytes) -> Any:
        return {"version": _server_version(), "commitId": ""}


def _routes(api: _Api) -> list[Route]:
    """Confluent's REST paths, each to its operation."""
    endpoint = _endpoint
    versions = "/subjects/{subject}/versions"
    routes = [
        Route("/", endpoint(api.root)),
        Route("/schemas", endpoint(api.schemas)),
        Route("/schemas/types", endpoint(api.schema_types)),
        Route("/schemas/ids/{id}", endpoint(api.schema_by_id)),
        Route("/schemas/ids/{id}/schema", endpoint(api.schema_text_by_id)),
        Route("/schemas/ids/{id}/versions", endpoint(api.id_versions)),
        Route("/schemas/ids/{id}/subjects", endpoint(api.id_subjects)),
        Route("/schemas/guids/{guid}", endpoint(api.schema_by_guid)),
        Route("/subjects", endpoint(api.subjects)),
        Route("/subjects/{subject}", endpoint(api.lookup), methods=["POST"]),
        Route("/subjects/{subject}", endpoint(api.delete_subject), methods=["DELETE"]),
        Route(versions, endpoint(api.subject_versions), methods=["GET"]),
        Route(versions, endpoint(api.register), methods=["POST"]),
        Route(versions + "/{version}", endpoint(api.subject_version), methods=["GET"]),
        Route(versions + "/{version}", endpoint(api.delete_version), methods=["DELETE"]),
        Route(versions + "/{version}/schema", endpoint(api.subject_version_schema)),
        Route(versions + "/{version}/referencedby", endpoint(api.referenced_by)),
        Route("/config", endpoint(api.config), methods=["GET", "PUT", "DELETE"]),
        Route("/config/{subject}", endpoint(api.config), methods=["GET", "PUT", "DELETE"]),
        Route("/mode", endpoint(api.mode), methods=["GET", "PUT", "DELETE"]),
        Route("/mode/{subject}", endpoint(api.mode), methods=["GET", "PUT", "DELETE"]),
        Route(
            "/compatibility/subjects/{subject}/versions/{version}",
            endpoint(api.compatibility),
            methods=["POST"],
        ),
        Route(
            "/compatibility/subjects/{subject}/versions",
            endpoint(api.compatibility),
            methods=["POST"],
        ),
        Route("/contexts", endpoint(api.contexts)),
        Route("/v1/metadata/id", endpoint(api.metadata_id)),
        Route("/v1/metadata/version", endpoint(api.metadata_version)),
    ]
    return routes


async def _http_error(request: Request, exc: Exception) -> Response:
    """Unknown paths and methods, answered with Confluent's error body."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
    return RegistryResponse({"error_code": status, "message": f"HTTP {status} {detail}"}, status)


__all__ = ["CONTENT_TYPE", "RegistryResponse", "create_app"]
