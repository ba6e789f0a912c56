"""YDB changefeed records read as columns by Arrow's JSON reader: the records it takes are
written byte for byte as the per-message way writes them, in every mode, on batches mostly
of records the columns can hold, with the odd ones that must go the other way."""

from __future__ import annotations

import json
import time
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar.choose import columns_for
from cdc_connectors.columnar.ydb_json_columns import YdbColumnsReader
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat, OpenCDCProtoFormat
from cdc_connectors.formats.ydb import MODES, YdbJsonFormat
from cdc_connectors.opencdc import CodecError
from tests.hypothesis_profiles import examples

_NOW = 1_700_000_000_000_000_000
_COLUMNS = ["name", "amount", "flag", "note", "ts", "update", "key2"]
_KINDS = {
    "int": st.integers(-(2**40), 2**40),
    "double": st.sampled_from([1.5, -0.25, 1e300, 0.1]),
    "string": st.sampled_from(["", "a", "2024-01-02T03:04:05Z", "ünï"]),
    "bool": st.booleans(),
}
_ODD = st.sampled_from(
    ["1", "1e400", "123456789012345678901", '"\\ud800"', "NaN", "[1]", '{"a":1}', '"x"']
)


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: _NOW)


@st.composite
def _row(draw: st.DrawFn, kinds: dict[str, str], odd: bool) -> str:
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
            value = json.dumps(draw(_KINDS[kind]))
        parts.append(f"{json.dumps(name)}:{value}")
    if odd and draw(st.integers(0, 30)) == 0:
        parts.append('"id":5')  # a key column in an image
    return "{" + ",".join(parts) + "}"


@st.composite
def _record(
    draw: st.DrawFn, kinds: dict[str, str], mode: str | None, odd: bool, text_key: bool
) -> bytes:
    key = draw(st.sampled_from(["2024-01-02T03:04:05", "a", "é"]) if text_key else st.integers())
    members = {"key": f"[{json.dumps(key)}]"}
    if odd and draw(st.integers(0, 20)) == 0:
        members["key"] = draw(st.sampled_from(["[]", "[1,2]", "[null]", "null"]))
    image_mode = mode in ("NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES") or (
        mode is None and draw(st.booleans())
    )
    op = draw(st.sampled_from(["update", "update", "reset", "erase"]))
    if op == "erase" or image_mode or mode == "KEYS_ONLY":
        members[op] = "{}"
    else:
        members[op] = draw(_row(kinds, odd))
    if image_mode:
        if mode != "NEW_IMAGE" and (op == "erase" or draw(st.booleans())):
            members["oldImage"] = draw(_row(kinds, odd))
        if mode != "OLD_IMAGE" and op != "erase":
            members["newImage"] = draw(_row(kinds, odd))
    if odd and draw(st.integers(0, 8)) == 0:  # an image the mode or operation has not
        members[draw(st.sampled_from(["oldImage", "newImage"]))] = draw(_row(kinds, odd))
    if odd and draw(st.integers(0, 15)) == 0:
        members[draw(st.sampled_from(["update", "reset", "erase"]))] = "{}"  # another one
    if draw(st.integers(0, 5)):
        members["ts"] = f"[{draw(st.integers(0, 2**42))},{draw(st.integers(0, 2**50))}]"
    if odd and draw(st.integers(0, 15)) == 0:
        members[draw(st.sampled_from(["ts", "newImage", "update"]))] = draw(
            st.sampled_from(["null", "[1,2,3]", "[-1,2]", "{}"])
        )
    names = draw(st.permutations(list(members)))
    return ("{" + ",".join(f'"{n}":{members[n]}' for n in names) + "}").encode()


@st.composite
def _batches(draw: st.DrawFn) -> tuple[dict[str, str], list[bytes]]:
    names = draw(st.lists(st.sampled_from(_COLUMNS), min_size=1, max_size=4, unique=True))
    kinds = {name: draw(st.sampled_from(list(_KINDS))) for name in names}
    mode = draw(st.sampled_from([None, *MODES]))
    odd = draw(st.booleans())
    settings_ = {"key.columns": "id"}
    if mode is not None:
        settings_["mode"] = mode
    if draw(st.booleans()):
        settings_["collection"] = "shop.orders"
    text_key = draw(st.booleans())  # (text Arrow takes for timestamps among them)
    records = _record(kinds, mode, odd, text_key)
    return settings_, draw(st.lists(records, min_size=1, max_size=20))


