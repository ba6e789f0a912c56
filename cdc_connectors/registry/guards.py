"""What stands before the registry's REST API: authentication and request limits.

ASGI middleware for :func:`cdc_connectors.registry.server.create_app`:

- HTTP basic auth (``user:password``) and/or a bearer token on every request. An
  empty credential is refused when the app is built, never taken as "no auth";
  scheme names are case-insensitive (RFC 7235); credentials are compared in
  constant time. A wrong or missing credential gets 401 with Confluent's error
  body and a ``WWW-Authenticate`` challenge.
- A request body limit (16 MiB by default): a bigger body, announced by
  ``Content-Length`` or streamed in chunks, gets 413 before the app sees any of it.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from collections.abc import Sequence

import orjson
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY = 16 * 1024 * 1024
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
REALM = "cdc-connectors registry"
_CHECKED = "cdc_connectors.max_body"  # scope key: an outer limit already applies
_SIZE = re.compile(r"(\d+)\s*([kmg]?)(i?b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def middleware(
    *,
    basic_auth: str | None = None,
    bearer_token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> list[Middleware]:
    """The middleware stack: auth when a credential is given, then the body limit.

    Raises ``ValueError`` for an empty or malformed credential: a registry meant
    to be closed never starts open.
    """
    stack = []
    if basic_auth is not None or bearer_token is not None:
        check_basic_auth(basic_auth)
        check_token(bearer_token)
        stack.append(Middleware(AuthMiddleware, basic_auth=basic_auth, token=bearer_token))
    stack.append(Middleware(BodyLimitMiddleware, max_body=max_body))
    return stack


def check_basic_auth(value: str | None) -> None:
    """Raise ``ValueError`` unless ``value`` is None or ``USER:PASSWORD`` with neither empty.

    The message never repeats the value.
    """
    if value is None:
        return
    if not value.strip():
        raise ValueError("is empty: give USER:PASSWORD")
    user, colon, password = value.partition(":")
    if not colon:
        raise ValueError("is not USER:PASSWORD (no ':')")
    if not user.strip():
        raise ValueError("has an empty user name: give USER:PASSWORD")
    if not password.strip():
        raise ValueError("has an empty password: give USER:PASSWORD")


def check_token(value: str | None) -> None:
    """Raise ``ValueError`` unless ``value`` is None or a token that fits an HTTP header."""
    if value is None:
        return
    if not value.strip():
        raise ValueError("is empty: give a bearer token")
    if not all("!" <= c <= "~" for c in value):
        raise ValueError("must be printable ASCII without spaces (it travels in a header)")


def parse_size(text: str) -> int:
    """Bytes from ``1048576``, ``512k``, ``16M``, ``16MiB``, ``1G`` (binary units); >= 1."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a size (bytes, or with a unit: 512k, 16M, 1G)")
    size = int(match[1]) * _UNITS[match[2].lower()]
    if size < 1:
        raise ValueError(f"{text!r} is not a size of at least one byte")
    return size


async def _send_error(send: Send, status: int, message: str, headers: Sequence[str] = ()) -> None:
    body = orjson.dumps({"error_code": status, "message": message})
    raw = [
        (b"content-type", CONTENT_TYPE.encode()),
        (b"content-length", str(len(body)).encode()),
        *((b"www-authenticate", h.encode()) for h in headers),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class AuthMiddleware:
    """Requires HTTP basic auth (``user:password``) or a bearer token on every request."""

    def __init__(self, app: ASGIApp, basic_auth: str | None = None, token: str | None = None):
        check_basic_auth(basic_auth)
        check_token(token)
        if basic_auth is None and token is None:
            raise ValueError("AuthMiddleware needs basic_auth or token")
        self.app = app
        self.basic: tuple[bytes, bytes] | None = None
        if basic_auth is not None:
            user, _, password = basic_auth.partition(":")
            self.basic = (user.encode(), password.encode())
        self.token = token.encode() if token is not None else None
        self.challenges = [
            *([f'Basic realm="{REALM}", charset="UTF-8"'] if self.basic else []),
            *([f'Bearer realm="{REALM}"'] if self.token else []),
        ]

    def allows(self, authorization: bytes) -> bool:
        """True when the ``Authorization`` header value carries a configured credential."""
        scheme, _, credentials = authorization.strip().partition(b" ")
        credentials = credentials.strip()
        scheme = scheme.lower()
        if scheme == b"basic" and self.basic is not None:
            try:
                decoded = base64.b64decode(credentials, validate=True)
            except (binascii.Error, ValueError):
                return False
            user, colon, password = decoded.partition(b":")
            # both compared, always: the time taken says nothing about which one was wrong
            same_user = hmac.compare_digest(user, self.basic[0])
            same_password = hmac.compare_digest(password, self.basic[1])
            return bool(colon) and same_user and same_password
        if scheme == b"bearer" and self.token is not None:
            return hmac.compare_digest(credentials, self.token)
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = [v for k, v in scope["headers"] if k == b"authorization"]
            if len(given) != 1 or not self.allows(given[0]):
                await _send_error(send, 401, "Unauthorized", self.challenges)
                return
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """Answers 413 to a request body larger than ``max_body`` bytes; the app never sees it.

    The body is read (up to the limit) before the app is called, so a request
    that is too large changes nothing. When limits are nested, the outermost applies.
    """

    def __init__(self, app: ASGIApp, max_body: int = DEFAULT_MAX_BODY):
        if max_body < 1:
            raise ValueError(f"max_body must be at least 1 byte, not {max_body}")
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _CHECKED in scope:
            await self.app(scope, receive, send)
            return
        limit = f"the limit of {self.max_body} bytes (registry serve --max-body)"
        lengths = [v for k, v in scope["headers"] if k == b"content-length"]
        if lengths and lengths[0].strip().isdigit() and int(lengths[0]) > self.max_body:
            await _send_error(
                send, 413, f"Request body of {int(lengths[0])} bytes is larger than {limit}"
            )
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            size += len(message.get("body", b""))
            if size > self.max_body:
                await _send_error(send, 413, f"Request body is larger than {limit}")
                return
            messages.append(message)
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app({**scope, _CHECKED: self.max_body}, replay, send)
