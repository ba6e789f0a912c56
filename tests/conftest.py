"""Shared fixtures: one local[2] Spark session for the suite, one Kafka broker; the CLI
runners (``run_cli`` in this process, ``run_cli_process`` in a subprocess)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tests.hypothesis_profiles  # noqa: F401  (the profiles: ci, check)
from tests.cli_runner import run_cli, run_cli_process
from tests.kafka_broker import KafkaBroker

__all__ = ["ROOT", "run_cli", "run_cli_process"]

ROOT = Path(__file__).resolve().parent.parent
# Spark workers must run this interpreter, not whatever python is on PATH.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cdc-connectors tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """One Tansu broker (in memory, loopback) for the suite; tests create their own topics."""
    with KafkaBroker() as broker:
        yield broker


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that takes the ``spark`` session is marked ``spark`` (the fast tier starts no
    Spark). Modules with slow tests first: with two workers (``make test``) the long Spark runs
    start at once and the quick tests fill the gaps, instead of one worker finishing a long
    module alone at the end."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("slow")}  # type: ignore[attr-defined]
    items.sort(key=lambda item: item.module.__name__ not in slow_modules)  # type: ignore[attr-defined]
