"""decode_messages: a message whose record has no Arrow form is a dead letter whose reason
names the field, not the record's index among the message's own."""

from __future__ import annotations

import json

from cdc_connectors.connectors.messages import decode_messages
from cdc_connectors.formats import load_format
from cdc_connectors.formats.base import Message
from cdc_connectors.opencdc import keys
from cdc_connectors.spark.arrow import records_from_batch


def test_a_record_with_no_arrow_form_is_a_dead_letter_naming_its_field_and_bytes() -> None:
    deep: dict[str, object] = {"a": 1}
    for _ in range(200):
        deep = {"a": deep}
    good = json.dumps({"operation": "create", "payload": {"after": {"ok": 1}}}).encode()
    bad = json.dumps({"operation": "create", "payload": {"after": deep}}).encode()
    fmt = load_format("opencdc-json")({})
    out = decode_messages(fmt, [Message(good, where="f:1"), Message(bad, where="f:2")], node_id="n")
    assert (out.records, out.errors) == (1, 1)
    letter = list(records_from_batch(out.batch))[1]
    assert letter.metadata[keys.CONDUIT_DLQ_NACK_ERROR] == (
        "payload.after.a.a.a.a.a.a (and 122 levels more): value nests deeper than 128 levels"
    )
    assert letter.payload.after is not None
    assert bytes(letter.payload.after) == bad
