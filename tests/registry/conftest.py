"""Registries for the contract tests, our REST app on loopback, and `registry serve`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from cdc_connectors.registry import SchemaRegistry, open_registry
from cdc_connectors.registry.server import create_app


def http(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], Any]:
    """One raw HTTP request: (status, headers, parsed JSON body or text)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/vnd.schemaregistry.v1+json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, head, raw = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        status, head, raw = error.code, dict(error.headers), error.read()
    try:
        return status, head, json.loads(raw)
    except ValueError:
        return status, head, raw.decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    """A `registry serve` process: its URL, its store and how to stop it."""

    url: str
    store: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def serve(store: str, *extra: str, port: int | None = None, scheme: str = "http") -> Served:
    """Start `cdc-connectors registry serve` and wait until it answers."""
    port = port or free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cdc_connectors.cli",
            "registry",
            "serve",
            "--store",
            store,
            "--port",
            str(port),
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"{scheme}://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"registry serve exited: {process.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return Served(url, store, process)
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("registry serve did not start within 30 s")


class InProcessServer:
    """Our REST app over a store, in a uvicorn thread on loopback, counting requests by path."""

    def __init__(self, store: str):
        self.store = store
        self.requests: Counter[str] = Counter()
        self.registry = open_registry(store)
        app = create_app(self.registry)

        async def counting(scope, receive, send):  # type: ignore[no-untyped-def]
            if scope["type"] == "http":
                self.requests[scope["path"]] += 1
            await app(scope, receive, send)

        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(
            uvicorn.Config(counting, host="127.0.0.1", port=port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.registry.close()


@pytest.fixture
def app_server(tmp_path: Path) -> Iterator[InProcessServer]:
    """Our REST app over a fresh SQLite store, served in this process."""
    server = InProcessServer(f"sqlite:///{tmp_path}/registry.db")
    yield server
    server.stop()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A registry server over a fresh SQLite store."""
    server = serve(f"sqlite:///{tmp_path}/registry.db")
    yield server
    server.stop()


@pytest.fixture(params=["memory", "sqlite", "http"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SchemaRegistry]:
    """Each implementation, fresh: the same contract holds for all of them."""
    if request.param == "memory":
        reg = open_registry(f"memory://{uuid.uuid4().hex}")
        yield reg
        reg.close()
    elif request.param == "sqlite":
        reg = open_registry(f"sqlite:///{tmp_path}/registry.db")
        yield reg
        reg.close()
    else:
        in_process = InProcessServer(f"sqlite:///{tmp_path}/registry.db")
        reg = open_registry(in_process.url)
        yield reg
        reg.close()
        in_process.stop()


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files in ``tmp_path``."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
