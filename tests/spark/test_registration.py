"""Connectors are found by entry point (`register`) and by PySpark's own lookup."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from cdc_connectors import plugins
from cdc_connectors.spark import register
from tests.conftest import ROOT
from tests.pipeline.support import QUICK_SUBMIT_ARGS

pytestmark = pytest.mark.spark


def test_register_registers_every_connector_entry_point(spark: Any) -> None:
    names = register(spark)
    assert sorted(names) == ["cdc-files", "cdc-kafka"]
    assert set(plugins.available(plugins.CONNECTORS)) == {"files", "kafka"}


def test_pyspark_finds_the_connectors_without_any_call() -> None:
    # A fresh session: nothing registered by hand, only the pyspark_* modules' DefaultSource.
    script = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
df = (spark.read.format("cdc-files").option("path", "examples/debezium/shop/customers.jsonl")
      .option("format", "debezium-json").load())
print(df.count())
spark.stop()
"""
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_SUBMIT_ARGS": QUICK_SUBMIT_ARGS,
    }
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    # six lines: five change events and one that is not JSON (a dead-letter row)
    assert result.stdout.decode().split()[-1] == "6"
