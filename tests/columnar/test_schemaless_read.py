"""Events without a schema block are read once: the payloads Arrow read to infer their
envelope are the typed read's, where their types are the decoder's (``_conformed``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings

from cdc_connectors.columnar import debezium_opencdc, schemaless
from cdc_connectors.columnar.choose import columns_for
from cdc_connectors.formats import load_format
from cdc_connectors.spark import debezium_typed
from tests.columnar.debezium_batches import lindorm_batches, schemaless_batches
from tests.hypothesis_profiles import examples


def _written(messages: list[tuple[bytes | None, bytes | None]], source: str, to: str) -> Any:
    converter = columns_for(load_format(source)(), load_format(to)())
    assert converter is not None
    keys = pa.array([k for k, _ in messages], pa.binary())
    values = pa.array([v for _, v in messages], pa.binary())
    places = pa.array([b"in:%d" % n for n in range(len(messages))], pa.binary())
    found = converter.convert(values, keys, places)
    return found.rows.tolist(), found.values.to_pylist(), found.keys.to_pylist()


@settings(max_examples=examples(150), deadline=None)
@given(messages=schemaless_batches() | lindorm_batches())
@pytest.mark.parametrize("to", ["opencdc-proto", "opencdc-json"])
def test_the_payloads_read_to_infer_are_what_the_typed_read_gives(
    messages: list[tuple[bytes | None, bytes | None]], to: str
) -> None:
    source = (
        "lindorm-json"
        if any(b'"schema":{}' in (v or b"") for _, v in messages)
        else "debezium-json"
    )
    once = _written(messages, source, to)
    infer = debezium_opencdc.infer_envelope

    def unread(values: pa.Array) -> Any:
        found = infer(values)
        return None if found is None else dataclasses.replace(found, payloads=None)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(debezium_opencdc, "infer_envelope", unread)
        twice = _written(messages, source, to)
    assert once == twice


def test_lindorm_members_beside_an_empty_schema_block_are_not_a_payload() -> None:
    """``{"schema":{},"before":...,"op":"c"}``: the members sit beside ``schema``, not in a
    ``payload``: the decoder leaves such events to the per-message way (which keeps the
    block as ``lindorm.schema``), however Arrow read them to infer their types."""
    event = b'{"schema":{},"before":null,"after":{"id":%d,"name":"a"},"source":{"db":"d",'
    event += b'"table":"t"},"op":"c","ts_ms":5}'
    messages = [(None, event % n) for n in range(3)]
    rows, _, _ = _written(messages, "lindorm-json", "opencdc-json")
    assert rows == []


def test_a_field_no_event_holds_and_a_field_null_throughout_are_nulls_of_their_type() -> None:
    read = pa.array([{"a": 1, "b": None}, {"a": None, "b": None}])
    wanted = pa.struct([("b", pa.string()), ("a", pa.int64()), ("c", pa.struct([]))])
    found = debezium_typed._conformed(read, wanted)
    assert found is not None and found.type == wanted
    assert found.to_pylist() == [{"b": None, "a": 1, "c": None}, {"b": None, "a": None, "c": None}]
    assert debezium_typed._conformed(read, pa.struct([("a", pa.int64())])) is None  # b is more
    assert (
        debezium_typed._conformed(read, pa.struct([("a", pa.float64()), ("b", pa.null())])) is None
    )


@pytest.mark.parametrize("late", [False, True])
def test_events_with_times_as_text_are_read_once(late: bool) -> None:
    """Arrow infers a time from ISO text, which the typed read keeps as text: the types
    are inferred from a sample spread over the batch and every event read with them,
    once."""
    events = [
        orjson.dumps(
            {
                "before": None,
                "after": {"id": n, "at": f"2024-01-02T03:04:{n % 60:02d}Z", "v": None},
                "source": {"db": "d", "table": "t", "gtid": None},
                "transaction": None,
                "op": "c",
                "ts_ms": n,
            }
        )
        for n in range(600)
    ]
    if late:
        events[500] = events[500].replace(b'"v":null', b'"v":"late"')
    messages: list[tuple[bytes | None, bytes | None]] = [(None, e) for e in events]
    reads: list[int] = []
    original = debezium_typed._read_rests

    def counted(*args: Any) -> Any:
        reads.append(1)
        return original(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(debezium_typed, "_read_rests", counted)
        rows, values, _ = _written(messages, "debezium-json", "opencdc-json")
    assert rows == list(range(600))
    assert not reads or late  # (a late value outside the sample has the batch read again)
    assert b'"at":"2024-01-02T03:04:05Z"' in values[5]
    assert (b'"v":"late"' in values[500]) is late


@pytest.mark.parametrize("at", [1499, 1234])
def test_an_image_null_throughout_the_first_mebibyte_and_an_object_later_is_typed(at: int) -> None:
    """Inserts, then an update: ``before`` is null in more than Arrow's first block of
    the batch, then an object (read in blocks, Arrow refuses that); the batch is typed
    from a sample spread over it (``at`` in it, or not) or read as one block."""
    events = [
        orjson.dumps(
            {
                "before": {"id": n, "s": "y"} if n == at else None,
                "after": {"id": n, "s": "x" * 1000},
                "source": {"db": "d", "table": "t"},
                "transaction": None,
                "op": "u" if n == at else "c",
                "ts_ms": n,
            }
        )
        for n in range(1500)
    ]
    assert sum(map(len, events[:at])) > 1 << 20
    rows, values, _ = _written([(None, e) for e in events], "debezium-json", "opencdc-json")
    assert rows == list(range(1500))
    assert b'"before":{"id":%d,"s":"y"}' % at in values[at]


def test_events_of_two_tables_in_one_batch_are_typed_table_by_table() -> None:
    """One type for the events of two tables (their columns together) fits none of them:
    they are told apart by the table their ``source`` names and typed each alone."""
    events = []
    for n in range(40):
        table, after = (
            ("orders", {"id": n, "total": 12.5}) if n % 2 else ("customers", {"id": n, "name": "a"})
        )
        source = {"db": "shop", "schema": "dbo", "table": table}
        events.append(
            orjson.dumps(
                {"before": None, "after": after, "source": source, "transaction": None, "op": "c"}
            )
        )
    rows, values, _ = _written([(None, e) for e in events], "debezium-json", "opencdc-json")
    assert rows == list(range(40))
    assert b'"name":"a"' in values[0]
    assert b'"total":12.5' in values[1]


def test_objects_and_arrays_in_images_are_typed_and_told_member_by_member() -> None:
    """PostgreSQL's ``numeric`` without a precision, a geometry and arrays, as written
    without a schema block, take the columns; an object missing a member, or an integer
    in an array of doubles (OpenCDC JSON tells ``1`` from ``1.0``), goes the per-message
    way, alone."""
    events = []
    for n in range(30):
        after: dict[str, Any] = {
            "id": n,
            "ratio": {"scale": n % 4, "value": "ANb0"},
            "spot": {"wkb": "AQEAAAA=", "srid": None if n % 3 else 4326},
            "tags": [n, n + 1][: n % 3],
            "weights": [0.5, None],
        }
        if n == 7:
            del after["spot"]["srid"]
        elif n == 13:
            after["weights"] = [1, 0.5]
        source = {"db": "d", "table": "t", "xmin": None}
        events.append(orjson.dumps({"before": None, "after": after, "source": source, "op": "c"}))
    messages: list[tuple[bytes | None, bytes | None]] = [(None, e) for e in events]
    rows, values, _ = _written(messages, "debezium-json", "opencdc-json")
    assert rows == [n for n in range(30) if n not in (7, 13)]
    assert b'"ratio":{"scale":0,"value":"ANb0"}' in values[0]
    assert b'"tags":[4]' in values[rows.index(4)]
    rows, _, _ = _written(messages, "debezium-json", "opencdc-proto")
    assert rows == [n for n in range(30) if n != 7]  # a double is a double there


@pytest.mark.parametrize("later", [b"1", b"true", b'{"a":1}'])
def test_a_member_outside_the_sample_of_two_kinds_is_refused_not_retyped(later: bytes) -> None:
    """A member no event of the sample holds, text in one event and a number (or a
    boolean, an object) in another a mebibyte on: read in blocks, Arrow 26 made the number
    text, or ended the process; read as one block, the kinds clash and the batch goes the
    per-message way, which keeps each as it is."""
    count = 1500
    picks = set(np.unique(np.linspace(0, count - 1, schemaless._SAMPLE).astype(np.int64)))
    others = [n for n in range(count) if n not in picks]
    first, second = others[100], others[-5]
    events = []
    for n in range(count):
        event = b'{"before":null,"after":{"id":%d,"pad":"%s"' % (n, b"x" * 2000)
        if n == first:
            event += b',"z":"s"'
        elif n == second:
            event += b',"z":' + later
        events.append(event + b'},"source":{"db":"d","table":"t"},"op":"c","ts_ms":1}')
    messages: list[tuple[bytes | None, bytes | None]] = [(None, e) for e in events]
    rows, values, _ = _written(messages, "debezium-json", "opencdc-json")
    written = dict(zip(rows, values, strict=True))
    assert second not in written or b'"z":' + later in written[second]
    assert first not in written or b'"z":"s"' in written[first]
