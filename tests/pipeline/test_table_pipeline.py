"""Pipelines into a table: batch and streaming from YAML, and a streaming run killed with
SIGKILL and started again ends with the table equal to the source database's last state."""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.support import CLI, environment, run_here, write_config

pytestmark = [pytest.mark.spark]


def write_changes(directory: Path, files: int, seed: int) -> dict[int, dict[str, Any]]:
    """Files of Debezium JSON events (no schema blocks) of an orders table, in order by
    file name and line; the database's rows after them all."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    database: dict[int, dict[str, Any]] = {}
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "orders"}
    for number in range(files):
        lines = []
        for _ in range(40):
            key = rng.randint(1, 25)
            before = database.get(key)
            if before is not None and rng.random() < 0.2:
                op, after = "d", None
                del database[key]
            else:
                op = "u" if before is not None else "c"
                after = {
                    "id": key,
                    "status": rng.choice(["new", "paid", "shipped"]),
                    "qty": rng.randint(0, 9),
                }
                database[key] = after
            event = {
                "before": before,
                "after": after,
                "source": {**source, "ts_ms": 1},
                "op": op,
                "ts_ms": 1,
            }
            lines.append(json.dumps(event))
        (directory / f"changes-{number:03d}.jsonl").write_text("\n".join(lines) + "\n")
    return database


def table_pipeline(source: Path, table: Path, dead: Path, *, streaming: bool) -> dict[str, Any]:
    settings: dict[str, Any] = {"path": str(source), "format": "debezium-json"}
    if streaming:
        settings["maxFilesPerTrigger"] = "1"
    return {
        "id": "mirror",
        **({} if streaming else {"mode": "batch"}),
        "connectors": [
            {"id": "in", "type": "source", "plugin": "files", "settings": settings},
            {
                "id": "orders",
                "type": "destination",
                "plugin": "table",
                "settings": {"path": str(table), "keyColumns": "id"},
            },
        ],
        "dead-letter-queue": {
            "plugin": "files",
            "settings": {"path": str(dead), "format": "opencdc-json"},
        },
    }


def produce_changes(
    servers: str, topic: str, count: int, seed: int, database: dict[int, dict[str, Any]]
) -> None:
    """Debezium JSON events keyed as Debezium keys them (``{"id": ...}``), each key's on one
    partition; ``database`` follows them."""
    from confluent_kafka import Producer

    rng = random.Random(seed)
    producer = Producer({"bootstrap.servers": servers})
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "orders"}
    for _ in range(count):
        key = rng.randint(1, 30)
        before = database.get(key)
        if before is not None and rng.random() < 0.2:
            op, after = "d", None
            del database[key]
        else:
            op = "u" if before is not None else "c"
            after = {"id": key, "status": rng.choice(["new", "paid"]), "qty": rng.randint(0, 9)}
            database[key] = after
        event = {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1}
        producer.produce(topic, json.dumps(event), json.dumps({"id": key}), partition=key % 2)
    assert producer.flush(30) == 0


def kafka_table_pipeline(
    servers: str, topic: str, table: Path, dead: Path, batch: bool
) -> dict[str, Any]:
    settings = {
        "servers": servers,
        "topics": topic,
        "format": "debezium-json",
        "startingOffsets": "earliest",
    }
    if batch:
        settings["endingOffsets"] = "latest"
    return {
        "id": "kafka-mirror",
        "connectors": [
            {"id": "in", "type": "source", "plugin": "kafka", "settings": settings},
            {
                "id": "orders",
                "type": "destination",
                "plugin": "table",
                "settings": {"path": str(table)},
            },
        ],
        "dead-letter-queue": {
            "plugin": "files",
            "settings": {"path": str(dead), "format": "opencdc-json"},
        },
    }


def test_kafka_debezium_json_into_a_table_batch_and_streaming(
    tmp_path: Path, spark: Any, kafka_broker: Any
) -> None:
    topic = kafka_broker.create_topic(f"orders-{random.randrange(10**9)}", 2)
    servers = kafka_broker.bootstrap
    database: dict[int, dict[str, Any]] = {}
    produce_changes(servers, topic, 300, 5, database)
    table = tmp_path / "orders"
    write_config(
        tmp_path / "batch.yaml",
        kafka_table_pipeline(servers, topic, table, tmp_path / "dead", True),
    )
    done = run_here(spark, tmp_path / "batch.yaml")
    assert done.returncode == 0, done.stderr
    assert mirrored(table) == database  # the key comes from the Kafka key: no keyColumns

    streamed = tmp_path / "streamed"
    config = kafka_table_pipeline(servers, topic, streamed, tmp_path / "dead2", False)
    write_config(tmp_path / "stream.yaml", config)
    first = run_here(spark, tmp_path / "stream.yaml", available_now=True)
    assert first.returncode == 0, first.stderr
    assert mirrored(streamed) == database
    produce_changes(servers, topic, 200, 6, database)
    again = run_here(spark, tmp_path / "stream.yaml", available_now=True)
    assert again.returncode == 0, again.stderr
    assert mirrored(streamed) == database


def mirrored(table: Path) -> dict[int, dict[str, Any]]:
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    found = (
        QueryBuilder()
        .register("t", DeltaTable(str(table)))
        .execute("SELECT id, status, qty FROM t")
    )
    rows = pa.table(found.read_all()).to_pylist()
    assert len({r["id"] for r in rows}) == len(rows), "a key twice"
    return {r["id"]: {"id": r["id"], "status": r["status"], "qty": r["qty"]} for r in rows}


def test_a_batch_pipeline_mirrors_the_database(tmp_path: Path, spark: Any) -> None:
    database = write_changes(tmp_path / "in", 3, seed=1)
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "orders"}
    keyless = {"before": None, "after": {"status": "x"}, "source": source, "op": "c", "ts_ms": 1}
    (tmp_path / "in" / "changes-zzz.jsonl").write_text(json.dumps(keyless) + "\n")
    dead = tmp_path / "dead"
    config = table_pipeline(tmp_path / "in", tmp_path / "orders", dead, streaming=False)
    write_config(tmp_path / "p.yaml", config)
    done = run_here(spark, tmp_path / "p.yaml")
    assert done.returncode == 1, done.stderr  # 1: a record went to the dead letters
    assert "1 to the dead-letter output" in done.stderr
    assert "121 records in, 120 out, 1 to the dead-letter output" in done.stderr
    assert mirrored(tmp_path / "orders") == database
    from cdc_connectors.table.delta import DeltaStore

    held = DeltaStore(str(tmp_path / "orders")).settings()  # a registry, yet no schemas:
    assert held is not None and held.typed is False  # typed by the values
    letters = [
        json.loads(line) for f in dead.rglob("*.jsonl") for line in f.read_text().splitlines()
    ]
    (letter,) = letters
    assert "no value for key column(s) ['id']" in letter["metadata"]["conduit.dlq.nack.error"]
    # the letter holds the source's bytes (the Debezium line), at its place
    assert base64.b64decode(letter["payload"]["after"]) == json.dumps(keyless).encode()
    assert base64.b64decode(letter["position"]).endswith(b"changes-zzz.jsonl:1")
    (tmp_path / "in" / "changes-zzz.jsonl").write_text(json.dumps(keyless) + "\n{broken\n")
    again = run_here(spark, tmp_path / "p.yaml")  # run twice: the same table
    assert again.returncode == 1, again.stderr
    assert mirrored(tmp_path / "orders") == database
    # and no dead letter twice: the new line's alone is added
    letters = [
        json.loads(line) for f in dead.rglob("*.jsonl") for line in f.read_text().splitlines()
    ]
    places = sorted(base64.b64decode(letter["position"]).decode() for letter in letters)
    assert [place.rsplit("/", 1)[1] for place in places] == [
        "changes-zzz.jsonl:1",
        "changes-zzz.jsonl:2",
    ]


@pytest.mark.slow
def test_a_streaming_pipeline_killed_and_started_again_mirrors_the_database(
    tmp_path: Path, spark: Any
) -> None:
    from deltalake import DeltaTable

    database = write_changes(tmp_path / "in", 8, seed=2)
    table = tmp_path / "orders"
    config = table_pipeline(tmp_path / "in", table, tmp_path / "dead", streaming=True)
    write_config(tmp_path / "p.yaml", config)
    driver = subprocess.Popen(
        [*CLI[:1], "-m", "cdc_connectors.pipeline.driver", "p.yaml"],
        cwd=tmp_path,
        env=environment(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while driver.poll() is None:  # killed once some micro-batches are in the table
        assert time.monotonic() < deadline
        if DeltaTable.is_deltatable(str(table)) and DeltaTable(str(table)).version() >= 2:
            break
        time.sleep(0.05)
    time.sleep(random.Random(3).uniform(0, 1.5))
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    again = run_here(spark, tmp_path / "p.yaml", available_now=True)
    assert again.returncode == 0, again.stderr
    assert mirrored(table) == database


def test_a_checkpoint_made_anew_is_a_new_query_whose_batches_are_applied(
    tmp_path: Path, spark: Any
) -> None:
    import shutil

    database = write_changes(tmp_path / "in", 2, seed=4)
    config = table_pipeline(tmp_path / "in", tmp_path / "orders", tmp_path / "dead", streaming=True)
    write_config(tmp_path / "p.yaml", config)
    assert run_here(spark, tmp_path / "p.yaml", available_now=True).returncode == 0
    shutil.rmtree(tmp_path / "checkpoints")  # started over: its batches count from 0 again
    later = write_changes(tmp_path / "more", 1, seed=5)
    (tmp_path / "more" / "changes-000.jsonl").rename(tmp_path / "in" / "changes-100.jsonl")
    done = run_here(spark, tmp_path / "p.yaml", available_now=True)
    assert done.returncode == 0, done.stderr
    touched = set()
    for line in (tmp_path / "in" / "changes-100.jsonl").read_text().splitlines():
        event = json.loads(line)
        touched.add((event["after"] or event["before"])["id"])
    expected = {k: v for k, v in database.items() if k not in touched} | later
    assert mirrored(tmp_path / "orders") == expected


def test_fail_fast_stops_before_a_table_refuses_anything(tmp_path: Path, spark: Any) -> None:
    write_changes(tmp_path / "in", 1, seed=7)
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "orders"}
    keyless = {"before": None, "after": {"status": "x"}, "source": source, "op": "c", "ts_ms": 1}
    (tmp_path / "in" / "changes-zzz.jsonl").write_text(json.dumps(keyless) + "\n")
    config = table_pipeline(
        tmp_path / "in", tmp_path / "orders", tmp_path / "dead", streaming=False
    )
    config["dead-letter-queue"]["fail-fast"] = True
    write_config(tmp_path / "p.yaml", config)
    done = run_here(spark, tmp_path / "p.yaml")
    assert done.returncode != 0
    assert "stopped by fail-fast: the record at" in done.stderr
    assert "no value for key column(s) ['id']" in done.stderr
    assert "nothing of batch 0 was written" in done.stderr
    assert not (tmp_path / "orders" / "_delta_log").exists() or mirrored(tmp_path / "orders") == {}


def test_without_a_registry_the_table_is_typed_by_the_schema_blocks(
    tmp_path: Path, spark: Any
) -> None:
    """A pipeline naming no registry keeps its source's schemas in a store of its own: a
    decimal stays decimal(10,2), a timestamp and a date are typed, and a NOT NULL column
    the source adds later (no registry would call that compatible) becomes a column."""
    import pyarrow as pa
    import yaml
    from deltalake import DeltaTable, QueryBuilder

    shop = Path(__file__).parents[2] / "examples" / "debezium" / "shop" / "orders.jsonl"
    lines = shop.read_text().splitlines()
    later = json.loads(lines[0])
    for image in later["schema"]["fields"][:2]:
        image["fields"].append({"type": "int32", "optional": False, "field": "priority"})
    later["payload"]["after"].update(id=9, priority=3)
    source = tmp_path / "in"
    source.mkdir()
    (source / "orders.jsonl").write_text("\n".join([*lines, json.dumps(later)]) + "\n")
    config = table_pipeline(source, tmp_path / "orders", tmp_path / "dead", streaming=False)
    document = yaml.safe_load(write_config(tmp_path / "p.yaml", config).read_text())
    del document["schema-registry"]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    for _ in range(2):  # run twice: the same table
        done = run_here(spark, tmp_path / "p.yaml")
        assert done.returncode == 1, done.stderr  # the shop's bad lines
        assert (
            "column types from the source's schemas (kept in orders/_cdc_schemas/schemas.db)"
            in (done.stderr)
        )
        schema = DeltaTable(str(tmp_path / "orders")).schema().to_arrow()
        types = {f.name: pa.field(f).type for f in schema}
        assert types["amount"] == pa.decimal128(10, 2)
        assert pa.types.is_timestamp(types["created_at"])
        assert types["ship_date"] == pa.date32()
        assert types["id"] == types["priority"] == pa.int32()
        found = QueryBuilder().register("t", DeltaTable(str(tmp_path / "orders")))
        rows = pa.table(found.execute("SELECT id, amount, priority FROM t").read_all())
        assert sorted(rows.to_pylist(), key=lambda r: r["id"])[-1]["priority"] == 3
    assert (tmp_path / "orders" / "_cdc_schemas" / "schemas.db").is_file()
    from cdc_connectors.table.delta import DeltaStore

    held = DeltaStore(str(tmp_path / "orders")).settings()
    assert held is not None and held.typed is True


def test_a_table_typed_by_its_values_before_stays_so_without_a_registry(
    tmp_path: Path, spark: Any
) -> None:
    """A table a pipeline made without a registry before its schemas were kept (or with
    ``registry: ""``, which asks for that) goes on being typed by its values: its columns
    would not take the schemas' types."""
    import pyarrow as pa
    import yaml
    from deltalake import DeltaTable

    shop = Path(__file__).parents[2] / "examples" / "debezium" / "shop" / "orders.jsonl"
    config = table_pipeline(shop, tmp_path / "orders", tmp_path / "dead", streaming=False)
    document = yaml.safe_load(write_config(tmp_path / "p.yaml", config).read_text())
    del document["schema-registry"]
    destination = document["pipelines"][0]["connectors"][1]["settings"]
    destination["registry"] = ""
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    assert run_here(spark, tmp_path / "p.yaml").returncode == 1  # the shop's bad lines
    del destination["registry"]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    done = run_here(spark, tmp_path / "p.yaml")
    assert done.returncode == 1, done.stderr
    assert "column types from" not in done.stderr and "Error" not in done.stderr
    schema = DeltaTable(str(tmp_path / "orders")).schema().to_arrow()
    assert pa.field(schema.field("amount")).type == pa.float64()
    assert not (tmp_path / "orders" / "_cdc_schemas").exists()