def _taken(fmt: YdbJsonFormat, values: list[bytes], to: Format) -> tuple[list[int], list[Any]]:
    converter = columns_for(fmt, to)
    assert converter is not None
    places = pa.array([b"in:%d" % n for n in range(len(values))], pa.binary())
    found = converter.convert(pa.array(values, pa.binary()), None, places)
    messages = list(zip(found.values.to_pylist(), found.keys.to_pylist(), strict=True))
    return found.rows.tolist(), messages


def _per_message(fmt: YdbJsonFormat, value: bytes, row: int, to: Format) -> Any:
    (record,) = fmt.decode(Message(value, where=f"in:{row}"))
    message = to.encode(record)
    return message.value, message.key


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=_batches(), to=st.sampled_from([OpenCDCProtoFormat, OpenCDCJsonFormat]))
def test_what_the_columns_take_is_what_the_per_message_way_writes(
    batch: tuple[dict[str, str], list[bytes]], to: type[Format]
) -> None:
    settings_, values = batch
    fmt, destination = YdbJsonFormat(settings_), to({})
    rows, messages = _taken(fmt, values, destination)
    for row, message in zip(rows, messages, strict=True):
        assert message == _per_message(fmt, values[row], row, destination), values[row]


@pytest.mark.parametrize(
    ("mode", "record"),
    [
        ("NEW_AND_OLD_IMAGES", '"update":{},"oldImage":{"n":1,"d":1.5},"newImage":{"n":2,"d":2.5}'),
        ("NEW_AND_OLD_IMAGES", '"update":{},"newImage":{"n":2,"d":2.5}'),
        ("NEW_IMAGE", '"reset":{},"newImage":{"n":2,"d":2.5}'),
        ("OLD_IMAGE", '"erase":{},"oldImage":{"n":2,"d":2.5}'),
        ("UPDATES", '"update":{"n":2,"d":2.5}'),
        ("UPDATES", '"reset":{"n":2,"d":2.5}'),
        ("KEYS_ONLY", '"update":{}'),
        ("UPDATES", '"erase":{}'),
    ],
)
def test_each_mode_is_read_by_arrow_whole(mode: str, record: str) -> None:
    fmt = YdbJsonFormat({"key.columns": "id", "mode": mode, "collection": "t"})
    values = [f'{{"key":[{n}],{record},"ts":[{n},{n + 1}]}}'.encode() for n in range(8)]
    read = YdbColumnsReader(fmt).read(
        pa.array(values, pa.binary()), pa.array([b"p"] * 8, pa.binary()), str(_NOW)
    )
    assert read is not None
    assert read.rows.tolist() == list(range(8))
    for to in (OpenCDCProtoFormat({}), OpenCDCJsonFormat({})):
        rows, messages = _taken(fmt, values, to)
        assert rows == list(range(8))
        assert messages == [_per_message(fmt, v, n, to) for n, v in enumerate(values)]


@pytest.mark.parametrize(
    ("odd", "why"),
    [
        ('"update":{"n":2}', "a column left out"),
        ('"update":{"n":2,"d":3}', "an integer among doubles"),
        ('"update":{"n":2,"d":null,"id":4}', "a key column in the row"),
        ('"update":null', "a null operation"),
        ('"update":{},"reset":{}', "two operations"),
        ('"update":{"n":2,"d":null},"ts":[-1,2]', "a negative step"),
    ],
)
def test_records_the_columns_would_change_go_the_other_way(odd: str, why: str) -> None:
    fmt = YdbJsonFormat({"key.columns": "id", "mode": "UPDATES"})
    values = [f'{{"key":[{n}],"update":{{"n":{n},"d":1.5}}}}'.encode() for n in range(4)]
    values.append(f'{{"key":[9],{odd}}}'.encode())
    read = YdbColumnsReader(fmt).read(
        pa.array(values, pa.binary()), pa.array([b"p"] * 5, pa.binary()), str(_NOW)
    )
    assert read is not None and read.rows.tolist() == [0, 1, 2, 3], why


