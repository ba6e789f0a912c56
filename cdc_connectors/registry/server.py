"""The Confluent Schema Registry REST API over any registry (the embedded store by default).

``cdc-connectors registry serve`` runs it (:mod:`cdc_connectors.registry.serve`);
authentication and request limits are in :mod:`cdc_connectors.registry.guards`. Responses use
Confluent's content type and error bodies (``{"error_code": 40401,
"message": ...}``). Every write goes through the store's transactions, so a
bad request never leaves a half-written registration behind.

Protobuf schemas are served as stored (``.proto`` text or base64 descriptor);
``?format=serialized`` returns the base64 ``FileDescriptorProto`` either way,
which is what confluent-kafka's Protobuf deserializer asks for.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cdc_connectors.registry import errors, guards
from cdc_connectors.registry.base import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistry,
)
from cdc_connectors.schema import protobuf
from cdc_connectors.schema.errors import SchemaError

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
log = logging.getLogger(__name__)


class RegistryResponse(Response):
    media_type = CONTENT_TYPE

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def _error(exc: errors.SchemaRegistryError) -> RegistryResponse:
    return RegistryResponse(
        {"error_code": exc.error_code, "message": exc.error_message},
        status_code=exc.http_status_code,
    )


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").strip().lower() in {"true", "1", "yes"}


def _id(request: Request) -> int:
    try:
        return int(request.path_params["id"])
    except ValueError:
        raise errors.schema_not_found(f"Schema {request.path_params['id']} not found") from None


def _version(request: Request) -> int | str:
    raw = str(request.path_params["version"])
    if raw == "latest":
        return raw
    try:
        return int(raw)
    except ValueError:
        raise errors.invalid_version(raw) from None


def _schema_body(raw: bytes) -> Schema:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.unprocessable(f"Malformed JSON request body: {exc}") from None
    if not isinstance(body, dict):
        raise errors.unprocessable("The request body must be a JSON object")
    text = body.get("schema")
    if not isinstance(text, str) or not text.strip():
        raise errors.invalid_schema("Empty schema")
    refs = body.get("references") or []
    if not isinstance(refs, list) or not all(isinstance(r, dict) for r in refs):
        raise errors.unprocessable("references must be a list of objects")
    try:
        references = [SchemaReference(r["name"], r["subject"], int(r["version"])) for r in refs]
    except (KeyError, TypeError, ValueError):
        raise errors.unprocessable("a reference needs name, subject and version") from None
    schema_type = body.get("schemaType") or "AVRO"
    if not isinstance(schema_type, str):
        raise errors.unprocessable("schemaType must be a string")
    return Schema(text, schema_type.upper(), references)


def _schema_dict(schema: Schema, registry: SchemaRegistry, fmt: str | None) -> dict[str, Any]:
    text = schema.schema_str or ""
    if fmt == "serialized" and schema.schema_type == "PROTOBUF":
        text = _serialized_protobuf(schema, registry)
    out: dict[str, Any] = {"schema": text}
    if schema.schema_type and schema.schema_type != "AVRO":
        out["schemaType"] = schema.schema_type
    if schema.references:
        out["references"] = [
            {"name": r.name, "subject": r.subject, "version": r.version} for r in schema.references
        ]
    return out


def _serialized_protobuf(schema: Schema, registry: SchemaRegistry) -> str:
    if protobuf.parse_serialized(schema.schema_str or "") is not None:
        return schema.schema_str or ""
    deps: dict[str, str] = {}

    def collect(refs: list[SchemaReference]) -> None:
        for ref in refs:
            if ref.name in deps:
                continue
            target = registry.get_version(str(ref.subject), int(ref.version or 0)).schema
            collect(list(target.references or []))
            deps[str(ref.name)] = target.schema_str or ""

    collect(list(schema.references or []))
    try:
        return protobuf.serialized(protobuf.compile_schema(schema.schema_str or "", deps))
    except SchemaError as exc:
        raise errors.invalid_schema(str(exc)) from None


def _registered_dict(
    registered: RegisteredSchema, registry: SchemaRegistry, fmt: str | None = None
) -> dict[str, Any]:
    out = {"subject": registered.subject, "version": registered.version, "id": registered.schema_id}
    if registered.guid:
        out["guid"] = registered.guid
    out.update(_schema_dict(registered.schema, registry, fmt))
    return out


def create_app(
    registry: SchemaRegistry,
    *,
    basic_auth: str | None = None,
    bearer_token: str | None = None,
) -> Starlette:
    """The ASGI app serving ``registry``; optional basic auth (``user:password``) or token."""

    def endpoint(fn: Callable[[Request, bytes], Any]) -> Callable[[Request], Awaitable[Response]]:
        """An ASGI endpoint running ``fn(request, body)`` off the event loop (the store blocks)."""

        async def handle(request: Request) -> Response:
            body = await request.body()
            try:
                result = await run_in_threadpool(fn, request, body)
            except errors.SchemaRegistryError as exc:
                return _error(exc)
            except Exception as exc:
                # Confluent's answer to a server fault; the traceback goes to the log.
                log.exception("%s %s failed", request.method, request.url.path)
                return _error(
                    errors.SchemaRegistryError(500, 50001, f"Error in the backend: {exc}")
                )
            return result if isinstance(result, Response) else RegistryResponse(result)

        return handle

    r = registry

    def root(request: Request, body: bytes) -> Any:
        return {}

    def schema_types(request: Request, body: bytes) -> Any:
        return r.get_schema_types()

    def schema_by_id(request: Request, body: bytes) -> Any:
        schema = r.get_schema(_id(request))
        return _schema_dict(schema, r, request.query_params.get("format"))

    def schema_by_guid(request: Request, body: bytes) -> Any:
        schema = r.get_schema_by_guid(request.path_params["guid"])
        return _schema_dict(schema, r, request.query_params.get("format"))

    def schema_text_by_id(request: Request, body: bytes) -> Any:
        return Response(r.get_schema(_id(request)).schema_str, media_type=CONTENT_TYPE)

    def id_versions(request: Request, body: bytes) -> Any:
        return [
            {"subject": v.subject, "version": v.version}
            for v in r.get_schema_versions(_id(request))
        ]

    def id_subjects(request: Request, body: bytes) -> Any:
        return sorted({v.subject for v in r.get_schema_versions(_id(request))})

    def subjects(request: Request, body: bytes) -> Any:
        return r.get_subjects(deleted=_flag(request, "deleted"))

    def subject_versions(request: Request, body: bytes) -> Any:
        return r.get_versions(request.path_params["subject"], deleted=_flag(request, "deleted"))

    def subject_version(request: Request, body: bytes) -> Any:
        registered = r.get_version(
            request.path_params["subject"], _version(request), deleted=_flag(request, "deleted")
        )
        return _registered_dict(registered, r, request.query_params.get("format"))

    def subject_version_schema(request: Request, body: bytes) -> Any:
        registered = r.get_version(request.path_params["subject"], _version(request))
        return Response(registered.schema.schema_str, media_type=CONTENT_TYPE)

    def register(request: Request, body: bytes) -> Any:
        schema = _schema_body(body)
        registered = r.register_schema(
            request.path_params["subject"], schema, normalize=_flag(request, "normalize")
        )
        return _registered_dict(registered, r)

    def lookup(request: Request, body: bytes) -> Any:
        schema = _schema_body(body)
        registered = r.lookup_schema(
            request.path_params["subject"], schema, deleted=_flag(request, "deleted")
        )
        return _registered_dict(registered, r)

    def delete_subject(request: Request, body: bytes) -> Any:
        return r.delete_subject(
            request.path_params["subject"], permanent=_flag(request, "permanent")
        )

    def delete_version(request: Request, body: bytes) -> Any:
        return r.delete_version(
            request.path_params["subject"], _version(request), permanent=_flag(request, "permanent")
        )

    def _level_body(raw: bytes) -> str:
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.unprocessable(f"Malformed JSON request body: {exc}") from None
        level = parsed.get("compatibility") if isinstance(parsed, dict) else None
        if not isinstance(level, str):
            raise errors.invalid_compatibility_level(level)
        return level

    def global_config(request: Request, body: bytes) -> Any:
        if request.method == "PUT":
            return {"compatibility": r.set_compatibility(_level_body(body))}
        return {"compatibilityLevel": r.get_compatibility()}

    def subject_config(request: Request, body: bytes) -> Any:
        subject = request.path_params["subject"]
        if request.method == "PUT":
            return {"compatibility": r.set_compatibility(_level_body(body), subject)}
        if request.method == "DELETE":
            return {"compatibilityLevel": r.delete_compatibility(subject)}
        level = r.get_compatibility(subject, default_to_global=_flag(request, "defaultToGlobal"))
        return {"compatibilityLevel": level}

    def compatibility(request: Request, body: bytes) -> Any:
        schema = _schema_body(body)
        version = _version(request) if "version" in request.path_params else None
        problems = r.test_compatibility(request.path_params["subject"], schema, version)
        result: dict[str, Any] = {"is_compatible": not problems}
        if _flag(request, "verbose"):
            result["messages"] = problems
        return result

    def mode(request: Request, body: bytes) -> Any:
        return {"mode": "READWRITE"}

    routes = [
        Route("/", endpoint(root)),
        Route("/schemas/types", endpoint(schema_types)),
        Route("/schemas/ids/{id}", endpoint(schema_by_id)),
        Route("/schemas/ids/{id}/schema", endpoint(schema_text_by_id)),
        Route("/schemas/ids/{id}/versions", endpoint(id_versions)),
        Route("/schemas/ids/{id}/subjects", endpoint(id_subjects)),
        Route("/schemas/guids/{guid}", endpoint(schema_by_guid)),
        Route("/subjects", endpoint(subjects)),
        Route("/subjects/{subject}", endpoint(lookup), methods=["POST"]),
        Route("/subjects/{subject}", endpoint(delete_subject), methods=["DELETE"]),
        Route("/subjects/{subject}/versions", endpoint(subject_versions), methods=["GET"]),
        Route("/subjects/{subject}/versions", endpoint(register), methods=["POST"]),
        Route("/subjects/{subject}/versions/{version}", endpoint(subject_version), methods=["GET"]),
        Route(
            "/subjects/{subject}/versions/{version}", endpoint(delete_version), methods=["DELETE"]
        ),
        Route("/subjects/{subject}/versions/{version}/schema", endpoint(subject_version_schema)),
        Route("/config", endpoint(global_config), methods=["GET", "PUT"]),
        Route("/config/{subject}", endpoint(subject_config), methods=["GET", "PUT", "DELETE"]),
        Route(
            "/compatibility/subjects/{subject}/versions/{version}",
            endpoint(compatibility),
            methods=["POST"],
        ),
        Route(
            "/compatibility/subjects/{subject}/versions", endpoint(compatibility), methods=["POST"]
        ),
        Route("/mode", endpoint(mode)),
    ]
    return Starlette(
        routes=routes,
        middleware=guards.middleware(basic_auth=basic_auth, bearer_token=bearer_token),
        exception_handlers={HTTPException: _http_error},
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    """Unknown paths and methods, answered with Confluent's error body."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
    return RegistryResponse({"error_code": status, "message": f"HTTP {status} {detail}"}, status)


__all__ = ["CONTENT_TYPE", "RegistryResponse", "create_app"]
