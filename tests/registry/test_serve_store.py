"""`registry serve` serves embedded stores only; the app answers only HTTP error statuses."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from cdc_connectors.registry import SchemaRegistryError, open_registry
from cdc_connectors.registry.serve import ServeError, serve

from .conftest import InProcessServer, free_port, http
from .test_security import assert_one_line_refusal, run


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    return free_port()


@pytest.mark.parametrize(
    "store",
    [
        "http://127.0.0.1:{closed}",
        "https://registry.example:8081",
        "http://user:s3cret-pw@127.0.0.1:{closed}",
        "http://127.0.0.1:{port}",  # itself
        "postgres://db/registry",
    ],
)
def test_serve_refuses_a_store_that_is_not_embedded(store: str):
    port = free_port()
    url = store.format(closed=_closed_port(), port=port)
    result = run("registry", "serve", "--store", url, "--port", str(port))
    line = assert_one_line_refusal(result, "s3cret-pw")
    assert "not an embedded one" in line and "sqlite:///" in line, line


def test_serve_refuses_a_remote_store_before_binding():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # binding first would have been "address in use"
        with pytest.raises(ServeError, match="not an embedded one"):
            serve(f"http://127.0.0.1:{port}", port=port)


@pytest.fixture
def over_silent_registry() -> Iterator[InProcessServer]:
    """Our app over an HTTP registry that is not there (no retries: it fails at once)."""
    server = InProcessServer(f"http://127.0.0.1:{_closed_port()}?max.retries=0")
    yield server
    server.stop()


def test_an_unanswered_registry_behind_the_app_is_a_502_with_confluents_body(
    over_silent_registry: InProcessServer,
):
    url = over_silent_registry.url
    for _ in range(2):  # and the app keeps answering
        status, head, body = http("GET", f"{url}/subjects")
        assert status == 502, body
        assert head["content-type"] == "application/vnd.schemaregistry.v1+json"
        assert body["error_code"] == 50003
        assert "did not answer GET /subjects" in body["message"]
    registry = open_registry(url, **{"max.retries": 0})
    with pytest.raises(SchemaRegistryError) as e:
        registry.get_subjects()
    assert (e.value.http_status_code, e.value.error_code) == (502, 50003)
    registry.close()
