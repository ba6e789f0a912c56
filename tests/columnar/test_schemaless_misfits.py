"""Which schemaless events the inferred envelope types exactly (``Inferred.misfits``): told
from the text and what Arrow read, the same events orjson reading each one tells."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar.schemaless import infer_envelope
from tests.hypothesis_profiles import examples

# Names of image fields: some also named in source or at the top level, some no pattern
# holds as they are.
_FIELDS = ["id", "price", "db", "ts_ms", "op", "payload", "name", "a.b", "ü", "x y", "source"]
_VALUES = st.none() | st.integers(-5, 5) | st.sampled_from([1.5, -0.25, 2.0, "t", "", True])
_SOURCE_MEMBERS = ["db", "name", "table", "version", "id"]
_SPELLINGS = [
    {"separators": (",", ":")},
    {},
    {"indent": 2},
    {"separators": (" ,", " : "), "ensure_ascii": False},
]


@st.composite
def _events(draw: st.DrawFn) -> tuple[list[bytes], bool]:
    fields = draw(st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=6, unique=True))
    kinds = {f: draw(_VALUES) for f in fields}  # one kind a column, mostly
    wrapped = draw(st.booleans())
    spelling = draw(st.sampled_from(_SPELLINGS))
    members = draw(st.lists(st.sampled_from(_SOURCE_MEMBERS), unique=True))
    events = []
    for _ in range(draw(st.integers(1, 12))):
        images: dict[str, Any] = {}
        for name in ("before", "after"):
            if draw(st.integers(0, 3)) == 0:
                images[name] = None
                continue
            image = {}
            for f in fields:
                kind = kinds[f]
                choice = draw(st.integers(0, 9))
                if choice == 0:
                    continue  # missing
                if choice == 1:
                    image[f] = None
                elif choice == 2 and isinstance(kind, float):
                    image[f] = draw(st.integers(-3, 3))  # an integer in a column of doubles
                else:
                    image[f] = kind
            images[name] = image
        source = {m: draw(st.none() | st.just("shop")) for m in members}
        payload = {**images, "source": source, "op": "u"}
        if draw(st.booleans()):
            payload["ts_ms"] = draw(st.none() | st.integers(0, 9))
        document = {"payload": payload} if wrapped else payload
        events.append(json.dumps(document, **spelling).encode())
    return events, wrapped


def _compared(values: pa.Array, exact_kinds: bool) -> tuple[np.ndarray, np.ndarray]:
    inferred = infer_envelope(values)
    assert inferred is not None
    told = inferred.misfits(values, exact_kinds)
    parsed = inferred._parsed(values, np.ones(len(values), dtype=bool), exact_kinds)
    return told, parsed


@settings(max_examples=examples(400), deadline=None)
@given(batch=_events(), exact_kinds=st.booleans())
def test_the_text_tells_the_misfits_orjson_tells(
    batch: tuple[list[bytes], bool], exact_kinds: bool
) -> None:
    values = pa.array(batch[0], pa.binary())
    assume(infer_envelope(values) is not None)
    told, parsed = _compared(values, exact_kinds)
    assert told.tolist() == parsed.tolist()


def test_a_missing_field_beside_a_null_of_the_same_name_in_source_is_told() -> None:
    # The text holds '"db": null' once, in source: the image has no "db" at all.
    events = [
        b'{"before":null,"after":{"id":1,"db":"x"},"source":{"db":"s"},"op":"c"}',
        b'{"before":null,"after":{"id":2},"source":{"db":null},"op":"c"}',
        b'{"before":null,"after":{"id":3,"db":null},"source":{"db":"s"},"op":"c"}',
    ]
    told, parsed = _compared(pa.array(events, pa.binary()), False)
    assert told.tolist() == parsed.tolist() == [False, True, False]


def test_a_name_spelt_with_escapes_is_read_by_orjson() -> None:
    # "\u0069d" is "id": Arrow reads it so, the pattern does not; such an event is read
    # again by orjson, which tells a null from a field left out.
    events = [
        b'{"after":{"id":1,"n":null},"op":"c"}',
        b'{"after":{"\\u0069d":1,"n":null},"op":"c"}',
    ]
    events.append(b'{"after":{"id":1,"\\u006e":null},"op":"c"}')
    events.append(b'{"after":{"\\u0069d":1},"op":"c"}')  # "n" left out
    told, parsed = _compared(pa.array(events, pa.binary()), False)
    assert told.tolist() == parsed.tolist() == [False, False, False, True]


@pytest.mark.parametrize("exact_kinds", [False, True])
def test_integers_in_a_column_of_doubles(exact_kinds: bool) -> None:
    events = [
        b'{"after":{"p":1.5},"op":"c"}',
        b'{"after":{"p":2},"op":"c"}',
        b'{"after":{"p":2.0},"op":"c"}',
        b'{"after":{"p":-7 },"op":"c"}',
        b'{"after":{"p":1e3},"op":"c"}',
        b'{"after":{"p":null},"op":"c"}',
    ]
    told, parsed = _compared(pa.array(events, pa.binary()), exact_kinds)
    assert told.tolist() == parsed.tolist()
    assert told.tolist() == [False, exact_kinds, False, exact_kinds, False, False]
    assert orjson.loads(events[1])["after"]["p"] == 2


def test_a_key_that_ends_in_a_fields_name_after_a_quote_is_not_that_field() -> None:
    # '"a\"n": null' in source holds '"n": null' after an escaped quote: no member "n".
    events = [
        b'{"after":{"id":1,"n":1},"source":{"a\\"n":"x"},"op":"c"}',
        b'{"after":{"id":2},"source":{"a\\"n":null},"op":"c"}',
    ]
    told, parsed = _compared(pa.array(events, pa.binary()), False)
    assert told.tolist() == parsed.tolist() == [False, True]


def test_an_integer_among_doubles_under_an_escaped_name_is_told() -> None:
    events = [b'{"op":"c","after":{"a":1.5}}', b'{"op":"c","after":{"\\u0061":1}}']
    told, parsed = _compared(pa.array(events, pa.binary()), True)
    assert told.tolist() == parsed.tolist() == [False, True]


def test_a_message_holding_two_documents_lends_no_rows_to_others() -> None:
    from cdc_connectors.columnar.choose import columns_for
    from cdc_connectors.formats.debezium import DebeziumJsonFormat
    from cdc_connectors.formats.opencdc import OpenCDCJsonFormat

    event = b'{"op":"c","after":{"a":1.5,"s":"x"}}'
    values = [
        event,
        event + b" " + event.replace(b"x", b"q"),
        b'{"op":"c","after":{"a":2.5,"s":"c"}}',
        b'{"op":"c","after":',
        b'{"a":2.5,"s":"z"}}',
    ]
    converter = columns_for(DebeziumJsonFormat({}), OpenCDCJsonFormat({}))
    assert converter is not None
    places = pa.array([b"in:%d" % n for n in range(len(values))], pa.binary())
    found = converter.convert(pa.array(values, pa.binary()), None, places)
    written = dict(zip(found.rows.tolist(), found.values.to_pylist(), strict=True))
    assert sorted(written) == [0, 2]
    assert b'"s":"c"' in written[2]
