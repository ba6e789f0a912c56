"""No input makes parse or normalize fail with anything but a SchemaError with a reason."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.schema import languages
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.jsontext import MAX_DEPTH
from tests.hypothesis_profiles import examples

TYPES = ("AVRO", "JSON", "PROTOBUF")


def outcome(schema_type: object, text: object, refs: object = ()) -> str:
    """'ok' or the SchemaError's reason; any other exception fails the test."""
    reasons = []
    for call in (languages.normalize, languages.parse):
        try:
            call(schema_type, text, refs)  # type: ignore[arg-type]
        except SchemaError as exc:
            assert str(exc), "a SchemaError without a reason"
            reasons.append(str(exc))
    return reasons[0] if reasons else "ok"


def nested_arrays(depth: int) -> str:
    return '{"type":"array","items":' * depth + '"int"' + "}" * depth


def nested_records(depth: int) -> str:
    text = '"int"'
    for i in range(depth):
        text = f'{{"type":"record","name":"R{i}","fields":[{{"name":"f","type":{text}}}]}}'
    return text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(nested_arrays(5000), id="5000_arrays"),
        pytest.param(nested_records(5000), id="5000_records"),
        pytest.param(nested_arrays(MAX_DEPTH + 1), id="arrays_past_the_limit"),
        pytest.param(nested_records(300), id="300_records"),
        pytest.param("[" * 100_000 + "]" * 100_000, id="100000_lists"),
    ],
)
def test_deep_avro_is_refused_with_a_reason(text: str) -> None:
    assert "nests deeper" in outcome("AVRO", text) or "depth" in outcome("AVRO", text)


def test_avro_nested_up_to_the_limit_parses() -> None:
    assert outcome("AVRO", nested_arrays(MAX_DEPTH - 1)) == "ok"
    assert outcome("AVRO", nested_records(40)) == "ok"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 300, 5000])
def test_deep_json_schema_is_refused_with_a_reason(depth: int) -> None:
    text = '{"properties":{"a":' * depth + "{}" + "}}" * depth
    assert "nests deeper" in outcome("JSON", text) or "depth" in outcome("JSON", text)


def test_hugely_nested_protobuf_messages_are_refused_with_a_reason() -> None:
    depth = 5000
    text = 'syntax = "proto3";\n' + "message M {\n" * depth + "int32 x = 1;\n" + "}\n" * depth
    reason = outcome("PROTOBUF", text)
    assert "recursion limit for nested messages" in reason
    assert len(reason.splitlines()) <= 6


JUNK_TEXTS = [
    "",
    " ",
    "5",
    "1.5",
    "-1",
    "true",
    "null",
    "[]",
    "{}",
    '""',
    '"nope"',
    "[1, 2]",
    "[null]",
    "[[[]]]",
    '{"type": null}',
    '{"type": 5}',
    '{"type": []}',
    '{"type": {}}',
    '{"type": "record"}',
    '{"type": "record", "name": "R"}',
    '{"type": "record", "name": "R", "fields": 5}',
    '{"type": "record", "name": "R", "fields": [5]}',
    '{"type": "record", "name": "R", "fields": [{"name": null, "type": "int"}]}',
    '{"type": "record", "name": "R", "fields": [{"name": "a"}]}',
    '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "order": 5}]}',
    '{"type": "enum", "name": "E", "symbols": "AB"}',
    '{"type": "enum", "name": "E", "symbols": [1]}',
    '{"type": "enum", "name": "E", "symbols": ["A"], "default": "B"}',
    '{"type": "fixed", "name": "F", "size": -1}',
    '{"type": "fixed", "name": "F", "size": null}',
    '{"type": "array"}',
    '{"type": "map", "values": null}',
    '{"type": "bytes", "logicalType": "decimal", "precision": "x"}',
    '{"type": "fixed", "name": "F", "size": 2, "logicalType": "decimal", "precision": 99}',
    '{"type": "error_union", "declared_errors": []}',
    '{"type": "request", "fields": []}',
    '["int", "int"]',
    '[["int"]]',
    "\x00",
    "\ud800",
    "syntax = ",
    "message {",
    "=" * 12,
]


@pytest.mark.parametrize("schema_type", TYPES)
@pytest.mark.parametrize("text", JUNK_TEXTS)
def test_junk_text_is_a_schema_error_or_a_schema(schema_type: str, text: str) -> None:
    outcome(schema_type, text)


@pytest.mark.parametrize("schema_type", TYPES)
@pytest.mark.parametrize("junk", [None, 5, 1.5, [], {}, ["AVRO"], b"{}", object()])
def test_a_schema_that_is_not_text_is_a_schema_error(schema_type: str, junk: object) -> None:
    assert "must be a string" in outcome(schema_type, junk)


@pytest.mark.parametrize(
    "refs",
    [None, 5, "abc", [5], ["ab"], [("a",)], [("a", 5)], [(5, "x")], [None], {"a": "b"}],
)
def test_references_that_are_not_name_text_pairs_are_a_schema_error(refs: object) -> None:
    assert "reference" in outcome("AVRO", '"int"', refs)


@pytest.mark.parametrize("schema_type", [None, 5, ["AVRO"], "avro", "XML", ""])
def test_an_unknown_schema_type_is_a_schema_error(schema_type: object) -> None:
    assert "unknown schema type" in outcome(schema_type, '"int"')


def test_a_bad_reference_of_a_protobuf_schema_is_a_schema_error() -> None:
    text = 'syntax = "proto3";\nimport "a.proto";\nmessage M {\n  int32 x = 1;\n}\n'
    assert "is not a relative import path" in outcome("PROTOBUF", text, [("../a.proto", "")])
    assert "is not a relative import path" in outcome("PROTOBUF", text, [("/tmp/a.proto", "")])


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
AVRO_WORDS = st.sampled_from(
    [
        "type",
        "name",
        "namespace",
        "fields",
        "items",
        "values",
        "symbols",
        "size",
        "default",
        "aliases",
        "doc",
        "order",
        "logicalType",
        "precision",
        "scale",
    ]
)
AVRO_VALUES = st.sampled_from(
    [
        *["record", "enum", "fixed", "array", "map", "int", "long", "string", "bytes", "null"],
        *["decimal", "timestamp-millis", "date", "uuid", "R", "a.b", "ascending"],
    ]
)
avro_like = st.recursive(
    AVRO_VALUES | json_values,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(AVRO_WORDS, inner, max_size=6),
    max_leaves=25,
)


@settings(max_examples=examples(300), deadline=None)
@given(avro_like)
def test_avro_shaped_junk_is_a_schema_error_or_a_schema(value: object) -> None:
    outcome("AVRO", orjson.dumps(value).decode())


@settings(max_examples=examples(100), deadline=None)
@given(json_values)
def test_json_junk_is_a_schema_error_or_a_schema(value: object) -> None:
    outcome("JSON", orjson.dumps(value).decode())
