"""A class-data-sharing archive of Spark's classes, so the suite's JVMs start sooner.

Each Spark JVM the suite starts (a dozen subprocess runs, the standalone master and worker,
the suite's own session) spends seconds loading and verifying the same classes. A dynamic
CDS archive (Java 13+: ``-XX:ArchiveClassesAtExit``) holds them mapped and verified: here a
session starts in 2.3 s instead of 4.4 s and its first job takes 0.7 s instead of 1.9 s.

``python -m tests.jvm_archive`` (``make test`` runs it once a virtualenv) runs one small Spark
job that dumps the archive, and keeps it only if a JVM starts on it (a damaged archive
crashes Java 17); :data:`ARCHIVE_OPTIONS` is what the test JVMs add to use it. A
JVM that cannot use it (none built, another Java, another class path such as the wheel
test's virtualenv) starts as before, silently: every CDS message is switched off, so no test
of what a command prints sees a word of it. Nothing of this reaches the product: the
archive is a test-environment cache, like the virtualenv.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["ARCHIVE", "ARCHIVE_OPTIONS", "build"]

ARCHIVE = Path(sys.prefix) / "spark-classes.jsa"
_SILENT = "-Xlog:cds=off -Xlog:cds+dynamic=off"
#: The JVM options that use the archive (nothing when there is none).
ARCHIVE_OPTIONS = f"-XX:SharedArchiveFile={ARCHIVE} {_SILENT}" if ARCHIVE.is_file() else ""

# A job touching what the suite's runs load: a Python data source read, mapInArrow, a
# files write.
_JOB = """
import sys, tempfile
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader
class Rows(DataSource):
    @classmethod
    def name(cls): return "archive-rows"
    def schema(self): return "n long"
    def reader(self, schema): return Reader()
class Reader(DataSourceReader):
    def read(self, partition): yield from ((n,) for n in range(10))
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false") \\
    .config("spark.driver.extraJavaOptions", sys.argv[1]).getOrCreate()
spark.dataSource.register(Rows)
rows = spark.read.format("archive-rows").load().mapInArrow(lambda b: b, "n long")
with tempfile.TemporaryDirectory() as folder:
    rows.groupBy("n").count().write.mode("overwrite").json(folder)
spark.stop()
"""


def build(archive: Path = ARCHIVE) -> bool:
    """Dump the archive (a temporary file, renamed when whole); ``False`` if the JVM did
    not (the suite then runs without it)."""
    partial = archive.with_name(archive.name + ".partial")
    partial.unlink(missing_ok=True)
    options = f"-XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit={partial} {_SILENT}"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _JOB, options],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
        problem = done.stderr.strip()[-500:] if done.returncode != 0 else _unusable(partial)
    except subprocess.TimeoutExpired:
        problem = "the job that dumps it took over 300 s"
    if problem:
        partial.unlink(missing_ok=True)
        print(f"no JVM class archive: {problem}", file=sys.stderr)
        return False
    partial.replace(archive)
    return True


def _unusable(archive: Path) -> str:
    """Why a JVM cannot start on ``archive`` (a damaged one crashes Java 17), or ``""``."""
    if not archive.is_file():
        return "the JVM wrote none"
    checked = subprocess.run(
        ["java", f"-XX:SharedArchiveFile={archive}", *_SILENT.split(), "-version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=archive.parent,  # where a crash leaves its hs_err file
    )
    return "" if checked.returncode == 0 else f"java -version exits {checked.returncode} on it"


if __name__ == "__main__":
    build()  # without an archive the suite runs as before, only slower
