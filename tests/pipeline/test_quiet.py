"""Spark starts quiet: ``cdc-connectors run`` and the examples print their own lines only.

No log4j banner, no "Setting default log level", no loopback-address or native-library
warning, no JVM warning about incubator modules, no progress bars: the package ships its
log4j2 configuration, and the runs default ``SPARK_LOCAL_IP`` to loopback on a local master.
A pipeline run quiet, in an environment with neither ``SPARK_LOCAL_IP`` nor ``PYSPARK_PYTHON``
as a user's, is tested with the streaming run that tests/pipeline/test_run.py stops by SIGINT,
and an example run quiet with the demo's own run (tests/test_demo.py): two Spark starts fewer.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import pytest

from cdc_connectors.spark.session import (
    is_loopback,
    java_options,
    log_config,
    quiet_environment,
)


def test_the_log4j2_configuration_is_a_file_of_the_package() -> None:
    shipped = resources.files("cdc_connectors.spark").joinpath("log4j2.properties")
    assert shipped.is_file()
    text = shipped.read_text()
    assert "rootLogger.level = error" in text
    assert "appender.console.target = SYSTEM_ERR" in text
    path = Path(log_config())
    assert path.is_file() and path.read_text() == text


def test_java_options_add_the_configuration_unless_one_is_given() -> None:
    uri = Path(log_config()).as_uri()
    assert java_options() == f"-Dlog4j2.configurationFile={uri}"
    assert java_options("-Xss4m") == f"-Xss4m -Dlog4j2.configurationFile={uri}"
    own = "-Dlog4j2.configurationFile=file:/etc/spark/log4j2.properties"
    assert java_options(own) == own


@pytest.mark.parametrize(
    ("master", "loopback"),
    [
        (None, True),
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("local-cluster[2,1,1024]", True),
        ("spark://127.0.0.1:7077", True),
        ("spark://localhost:7077", True),
        ("spark://spark-master:7077", False),
        ("yarn", False),
        ("k8s://https://10.0.0.1:6443", False),
    ],
)
def test_only_a_master_on_this_machine_binds_to_loopback(
    master: str | None, loopback: bool
) -> None:
    assert is_loopback(master) is loopback


def test_the_environment_binds_a_local_driver_to_loopback_unless_told_otherwise() -> None:
    assert quiet_environment("local[2]", {})["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert "SPARK_LOCAL_IP" not in quiet_environment("spark://spark-master:7077", {})
    assert quiet_environment("local[2]", {"SPARK_LOCAL_IP": "10.1.2.3"})["SPARK_LOCAL_IP"] == (
        "10.1.2.3"
    )
    assert quiet_environment("local[2]", {})["PYSPARK_PYTHON"] == sys.executable
