"""Run the registry's REST API with uvicorn: ``cdc-connectors registry serve``.

Whatever is wrong with how it was asked to serve (the store, the TLS files, the
address or port) is found before serving starts and raised as a one-line
:class:`ServeError`. The socket is bound here and handed to uvicorn, so the
announced address carries the port really bound (a free one for ``port=0``).
SIGINT and SIGTERM stop the server gracefully and ``serve`` returns.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import sqlite3
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from types import FrameType
from typing import Any
from urllib.parse import urlparse

from cdc_connectors.errors import ConfigError
from cdc_connectors.registry import guards
from cdc_connectors.registry.redact import redact_text, redact_url
from cdc_connectors.registry.server import create_app

DEFAULT_MAX_BODY = guards.DEFAULT_MAX_BODY

#: The schemes of the stores ``serve`` serves: its own embedded ones. Anything else (an
#: HTTP registry, this server itself) is refused rather than relayed.
EMBEDDED_SCHEMES = ("sqlite", "memory")


class ServeError(ConfigError):
    """The registry cannot be served as asked; the message is one line, without secrets."""


class _Stop(Exception):
    """SIGTERM: stop serving, as Ctrl-C does."""


def serve(
    store_url: str,
    host: str = "127.0.0.1",
    port: int = 8081,
    *,
    basic_auth: str | None = None,
    bearer_token: str | None = None,
    tls: tuple[str | None, str | None] = (None, None),
    max_body: int = DEFAULT_MAX_BODY,
    announce: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> None:
    """Serve the store at ``store_url`` until interrupted; HTTPS with ``tls=(cert, key)``.

    ``announce`` gets the line ``schema registry on URL serving STORE`` once the
    socket is bound; then ``warn`` gets :func:`exposure_warning`'s line, if any.
    Raises :class:`ServeError` before serving when the store is not an embedded one
    (:data:`EMBEDDED_SCHEMES`), a credential is empty or malformed, the TLS files cannot
    be loaded, the address cannot be bound or the store cannot be opened.
    """
    import uvicorn

    _check_store(store_url)
    cert, key = tls
    if bool(cert) != bool(key):
        raise ServeError("a TLS certificate needs its key and a key its certificate")
    if not 0 <= port <= 65535:
        raise ServeError(f"port {port} is not in 0..65535")
    for what, value, check in (
        ("basic auth", basic_auth, guards.check_basic_auth),
        ("bearer token", bearer_token, guards.check_token),
    ):
        try:
            check(value)
        except ValueError as exc:
            raise ServeError(f"{what} {exc}") from None
    if cert and key:
        _check_tls(cert, key)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if main_thread else None
    try:
        with ExitStack() as stack:
            sock = stack.enter_context(_listening(host, port))
            registry = _open_store(store_url)
            stack.callback(registry.close)
            app = create_app(
                registry, basic_auth=basic_auth, bearer_token=bearer_token, max_body=max_body
            )
            config = uvicorn.Config(
                app,
                log_level="warning",
                ssl_certfile=cert,
                ssl_keyfile=key,
                # requests are short; idle keep-alive clients must not hold a shutdown up
                timeout_graceful_shutdown=2,
            )
            if announce is not None:
                scheme = "https" if cert else "http"
                address = f"[{host}]" if ":" in host else host
                bound = sock.getsockname()[1]
                store = redact_url(store_url)
                announce(f"schema registry on {scheme}://{address}:{bound} serving {store}")
            warning = exposure_warning(
                sock.getsockname()[0], basic_auth or bearer_token, bool(cert)
            )
            if warn is not None and warning:
                warn(warning)
            uvicorn.Server(config).run(sockets=[sock])
    except (KeyboardInterrupt, _Stop):
        pass  # uvicorn has shut down gracefully; the signal it passes on ends here
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def exposure_warning(address: str, credential: str | None, tls: bool) -> str | None:
    """A warning when the registry listens beyond loopback without any credential."""
    try:
        loopback = ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        loopback = False
    if loopback or credential:
        return None
    advice = "set CDC_REGISTRY_BASIC_AUTH or CDC_REGISTRY_TOKEN"
    if not tls:
        advice += " and serve HTTPS with --tls-cert and --tls-key"
    return (
        f"the registry listens on {address} without credentials: anyone who can reach it "
        f"can read, register and delete schemas; {advice}"
    )


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def _reason(exc: BaseException, store_url: str = "") -> str:
    """The exception's message on one line, without the store URL's secrets."""
    if isinstance(exc, OSError) and exc.strerror and not isinstance(exc, ssl.SSLError):
        text = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    else:
        text = " ".join(str(exc).split()) or type(exc).__name__
    return redact_text(text, urls=[store_url])


def _check_store(store_url: str) -> None:
    """Refuse a store that is not embedded, before anything is bound or opened."""
    scheme = urlparse(store_url).scheme
    if scheme not in EMBEDDED_SCHEMES:
        raise ServeError(
            f"the store {redact_url(store_url)!r} is not an embedded one: registry serve "
            "serves sqlite:///path.db or memory:// (clients reach other registries directly)"
        )


def _check_tls(cert: str, key: str) -> None:
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except OSError as exc:  # ssl.SSLError is an OSError
        raise ServeError(
            f"cannot load the TLS certificate {cert} with the key {key}: {_reason(exc)}"
        ) from None


@contextmanager
def _listening(host: str, port: int) -> Iterator[socket.socket]:
    """A socket listening on ``host:port`` (uvicorn accepts on it), closed afterwards."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ServeError(f"cannot listen on {where}: {_reason(exc)}") from None
    with sock:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            # listening now: a client told the port may connect before uvicorn accepts
            sock.listen(2048)
        except OSError as exc:
            raise ServeError(f"cannot listen on {where}: {_reason(exc)}") from None
        yield sock


def _open_store(store_url: str) -> Any:
    from cdc_connectors.registry import open_registry

    try:
        return open_registry(store_url)
    except ValueError as exc:  # the store's own message names the URL
        raise ServeError(_reason(exc, store_url)) from None
    except (OSError, sqlite3.Error) as exc:
        where = redact_url(store_url)
        raise ServeError(f"cannot open the store {where}: {_reason(exc, store_url)}") from None
