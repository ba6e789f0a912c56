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
from tests.jvm_archive import ARCHIVE_OPTIONS
from tests.kafka_broker import KafkaBroker
from tests.pipeline.support import QUICK_JVM

__all__ = ["ROOT", "run_cli", "run_cli_process"]

ROOT = Path(__file__).resolve().parent.parent
# Spark workers must run this interpreter, not whatever python is on PATH.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Every Spark driver a test starts (READMEs and demos with their own settings too) maps
# Spark's classes from the suite's archive when there is one (tests/jvm_archive.py), and
# spends little on compiling and collecting: the suite is CPU-bound on 2 cores, its JVMs
# short-lived, and one C1 compiler thread and the serial collector take about a tenth
# less CPU per Spark start than the defaults.
LEAN_JVM = f"-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:+UseSerialGC {ARCHIVE_OPTIONS}"
# Their jobs are small and many: expressions interpreted instead of compiled to Java, and
# plans not optimised again at run time, take about a fifth less of a short run's JVM time
# (Spark reads ``spark.*`` Java properties as settings; a run's own YAML or --conf still
# wins). The suite's own session sets Spark's defaults again (see ``spark``), so the
# in-process tests run the compiled and adaptive way users get by default.
INTERPRETED = {
    "spark.sql.codegen.wholeStage": ("false", "true"),
    "spark.sql.codegen.factoryMode": ("NO_CODEGEN", "FALLBACK"),
    "spark.sql.adaptive.enabled": ("false", "true"),
}
LEAN_JVM += "".join(f" -D{key}={lean}" for key, (lean, _) in INTERPRETED.items())
_SUBMIT_OPTS = os.environ.get("SPARK_SUBMIT_OPTS", "")
if LEAN_JVM.strip() not in _SUBMIT_OPTS:
    os.environ["SPARK_SUBMIT_OPTS"] = f"{_SUBMIT_OPTS} {LEAN_JVM}".strip()


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cdc-connectors tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        # the first compiler tier only: the suite's many small jobs finish sooner without
        # the second tier's compiles taking a core (a fifth less time for tests/spark)
        .config("spark.driver.extraJavaOptions", QUICK_JVM)
        .config(map={key: default for key, (_, default) in INTERPRETED.items()})
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


# Seconds each of the longer modules takes on two busy cores (``--durations=0`` summed by
# file, rounded; the order is what counts). ``make test`` hands whole modules to its two
# workers (``--dist loadfile``), in the order collected: the longest first, so that no long
# module starts last and sets the pace of a worker alone at the end, and the short ones fill
# the gaps. A module not listed takes a few seconds at most.
MODULE_SECONDS = {
    "tests/pipeline/test_in_task.py": 74,
    "tests/pipeline/test_launcher_death.py": 54,
    "tests/test_readme_spark.py": 53,
    "tests/test_readme.py": 45,
    "tests/connectors/test_table_destination.py": 44,
    "tests/pipeline/test_submit.py": 43,
    "tests/pipeline/test_table_pipeline.py": 41,
    "tests/test_demo.py": 32,
    "tests/pipeline/test_run.py": 32,
    "tests/connectors/test_kafka_source.py": 28,
    "tests/table/test_contract.py": 26,
    "tests/connectors/test_kafka_destination.py": 23,
    "tests/table/test_model.py": 22,
    "tests/registry/test_server.py": 21,
    "tests/test_readme_kafka.py": 19,
    "tests/test_cli_misuse.py": 19,
    "tests/columnar/test_pipeline_columns.py": 19,
    "tests/registry/test_security.py": 19,
    "tests/pipeline/test_save_modes.py": 17,
    "tests/test_wheel_install.py": 16,
    "tests/connectors/test_files_exactly_once.py": 16,
    "tests/test_convert_registry_misuse.py": 16,
    "tests/connectors/test_files_source.py": 15,
    "tests/connectors/test_delivery_timeout.py": 15,
    "tests/pipeline/test_batch_kill_race.py": 13,
    "tests/pipeline/test_driver_letters.py": 12,
    "tests/convert/test_progress.py": 12,
    "tests/connectors/test_dead_letter_marker.py": 11,
    "tests/convert/test_convert_places.py": 11,
    "tests/spark/test_avro_spec_spark.py": 10,
    "tests/connectors/test_lookup_anywhere.py": 9,
    "tests/columnar/test_protobuf_rows.py": 9,
    "tests/connectors/test_write_errors.py": 8,
    "tests/connectors/test_files_destination.py": 8,
    "tests/pipeline/test_kafka_pipeline.py": 8,
    "tests/columnar/test_convert_columns.py": 7,
    "tests/columnar/test_avro_columns.py": 7,
    "tests/spark/test_typed_collections.py": 6,
    "tests/registry/test_serve_store.py": 6,
    "tests/registry/test_record_serde.py": 6,
    "tests/columnar/test_schemaless_read.py": 6,
    "tests/connectors/test_files_owner.py": 6,
    "tests/registry/test_caching.py": 5,
    "tests/spark/test_expand.py": 5,
    "tests/spark/test_real_debezium_events.py": 5,
    "tests/spark/test_debezium_typed_columnar.py": 5,
}


def pytest_configure(config: pytest.Config) -> None:
    """xdist would hand out the modules by their number of tests, most first (its
    ``--loadscope-reorder``, on by default): the long Spark modules, with few tests each,
    came last. They go in the collected order instead (see below)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def _module_seconds(item: pytest.Item) -> float:
    return MODULE_SECONDS.get(item.nodeid.split("::", 1)[0], 0)


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that takes the ``spark`` session is marked ``spark`` (the fast tier starts no
    Spark). The longest modules first (:data:`MODULE_SECONDS`; a stable sort, so the tests of
    a module keep their order): with several workers (``make test``) the long Spark runs start
    at once and the quick tests fill the gaps, instead of one worker finishing a long module
    alone at the end."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
    items.sort(key=_module_seconds, reverse=True)
