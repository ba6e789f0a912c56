"""Processes registering into one sqlite:/// store at once lose nothing, duplicate nothing."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import orjson

from cdc_connectors.registry import Schema, open_registry

PROCESSES = 4
PER_PROCESS = 12


def _schema(n: int) -> Schema:
    fields = [{"name": "id", "type": "long"}] + [
        {"name": f"f{i}", "type": ["null", "string"], "default": None} for i in range(n)
    ]
    return Schema(orjson.dumps({"type": "record", "name": "Row", "fields": fields}).decode())


def _worker(
    url: str, worker: int, start: multiprocessing.synchronize.Event
) -> list[tuple[str, int, int]]:
    registry = open_registry(url)
    start.wait()
    done = []
    for i in range(PER_PROCESS):
        # everyone registers the same shared schemas and some of its own, interleaved
        shared = registry.register_schema_full_response("shared-value", _schema(i))
        own = registry.register_schema_full_response(
            f"own-{worker}-value", _schema(100 + worker * 100 + i)
        )
        done += [("shared-value", shared.schema_id, shared.version)]
        done += [(own.subject, own.schema_id, own.version)]
    registry.close()
    return done


def test_concurrent_processes_neither_duplicate_versions_nor_lose_registrations(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/registry.db"
    open_registry(url).set_compatibility(level="NONE")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(PROCESSES) as pool:
            pending = [pool.apply_async(_worker, (url, w, start)) for w in range(PROCESSES)]
            start.set()
            results = [r for p in pending for r in p.get(timeout=300)]

    registry = open_registry(url)
    # the shared subject holds each shared schema once, versions 1..PER_PROCESS without gaps
    assert registry.get_versions("shared-value") == list(range(1, PER_PROCESS + 1))
    shared_ids = {
        registry.get_version("shared-value", v).schema_id for v in range(1, PER_PROCESS + 1)
    }
    assert len(shared_ids) == PER_PROCESS
    # every worker saw the same id and version for the same shared schema
    seen = {(sid, ver) for subject, sid, ver in results if subject == "shared-value"}
    assert len(seen) == PER_PROCESS
    # every own registration is there, numbered 1..PER_PROCESS
    for worker in range(PROCESSES):
        assert registry.get_versions(f"own-{worker}-value") == list(range(1, PER_PROCESS + 1))
    # ids are unique per distinct schema across all subjects
    all_ids = {sid for _, sid, _ in results}
    assert len(all_ids) == PER_PROCESS + PROCESSES * PER_PROCESS


ROUNDS = 25


def _open_new_stores(base: str, barrier: multiprocessing.synchronize.Barrier) -> list[str]:
    """Open store ``<base>-<round>.db`` in each round as the other processes do."""
    done = []
    for round_ in range(ROUNDS):
        barrier.wait()
        try:
            registry = open_registry(f"{base}-{round_}.db")
            registry.get_subjects()
            registry.close()
            done.append("ok")
        except ValueError as exc:
            done.append(str(exc))
    return done


def test_processes_opening_a_new_store_at_once_all_open_it(tmp_path: Path):
    """A pipeline's Spark workers open a store the run has not made yet at the same moment:
    switching it to write-ahead logging, which the first does, is not a failure of the
    others (SQLite answers them "database is locked" at once)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with ctx.Pool(PROCESSES) as pool:
            base = f"sqlite:///{tmp_path}/new"
            pending = [
                pool.apply_async(_open_new_stores, (base, barrier)) for _ in range(PROCESSES)
            ]
            results = [r for p in pending for r in p.get(timeout=300)]
    assert results == ["ok"] * (PROCESSES * ROUNDS)
