"""An HTTP registry that does not answer is a bounded wait and one error type, not a hang."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from cdc_connectors.registry import (
    RegistryUnavailableError,
    SchemaRegistryError,
    open_registry,
)
from cdc_connectors.registry.confluent import DEFAULT_TIMEOUT, client_config


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port whose server accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield int(server.getsockname()[1])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_registry_that_never_answers_times_out_with_a_registry_error(silent_port: int):
    url = f"http://user:s3cret-pw@127.0.0.1:{silent_port}?timeout=0.3&max.retries=0"
    registry = open_registry(url)
    started = time.monotonic()
    with pytest.raises(RegistryUnavailableError) as e:
        registry.get_subjects()
    assert time.monotonic() - started < 5
    assert isinstance(e.value, SchemaRegistryError)
    message = str(e.value)
    assert f"http://user:***@127.0.0.1:{silent_port}" in message
    assert "GET /subjects" in message and "Timeout" in message
    assert "s3cret-pw" not in message
    registry.close()


def test_a_refused_connection_is_the_same_error_type():
    port = _closed_port()
    registry = open_registry(f"http://127.0.0.1:{port}", **{"max.retries": 0})
    with pytest.raises(RegistryUnavailableError) as e:
        registry.get_schema(1)
    assert f"127.0.0.1:{port}" in str(e.value) and "ConnectError" in str(e.value)
    registry.close()


def test_the_timeout_is_bounded_by_default_and_the_users_is_kept():
    assert client_config("http://registry:8081")["timeout"] == DEFAULT_TIMEOUT == 30
    assert client_config("http://registry:8081?timeout=5")["timeout"] == 5
    assert client_config("http://registry:8081", timeout=2.5)["timeout"] == 2.5
    registry = open_registry("http://registry:8081")
    timeout = registry._rest_client.session.timeout  # type: ignore[attr-defined]
    assert (timeout.connect, timeout.read) == (30, 30)
    registry.close()
