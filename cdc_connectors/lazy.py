"""Names of a package imported from its modules when first used (PEP 562).

A package whose modules import heavy dependencies (confluent-kafka's registry client,
``pyspark.sql``) exports their names lazily, so a Spark task or a ``convert`` run that
never names them never pays for the imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` giving each name of ``modules`` (name ->
    the module of the package that defines it), imported when first asked for and kept."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        vars(sys.modules[package])[name] = value
        return value

    return __getattr__
