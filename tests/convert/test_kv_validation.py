"""The --kv split checks a member with simdjson first: it must say what orjson says.

``is_json`` decides where a kv line splits and whether it splits at all; a text simdjson
takes that orjson refuses would turn a line that is an error into a message. Generated
JSON, mutated JSON and junk go through both; so does the whole split, against the split
with orjson alone.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc_connectors import json_values
from cdc_connectors.convert import streams
from cdc_connectors.opencdc import CodecError

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
# Bytes that break JSON in the ways simdjson and orjson might judge differently.
_INSERTS = [
    b"\xef\xbb\xbf",  # a byte order mark
    b"\xff",
    b"\xed\xa0\x80",  # an encoded lone surrogate
    b'"\\ud800"',
    b"\x00",
    b"\x0c",
    b"\t",
    b"NaN",
    b"1e400",
    b"18446744073709551616",
    b"-9223372036854775809",
    b",",
    b"}",
    b"]",
    b'"',
    b"\\",
]


def _json_text(value: object) -> bytes:
    # the standard library's writer: integers beyond 64 bits too, which orjson refuses
    return json.dumps(value, ensure_ascii=False).encode()


@st.composite
def _texts(draw: st.DrawFn) -> bytes:
    text = _json_text(draw(_json_values))
    action = draw(st.sampled_from(["as is", "insert", "cut", "wrap", "junk"]))
    if action == "insert":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(_INSERTS)) + text[at:]
    elif action == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif action == "wrap":
        text = draw(st.sampled_from([b" ", b"\xef\xbb\xbf", b"\n"])) + text + b" "
    elif action == "junk":
        text = draw(st.binary(max_size=40))
    return text


@given(_texts())
def test_the_fast_check_says_what_orjson_says(text: bytes) -> None:
    assert json_values.is_json(text) == json_values.parses(text)


@pytest.mark.parametrize(
    "text",
    [
        b"\xef\xbb\xbf{}",
        b"[" * 1024 + b"]" * 1024,
        b"[" * 1025 + b"]" * 1025,
        b"18446744073709551616",
        b'{"a":"\\ud800"}',
        b"1 2",
        b"",
        b'"' + b"x" * (2 << 20) + b'"',  # beyond what simdjson is given: orjson's
        b'"' + b"x" * (2 << 20),
    ],
    ids=lambda text: repr(text[:24]),
)
def test_texts_the_two_parsers_might_judge_differently(text: bytes) -> None:
    assert json_values.is_json(text) == json_values.parses(text)


def _pair(line: bytes) -> object:
    try:
        return streams.kv_pair(line, False)
    except CodecError as exc:
        return exc.reason


def _general_split(line: bytes) -> object:
    """The split of every line: the general way, each member checked by orjson alone."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streams, "is_json", streams._parses)
        try:
            members = streams._kv_members(line)
            return tuple(streams._kv_field(members, name, False) for name in ("value", "key"))
        except CodecError as exc:
            return exc.reason


_LAYOUTS = [
    b'{"key":%k,"value":%v}',
    b'{"key": %k, "value": %v}',
    b'{"value":%v,"key":%k}',
    b'{"key":%k,"value":%v} ',
    b'{"key":%k,"value":%v,"value":%v}',
    b'{"key":%k,"value":%v,"key":%k}',
    b'{"key":%k,"value":%v}}',
    b'{"key":%k,"value":%v,"other":1}',
]


@given(_texts(), _texts(), st.sampled_from(_LAYOUTS))
def test_a_kv_line_splits_as_the_general_way_with_orjson_alone(
    key: bytes, value: bytes, layout: bytes
) -> None:
    line = layout.replace(b"%k", key).replace(b"%v", value)
    assert _pair(line) == _general_split(line)


@given(st.sampled_from([b"1", b'"k"', b'{"id":1,"value":2}', b"null", b'"x,\\"value\\":"']))
def test_a_key_holding_the_value_member_s_name_is_split_where_it_ends(key: bytes) -> None:
    line = b'{"key":' + key + b',"value":{"a":"b,\\"value\\":1"}}'
    assert _pair(line) == _general_split(line)
    assert isinstance(_pair(line), tuple)


# Eight or more candidate splits in the key: the general way then parses the whole line,
# which refuses a form feed beside a member and one more level of nesting.
_CANDIDATES = b"[" + b",".join([b'{"a":0, "value":0}'] * 8) + b"]"


@pytest.mark.parametrize(
    "line",
    [
        b'{"key":\x0c' + _CANDIDATES + b',"value":1}',
        b'{"key":' + _CANDIDATES + b',"value":' + b"[" * 1024 + b"]" * 1024 + b"}",
        b'{"key":' + _CANDIDATES + b',"value":{"a":1}}',
    ],
    ids=["form feed", "deep value", "plain"],
)
def test_a_key_with_many_candidate_splits_is_judged_as_the_general_way_judges_it(
    line: bytes,
) -> None:
    assert _pair(line) == _general_split(line)