def test_a_schema_store_that_cannot_be_made_is_one_line_before_anything_runs(
    tmp_path: Path, spark: Any
) -> None:
    import yaml

    write_changes(tmp_path / "in", 1, seed=8)
    config = table_pipeline(
        tmp_path / "in", tmp_path / "orders", tmp_path / "dead", streaming=False
    )
    document = yaml.safe_load(write_config(tmp_path / "p.yaml", config).read_text())
    del document["schema-registry"]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    for blocker in (
        tmp_path / "orders" / "_cdc_schemas" / "schemas.db",
        tmp_path / "orders" / "_cdc_schemas",
    ):
        blocker.parent.mkdir(parents=True, exist_ok=True)
        if blocker.name == "schemas.db":
            blocker.mkdir()
        else:
            import shutil

            shutil.rmtree(blocker)
            blocker.write_text("")
        done = run_here(spark, tmp_path / "p.yaml")
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.splitlines()
        lines = (tmp_path / "p.yaml").read_text().splitlines()
        at = lines.index("  - id: orders") + 1  # (the Spark settings above vary by machine)
        assert line.startswith("Error: ") and f"p.yaml:{at}: pipelines[0].connectors[1]" in line
        assert "_cdc_schemas" in line
        assert (
            not (tmp_path / "orders" / "_delta_log").exists() and not (tmp_path / "dead").exists()
        )


