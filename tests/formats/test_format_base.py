"""The Format base: options, the registry by URL, and shipping formats to Spark executors."""

from __future__ import annotations

import pickle

import pytest

from cdc_connectors.formats import FormatOptionError, load_format
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.registry import registry_for


def test_formats_are_found_by_entry_point_name():
    assert load_format("opencdc-json") is OpenCDCJsonFormat
    with pytest.raises(FormatOptionError, match="unknown format 'nope'"):
        load_format("nope")


def test_unknown_options_are_named_with_the_known_ones():
    with pytest.raises(FormatOptionError, match=r"no option 'colour' \(options: raw\.as\.string\)"):
        OpenCDCJsonFormat({"colour": "red"})


def test_registry_is_opened_from_the_url_once_per_process():
    fmt = OpenCDCJsonFormat({}, registry="memory://format-test")
    assert fmt.registry is registry_for("memory://format-test")
    with pytest.raises(FormatOptionError, match="needs a schema registry URL"):
        _ = OpenCDCJsonFormat({}).registry


def test_a_format_with_a_registry_pickles_for_executors():
    fmt = OpenCDCJsonFormat({"raw.as.string": "true"}, registry="memory://format-test")
    _ = fmt.registry  # opened here; only the URL travels
    copy = pickle.loads(pickle.dumps(fmt))
    assert copy.raw_as_string is True
    assert copy.registry_url == "memory://format-test"
