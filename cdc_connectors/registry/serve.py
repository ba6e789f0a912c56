"""Run the registry's REST API with uvicorn: ``cdc-connectors registry serve``."""

from __future__ import annotations

from cdc_connectors.registry.server import create_app


def serve(
    store_url: str,
    host: str = "127.0.0.1",
    port: int = 8081,
    *,
    basic_auth: str | None = None,
    bearer_token: str | None = None,
    tls: tuple[str | None, str | None] = (None, None),
) -> None:
    """Serve the store at ``store_url`` until interrupted; HTTPS with ``tls=(cert, key)``."""
    import uvicorn

    from cdc_connectors.registry import open_registry

    registry = open_registry(store_url)
    app = create_app(registry, basic_auth=basic_auth, bearer_token=bearer_token)
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level="warning",
            ssl_certfile=tls[0],
            ssl_keyfile=tls[1],
            # requests are short; idle keep-alive clients must not hold a shutdown up
            timeout_graceful_shutdown=2,
        )
    finally:
        registry.close()
