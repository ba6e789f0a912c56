"""What stands before the registry's REST API: authentication and request limits.

ASGI middleware for :func:`cdc_connectors.registry.server.create_app`: HTTP
basic auth (``user:password``) or a bearer token on every request.
"""

from __future__ import annotations

import base64
import hmac

from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send


def middleware(
    *, basic_auth: str | None = None, bearer_token: str | None = None
) -> list[Middleware]:
    """The middleware stack for the given credentials (none: an open registry)."""
    stack = []
    if basic_auth or bearer_token:
        stack.append(Middleware(AuthMiddleware, basic_auth=basic_auth, token=bearer_token))
    return stack


class AuthMiddleware:
    """Requires HTTP basic auth (``user:password``) or a bearer token on every request."""

    def __init__(self, app: ASGIApp, basic_auth: str | None, token: str | None):
        self.app = app
        self.basic = (
            f"Basic {base64.b64encode(basic_auth.encode()).decode()}" if basic_auth else None
        )
        self.token = f"Bearer {token}" if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            allowed = [a for a in (self.basic, self.token) if a]
            if not any(hmac.compare_digest(given, a) for a in allowed):
                from cdc_connectors.registry.server import RegistryResponse

                response = RegistryResponse(
                    {"error_code": 401, "message": "Unauthorized"},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Basic realm="cdc-connectors registry"'},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
