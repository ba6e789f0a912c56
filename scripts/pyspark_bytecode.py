"""Compiled bytecode beside the sources in PySpark's zips, so Spark's Python workers start sooner.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) first on the path of each
Python worker it starts, so a worker imports PySpark from the zip, not from the installed
package. A zip holds sources only: every worker process compiles PySpark's modules anew, about
a second of CPU on each start (a daemon per kind of worker: data source lookups, planning,
reads, UDFs), several times per Spark application. ``python scripts/pyspark_bytecode.py``
(run by ``make setup``) rewrites each zip with a source-checked bytecode file beside every
module, which ``zipimport`` uses instead of compiling: the same code, validated against the
source's hash on each import, and named as ``zipimport`` names what it compiles. A zip this
version of the script wrote (its comment says so) is left as it is.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import warnings
import zipfile
from importlib._bootstrap_external import _code_to_hash_pyc  # type: ignore[attr-defined]
from pathlib import Path

__all__ = ["MARK", "add_bytecode", "main"]


#: The zip comment of a zip this script wrote: a zip without it (as installed) is rewritten.
MARK = b"bytecode added by cdc-connectors scripts/pyspark_bytecode.py, v2"


def add_bytecode(archive: Path) -> bool:
    """Rewrite ``archive`` with a checked hash-based ``.pyc`` beside each ``.py`` (tests
    aside), in place of any bytecode an earlier version wrote; ``False`` when this version
    wrote it already. Written whole, then renamed."""
    archive = archive.absolute()
    lib = archive.parent
    with zipfile.ZipFile(archive) as source:
        if source.comment == MARK:
            return False
        names = set(source.namelist())
        ours = {name for name in names if name.endswith(".pyc") and name[:-1] in names}
        # a file of this run's own: two runs at once each write theirs, and either is whole
        handle, temporary = tempfile.mkstemp(prefix=f"{archive.name}.", suffix=".partial", dir=lib)
        os.close(handle)
        partial = Path(temporary)
        try:
            _write(source, partial, archive, names, ours)
            os.chmod(partial, 0o644)
            os.replace(partial, archive)
        finally:
            partial.unlink(missing_ok=True)
    return True


def _write(
    source: zipfile.ZipFile, partial: Path, archive: Path, names: set[str], ours: set[str]
) -> None:
    """``source``'s entries (but ``ours``, the bytecode of an earlier version) and the
    bytecode of its modules, into ``partial``."""
    sources = names - ours
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as target:
        target.comment = MARK
        for info in source.infolist():
            if info.filename in ours:
                continue
            data = source.read(info)
            target.writestr(info, data)
            compiled = _compiled(archive, info, data, sources)
            if compiled is not None:
                entry = zipfile.ZipInfo(info.filename + "c", date_time=info.date_time)
                entry.compress_type = zipfile.ZIP_DEFLATED
                target.writestr(entry, compiled)


def _compiled(archive: Path, info: zipfile.ZipInfo, data: bytes, names: set[str]) -> bytes | None:
    """The bytecode of one entry, its code named as ``zipimport`` names what it compiles
    (the zip's path, then the entry's: tracebacks, and what hides PySpark's frames in them,
    see the same file names); ``None`` for no module or a test."""
    name = info.filename
    if not name.endswith(".py") or name + "c" in names or "/tests/" in name:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = compile(data, f"{archive}{os.sep}{name}", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None  # left to be compiled on import, as before
    return bytes(_code_to_hash_pyc(code, importlib.util.source_hash(data), checked=True))


def main() -> None:
    import pyspark

    lib = Path(pyspark.__file__).parent / "python" / "lib"
    for archive in sorted(lib.glob("*.zip")):
        if add_bytecode(archive):
            print(f"compiled bytecode added to {archive}", file=sys.stderr)


if __name__ == "__main__":
    main()
