"""Schemas by id are cached (they cannot change): many records, a handful of requests."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_connectors.registry import open_registry

from .conftest import InProcessServer
from .test_contract import V1, V2


@pytest.fixture
def counting(app_server: InProcessServer) -> InProcessServer:
    return app_server


def test_http_registry_fetches_each_id_once_and_versions_fresh(counting: InProcessServer):
    registry = open_registry(counting.url)
    schema_id = registry.register_schema("s", V1)
    registry.register_schema("s", V2)
    counting.requests.clear()

    fresh = open_registry(counting.url)
    for _ in range(100_000):
        fresh.get_schema(schema_id)
    assert counting.requests[f"/schemas/ids/{schema_id}"] == 1
    # a version can be deleted and its number reused elsewhere: asked each time
    for _ in range(3):
        assert fresh.get_version("s", 2).schema_id == 2
        assert fresh.get_latest_version("s").version == 2
    assert counting.requests["/subjects/s/versions/2"] == 3
    assert counting.requests["/subjects/s/versions/latest"] == 3


def test_latest_version_is_cached_only_for_a_ttl_asked_for(counting: InProcessServer):
    open_registry(counting.url).register_schema("s", V1)
    counting.requests.clear()
    cached = open_registry(counting.url, **{"cache.latest.ttl.sec": 300})
    for _ in range(5):
        assert cached.get_latest_version("s").version == 1
    assert counting.requests["/subjects/s/versions/latest"] == 1


def test_decoding_many_records_makes_a_handful_of_requests(counting: InProcessServer):
    ctx = SerializationContext("orders", MessageField.VALUE)
    serializer = AvroSerializer(open_registry(counting.url), V2.schema_str)
    messages = [serializer({"id": i, "note": None}, ctx) for i in range(20_000)]
    counting.requests.clear()

    deserializer = AvroDeserializer(open_registry(counting.url))
    decoded = [deserializer(m, ctx) for m in messages]
    assert decoded[-1] == {"id": 19_999, "note": None}
    assert sum(counting.requests.values()) <= 3, counting.requests


def test_embedded_registry_reads_each_id_once_from_sqlite(tmp_path: Path):
    registry = open_registry(f"sqlite:///{tmp_path}/registry.db")
    schema_id = registry.register_schema("s", V1)
    guid = registry.get_version("s", 1).guid
    statements: list[str] = []
    registry._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    for _ in range(100_000):
        registry.get_schema(schema_id)
        registry.get_schema_by_guid(guid)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) <= 1, selects


def test_embedded_decoding_many_records_reads_the_store_a_handful_of_times(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    ctx = SerializationContext("orders", MessageField.VALUE)
    messages = [AvroSerializer(open_registry(url), V2.schema_str)({"id": 1}, ctx)] * 20_000
    registry = open_registry(url)
    statements: list[str] = []
    registry._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    deserializer = AvroDeserializer(registry)
    assert [deserializer(m, ctx) for m in messages][-1] == {"id": 1, "note": None}
    assert len([s for s in statements if "SELECT" in s.upper()]) <= 3, statements


@pytest.mark.spark
def test_spark_tasks_open_the_registry_from_its_url_and_cache_it(spark, counting: InProcessServer):
    registry = open_registry(counting.url)
    schema_id = registry.register_schema("s", V1)
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


def test_a_shared_store_whose_file_was_removed_is_opened_anew(tmp_path: Path) -> None:
    """``rm -r .cdc`` between two runs of one session: the shared client must not go on
    writing to the removed file, which no other process sees."""
    import shutil

    from cdc_connectors.registry import registry_for

    folder = tmp_path / "store"
    folder.mkdir()
    url = f"sqlite:///{folder}/schemas.db"
    first = registry_for(url)
    first.register_schema("s", V1)
    assert registry_for(url) is first  # shared while its file is there
    shutil.rmtree(folder)
    folder.mkdir()
    second = registry_for(url)
    assert second is not first
    second.register_schema("t", V2)
    assert (folder / "schemas.db").is_file()
    assert open_registry(url).get_subjects() == ["t"]


def test_a_relative_store_stays_the_file_it_named_when_the_process_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_connectors.registry import registry_for

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    url = f"sqlite:///relative-{tmp_path.name}.db"
    first = registry_for(url)
    first.register_schema("s", V1)
    monkeypatch.chdir(tmp_path / "b")
    assert registry_for(url) is first
    assert registry_for(url).get_subjects() == ["s"]
    assert list((tmp_path / "b").iterdir()) == []
