"""Lookups by id and by (subject, version) are cached: many records, a handful of requests."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.registry import open_registry
from cdc_connectors.registry.server import create_app

from .conftest import free_port
from .test_contract import V1, V2


class CountingServer:
    """Our REST app in a uvicorn thread on loopback, counting requests by path."""

    def __init__(self, store: str):
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
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.registry.close()


@pytest.fixture
def counting(tmp_path: Path) -> Iterator[CountingServer]:
    server = CountingServer(f"sqlite:///{tmp_path}/registry.db")
    yield server
    server.stop()


def test_http_registry_fetches_each_id_and_version_once(counting: CountingServer):
    registry = open_registry(counting.url)
    schema_id = registry.register_schema("s", V1).schema_id
    registry.register_schema("s", V2)
    counting.requests.clear()

    fresh = open_registry(counting.url)
    for _ in range(100_000):
        fresh.get_schema(schema_id)
    for _ in range(10_000):
        fresh.get_version("s", 1)
        fresh.get_version("s", 2)
    assert counting.requests[f"/schemas/ids/{schema_id}"] == 1
    assert counting.requests["/subjects/s/versions/1"] == 1
    assert counting.requests["/subjects/s/versions/2"] == 1


def test_decoding_many_records_makes_a_handful_of_requests(counting: CountingServer):
    ctx = SerializationContext("orders", MessageField.VALUE)
    serializer = AvroSerializer(open_registry(counting.url).client, V2.schema_str)
    messages = [serializer({"id": i, "note": None}, ctx) for i in range(20_000)]
    counting.requests.clear()

    deserializer = AvroDeserializer(open_registry(counting.url).client)
    decoded = [deserializer(m, ctx) for m in messages]
    assert decoded[-1] == {"id": 19_999, "note": None}
    assert sum(counting.requests.values()) <= 3, counting.requests


def test_embedded_registry_reads_each_id_once_from_sqlite(tmp_path: Path):
    registry = open_registry(f"sqlite:///{tmp_path}/registry.db")
    schema_id = registry.register_schema("s", V1).schema_id
    statements: list[str] = []
    registry._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    for _ in range(100_000):
        registry.get_schema(schema_id)
        registry.get_version("s", 1)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) <= 3, selects


def test_spark_tasks_open_the_registry_from_its_url_and_cache_it(spark, counting: CountingServer):
    registry = open_registry(counting.url)
    schema_id = registry.register_schema("s", V1).schema_id
    counting.requests.clear()
    url = counting.url

    def lookups(rows):  # runs on the executors' Python workers
        from cdc_connectors.registry import registry_for

        reg = registry_for(url)
        return [reg.get_schema(schema_id).schema_type for _ in rows]

    partitions = 4
    result = spark.sparkContext.parallelize(range(40_000), partitions).mapPartitions(lookups)
    assert result.count() == 40_000
    assert set(result.distinct().collect()) == {"AVRO"}
    # one request per Python worker process at most, never one per record
    assert 1 <= counting.requests[f"/schemas/ids/{schema_id}"] <= 2 * partitions
