"""Compile a test .proto at test time into its own descriptor pool (no generated files)."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

FIXTURES = Path(__file__).parent / "fixtures"


def compile_proto(name: str, tmp: Path) -> descriptor_pool.DescriptorPool:
    """Compile ``fixtures/<name>`` with its imports into a fresh descriptor pool."""
    out = tmp / f"{name}.pb"
    well_known = resources.files("grpc_tools") / "_proto"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{FIXTURES}",
            f"-I{well_known}",
            "--include_imports",
            f"--descriptor_set_out={out}",
            name,
        ],
        check=True,
    )
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return pool


def message_class(pool: descriptor_pool.DescriptorPool, full_name: str) -> type:
    """The message class of ``full_name`` in ``pool``."""
    return GetMessageClass(pool.FindMessageTypeByName(full_name))
