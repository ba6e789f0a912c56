"""Connectors are found by entry point (`register`); PySpark's own lookup, in a fresh
session with nothing registered, is tested from outside the repository
(tests/connectors/test_lookup_anywhere.py)."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_connectors import plugins
from cdc_connectors.spark import register

pytestmark = pytest.mark.spark


def test_register_registers_every_connector_entry_point(spark: Any) -> None:
    names = register(spark)
    assert sorted(names) == ["cdc-files", "cdc-kafka", "cdc-table"]
    assert set(plugins.available(plugins.CONNECTORS)) == {"files", "kafka", "table"}
