"""`decode_batch` over `DebeziumJsonFormat.decode_many`: what `decode` gives, as one batch."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.formats.base import Message, SkipMessage
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.spark.arrow import decode_batch, records_from_batch, records_to_batch
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA
from tests.formats import test_debezium_json as samples
from tests.hypothesis_profiles import examples


def per_message(
    fmt: DebeziumJsonFormat, messages: list[Message]
) -> tuple[list[Record], list[tuple[int, str]]]:
    """What `decode` gives message by message, read back through Arrow."""
    records: list[Record] = []
    errors: list[tuple[int, str]] = []
    for index, message in enumerate(messages):
        try:
            records.extend(fmt.decode(message))
        except SkipMessage:
            continue
        except CodecError as exc:
            errors.append((index, str(exc)))
    return list(records_from_batch(records_to_batch(records))), errors


def columnar(
    fmt: DebeziumJsonFormat, messages: list[Message]
) -> tuple[list[Record], list[tuple[int, str]]]:
    batch, errors = decode_batch(fmt, messages)
    assert isinstance(batch, pa.RecordBatch)
    assert batch.schema.equals(OPENCDC_ARROW_SCHEMA, check_metadata=True)
    assert all(isinstance(error, CodecError) for _, error in errors)
    return list(records_from_batch(batch)), [(i, str(e)) for i, e in errors]


def sample_messages() -> list[Message]:
    """The good and bad samples of the per-message tests, in one stream."""
    good = [
        samples.message(samples.pg_event()),
        samples.message(samples.pg_event(op="d", before=samples.PG_ROW, after=None)),
        samples.message(samples.mysql(), key=None),
        samples.message(samples.mysql(op="r", before={}), key={"id": 1004}),
        samples.message(samples.mysql(), key=[1, 2]),
        samples.message(None),  # tombstone: skipped
        samples.message({"ts_ms": 1}, key=None),  # heartbeat: skipped
    ]
    bad = [Message(value, key=key) for value, key, _ in samples.BAD_INPUTS]
    mixed = []
    for index, message in enumerate(bad):
        mixed.append(message)
        mixed.append(good[index % len(good)])
    return good + mixed


def test_the_samples_give_the_same_records_and_errors_both_ways() -> None:
    fmt = DebeziumJsonFormat()
    messages = sample_messages()
    ours, errors = columnar(fmt, messages)
    expected, expected_errors = per_message(DebeziumJsonFormat(), messages)
    assert ours == expected
    assert errors == expected_errors
    assert len(errors) == len(samples.BAD_INPUTS)


def test_options_are_honoured_as_decode_honours_them() -> None:
    options = {"tombstones": "delete", "truncate": "skip", "key.fields": "id"}
    messages = [
        samples.message(None),
        samples.message(samples.mysql(op="t")),
        samples.message(samples.mysql(), key=None),
    ]
    ours, errors = columnar(DebeziumJsonFormat(options), messages)
    expected, _ = per_message(DebeziumJsonFormat(options), messages)
    assert not errors
    # A key-only delete is read "now": compare all but its read time.
    for record in (*ours, *expected):
        record.metadata.pop("opencdc.readAt", None)
    assert ours == expected


def test_a_row_with_no_variant_form_is_an_error_of_its_message_only() -> None:
    too_deep: Any = 1
    for _ in range(200):
        too_deep = [too_deep]
    messages = [
        samples.message(samples.mysql(), key=None),
        samples.message(samples.mysql(after={"id": 1, "deep": too_deep}), key=None),
        samples.message(samples.mysql(), key=None),
    ]
    ours, errors = columnar(DebeziumJsonFormat(), messages)
    assert len(ours) == 2
    assert [index for index, _ in errors] == [1]


def test_an_empty_stream_is_an_empty_batch() -> None:
    batch, errors = decode_batch(DebeziumJsonFormat(), [])
    assert batch.num_rows == 0 and errors == []
    assert batch.schema.equals(OPENCDC_ARROW_SCHEMA)


# --- generated messages -----------------------------------------------------------------------

NAMES = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=6,
)
ROWS = st.dictionaries(NAMES, VALUES, max_size=6)


def unscaled(number: int) -> str:
    """A decimal's unscaled value as Connect's JSON writes it: big-endian two's complement."""
    raw = number.to_bytes((number.bit_length() + 8) // 8, "big", signed=True)
    return base64.b64encode(raw).decode("ascii")


# Columns of a typed table and the Connect JSON values each may hold.
TYPED: dict[str, tuple[dict[str, Any], st.SearchStrategy[Any]]] = {
    "id": ({"type": "int64", "optional": False}, st.integers(-(2**63), 2**63 - 1)),
    "price": (
        {
            "type": "bytes",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        },
        st.none() | st.integers(-(10**9), 10**9).map(unscaled),
    ),
    "at": (
        {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp"},
        st.none() | st.integers(0, 4_000_000_000_000_000),
    ),
    "day": (
        {"type": "int32", "optional": True, "name": "io.debezium.time.Date"},
        st.none() | st.integers(-10_000, 100_000),
    ),
    "note": ({"type": "string", "optional": True}, st.none() | st.text(max_size=10)),
    "ok": ({"type": "boolean", "optional": True}, st.none() | st.booleans()),
}


@st.composite
def typed_event(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    columns = draw(st.lists(st.sampled_from(sorted(TYPED)), unique=True, min_size=1))
    row_schema = {
        "type": "struct",
        "name": "t.Value",
        "optional": True,
        "fields": [{**TYPED[c][0], "field": c} for c in columns],
    }
    envelope_schema = {
        "type": "struct",
        "name": "t.Envelope",
        "fields": [
            {**row_schema, "field": "before"},
            {**row_schema, "field": "after"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }

    def row() -> dict[str, Any] | None:
        if draw(st.booleans()):
            return None
        return {c: draw(TYPED[c][1]) for c in columns}

    payload = {
        "op": draw(st.sampled_from("cudr")),
        "before": row(),
        "after": row(),
        "ts_ms": draw(st.integers(1, 2**40)),
    }
    return {"schema": envelope_schema, "payload": payload}, None


@st.composite
def plain_event(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    source = draw(st.dictionaries(st.sampled_from(["db", "schema", "table", "ts_ms", "x"]), VALUES))
    payload: dict[str, Any] = {
        "op": draw(st.sampled_from(["c", "u", "d", "r", "t", "m", "z"])),
        "before": draw(st.none() | ROWS),
        "after": draw(st.none() | ROWS),
        "source": source,
        "ts_ms": draw(st.integers(1, 2**40)),
    }
    if draw(st.booleans()):
        payload["transaction"] = draw(st.none() | st.dictionaries(NAMES, VALUES, max_size=3))
    payload.update(draw(st.dictionaries(st.sampled_from(["vendor", "extra"]), VALUES)))
    key = draw(st.none() | st.fixed_dictionaries({"id": st.integers(-(2**63), 2**63 - 1)}) | ROWS)
    return payload, key


def encoded(event: tuple[dict[str, Any], Any]) -> Message:
    value, key = event
    return Message(orjson.dumps(value), key=None if key is None else orjson.dumps(key))


MESSAGES = st.lists(
    st.one_of(
        plain_event().map(encoded),
        typed_event().map(encoded),
        st.sampled_from([b"{", b"[]", b"null", b'{"op":"x","ts_ms":5}']).map(Message),
    ),
    max_size=12,
)


@settings(max_examples=examples(150), deadline=None)
@given(MESSAGES)
def test_generated_messages_give_the_same_records_and_errors_both_ways(
    messages: list[Message],
) -> None:
    # ts_ms is always set or the message has no records: read times are the message's own.
    fmt = DebeziumJsonFormat()
    try:
        ours = columnar(fmt, messages)
    except CodecError as exc:  # pragma: no cover - a failure to report, not to hide
        pytest.fail(f"decode_batch raised {exc}")
    assert ours == per_message(DebeziumJsonFormat(), messages)


class _Shouting(DebeziumJsonFormat):
    """A Debezium-shaped format that changes what decode does."""

    def records_from_envelope(self, envelope: Any, key: Any, message: Message) -> list[Record]:
        records = super().records_from_envelope(envelope, key, message)
        for record in records:
            record.metadata["shout"] = "yes"
        return records


def test_a_subclass_that_changes_decoding_is_decoded_its_way() -> None:
    messages = [samples.message(samples.mysql(), key=None)]
    ours, _ = columnar(_Shouting(), messages)
    assert [r.metadata["shout"] for r in ours] == ["yes"]
