"""The committed generated protobuf modules are exactly what `make proto` produces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "cdc_connectors" / "opencdc" / "proto"


def _files(base: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_regenerating_the_protobuf_code_changes_nothing(tmp_path):
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_proto.py"), str(tmp_path)],
        check=True,
        capture_output=True,
    )
    fresh, committed = _files(tmp_path), _files(COMMITTED)
    assert sorted(fresh) == sorted(committed), "generated file set differs: run `make proto`"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"generated code is stale, run `make proto`: {stale}"
