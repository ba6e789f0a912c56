"""scripts/pyspark_bytecode.py: bytecode added beside the sources of a zip that Python imports
from, used by ``zipimport`` while the source is unchanged, and never trusted over it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from pyspark_bytecode import add_bytecode

_IMPORT = "import pkg.mod as m; print(m.__file__, m.VALUE)"


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def _imported(archive: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT],
        env={"PYTHONPATH": str(archive), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_modules_are_imported_from_the_added_bytecode_once(tmp_path: Path) -> None:
    archive = _zip(
        tmp_path / "lib.zip",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": "VALUE = 41 + 1\n",
            "pkg/tests/test_x.py": "x = 1\n",
            "pkg/broken.py": "def (:\n",  # no bytecode: compiled (and refused) on import
            "pkg/data.txt": "kept",
        },
    )
    assert _imported(archive) == [str(archive / "pkg" / "mod.py"), "42"]
    assert add_bytecode(archive)
    with zipfile.ZipFile(archive) as done:
        names = set(done.namelist())
        assert done.read("pkg/data.txt") == b"kept"
    assert {"pkg/__init__.pyc", "pkg/mod.pyc"} <= names
    assert "pkg/tests/test_x.pyc" not in names and "pkg/broken.pyc" not in names
    assert [p.name for p in tmp_path.iterdir()] == ["lib.zip"]  # no partial file left
    assert _imported(archive) == [str(archive / "pkg" / "mod.pyc"), "42"]
    assert not add_bytecode(archive)  # a second run leaves it as it is


def test_a_traceback_names_the_file_as_without_bytecode(tmp_path: Path) -> None:
    """What hides PySpark's own frames in a worker's error goes by these names."""
    archive = _zip(tmp_path / "lib.zip", {"pkg/__init__.py": "", "pkg/mod.py": "1 / 0\n"})
    files = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", "import pkg.mod"],
            env={"PYTHONPATH": str(archive)},
            capture_output=True,
            text=True,
        )
        files.append([line for line in done.stderr.splitlines() if "mod.py" in line])
        add_bytecode(archive)
    assert files[0] == files[1] and str(archive / "pkg" / "mod.py") in files[0][0]


def test_a_source_changed_after_compiling_wins_over_its_bytecode(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "lib.zip", {"pkg/__init__.py": "", "pkg/mod.py": "VALUE = 1\n"})
    add_bytecode(archive)
    changed = tmp_path / "changed.zip"
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(changed, "w") as target:
        for info in source.infolist():
            data = b"VALUE = 2\n" if info.filename == "pkg/mod.py" else source.read(info)
            target.writestr(info, data)
    assert _imported(changed)[1] == "2"


def test_the_zips_spark_gives_its_workers_hold_bytecode() -> None:
    """``make setup`` ran the script on this virtualenv's PySpark."""
    lib = Path(pyspark.__file__).parent / "python" / "lib"
    archives = sorted(lib.glob("*.zip"))
    assert archives, f"no zip in {lib}"
    for archive in archives:
        with zipfile.ZipFile(archive) as found:
            assert any(name.endswith(".pyc") for name in found.namelist()), archive
