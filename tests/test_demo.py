"""`make run`'s demo works as shipped: the examples as a typed Spark DataFrame."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline.support import noise_in, user_environment

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.spark
@pytest.mark.slow
def test_demo_shows_the_examples_with_typed_payload_values_and_no_spark_noise():
    """Run as a user runs it (neither ``PYSPARK_PYTHON`` nor ``SPARK_LOCAL_IP`` set): it
    starts Spark with quiet_session, as ``shop.py`` and ``typed.py`` do, so that nothing but
    its own lines shows (see tests/pipeline/test_quiet.py)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=420,
        env=user_environment(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "7 OpenCDC records" in out
    assert "structured_data: variant" in out
    assert "9007199254740993" in out  # a 64-bit id kept exact through VARIANT
    assert "42.50" in out  # decimal(10,2) out of the payload
    assert not noise_in(out + result.stderr), out + result.stderr
    assert result.stderr == ""
    assert "OpenCDC records from" in out


def test_tour_converts_the_examples_and_keeps_the_one_protobuf_refuses(tmp_path):
    result = subprocess.run(
        ["bash", str(ROOT / "examples" / "tour.sh")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BIN": str(Path(sys.executable).parent), "OUT": str(tmp_path)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "read 7 messages, wrote 6 records, skipped 0, errors 1" in result.stderr
    assert "read 6 messages, wrote 6 records, skipped 0, errors 0" in result.stderr
    assert "payload.after.ref: integer 9007199254740993 is beyond" in result.stdout
    dead = (tmp_path / "orders.errors.jsonl").read_text().splitlines()
    assert len(dead) == 1
    assert len((tmp_path / "orders.jsonl").read_text().splitlines()) == 6
    # the shop orders as Avro rows and back: 64-bit ref and decimal amount exact
    assert result.stderr.count("read 5 messages, wrote 5 records, skipped 0, errors 0") == 2
    assert '"ref":9007199254740993' in result.stdout and '"amount":42.50' in result.stdout
    assert len((tmp_path / "orders.avro.jsonl").read_text().splitlines()) == 5


def test_typed_demo_expands_two_schema_versions_into_typed_columns(
    tmp_path: Path, spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """In the suite's Spark session (its own start is the demo's, above, and shop.py's)."""
    import runpy

    typed = runpy.run_path(str(ROOT / "examples" / "typed.py"))
    typed["main"](tmp_path, spark)
    out = capsys.readouterr().out
    assert "amount: decimal(10,2)" in out and "ref: long" in out
    assert "9007199254740993" in out  # version 2's 64-bit ref, exact
    assert "42.50" in out and "payload.after: Avro body is truncated" in out


def test_the_debezium_example_converts_as_the_readme_shows(tmp_path):
    from tests.conftest import run_cli

    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    done = run_cli(
        "convert",
        "--from",
        "debezium-json",
        "--to",
        "opencdc-json",
        "--kv",
        "--errors",
        str(dead),
        str(ROOT / "examples" / "debezium" / "customers.kv.jsonl"),
        "-o",
        str(out),
    )
    assert done.returncode == 1
    assert b"read 3 messages, wrote 1 record, skipped 1 (1 tombstone), errors 1" in done.stderr
    assert '"opencdc.collection":"inventory.customers"' in out.read_text()
    assert len(dead.read_text().splitlines()) == 1


@pytest.mark.spark
@pytest.mark.slow
def test_make_run_pipeline_lands_the_shop_and_queries_it_typed(tmp_path):
    import shutil

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    # What `make run` does: the pipeline (the code of `cdc-connectors run`), then the query.
    result = subprocess.run(
        [sys.executable, "examples/shop.py", "--run", "examples/pipelines/shop.yaml", ".cdc/shop"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "14 records in, 10 out, 4 to the dead-letter output" in result.stderr
    out = result.stdout
    assert "after.amount is decimal(10,2)" in out
    assert "2604.49" in out  # 19.99 + 2500.50 + 42.00 + 42.00, exact
    assert "orders.jsonl:6" in out and "'refunded' is not one of the allowed" in out
    # the orders as the table the mirror pipeline applied them to: order 1 deleted, order 3
    # updated (shipped), amounts exact
    mirror = out[out.index("== the orders as a table mirroring the database") :]
    rows = [line for line in mirror.splitlines() if line.startswith("|") and "id" not in line]
    assert [r.split("|")[1:4] for r in rows] == [
        ["2  ", "new    ", "2500.50"],
        ["3  ", "shipped", "42.00  "],
    ]
    assert "cdc-table: .cdc/shop/tables/orders: 5 records, 3 changes applied" in result.stderr
