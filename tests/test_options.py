"""Option values and settings by name in any case (:mod:`cdc_connectors.options`)."""

from __future__ import annotations

import pytest

from cdc_connectors.options import Options


def test_a_setting_is_found_in_any_case_and_keeps_its_spelling() -> None:
    options = Options({"endingOffsets": "latest", "Registry": "sqlite:///a.db"})
    assert options["endingoffsets"] == "latest"
    assert options.get("REGISTRY") == "sqlite:///a.db"
    assert "registry" in options and "topic" not in options
    assert list(options) == ["endingOffsets", "Registry"]


def test_setting_a_name_in_another_case_replaces_it() -> None:
    options = Options({"Registry": "sqlite:///a.db", "path": "in"})
    options["registry"] = "sqlite:///b.db"
    assert dict(options) == {"path": "in", "registry": "sqlite:///b.db"}
    assert options.setdefault("PATH", "other") == "in"
    assert options.setdefault("format", "opencdc-json") == "opencdc-json"
    assert options.pop("Format") == "opencdc-json"
    assert options.pop("format", None) is None
    del options["PATH"]
    assert dict(options) == {"registry": "sqlite:///b.db"}
    with pytest.raises(KeyError):
        options["path"]
    with pytest.raises(KeyError):
        del options["path"]
    assert options.copy() == options and isinstance(options.copy(), Options)
