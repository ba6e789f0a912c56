"""Spark's Python workers import the installed PySpark, not the copy in its zips.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip first on the path of each
Python worker it starts, so a worker imports PySpark from the zip. That costs every new
worker process twice: ``zipimport`` compiles each module (a zip holds no bytecode), and the
first task of each process calls :func:`importlib.invalidate_caches`, which makes every zip
importer on the path (one per package of the zip, 18 in a worker) read the zip's directory
again: about 0.2 CPU seconds a worker for PySpark's 1,800 entries, hundreds of times in the
test suite. pip installed the same modules beside the zip, with their bytecode.

``python scripts/pyspark_zips.py`` (run by ``make setup``) empties each zip whose modules are
all installed byte for byte (its tests and benchmarks aside, which no worker imports): the
worker then finds the installed ones, the same code. A zip that holds a module the
installation lacks or has otherwise is left as it is, and said so.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from pathlib import Path

__all__ = ["MARK", "empty_if_installed", "main"]

#: The comment of a zip this script emptied.
MARK = b"emptied by cdc-connectors scripts/pyspark_zips.py: its modules are installed"

#: Directories of a zip's package that no worker imports: not looked for in the installation.
_NOT_IMPORTED = {"tests", "benchmark"}


def empty_if_installed(archive: Path, installed: Path) -> str | None:
    """Empty ``archive`` when each module it holds is in ``installed`` (a site-packages
    directory) byte for byte; the reason it was left, or ``None`` when it is empty now
    (or was already). Written whole, then renamed."""
    with zipfile.ZipFile(archive) as source:
        if source.comment == MARK:
            return None
        modules = [name for name in source.namelist() if name.endswith(".py")]
        if not modules:
            return f"{archive.name} holds no module"
        for name in modules:
            copy = installed / name
            if not copy.is_file():
                if _NOT_IMPORTED.intersection(Path(name).parts[:-1]):
                    continue
                return f"{name} of {archive.name} is not installed in {installed}"
            if copy.read_bytes() != source.read(name):
                return f"{name} of {archive.name} differs from {copy}"
    handle, temporary = tempfile.mkstemp(
        prefix=f"{archive.name}.", suffix=".partial", dir=archive.parent
    )
    os.close(handle)
    partial = Path(temporary)
    try:
        with zipfile.ZipFile(partial, "w") as target:
            target.comment = MARK
        os.chmod(partial, 0o644)
        os.replace(partial, archive)
    finally:
        partial.unlink(missing_ok=True)
    return None


def main() -> None:
    import pyspark

    package = Path(pyspark.__file__).parent
    for archive in sorted((package / "python" / "lib").glob("*.zip")):
        left = empty_if_installed(archive, package.parent)
        if left:
            print(f"{archive} left as it is: {left}", file=sys.stderr)


if __name__ == "__main__":
    main()
