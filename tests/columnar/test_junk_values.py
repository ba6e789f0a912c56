"""Messages that are no JSON value send only themselves the per-message way.

Arrow reads a batch of messages together and refuses it whole for one it cannot read; the
columns then look through the batch for messages that are no JSON value before splitting
it in halves (whose attempts are limited: a few bad messages scattered over a batch used
them up, and sent thousands of good ones the per-message way). The output is what the
per-message way writes either way; what is counted shows which way each message went.
"""

from __future__ import annotations

import io

import orjson
import pytest

from cdc_connectors.convert.deadletter import DeadLetterWriter
from cdc_connectors.convert.engine import convert_stream
from cdc_connectors.formats import load_format
from tests.columnar.debezium_batches import id_event


def _junk(n: int, block: bool) -> bytes:
    """An event made no JSON value, still starting as its kind of event does and ending with
    ``}``: a member too many, a NaN, a brace short."""
    text = id_event(n, block)
    spoilt = [
        text.replace(b'"op":"c"', b'"op":"c",'),
        text.replace(b'"after":{"id":%d}' % n, b'"after":{"id":NaN}'),
        text[:-1],
    ]
    return spoilt[n % len(spoilt)]


@pytest.mark.parametrize("block", [True, False], ids=["schema block", "no schema block"])
@pytest.mark.parametrize("kv", [False, True])
def test_a_few_bad_messages_scattered_over_a_batch_cost_only_themselves(
    block: bool, kv: bool
) -> None:
    count = 3000
    values = [id_event(n, block) for n in range(count)]
    bad = [17, 1500, 2990, 400, 2222]
    for row in bad:
        values[row] = _junk(row, block)
    lines = (
        [b'{"key":{"id":%d},"value":%s}' % (n, v) for n, v in enumerate(values)] if kv else values
    )
    fmt_in, fmt_out = load_format("debezium-json")(), load_format("opencdc-proto")()
    out, letters = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(b"\n".join(lines) + b"\n"),
        out,
        fmt_in,
        fmt_out,
        kv_in=kv,
        dead_letters=DeadLetterWriter(letters, "convert"),
        source_name="in.jsonl",
    )
    assert (stats.written, stats.errors) == (count - len(bad), len(bad))
    assert stats.per_message == len(bad)  # every good message from the columns
    places = [orjson.loads(line)["position"] for line in letters.getvalue().splitlines()]
    assert len(places) == len(bad)


def test_each_value_is_judged_where_it_lies_in_any_binary_column() -> None:
    import pyarrow as pa

    from cdc_connectors.json_values import is_json
    from cdc_connectors.spark.debezium_typed import one_json_value

    texts = [b'{"a":1}', b"{", None, b"", b"[1,2]", b"NaN", b'"x"', b"1 2"]
    expected = [text is not None and is_json(text) for text in texts]
    for kind in (pa.binary(), pa.large_binary(), pa.string(), pa.large_string()):
        array = (
            pa.array([None if t is None else t.decode() for t in texts], kind)
            if pa.types.is_string(kind) or pa.types.is_large_string(kind)
            else pa.array(texts, kind)
        )
        assert one_json_value(array).tolist() == expected
        assert one_json_value(array.slice(2)).tolist() == expected[2:]
