"""Text made safe to show and to write: one home for every layer."""

from __future__ import annotations

import ast
from pathlib import Path

from cdc_connectors.text import encodes, printable, printable_bytes

PACKAGE = Path(__file__).resolve().parent.parent / "cdc_connectors"


def test_a_name_that_is_not_utf8_shows_its_bytes():
    name = b"orders-\xff.jsonl".decode("utf-8", "surrogateescape")
    assert not encodes(name)
    assert printable(name) == "orders-\\xff.jsonl"
    assert printable("a\ud800b") == "a\\ud800b"
    assert printable("plain é") == "plain é"
    assert printable(name).encode("utf-8")


def test_bytes_show_as_utf8_where_they_are():
    assert printable_bytes("ü".encode() + b"\xfe") == "ü\\xfe"


def test_the_text_module_imports_nothing_of_the_package():
    tree = ast.parse((PACKAGE / "text.py").read_text())
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not any(str(name).startswith("cdc_connectors") for name in imported)
