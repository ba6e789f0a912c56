"""Hypothesis strategies: batches of OpenCDC JSON records (``opencdc-json``).

Records as Conduit writes them (base64 positions, named operations, text metadata, flat
structured keys and payloads, raw keys), and what a reader meets besides: every spelling
of an operation Conduit reads, raw payloads, nested values, numbers a double would change
or beyond 64 bits, fields of the wrong type, bad base64, kv lines, junk and tombstones. A
batch draws its columns' kinds once, so that most of its records share a row shape.
"""

from __future__ import annotations

import base64

import orjson
from hypothesis import strategies as st

from tests.columnar.ydb_json_batches import KIND_VALUES, ODD_VALUES

_NAMES = ["id", "name", "amount", "note", "flag", "é k"]
_NAMED = st.sampled_from(['"create"', '"update"', '"delete"', '"snapshot"'])
_OPERATIONS = st.one_of(
    _NAMED,
    _NAMED,
    _NAMED,
    st.sampled_from(['"Operation(2)"', '"3"', "1", "null", '""', '"bogus"', "7", "true", '"0"']),
)
_BASE64 = st.binary(max_size=12).map(lambda b: '"' + base64.b64encode(b).decode() + '"')
_POSITIONS = st.one_of(
    _BASE64,
    _BASE64,
    st.sampled_from(["null", '"not base64!"', '"QQ"', '"QU!JD"', '"QQ=="', "12", '{"a":1}']),
)
_TEXT = st.text(max_size=6).map(lambda s: orjson.dumps(s).decode())


@st.composite
def _row(draw: st.DrawFn, kinds: dict[str, str]) -> str:
    names = list(kinds)
    if draw(st.integers(0, 3)) == 0:
        names = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    parts = []
    for name in names:
        kind = kinds[name]
        odd = draw(st.integers(0, 9)) == 0
        value = draw(ODD_VALUES if odd else st.one_of(KIND_VALUES[kind], st.just("null")))
        parts.append(f"{orjson.dumps(name).decode()}:{value}")
    return "{" + ",".join(parts) + "}"


def _data(kinds: dict[str, str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just("null"),
        _row(kinds),
        _row(kinds),
        st.binary(max_size=8).map(lambda b: '"' + base64.b64encode(b).decode() + '"'),
        st.sampled_from(['"%%%"', '"QU!JD"', "5", "[1]", '{"a":{"b":1}}']),
    )


@st.composite
def _metadata(draw: st.DrawFn) -> str:
    shape = draw(st.integers(0, 12))
    if shape == 0:
        return draw(st.sampled_from(["null", "[]", '{"a":1}', '{"a":null}', '{"a":{"b":"c"}}']))
    entries = draw(st.dictionaries(st.sampled_from(["opencdc.collection", "k", "é", "x.y"]), _TEXT))
    return "{" + ",".join(f"{orjson.dumps(k).decode()}:{v}" for k, v in entries.items()) + "}"


@st.composite
def _record(draw: st.DrawFn, kinds: dict[str, str], key_kinds: dict[str, str]) -> bytes | None:
    shape = draw(st.integers(0, 24))
    if shape == 0:
        return None  # a tombstone
    if shape == 1:
        return draw(
            st.sampled_from([b"not json", b"[1]", b'"text"', b"{", b"{}", b' {"position":null}'])
        )
    if shape == 2:
        return b'{"key":null,"value":{"a":1}}'  # a kv line read as a record
    members = {
        "position": draw(_POSITIONS),
        "operation": draw(_OPERATIONS),
        "metadata": draw(_metadata()),
        "key": draw(_data(key_kinds)),
    }
    before, after = draw(_data(kinds)), draw(_data(kinds))
    if draw(st.booleans()):
        after = before if draw(st.booleans()) else after
    payload = draw(
        st.sampled_from(
            [
                f'{{"before":{before},"after":{after}}}',
                f'{{"after":{after}}}',
                "null",
                f'{{"before":{before}}}',
            ]
        )
    )
    members["payload"] = payload if draw(st.integers(0, 20)) else "[1]"
    names = [name for name in members if draw(st.integers(0, 12))]
    names = draw(st.permutations(names))
    separator = draw(st.sampled_from([",", ", "]))
    text = "{" + separator.join(f'"{n}":{members[n]}' for n in names) + "}"
    return text.encode()


@st.composite
def opencdc_json_batches(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """A batch of (Kafka key, value) messages of OpenCDC JSON records (module docstring)."""
    names = draw(st.lists(st.sampled_from(_NAMES), unique=True, min_size=1, max_size=4))
    kinds = {name: draw(st.sampled_from(list(KIND_VALUES))) for name in names}
    key_kinds = {"id": draw(st.sampled_from(["int", "string"]))}
    records = draw(st.lists(_record(kinds, key_kinds), min_size=1, max_size=24))
    return [(None, value) for value in records]
