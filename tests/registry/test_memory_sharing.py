"""`memory://name` shared by several clients in one process, from several threads."""

from __future__ import annotations

import sqlite3
import threading
import uuid

import orjson
import pytest

from cdc_connectors.registry import Schema, SchemaRegistry, open_registry

THREADS = 4
PER_THREAD = 15


def _schema(tag: str) -> Schema:
    fields = [{"name": "id", "type": "long"}, {"name": tag, "type": "string", "default": ""}]
    return Schema(orjson.dumps({"type": "record", "name": "Row", "fields": fields}).decode())


def _name() -> str:
    return f"memory://{uuid.uuid4().hex}"


def test_threads_using_two_clients_of_one_name_lose_nothing():
    url = _name()
    clients = [open_registry(url), open_registry(url)]
    clients[0].set_compatibility(level="NONE")
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []
    seen: list[tuple[int, int]] = []

    def work(worker: int) -> None:
        registry = clients[worker % 2]
        try:
            start.wait(timeout=10)
            for i in range(PER_THREAD):
                shared = registry.register_schema_full_response("shared", _schema(f"s{i}"))
                seen.append((shared.schema_id, shared.version))
                registry.register_schema(f"own-{worker}", _schema(f"w{worker}_{i}"))
                registry.get_latest_version(f"own-{worker}")
                registry.get_versions("shared")
                registry.get_subjects()
        except BaseException as exc:  # reported below, with its type
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "the threads did not finish"
    assert failures == []

    for registry in clients:
        # each shared schema once, versions 1..PER_THREAD, and everyone got the same answers
        assert registry.get_versions("shared") == list(range(1, PER_THREAD + 1))
        assert len(set(seen)) == PER_THREAD
        for worker in range(THREADS):
            assert registry.get_versions(f"own-{worker}") == list(range(1, PER_THREAD + 1))
    for registry in clients:
        registry.close()


def test_different_names_and_plain_memory_stay_apart():
    one, other = _name(), _name()
    a, b = open_registry(one), open_registry(other)
    private, also_private = open_registry("memory://"), open_registry("memory://")
    a.register_schema("s", _schema("a"))
    private.register_schema("p", _schema("p"))
    assert b.get_subjects() == []
    assert also_private.get_subjects() == []
    assert private.get_subjects() == ["p"]
    same = open_registry(one)
    assert same.get_subjects() == ["s"]
    for registry in (a, b, private, also_private, same):
        registry.close()


def test_a_closed_client_does_not_break_the_others_of_its_name():
    url = _name()
    a, b = open_registry(url), open_registry(url)
    a.register_schema("s", _schema("a"))
    a.close()
    a.close()  # twice is harmless
    with pytest.raises(sqlite3.ProgrammingError):
        a.get_subjects()  # a closed client is closed, though its store lives on
    assert b.get_subjects() == ["s"]
    b.register_schema("t", _schema("b"))
    c = open_registry(url)
    assert c.get_subjects() == ["s", "t"]
    b.close()
    assert c.get_versions("t") == [1]
    c.close()


def test_a_name_whose_clients_are_all_closed_starts_empty():
    url = _name()
    registry: SchemaRegistry = open_registry(url)
    registry.register_schema("s", _schema("a"))
    registry.close()
    registry = open_registry(url)
    assert registry.get_subjects() == []
    registry.close()
