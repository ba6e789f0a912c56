"""Every Python snippet of the README runs as pasted, from the project's root."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SNIPPETS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)


def test_the_readme_has_python_snippets():
    assert len(SNIPPETS) >= 2


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.splitlines()[0][:40])
def test_readme_snippet_runs_as_pasted(snippet: str):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    result = subprocess.run(
        [sys.executable, "-c", snippet], cwd=ROOT, capture_output=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
