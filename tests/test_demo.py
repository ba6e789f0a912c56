"""`make run`'s demo works as shipped: the examples as a typed Spark DataFrame."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.spark
@pytest.mark.slow
def test_demo_shows_the_examples_with_typed_payload_values():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "7 OpenCDC records" in out
    assert "structured_data: variant" in out
    assert "9007199254740993" in out  # a 64-bit id kept exact through VARIANT
    assert "42.50" in out  # decimal(10,2) out of the payload
