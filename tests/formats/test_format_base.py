"""The Format base: options, the registry by URL, and shipping formats to Spark executors."""

from __future__ import annotations

import pickle

import pytest
from confluent_kafka.schema_registry import Schema

from cdc_connectors.formats import FormatOptionError, load_format
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.registry import open_registry

STRING = Schema('"string"', "AVRO")


def test_formats_are_found_by_entry_point_name():
    assert load_format("opencdc-json") is OpenCDCJsonFormat
    with pytest.raises(FormatOptionError, match="unknown format 'nope'"):
        load_format("nope")


def test_unknown_options_are_named_with_the_known_ones():
    with pytest.raises(FormatOptionError, match=r"no option 'colour' \(options: raw\.as\.string\)"):
        OpenCDCJsonFormat({"colour": "red"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("Yes", True), (" 1 ", True), ("on", True), ("FALSE", False), ("off", False)],
)
def test_boolean_options_read_as_every_other_boolean_option(text, expected):
    assert OpenCDCJsonFormat({"raw.as.string": text}).raw_as_string is expected


def test_a_bad_boolean_option_is_a_format_option_error_naming_format_and_option():
    with pytest.raises(
        FormatOptionError,
        match=r"format 'opencdc-json' option 'raw\.as\.string' must be true or false, not 'maybe'",
    ):
        OpenCDCJsonFormat({"raw.as.string": "maybe"})


def test_a_format_reaches_the_store_of_its_registry_url(tmp_path):
    url = f"sqlite:///{tmp_path}/registry.db"
    schema_id = open_registry(url).register_schema("orders-value", STRING)
    fmt = OpenCDCJsonFormat({}, registry=url)
    assert fmt.registry.get_schema(schema_id).schema_str == STRING.schema_str
    with pytest.raises(FormatOptionError, match="needs a schema registry URL"):
        _ = OpenCDCJsonFormat({}).registry


def test_a_format_with_a_registry_pickles_for_executors_and_its_copy_sees_the_store(tmp_path):
    url = f"sqlite:///{tmp_path}/registry.db"
    fmt = OpenCDCJsonFormat({"raw.as.string": "true"}, registry=url)
    _ = fmt.registry  # opened here; only the URL travels
    copy = pickle.loads(pickle.dumps(fmt))
    assert copy.raw_as_string is True
    schema_id = fmt.registry.register_schema("orders-value", STRING)
    assert copy.registry.get_schema(schema_id).schema_str == STRING.schema_str
