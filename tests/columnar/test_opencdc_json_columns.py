"""OpenCDC JSON records read as columns by Arrow's JSON reader: the records it takes are
written byte for byte as the per-message way writes them, on batches mostly of records the
columns can hold, with the odd values that must go the other way."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar.choose import columns_for
from cdc_connectors.columnar.opencdc_json_columns import RecordColumnsReader
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
from tests.hypothesis_profiles import examples

# Image columns: some named as a metadata key, a member of the record or of its payload.
_COLUMNS = ["id", "name", "amount", "flag", "k", "operation", "before", "x.y", "é"]
_KINDS = {
    "int": st.integers(-(2**40), 2**40) | st.sampled_from([2**63 - 1, -(2**63)]),
    "double": st.sampled_from([1.5, -0.25, 2.5e-3, 1e300, 0.1]),
    "string": st.sampled_from(["", "a", "2024-01-02T03:04:05", "2024-01-02", "ünï", 'q"']),
    "bool": st.booleans(),
}
# Values that must go the per-message way, or read alike either way, spelt as JSON text.
_ODD = st.sampled_from(
    [
        "1",  # an integer among doubles
        "1.0",
        "1e400",  # beyond a double
        "1.5E+300",
        "123456789012345678901",  # beyond 64 bits
        "9223372036854775808",
        "0.1000000000000000055511151231257827",  # a double changes it
        '"\\ud800"',  # a lone surrogate
        '"<ff>"',  # no UTF-8
        "NaN",
        "-Infinity",
        '"\\u00e9"',
        "null",
        '{"a":1}',
        "[1]",
    ]
)
_METADATA_KEYS = ["opencdc.collection", "k", "x.y", "é", "opencdc.readAt"]


@st.composite
def _image(draw: st.DrawFn, kinds: dict[str, str], odd: bool) -> str:
    parts = []
    for name, kind in kinds.items():
        choice = draw(st.integers(0, 24))
        if choice == 0:
            continue  # left out
        if choice < 4:
            value = "null"
        elif choice == 4 and odd:
            value = draw(_ODD)
        else:
            value = orjson.dumps(draw(_KINDS[kind])).decode()
        parts.append(f"{json.dumps(name)}:{value}")
    return "{" + ",".join(parts) + "}"


@st.composite
def _record(draw: st.DrawFn, kinds: dict[str, str], raw_key: bool, odd: bool) -> bytes:
    members: dict[str, str] = {}
    if draw(st.integers(0, 5)):
        position = draw(st.binary(max_size=6))
        members["position"] = draw(
            st.sampled_from([json.dumps(base64.b64encode(position).decode()), '""', '"%%"'])
            if draw(st.integers(0, 6)) == 0
            else st.just(json.dumps(base64.b64encode(position).decode()))
        )
    members["operation"] = draw(
        st.sampled_from(['"create"', '"update"', '"delete"', '"snapshot"'])
        if draw(st.integers(0, 8))
        else st.sampled_from(['"Operation(2)"', '"3"', '""', "null"])
    )
    entries = draw(st.dictionaries(st.sampled_from(_METADATA_KEYS), st.text(max_size=4)))
    metadata = {k: json.dumps(v) for k, v in entries.items()}
    if metadata and draw(st.integers(0, 8)) == 0:
        metadata[next(iter(metadata))] = "null"
    if draw(st.integers(0, 6)):
        members["metadata"] = (
            "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in metadata.items()) + "}"
        )
    if raw_key:
        key = base64.b64encode(draw(st.binary(max_size=4))).decode()
        members["key"] = json.dumps(key) if draw(st.integers(0, 8)) else '"QQ"'
    else:
        members["key"] = "{" + f'"id":{draw(st.integers(0, 99))}' + "}"
        if draw(st.integers(0, 8)) == 0:
            members["key"] = draw(st.sampled_from(["{}", '{"id":null}', "null"]))
    before = draw(_image(kinds, odd)) if draw(st.booleans()) else "null"
    after = draw(_image(kinds, odd)) if draw(st.integers(0, 4)) else "null"
    members["payload"] = f'{{"before":{before},"after":{after}}}'
    names = draw(st.permutations(list(members)))
    spacing = draw(st.sampled_from([",", ", "]))
    text = "{" + spacing.join(f'"{n}":{members[n]}' for n in names) + "}"
    return text.encode().replace(b"<ff>", b"\xff")


@st.composite
def _batches(draw: st.DrawFn) -> list[bytes]:
    names = draw(st.lists(st.sampled_from(_COLUMNS), min_size=1, max_size=4, unique=True))
    kinds = {name: draw(st.sampled_from(list(_KINDS))) for name in names}
    raw_key = draw(st.booleans())
    odd = draw(st.booleans())  # values the columns do not hold, in half the batches
    return draw(st.lists(_record(kinds, raw_key, odd), min_size=1, max_size=20))


def _taken(values: list[bytes], destination: Format) -> tuple[list[int], list[Any]]:
    converter = columns_for(OpenCDCJsonFormat({}), destination)
    assert converter is not None
    places = pa.array([b"in:%d" % n for n in range(len(values))], pa.binary())
    found = converter.convert(pa.array(values, pa.binary()), None, places)
    return found.rows.tolist(), list(
        zip(found.values.to_pylist(), found.keys.to_pylist(), strict=True)
    )


def _per_message(value: bytes, row: int, destination: Format) -> tuple[bytes, bytes | None]:
    (record,) = OpenCDCJsonFormat({}).decode(Message(value, where=f"in:{row}"))
    if not record.position:
        record.position = b"in:%d" % row
    message = destination.encode(record)
    return message.value or b"", message.key


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=_batches(), to=st.sampled_from([OpenCDCProtoFormat, OpenCDCJsonFormat]))
def test_what_the_columns_take_is_what_the_per_message_way_writes(
    values: list[bytes], to: type[Format]
) -> None:
    destination = to({})
    rows, messages = _taken(values, destination)
    for row, message in zip(rows, messages, strict=True):
        assert message == _per_message(values[row], row, destination), values[row]


@pytest.mark.parametrize("to", [OpenCDCProtoFormat, OpenCDCJsonFormat])
def test_a_batch_of_flat_records_is_read_by_arrow_whole(to: type[Format]) -> None:
    values = [
        orjson.dumps(
            {
                "position": base64.b64encode(b"p%d" % n).decode(),
                "operation": "update",
                "metadata": {"opencdc.collection": "t", "k": "2024-01-02T03:04:05Z"},
                "key": {"id": n},
                "payload": {
                    "before": {"id": n, "amount": 1.5, "note": None, "at": "2024-01-02"},
                    "after": {"id": n, "amount": 2.25, "note": "x", "at": "2024-01-03"},
                },
            }
        )
        for n in range(50)
    ]
    read = RecordColumnsReader().read(
        pa.array(values, pa.binary()), pa.array([b""] * 50, pa.binary())
    )
    assert read is not None
    assert read.rows.tolist() == list(range(50))
    assert read.batch.column("metadata").type.key_type == pa.string()
    destination = to({})
    rows, messages = _taken(values, destination)
    assert rows == list(range(50))
    assert messages == [_per_message(v, n, destination) for n, v in enumerate(values)]


@pytest.mark.parametrize(
    ("odd", "why"),
    [
        ('"after":{"id":1}', "a column left out"),
        ('"after":{"id":1,"note":null,"amount":3}', "an integer among doubles"),
        ('"after":{"id":1,"note":null,"amount":1e400}', "beyond a double"),
        ('"after":{"id":1,"note":"\\udc00","amount":1.5}', "a lone surrogate"),
        ('"after":{"id":1,"note":null,"amount":NaN}', "NaN"),
        ('"after":{"id":1,"note":"<ff>","amount":1.5}', "no UTF-8"),
    ],
)
def test_records_the_columns_would_change_go_the_other_way(odd: str, why: str) -> None:
    good = '{"operation":"create","payload":{"after":{"id":N,"note":null,"amount":1.5}}}'
    values = [good.replace("N", str(n)).encode() for n in range(5)]
    odd_text = '{"operation":"create","payload":{' + odd + "}}"
    values.append(odd_text.encode().replace(b"<ff>", b"\xff"))
    read = RecordColumnsReader().read(
        pa.array(values, pa.binary()), pa.array([b""] * 6, pa.binary())
    )
    taken = [] if read is None else read.rows.tolist()
    assert 5 not in taken, why
    destination = OpenCDCJsonFormat({})
    rows, messages = _taken(values, destination)
    for row, message in zip(rows, messages, strict=True):
        assert message == _per_message(values[row], row, destination)


def test_a_null_metadata_value_goes_the_per_message_way_which_refuses_it() -> None:
    values = [
        b'{"operation":"create","metadata":{"k":"v"},"payload":{"after":{"id":1}}}',
        b'{"operation":"create","metadata":{"k":null},"payload":{"after":{"id":2}}}',
        b'{"operation":"create","metadata":{},"payload":{"after":{"id":3}}}',
    ]
    read = RecordColumnsReader().read(
        pa.array(values, pa.binary()), pa.array([b""] * 3, pa.binary())
    )
    assert read is not None
    assert read.rows.tolist() == [0, 2]
    assert np.diff(np.asarray(read.batch.column("metadata").offsets)).tolist() == [1, 0]


def test_an_integer_among_doubles_named_as_a_metadata_key_goes_the_per_message_way() -> None:
    # "k" names a metadata value and a column: the text is not looked at for it, the
    # value is: a whole one may have been written as an integer.
    values = [
        b'{"operation":"create","metadata":{"k":"v"},"payload":{"after":{"id":1,"k":1.5}}}',
        b'{"operation":"create","metadata":{"k":"v"},"payload":{"after":{"id":2,"k":2}}}',
        b'{"operation":"create","metadata":{"k":"v"},"payload":{"after":{"id":3,"k":2.0}}}',
    ]
    read = RecordColumnsReader().read(
        pa.array(values, pa.binary()), pa.array([b""] * 3, pa.binary())
    )
    assert read is not None
    assert read.rows.tolist() == [0]
    destination = OpenCDCJsonFormat({})
    rows, messages = _taken(values, destination)
    for row, message in zip(rows, messages, strict=True):
        assert message == _per_message(values[row], row, destination)


@pytest.mark.parametrize(
    "values",
    [
        # a name spelt with an escape: Arrow reads "a", the patterns of names do not
        [
            b'{"operation":"create","payload":{"after":{"a":1.5}}}',
            b'{"operation":"create","payload":{"after":{"\\u0061":1}}}',
        ],
        [b'{"operation":"create","metadata":{"\\u006b":null},"payload":{"after":{"a":1}}}'],
        # a message holding a document and a half, the next one the rest: Arrow reads the
        # joined batch as documents, not lines
        [
            b'{"operation":"create","payload":{"after":{"a":1}}}{"operation":"create","payload":',
            b'{"after":{"a":2}}}',
            b'{"operation":"create","payload":{"after":{"a":3}}}',
        ],
        # names starting with a dot (pyarrow reads such a name given as a string as a path)
        [b'{"operation":"create","payload":{"after":{"a":1,".a":2}}}'],
        [b'{"operation":"create","metadata":{"k":"v",".k":"w"},"payload":{"after":{"a":1}}}'],
        [b'{"operation":"create","key":{".a":1},"payload":{"after":{".a":2,".[0]":"x"}}}'],
        [b'{"operation":"create","payload":{"after":{"a":{".t":"2024-01-02"}}}}'],
        [
            b'{"operation":"create","payload":{"after":{"a":1}}} {"operation":"create"}',
            b'{"operation":"create","payload":{"after":{"a":3}}}',
            b'{"operation":"create","payload":',
            b'{"after":{"a":2}}}',
        ],
    ],
)
def test_what_the_patterns_cannot_read_goes_the_per_message_way(values: list[bytes]) -> None:
    for destination in (OpenCDCJsonFormat({}), OpenCDCProtoFormat({})):
        rows, messages = _taken(values, destination)
        for row, message in zip(rows, messages, strict=True):
            assert message == _per_message(values[row], row, destination)


def test_a_batch_of_other_columns_after_one_with_timestamps_is_read_from_columns() -> None:
    def batch(columns: str) -> list[bytes]:
        after = {"at": '"2024-01-02T03:04:05"', "n": "1", "x": '"y"'}
        body = ",".join(f'"{name}":{after[name]}' for name in columns)
        return [('{"operation":"create","payload":{"after":{' + body + "}}}").encode()] * 3

    reader = RecordColumnsReader()
    places = pa.array([b"p"] * 3, pa.binary())
    for columns in (["at", "n"], ["n", "x"], ["n", "x"], ["at", "n"], ["at", "x"]):
        read = reader.read(pa.array(batch(columns), pa.binary()), places)
        assert read is not None and read.rows.tolist() == [0, 1, 2], columns
        assert [name for name, _ in read.row_kinds] == sorted(columns) or set(
            name for name, _ in read.row_kinds
        ) == set(columns)