def test_a_run_that_makes_no_table_leaves_no_schema_store_behind(
    tmp_path: Path, spark: Any
) -> None:
    """The store beside a table is made before the first batch; a first batch refused (a
    key column the records have not) makes no table, and the store goes again."""
    import yaml

    write_changes(tmp_path / "in", 1, seed=8)
    config = table_pipeline(
        tmp_path / "in", tmp_path / "orders", tmp_path / "dead", streaming=False
    )
    document = yaml.safe_load(write_config(tmp_path / "p.yaml", config).read_text())
    del document["schema-registry"]
    document["pipelines"][0]["connectors"][1]["settings"]["keyColumns"] = "nope"
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    done = run_here(spark, tmp_path / "p.yaml")
    assert done.returncode == 2, done.stderr
    assert "keyColumns: cdc-table setting 'keyColumns': no record has column(s) nope" in done.stderr
    assert not (tmp_path / "orders").exists()
    (tmp_path / "orders").mkdir()  # a folder there before: it stays, the store goes
    assert run_here(spark, tmp_path / "p.yaml").returncode == 2
    assert list((tmp_path / "orders").iterdir()) == []
    document["pipelines"][0]["connectors"][1]["settings"]["keyColumns"] = "id"
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    done = run_here(spark, tmp_path / "p.yaml")
    assert done.returncode in (0, 1), done.stderr
    assert (tmp_path / "orders" / "_delta_log").is_dir()
    assert (tmp_path / "orders" / "_cdc_schemas" / "schemas.db").is_file()


