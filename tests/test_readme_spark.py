"""The README's blocks that start Spark, as tests/test_readme.py runs the others: the python
blocks in one process (one Spark session), the sh blocks each in a fresh copy. A module of
their own, so that a second worker runs them while the first runs the rest of the README."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_readme import (
    SPARK,
    Shell,
    fresh_copy,
    root_unchanged,  # noqa: F401  (a fixture)
    run_python,
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]


@pytest.mark.usefixtures("root_unchanged")
def test_readme_spark_blocks_run_as_written(tmp_path: Path) -> None:
    run_python([b for b in SPARK if b.lang == "python"], fresh_copy(tmp_path / "python"))
    shell = Shell(tmp_path)
    for block in SPARK:
        if block.lang == "sh":
            shell.run(block)
