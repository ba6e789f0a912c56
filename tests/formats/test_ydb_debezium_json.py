"""`ydb-debezium-json`: YDB changefeeds in their Debezium-compatible JSON format (seed 004)."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest

from cdc_connectors.convert import DeadLetterWriter, convert_stream
from cdc_connectors.formats.base import FormatOptionError, Message, SkipMessage
from cdc_connectors.formats.debezium.ydb import YdbDebeziumJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record, record_from_json
from cdc_connectors.spark.arrow import decode_batch

STEP, TX_ID = 1_670_792_400_890, 562_949_953_607_163
KEY = {"payload": {"id": 1, "name": "one"}}


def source(snapshot: bool = False, **changes: Any) -> dict[str, Any]:
    """``source`` as the seed lists it: connector, version, ts_ms, step, txId, snapshot."""
    block = {
        "connector": "ydb",
        "version": "1.0.0",
        "ts_ms": STEP + 7,
        "step": STEP,
        "txId": TX_ID,
        "snapshot": snapshot,
    }
    block.update(changes)
    return block


def value(op: str, before: Any = None, after: Any = None, **src: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"op": op, "source": source(**src)}
    if before is not None:
        payload["before"] = before
    if after is not None:
        payload["after"] = after
    return {"payload": payload}


def message(obj: Any, key: Any = KEY) -> Message:
    return Message(
        None if obj is None else orjson.dumps(obj),
        key=None if key is None else orjson.dumps(key),
        where="feed:0:3",
    )


def decode(obj: Any, key: Any = KEY, **options: str) -> Record:
    (record,) = YdbDebeziumJsonFormat(options).decode(message(obj, key))
    return record


OLD = {"id": 1, "name": "one", "intColumn": 100, "textColumn": None}
NEW = {"id": 1, "name": "one", "intColumn": 101, "textColumn": "value1"}


def test_an_update_with_both_images() -> None:
    record = decode(value("u", OLD, NEW), collection="orders")
    assert record.operation is Operation.UPDATE
    assert record.key == {"id": 1, "name": "one"}
    assert (record.payload.before, record.payload.after) == (OLD, NEW)
    md = record.metadata
    assert md.collection == "orders"
    assert (md["ydb.step"], md["ydb.txId"]) == (str(STEP), str(TX_ID))
    assert "ydb.source.step" not in md and "ydb.source.txId" not in md
    assert md["ydb.source.connector"] == "ydb" and md["ydb.source.version"] == "1.0.0"
    assert md["ydb.source.snapshot"] == "false"
    assert md.created_at == (STEP + 7) * 1_000_000
    assert md.read_at is not None


@pytest.mark.parametrize(
    ("op", "before", "after", "operation"),
    [
        ("c", None, NEW, Operation.CREATE),  # NEW_AND_OLD_IMAGES, no old row
        ("d", OLD, None, Operation.DELETE),
        ("r", None, NEW, Operation.SNAPSHOT),  # initial scan
    ],
)
def test_operations(op: str, before: Any, after: Any, operation: Operation) -> None:
    record = decode(value(op, before, after, snapshot=op == "r"), mode="NEW_AND_OLD_IMAGES")
    assert record.operation is operation
    assert (record.payload.before, record.payload.after) == (before, after)


def test_an_initial_scan_row_is_a_snapshot() -> None:
    record = decode(value("r", after=NEW, snapshot=True))
    assert record.operation is Operation.SNAPSHOT
    assert record.metadata["ydb.source.snapshot"] == "true"


def test_updates_mode_carries_only_the_key() -> None:
    record = decode(value("u"), mode="UPDATES")
    assert record.operation is Operation.UPDATE and record.key == {"id": 1, "name": "one"}
    assert (record.payload.before, record.payload.after) == (None, None)


def test_created_at_falls_back_to_the_step() -> None:
    obj = value("u", after=NEW)
    del obj["payload"]["source"]["ts_ms"]
    assert decode(obj).metadata.created_at == STEP * 1_000_000


@pytest.mark.parametrize(
    ("mode", "obj", "reason"),
    [
        ("NEW_IMAGE", value("c", after=NEW), "op 'c' in NEW_IMAGE mode"),
        ("NEW_IMAGE", value("u", OLD, NEW), "before in NEW_IMAGE mode"),
        ("OLD_IMAGE", value("u", OLD, NEW), "after in OLD_IMAGE mode"),
        ("KEYS_ONLY", value("d", OLD), "before in KEYS_ONLY mode"),
    ],
)
def test_a_message_that_does_not_fit_the_mode_is_an_error(mode: str, obj: Any, reason: str) -> None:
    with pytest.raises(CodecError, match=reason):
        decode(obj, mode=mode)


def test_errors_and_skips() -> None:
    with pytest.raises(CodecError, match="unknown op 'x'"):
        decode(value("x"))
    with pytest.raises(CodecError, match="not valid JSON"):
        YdbDebeziumJsonFormat().decode(Message(b'{"payload": ', key=None))
    with pytest.raises(SkipMessage, match="tombstone"):
        decode(None)
    (delete,) = YdbDebeziumJsonFormat({"tombstones": "delete"}).decode(message(None))
    assert delete.operation is Operation.DELETE and delete.key == {"id": 1, "name": "one"}


def test_options() -> None:
    with pytest.raises(FormatOptionError, match="'mode'"):
        YdbDebeziumJsonFormat({"mode": "SOMETIMES"})
    with pytest.raises(FormatOptionError, match="'collection' is empty"):
        YdbDebeziumJsonFormat({"collection": " "})
    with pytest.raises(FormatOptionError, match=r"no option 'schemas\.enable'"):
        YdbDebeziumJsonFormat({"schemas.enable": "true"})
    assert decode(value("u", after=NEW)).metadata.collection is None
    with pytest.raises(CodecError, match="read-only"):
        YdbDebeziumJsonFormat().encode(decode(value("u", after=NEW)))


def test_convert_stream_end_to_end() -> None:
    lines = [
        {"key": KEY, "value": value("r", after=NEW, snapshot=True)},
        {"key": KEY, "value": value("u", OLD, NEW)},
        {"key": KEY, "value": value("d", NEW)},
        {"key": KEY, "value": None},
        {"key": KEY, "value": value("c", after=NEW)},  # c outside NEW_AND_OLD_IMAGES
    ]
    source_bytes = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    out, dead = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(source_bytes),
        out,
        YdbDebeziumJsonFormat({"collection": "orders", "mode": "OLD_IMAGE"}),
        OpenCDCJsonFormat(),
        kv_in=True,
        dead_letters=DeadLetterWriter(dead, "convert:ydb-debezium-json->opencdc-json"),
        source_name="feed.jsonl",
    )
    # OLD_IMAGE: the r and u messages carry an after image the mode does not have
    assert (stats.messages, stats.written, stats.errors) == (5, 1, 3)
    assert dict(stats.skipped) == {"tombstone": 1}
    (written,) = [record_from_json(line) for line in out.getvalue().splitlines()]
    assert written.operation is Operation.DELETE and written.metadata.collection == "orders"
    reasons = [
        record_from_json(line).metadata["conduit.dlq.nack.error"]
        for line in dead.getvalue().splitlines()
    ]
    assert "after in OLD_IMAGE mode" in reasons[0] and "op 'c'" in reasons[2]

    out = io.BytesIO()
    stats = convert_stream(
        io.BytesIO(source_bytes),
        out,
        YdbDebeziumJsonFormat({"collection": "orders"}),
        OpenCDCJsonFormat(),
        kv_in=True,
    )
    assert (stats.written, stats.errors) == (4, 0)
    ops = [record_from_json(line).operation for line in out.getvalue().splitlines()]
    assert ops == [Operation.SNAPSHOT, Operation.UPDATE, Operation.DELETE, Operation.CREATE]


def test_batches_map_as_single_messages_do() -> None:
    fmt = YdbDebeziumJsonFormat({"collection": "orders", "mode": "NEW_IMAGE"})
    batch, errors = decode_batch(
        fmt, [message(value("u", after=NEW)), message(value("c", after=NEW))]
    )
    assert batch.num_rows == 1
    assert [index for index, _ in errors] == [1] and "op 'c'" in str(errors[0][1])