@pytest.mark.parametrize(
    ("mode", "odd", "why"),
    [
        (None, '"erase":{},"newImage":{"n":2,"d":1.5}', "an erased row with a new image"),
        ("UPDATES", '"update":{},"newImage":{"n":2,"d":1.5}', "an image in UPDATES mode"),
        ("KEYS_ONLY", '"update":{},"oldImage":{"n":2,"d":1.5}', "an image in KEYS_ONLY mode"),
        ("NEW_IMAGE", '"update":{}', "no new image in NEW_IMAGE mode"),
        ("NEW_AND_OLD_IMAGES", '"reset":{},"oldImage":{"n":2,"d":1.5}', "no new image"),
        ("NEW_IMAGE", '"update":{"n":2},"newImage":{"n":2,"d":1.5}', "columns beside an image"),
        (None, '"erase":{"n":2},"oldImage":{"n":2,"d":1.5}', "an erase of columns"),
        ("OLD_IMAGE", '"update":{},"newImage":{"n":2,"d":1.5}', "a new image in OLD_IMAGE"),
        (
            "NEW_IMAGE",
            '"update":{},"oldImage":{"n":1,"d":0.5},"newImage":{"n":2,"d":1.5}',
            "an old image in NEW_IMAGE",
        ),
    ],
)
def test_records_the_format_refuses_in_its_mode_go_the_other_way(
    mode: str | None, odd: str, why: str
) -> None:
    settings_ = {"key.columns": "id", **({"mode": mode} if mode else {})}
    fmt = YdbJsonFormat(settings_)
    image = '"newImage":{"n":N,"d":1.5}' if mode != "OLD_IMAGE" else '"oldImage":{"n":N,"d":1.5}'
    if mode in ("UPDATES", "KEYS_ONLY"):
        image = '"update":{"n":N,"d":1.5}' if mode == "UPDATES" else '"update":{}'
    else:
        image = '"update":{},' + image
    values = [('{"key":[N],' + image + "}").replace("N", str(n)).encode() for n in range(4)]
    values.append(('{"key":[9],' + odd + "}").encode())
    read = YdbColumnsReader(fmt).read(
        pa.array(values, pa.binary()), pa.array([b"p"] * 5, pa.binary()), str(_NOW)
    )
    assert read is not None and read.rows.tolist() == [0, 1, 2, 3], why
    with pytest.raises(CodecError):
        fmt.decode(Message(values[4], where="in:4"))


@pytest.mark.parametrize(
    ("mode", "values"),
    [
        (
            None,
            [
                b'{"key":[1],"update":{"a":"x"},"ts":[1,2]}',
                b'{"key":[2],"update":{"a":"y"},"\\u0074s":null}',
            ],
        ),
        (None, [b'{"key":[1],"update":{"a":"x"},"\\u006eewImage":null}']),
        (None, [b'{"key":[1],"erase":{},"\\u0075pdate":null}']),
        (None, [b'{"key":[1],"update":{},"newImage":{"a":"x","\\u0069d":null}}']),
        (
            "NEW_IMAGE",
            [
                b'{"key":[1],"update":{"b":1},"newImage":{"a":"x"}}',
                b'{"key":[2],"update":{"\\u0062":null},"newImage":{"a":"y"}}',
            ],
        ),
        (None, [b'{"key":[1],"erase":{"b":1}}', b'{"key":[2],"erase":{"\\u0062":null}}']),
        (None, [b'{"key":[1],"update":{"a":1.5}}', b'{"key":[2],"update":{"\\u0061":1}}']),
        (
            None,
            [
                b'{"key":[1],"update":{"a":"x"}}{"key":[2],"update":',
                b'{"a":"z"}}',
                b'{"key":[3],"update":{"a":"w"}}',
            ],
        ),
    ],
)
def test_what_the_patterns_cannot_read_goes_the_per_message_way(
    mode: str | None, values: list[bytes]
) -> None:
    _same_both_ways({"key.columns": "id", **({"mode": mode} if mode else {})}, values)


@pytest.mark.parametrize(
    ("settings_", "values"),
    [
        ({"mode": "NEW_IMAGE"}, [b'{"key":[1],"update":{},"newImage":{"a":1,".a":2}}']),
        (
            {"key.columns": ".a", "mode": "NEW_IMAGE"},
            [b'{"key":[1],"update":{},"newImage":{".a":2,"a":null}}'],
        ),
        ({}, [b'{"key":[1],"update":{"a":{".t":"2024-01-02"}}}']),
        ({"key.columns": ".a"}, [b'{"key":[1],"update":{".a":2,"a":null}}']),
    ],
)
def test_names_starting_with_a_dot_are_names(
    settings_: dict[str, str], values: list[bytes]
) -> None:
    # pyarrow reads a member name starting with "." given as a string as a path
    _same_both_ways({"key.columns": "id", **settings_}, values)


def _same_both_ways(settings_: dict[str, str], values: list[bytes]) -> None:
    fmt = YdbJsonFormat(settings_)
    for to in (OpenCDCProtoFormat({}), OpenCDCJsonFormat({})):
        rows, messages = _taken(fmt, values, to)
        for row, message in zip(rows, messages, strict=True):
            assert message == _per_message(fmt, values[row], row, to)
