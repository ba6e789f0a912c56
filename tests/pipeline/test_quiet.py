"""Spark starts quiet: ``cdc-connectors run`` and the examples print their own lines only.

No log4j banner, no "Setting default log level", no loopback-address or native-library
warning, no JVM warning about incubator modules, no progress bars: the package ships its
log4j2 configuration, and the runs default ``SPARK_LOCAL_IP`` to loopback on a local master.
The environment here has neither ``SPARK_LOCAL_IP`` nor ``PYSPARK_PYTHON``, as a user's.
An example run quiet is tested with the demo's own run (tests/test_demo.py), one Spark start
fewer.
"""

from __future__ import annotations

import subprocess
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
from tests.pipeline.support import (
    CLI,
    QUIET_CONF,
    files_pipeline,
    noise_in,
    user_environment,
    write_config,
    write_debezium,
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


@pytest.mark.spark
@pytest.mark.slow
def test_a_pipeline_run_prints_no_spark_noise(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    write_debezium(tmp_path / "in" / "a.jsonl", 41)
    write_config(
        tmp_path / "pipeline.yaml",
        files_pipeline("batch", tmp_path / "in", tmp_path / "out", tmp_path / "dead", mode="batch"),
        files_pipeline("stream", tmp_path / "in", tmp_path / "s-out", tmp_path / "s-dead"),
        conf=QUIET_CONF,  # no Java options of its own: the package's alone
    )
    result = subprocess.run(
        [*CLI, "run", "--available-now", "pipeline.yaml"],
        cwd=tmp_path,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert result.returncode == 1, result.stderr  # the junk lines went to the dead letters
    output = result.stdout + result.stderr
    assert not noise_in(output), output
    assert result.stdout == ""
    for line in result.stderr.splitlines():  # the run's own lines, nothing else
        assert line.startswith(("batch: ", "stream: ")), output
