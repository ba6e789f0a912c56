"""Imports run one way, down the layers; private names stay in their module."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cdc_connectors"
#: Lowest first: a module imports only from its own layer and those before it.
LAYERS = [
    "lazy",
    "text",
    "errors",
    "plugins",
    "options",
    "opencdc",
    "schema",
    "registry",
    "formats",
    "table",
    "spark",
    "columnar",
    "convert",
    "connectors",
    "pipeline",
    "cli",
]


def _modules() -> list[tuple[Path, ast.Module]]:
    return [
        (path, ast.parse(path.read_text(), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
        if "proto" not in path.relative_to(PACKAGE).parts[1:]
    ]


def _imports(tree: ast.Module) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every import of the package, also under functions."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, []) for a in node.names)
    return [item for item in found if item[1].split(".")[0] == "cdc_connectors"]


def test_no_import_runs_back_up_the_layers():
    upward = []
    for path, tree in _modules():
        layer = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if layer not in LAYERS:
            continue
        for line, module, names in _imports(tree):
            parts = module.split(".")
            target = parts[1] if len(parts) > 1 else (names[0] if names else "")
            if target in LAYERS and LAYERS.index(target) > LAYERS.index(layer):
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    assert upward == []


def test_no_private_name_is_imported_from_another_module():
    private = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name} from {module}"
        for path, tree in _modules()
        for line, module, names in _imports(tree)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert private == []