def test_a_refused_iceberg_table_takes_only_its_own_store_from_the_warehouse(
    tmp_path: Path, spark: Any
) -> None:
    """The stores of a warehouse's tables share its _cdc_schemas folder: a pipeline whose
    table is refused removes its own store, not the folder the other table's store is
    in; alone in a new warehouse it leaves nothing (not even the catalog's file)."""
    import yaml

    write_changes(tmp_path / "in", 1, seed=8)
    pipelines = []
    for name, keys in (("a", "id"), ("b", "nope")):
        config = table_pipeline(
            tmp_path / "in", tmp_path / "wh", tmp_path / f"dead-{name}", streaming=False
        )
        config["id"] = f"mirror-{name}"
        config["connectors"][1]["settings"].update(
            {"format": "iceberg", "table": f"shop.{name}", "keyColumns": keys}
        )
        pipelines.append(config)
    document = yaml.safe_load(write_config(tmp_path / "p.yaml", *pipelines).read_text())
    del document["schema-registry"]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    done = run_here(spark, tmp_path / "p.yaml")
    assert done.returncode == 2, done.stderr
    assert "no record has column(s) nope" in done.stderr
    stores = {p.name.split(".db")[0] for p in (tmp_path / "wh" / "_cdc_schemas").iterdir()}
    assert stores == {"shop.a"}  # (with its journal)
    document["pipelines"] = document["pipelines"][1:]
    document["pipelines"][0]["connectors"][1]["settings"]["path"] = str(tmp_path / "new")
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    assert run_here(spark, tmp_path / "p.yaml").returncode == 2
    assert not (tmp_path / "new").exists()


def test_every_schema_store_is_checked_before_any_is_made(tmp_path: Path, spark: Any) -> None:
    import yaml

    write_changes(tmp_path / "in", 1, seed=9)
    first = table_pipeline(tmp_path / "in", tmp_path / "one", tmp_path / "dead1", streaming=False)
    second = table_pipeline(tmp_path / "in", tmp_path / "two", tmp_path / "dead2", streaming=False)
    second["id"] = "mirror-two"
    document = yaml.safe_load(write_config(tmp_path / "p.yaml", first, second).read_text())
    del document["schema-registry"]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    store = tmp_path / "two" / "_cdc_schemas" / "schemas.db"
    store.parent.mkdir(parents=True)
    store.write_text("not a database\n")
    done = run_here(spark, tmp_path / "p.yaml")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert "pipelines[1].connectors[1]" in line and "schemas.db" in line, line
    assert not (tmp_path / "one").exists()  # the first pipeline's store was not made
