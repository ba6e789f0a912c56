"""scripts/pyspark_zips.py: a zip on a worker's path emptied where its modules are installed
byte for byte, so that they are imported from the installation; left otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from pyspark_zips import MARK, empty_if_installed

_FILES = {
    "pkg/__init__.py": "",
    "pkg/mod.py": "VALUE = 41 + 1\n",
    "pkg/tests/test_x.py": "x = 1\n",  # not installed: no worker imports it
    "pkg/data.txt": "kept",
}


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def _install(site: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        if "/tests/" not in name:
            (site / name).parent.mkdir(parents=True, exist_ok=True)
            (site / name).write_text(text)
    return site


def _imported_from(*path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "import pkg.mod as m; print(m.__file__)"],
        env={"PYTHONPATH": os.pathsep.join(map(str, path)), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_zip_whose_modules_are_installed_is_emptied_and_they_are_imported_from_there(
    tmp_path: Path,
) -> None:
    archive = _zip(tmp_path / "lib.zip", _FILES)
    site = _install(tmp_path / "site", _FILES)
    assert _imported_from(archive, site) == str(archive / "pkg" / "mod.py")
    assert empty_if_installed(archive, site) is None
    with zipfile.ZipFile(archive) as emptied:
        assert emptied.namelist() == [] and emptied.comment == MARK
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == ["lib.zip"]  # no partial
    assert _imported_from(archive, site) == str(site / "pkg" / "mod.py")
    assert empty_if_installed(archive, site) is None  # a second run leaves it as it is


def test_a_zip_holding_a_module_the_installation_has_otherwise_is_left(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "lib.zip", _FILES)
    site = _install(tmp_path / "site", {**_FILES, "pkg/mod.py": "VALUE = 1\n"})
    before = archive.read_bytes()
    assert (
        empty_if_installed(archive, site) == f"pkg/mod.py of lib.zip differs from {site}/pkg/mod.py"
    )
    assert archive.read_bytes() == before


def test_a_zip_holding_a_module_not_installed_is_left(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "lib.zip", {**_FILES, "pkg/extra.py": "y = 2\n"})
    site = _install(tmp_path / "site", _FILES)
    before = archive.read_bytes()
    assert (
        empty_if_installed(archive, site) == f"pkg/extra.py of lib.zip is not installed in {site}"
    )
    assert archive.read_bytes() == before


def test_spark_workers_import_this_virtualenvs_installed_pyspark() -> None:
    """``make setup`` ran the script: with Spark's zips first on the path, as a worker has
    them, PySpark and py4j come from site-packages."""
    package = Path(pyspark.__file__).parent
    archives = sorted((package / "python" / "lib").glob("*.zip"))
    assert len(archives) == 2, archives
    done = subprocess.run(
        [sys.executable, "-c", "import pyspark, py4j; print(pyspark.__file__, py4j.__file__)"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, archives))},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == [
        str(package / "__init__.py"),
        str(package.parent / "py4j" / "__init__.py"),
    ]
