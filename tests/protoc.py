"""Compile a test .proto at test time into its own descriptor pool (no generated files)."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from cdc_connectors.schema.protobuf import compile_files

FIXTURES = Path(__file__).parent / "fixtures"


def compile_proto(name: str) -> descriptor_pool.DescriptorPool:
    """Compile ``fixtures/<name>`` with its imports into a fresh descriptor pool."""
    pool = descriptor_pool.DescriptorPool()
    for file in compile_files([name], [FIXTURES]).file:
        pool.Add(file)
    return pool


def message_class(pool: descriptor_pool.DescriptorPool, full_name: str) -> type:
    """The message class of ``full_name`` in ``pool``."""
    return GetMessageClass(pool.FindMessageTypeByName(full_name))
