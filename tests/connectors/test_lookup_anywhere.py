"""`format("cdc-files")` / `format("cdc-kafka")` resolve without register(), from any directory:
a fresh session, nothing registered by hand, only the ``pyspark_*`` modules' DefaultSource.

PySpark finds ``pyspark_*`` modules with ``pkgutil.iter_modules`` in a fresh Python worker;
the installed package must be visible to it wherever the user starts Spark.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.pipeline.support import QUICK_SUBMIT_ARGS

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SHOP_CUSTOMERS = ROOT / "examples" / "debezium" / "shop" / "customers.jsonl"

READ_WITHOUT_REGISTER = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print("ROWS", spark.read.format("cdc-files").load(sys.argv[1]).count())
shop = (spark.read.format("cdc-files").option("path", sys.argv[2])
        .option("format", "debezium-json").load())
print("SHOP", shop.count())
try:
    spark.read.format("cdc-kafka").load()  # found, and it asks for its settings
except Exception as exc:
    print("KAFKA", "setting 'servers' is required" in str(exc))
"""


def test_the_data_sources_resolve_from_a_directory_outside_the_repository(tmp_path: Path):
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.jsonl").write_text('{"operation":"create","payload":{"after":{"a":1}}}\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_SUBMIT_ARGS": QUICK_SUBMIT_ARGS,
    }
    done = subprocess.run(
        [sys.executable, "-c", READ_WITHOUT_REGISTER, str(data), str(SHOP_CUSTOMERS)],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ROWS 1" in done.stdout
    # five change events and one line that is not JSON (a dead-letter row)
    assert "SHOP 6" in done.stdout
    assert "KAFKA True" in done.stdout
