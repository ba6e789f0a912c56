"""Which messages the columnar Debezium decoder takes itself: clean change events with
microsecond timestamps beside doubles do; numbers a double would change do not."""

from __future__ import annotations

from typing import Any

import orjson

from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder
from tests.spark.test_debezium_typed_columnar import both_ways, decoder, event, row


def slow_rows(typed: TypedDebeziumDecoder, messages: list[Message]) -> list[int]:
    """The messages ``typed`` sends the per-message way."""
    seen: list[int] = []
    per_message = typed._slow

    def watched(found: Any, indexes: list[int]) -> Any:
        seen.extend(indexes)
        return per_message(found, indexes)

    typed._slow = watched  # type: ignore[method-assign]
    typed.decode(messages)
    return seen


def test_microsecond_timestamps_beside_doubles_take_the_fast_path() -> None:
    messages = [Message(event(after=row(score=n + 0.25, ratio=0.5))) for n in range(5)]
    assert b"1700000000123456" in (messages[0].value or b"")  # a 16-digit count
    assert slow_rows(decoder(), messages) == []


def test_numbers_a_double_would_change_go_the_per_message_way() -> None:
    cases = [
        row(score=2**53 + 1),  # an integer a double rounds
        row(score=9_007_199_254_740_993),
        row(score=0.1),  # control: exact
    ]
    messages = [Message(event(after=after)) for after in cases]
    texts = [orjson.loads(m.value or b"")["payload"]["after"]["score"] for m in messages]
    assert texts[0] == 2**53 + 1
    assert slow_rows(decoder(), messages) == [0, 1]
    fast, slow = both_ways(messages)
    assert fast == slow
    assert [index for index, _ in fast[1]] == [0, 1]  # refused, never rounded


def test_a_double_spelt_shortest_takes_the_fast_path_whatever_its_digits() -> None:
    """Debezium writes a double's shortest text: 17 digits are read as they are."""
    messages = [Message(event(after=row(score=0.30000000000000004)))]
    assert slow_rows(decoder(), messages) == []
    fast, slow = both_ways(messages)
    assert fast == slow and fast[1] == []


def test_a_long_fraction_no_double_spells_goes_the_per_message_way() -> None:
    """``0.30000000000000000444`` is a double's value, but not its text: the per-message way
    keeps the text it was given (or refuses it), so the message goes that way."""
    texts = [b"0.30000000000000000444", b"0.1000000000000000055511151231257827"]
    messages = [Message(event(after=row(score=orjson.Fragment(text)))) for text in texts] + [
        Message(event(after=row(score=0.1)))
    ]
    assert slow_rows(decoder(), messages) == [0, 1]
    fast, slow = both_ways(messages)
    assert fast == slow


def test_a_source_carrying_conduits_created_at_gives_it_as_the_per_message_way() -> None:
    """Conduit's own Debezium output keeps the record's times in ``source``."""
    document = orjson.loads(event())
    document["payload"]["source"].pop("ts_ms")
    document["payload"]["source"]["opencdc.createdAt"] = "1700000000000000123"
    for block in document["schema"]["fields"]:
        if block["field"] == "source":
            block["fields"] = [f for f in block["fields"] if f["field"] != "ts_ms"]
            block["fields"].append(
                {"type": "string", "optional": True, "field": "opencdc.createdAt"}
            )
    envelope = document["schema"]
    messages = [Message(orjson.dumps(document))]
    fast = TypedDebeziumDecoder(DebeziumJsonFormat(), envelope)
    batch, errors = fast.decode(messages)
    assert errors == []
    metadata = dict(batch.column("metadata")[0].as_py())
    assert metadata["opencdc.createdAt"] == "1700000000000000123"


def test_nan_in_text_beside_doubles_takes_the_fast_path_and_a_nan_number_does_not() -> None:
    """``NaN`` and ``Infinity`` are no JSON numbers: a message holding one where a number
    starts goes the per-message way (which refuses it); text holding the letters (a name,
    base64) does not."""
    messages = [
        Message(event(after=row(note="BaNaNa Infinity", score=1.5))),
        Message(event(after=row(blob="W1NaNx==", score=2.5))),
        Message(event(after=row(score=0.5)).replace(b'"score":0.5', b'"score":NaN')),
        Message(event(after=row(score=0.5)).replace(b'"score":0.5', b'"score": -Infinity')),
    ]
    assert slow_rows(decoder(), messages) == [2, 3]
    fast, slow = both_ways(messages)
    assert fast == slow
