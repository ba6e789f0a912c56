"""The built wheel, installed with a plain ``pip install``, is the whole package: its data files,
and ``format("cdc-files")`` / ``format("cdc-kafka")`` from any directory.

The wheel is built offline from a copy of the source tree (the repository is left alone) and
installed into a new virtualenv of its own; the project's ``.venv`` lends it the dependencies
through a ``.pth`` line that names its ``site-packages``. A ``.pth`` line only adds a path: the
``.pth`` files of that directory (the editable install's finder, the source tree's path) are
not run, so the package can only come from the wheel, in the driver and in Spark's workers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.pipeline.support import QUICK_SUBMIT_ARGS

pytestmark = [pytest.mark.slow]

PURELIB = Path(sysconfig.get_paths()["purelib"])  # the project's .venv site-packages
PIP = (sys.executable, "-m", "pip", "--no-input", "--quiet")


def _source_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``pip wheel`` builds from a copy of the source tree, without the network."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    for name in _source_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    dist = root / "dist"
    built = subprocess.run(
        [*PIP, "wheel", "--no-index", "--no-deps", "--no-build-isolation", str(source), "-w", dist],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = dist.glob("cdc_connectors-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path) -> Path:
    """The python of a new virtualenv holding the wheel, the project's dependencies lent."""
    venv = wheel.parent.parent / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    done = subprocess.run(
        [*PIP, "install", "--no-index", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (site / "project-dependencies.pth").write_text(f"{PURELIB}\n")
    return python


def _package_files() -> set[str]:
    """What the package holds in the source tree: its modules and its data files."""
    files = set()
    for name in _source_files():
        top = name.split("/")[0]
        if top in {"cdc_connectors", "pyspark_cdc_files", "pyspark_cdc_kafka"}:
            files.add(name)
    return files


def test_the_wheel_holds_every_file_of_the_package(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        inside = set(archive.namelist())
    missing = sorted(_package_files() - inside)
    assert not missing, f"not in {wheel.name}: {missing}"
    for needed in (
        "pyspark_cdc_files/__init__.py",
        "pyspark_cdc_kafka/__init__.py",
        "cdc_connectors/py.typed",
        "cdc_connectors/opencdc/proto/opencdc/v1/opencdc_pb2.pyi",
    ):
        assert needed in inside
    entry_points = next(name for name in inside if name.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as archive:
        declared = archive.read(entry_points).decode()
    assert "[cdc_connectors.formats]" in declared and "[cdc_connectors.connectors]" in declared


READ_FROM_ELSEWHERE = """
import os, sys
from importlib.metadata import distribution
import cdc_connectors, pyspark_cdc_files, pyspark_cdc_kafka
print("PACKAGE", cdc_connectors.__file__)
print("SOURCES", pyspark_cdc_files.__file__, pyspark_cdc_kafka.__file__)
print("DIST", distribution("cdc-connectors")._path)
print("PATH", os.pathsep.join(sys.path))
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print("ROWS", spark.read.format("cdc-files").option("format", "debezium-json")
      .option("kv", "true").load(sys.argv[1]).count())
try:
    spark.read.format("cdc-kafka").load()  # found, and it asks for its settings
except Exception as exc:
    print("KAFKA", "setting 'servers' is required" in str(exc))
def where(_):
    import sys
    import cdc_connectors
    return cdc_connectors.__file__ + "|" + os.pathsep.join(sys.path)
print("WORKER", spark.sparkContext.parallelize([0], 1).map(where).collect()[0])
"""


@pytest.mark.spark
def test_spark_finds_the_data_sources_of_the_wheel_from_any_directory(
    installed: Path, tmp_path: Path
):
    data = tmp_path / "in"
    data.mkdir()
    shutil.copy(ROOT / "examples" / "debezium" / "customers.kv.jsonl", data)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV"}
    }
    env.update(
        PYSPARK_PYTHON=str(installed),
        PYSPARK_DRIVER_PYTHON=str(installed),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_SUBMIT_ARGS=QUICK_SUBMIT_ARGS,
    )
    done = subprocess.run(
        [str(installed), "-c", READ_FROM_ELSEWHERE, str(data)],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    site = installed.parent.parent
    # the package, both data source modules and the metadata are the wheel's, in the
    # driver and in the worker; the source tree is on no path
    assert Path(said["PACKAGE"]).is_relative_to(site), said["PACKAGE"]
    assert all(Path(path).is_relative_to(site) for path in said["SOURCES"].split())
    assert Path(said["DIST"]).is_relative_to(site), said["DIST"]
    package, worker_path = said["WORKER"].split("|", 1)
    assert Path(package).is_relative_to(site), package
    for path in (said["PATH"], worker_path):
        assert str(ROOT) not in path.split(os.pathsep), path
    assert said["ROWS"] == "2"  # an update and a truncate (a dead-letter row); a tombstone
    assert said["KAFKA"] == "True"
