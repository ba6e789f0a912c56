"""buf lint passes on proto/, and the breaking check catches a renumbered field."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUF = str(Path(sys.executable).with_name("buf"))


def _buf(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BUF, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_buf_lint_passes():
    result = _buf("lint", cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_buf_breaking_rejects_a_changed_field_number(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    for target in (before, after):
        shutil.copytree(ROOT / "proto", target / "proto")
        shutil.copy(ROOT / "buf.yaml", target / "buf.yaml")
    proto = after / "proto" / "opencdc" / "v1" / "opencdc.proto"
    text = proto.read_text()
    assert "bytes position = 1;" in text
    proto.write_text(text.replace("bytes position = 1;", "bytes position = 6;"))

    same = _buf("breaking", "--against", str(before), cwd=before)
    assert same.returncode == 0, same.stdout + same.stderr
    broken = _buf("breaking", "--against", str(before), cwd=after)
    assert broken.returncode != 0
    assert "position" in broken.stdout + broken.stderr
