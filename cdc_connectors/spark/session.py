"""The Spark session of a pipeline run, and the quiet log4j2 configuration of its driver."""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from cdc_connectors.pipeline.config import Config

__all__ = ["log_config", "session"]


#: Spark's log on the terminal: errors only, and none for failed tasks and queries, whose
#: reason the run reports in one line.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""
_QUIET = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.sql.execution.streaming",
    "org.apache.spark.sql.execution.datasources.v2",
    "org.apache.spark.sql.execution.python",
    "org.apache.spark.util.Utils",
)


def log_config(path: str | None = None) -> str:
    """Write a log4j2 configuration for a driver JVM to ``path`` (else a temporary file,
    removed when the process ends); its path."""
    lines = [_LOG4J2]
    for index, logger in enumerate(_QUIET):
        lines.append(f"logger.quiet{index}.name = {logger}\nlogger.quiet{index}.level = off\n")
    if path is None:
        fd, path = tempfile.mkstemp(prefix="cdc-log4j2-", suffix=".properties")
        os.close(fd)
        atexit.register(_remove, path)
    with open(path, "w") as stream:
        stream.write("".join(lines))
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def session(config: Config, *, submitted: bool) -> SparkSession:
    """The Spark session of ``config``: its master and conf, unless spark-submit set them."""
    builder: Any = SparkSession.builder.appName(
        "cdc-connectors " + ",".join(p.id for p in config.pipelines)
    )
    if not submitted:
        builder = builder.master(config.master)
        conf = dict(config.spark_conf)
        conf.setdefault("spark.ui.showConsoleProgress", "false")  # our lines say it
        if "spark.driver.extraJavaOptions" not in conf:
            conf["spark.driver.extraJavaOptions"] = (
                f"-Dlog4j2.configurationFile=file:{log_config()}"
            )
        for key, value in conf.items():
            builder = builder.config(key, value)
    spark: SparkSession = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
