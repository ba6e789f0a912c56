"""Debezium-shaped dialects are described as data (`Envelope`): one described by its envelope
alone gets the lean and the columnar decoders, and gives what the per-message way gives."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdc_connectors.formats import available_formats, load_format
from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.debezium.arcion import ArcionJsonFormat
from cdc_connectors.formats.debezium.lindorm import LindormJsonFormat
from cdc_connectors.opencdc import CodecError
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder
from tests.spark.test_debezium_typed_columnar import ENVELOPE, event

# Which dialects the fast decoders serve. A change that makes a dialect override a hook
# (and so silently fall back to the per-message way) fails here.
DESCRIBED_BY_ENVELOPE = {
    "arcion-json": True,
    "debezium-json": True,
    "lindorm-json": True,
    "ydb-debezium-json": True,
}


def debezium_shaped() -> dict[str, type[DebeziumJsonFormat]]:
    found = {}
    for name in available_formats():
        cls = load_format(name)
        if issubclass(cls, DebeziumJsonFormat):
            found[name] = cls
    return found


def test_which_dialects_are_described_by_their_envelope_alone() -> None:
    described = {name: cls.described_by_envelope() for name, cls in debezium_shaped().items()}
    for name, expected in DESCRIBED_BY_ENVELOPE.items():
        assert described.pop(name) is expected, name
    assert not any(described.values()), described


def both_ways(
    messages: list[Message], fmt: DebeziumJsonFormat, envelope: dict[str, Any]
) -> tuple[Any, Any]:
    """(rows, errors) of the columnar path and of the per-message path, comparable."""
    fast = TypedDebeziumDecoder(fmt, envelope)
    slow = TypedDebeziumDecoder(fmt, envelope)
    slow._plan = None  # every message the per-message way
    out = []
    for one in (fast, slow):
        batch, errors = one.decode(messages)
        metadata = [dict(m) for m in batch.column("metadata").to_pylist()]
        for row in metadata:
            row.pop("opencdc.readAt", None)
        rest = batch.drop_columns(["metadata"])
        rows = [(metadata[n], rest.slice(n, 1)) for n in range(batch.num_rows)]
        out.append((rows, [(i, str(e)) for i, e in errors]))
    return out[0], out[1]


def arcion_event(op: str = "u", **changes: Any) -> bytes:
    document = orjson.loads(event(op=op, **changes))
    source = document["payload"]["source"]
    source.update(connector="MYSQL", snapshot="false", query="UPDATE ...")
    source.pop("schema")
    document["schema"]["fields"] = [
        f if f["field"] != "source" else _arcion_source(f) for f in document["schema"]["fields"]
    ]
    return orjson.dumps(document)


def _arcion_source(block: dict[str, Any]) -> dict[str, Any]:
    fields = [f for f in block["fields"] if f["field"] != "schema"]
    fields.append({"type": "string", "optional": True, "field": "query"})
    return {**block, "fields": fields}


def test_arcion_takes_the_columnar_path_and_gives_what_its_decode_gives() -> None:
    messages = [
        Message(arcion_event(), where="region.json:1"),
        Message(arcion_event(op="c"), where="region.json:2"),
        Message(arcion_event(op="r"), where="region.json:3"),
        Message(arcion_event(op="t"), where="region.json:4"),  # no Arcion op
    ]
    envelope = orjson.loads(messages[0].value)["schema"]
    typed = TypedDebeziumDecoder(ArcionJsonFormat(), envelope)
    assert typed._plan is not None
    slow_ones: list[list[int]] = []
    per_message = typed._slow

    def watched(messages: Any, indexes: list[int]) -> Any:
        slow_ones.append(list(indexes))
        return per_message(messages, indexes)

    typed._slow = watched  # type: ignore[method-assign]
    typed.decode(messages)
    assert slow_ones == [[3]]  # only the message of no Arcion op goes the per-message way
    fast, slow = both_ways(messages, ArcionJsonFormat(), envelope)
    assert fast == slow
    rows, errors = fast
    assert errors == [(3, "unknown op 't': Arcion's are c, u, d and r")]
    metadata, rest = rows[0]
    assert metadata["opencdc.collection"] == "shop.orders"
    assert metadata["arcion.source.query"] == "UPDATE ..."
    assert rest.column("position")[0].as_py() == b"region.json:1"


def test_arcion_positions_are_the_places_of_its_messages_every_way() -> None:
    fmt = ArcionJsonFormat()
    message = Message(arcion_event(), where="region.json:7")
    (record,) = fmt.decode(message)
    assert record.position == b"region.json:7"
    ((_, lean),) = list(fmt.decode_many([message]))
    assert isinstance(lean, list) and lean[0].position == b"region.json:7"


def test_lindorm_names_its_collection_by_namespace_and_table() -> None:
    fmt = LindormJsonFormat()
    assert fmt.collection_of({"namespace": "default", "table": "t"}) == "default.t"
    assert fmt.collection_of({"table": "t"}) == "t"
    assert fmt.collection_of({"namespace": "default"}) is None
    assert fmt.collection_of({"opencdc.collection": "x"}) is None  # no fallback
    with pytest.raises(CodecError, match=r"source\.namespace: expected a string"):
        fmt.collection_of({"namespace": 5, "table": "t"})


def test_the_typed_decoder_of_a_debezium_envelope_is_columnar() -> None:
    assert TypedDebeziumDecoder(DebeziumJsonFormat(), ENVELOPE)._plan is not None


def test_cdl_debezium_json_is_described_by_its_envelope() -> None:
    """CDL's 2.0 messages (read inside ``cdl-json``) get the fast decoders too: ``unique``
    and ``message_version`` are envelope data, not hooks."""
    from cdc_connectors.formats.debezium.cdl import CdlDebeziumJson

    assert CdlDebeziumJson.described_by_envelope()
    assert CdlDebeziumJson.envelope.key_field == "unique"
