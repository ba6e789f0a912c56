"""Regenerate the Python modules (and .pyi stubs) for the .proto files under proto/.

Usage: python scripts/gen_proto.py [OUT_DIR]

Writes to cdc_connectors/opencdc/proto/ by default. The generated files are
committed; tests/opencdc/test_generated_code.py regenerates into a temporary
directory and fails when the result differs from what is committed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.protobuf import run_protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
DEFAULT_OUT = ROOT / "cdc_connectors" / "opencdc" / "proto"
HEADER = '"""Generated from proto/ by scripts/gen_proto.py (make proto). Do not edit."""\n'


def proto_files() -> list[Path]:
    """Every .proto file of the module, relative to proto/."""
    return sorted(p.relative_to(PROTO_DIR) for p in PROTO_DIR.rglob("*.proto"))


def generate(out_dir: Path) -> list[Path]:
    """Compile every .proto into out_dir; return the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    options = [f"--python_out={out_dir}", f"--pyi_out={out_dir}"]
    try:
        run_protoc([str(p) for p in proto_files()], [PROTO_DIR], options)
    except SchemaError as exc:
        raise SystemExit(f"protoc failed:\n{exc}") from None
    # Packages for the generated modules, so they ship with the distribution.
    written = []
    for directory in [out_dir, *(p for p in out_dir.rglob("*") if p.is_dir())]:
        if directory.name == "__pycache__":
            continue
        init = directory / "__init__.py"
        init.write_text(HEADER)
        written.append(init)
    written += [p for p in out_dir.rglob("*_pb2.py*")]
    return sorted(written)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    for path in generate(target):
        print(path.relative_to(target))
