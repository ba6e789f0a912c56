"""ydb-json: YDB changefeed records (JSON format) to OpenCDC records, in every mode."""

from __future__ import annotations

import io
import time
from decimal import Decimal
from typing import Any

import orjson
import pytest

from cdc_connectors.convert import DeadLetterWriter, convert_stream
from cdc_connectors.formats.base import FormatOptionError, Message, SkipMessage
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
from cdc_connectors.formats.ydb import MODES, YdbJsonFormat
from cdc_connectors.opencdc import CodecError, Operation, Record, keys, record_from_json

# The records of the YDB seed (CDC "Record structure"), as YDB writes them.
SEED_UPDATES = b'{"key":[1,"one"],"update":{"payload":"lorem ipsum","date":"2022-02-22"}}'
SEED_ERASE = b'{"key":[2,"two"],"erase":{}}'
SEED_IMAGES = (
    b'{"key":[1,2,3],"update":{},'
    b'"newImage":{"textColumn":"value1","intColumn":101,"boolColumn":true},'
    b'"oldImage":{"textColumn":null,"intColumn":100,"boolColumn":false}}'
)
SEED_TS = (
    b'{"key":[1],"update":{"created":"2022-12-12T00:00:00.000000Z","customer":"Name123"},'
    b'"ts":[1670792400890,562949953607163]}'
)
# The seed's image record as NEW_IMAGE and OLD_IMAGE changefeeds write it: one image each.
SEED_NEW_ONLY = (
    b'{"key":[1,2,3],"update":{},'
    b'"newImage":{"textColumn":"value1","intColumn":101,"boolColumn":true}}'
)
SEED_OLD_ONLY = (
    b'{"key":[1,2,3],"update":{},"oldImage":{"textColumn":null,"intColumn":100,"boolColumn":false}}'
)
NEW_IMAGE = {"textColumn": "value1", "intColumn": 101, "boolColumn": True}
OLD_IMAGE = {"textColumn": None, "intColumn": 100, "boolColumn": False}


def decode(value: bytes | None, **options: str) -> Record:
    """The one record of ``value``; its readAt checked to be "now", then dropped."""
    before = time.time_ns()
    (record,) = YdbJsonFormat(options).decode(Message(value, key=b"ignored", where="f:1"))
    assert before <= record.metadata.read_at <= time.time_ns()  # type: ignore[operator]
    del record.metadata[keys.READ_AT]
    return record


def expected(op: str, key: Any, before: Any = None, after: Any = None, **meta: Any) -> Record:
    metadata = {k.replace("_", "."): v for k, v in meta.items() if k.startswith("ydb_")}
    standard = {k: v for k, v in meta.items() if not k.startswith("ydb_")}
    return Record.new(
        op,
        position=b"f:1",
        key=key,
        before=before,
        after=after,
        metadata=metadata,
        **standard,
    )


# --- every seed example, in each mode it can come from ------------------------------


@pytest.mark.parametrize("mode", [None, "UPDATES"])
def test_seed_updates_record_is_a_partial_update(mode):
    options = {"mode": mode} if mode else {}
    assert decode(SEED_UPDATES, **options) == expected(
        "update",
        {"key": [1, "one"]},
        after={"payload": "lorem ipsum", "date": "2022-02-22"},
        ydb_partial="true",
    )
    assert decode(SEED_UPDATES, **options, **{"key.columns": "id,name"}) == expected(
        "update",
        {"id": 1, "name": "one"},
        after={"id": 1, "name": "one", "payload": "lorem ipsum", "date": "2022-02-22"},
        ydb_partial="true",
    )


@pytest.mark.parametrize("mode", [None, *MODES])
def test_seed_erase_record_is_a_delete_in_every_mode(mode):
    options = {"mode": mode} if mode else {}
    assert decode(SEED_ERASE, **options) == expected("delete", {"key": [2, "two"]})
    assert decode(SEED_ERASE, **options, **{"key.columns": "id,name"}) == expected(
        "delete", {"id": 2, "name": "two"}
    )


@pytest.mark.parametrize("mode", [None, "NEW_AND_OLD_IMAGES"])
def test_seed_images_record_is_an_update_with_both_images(mode):
    options = {"mode": mode} if mode else {}
    assert decode(SEED_IMAGES, **options) == expected(
        "update", {"key": [1, 2, 3]}, before=OLD_IMAGE, after=NEW_IMAGE
    )
    keyed = decode(SEED_IMAGES, **options, **{"key.columns": "a,b,c"})
    pk = {"a": 1, "b": 2, "c": 3}
    assert keyed == expected("update", pk, before=pk | OLD_IMAGE, after=pk | NEW_IMAGE)


@pytest.mark.parametrize("mode", [None, "NEW_IMAGE"])
def test_seed_images_record_in_new_image_mode_is_an_update_with_the_new_image(mode):
    options = {"mode": mode} if mode else {}
    assert decode(SEED_NEW_ONLY, **options) == expected(
        "update", {"key": [1, 2, 3]}, after=NEW_IMAGE
    )


@pytest.mark.parametrize("mode", [None, "OLD_IMAGE", "NEW_AND_OLD_IMAGES"])
def test_seed_images_record_with_only_the_old_image(mode):
    options = {"mode": mode} if mode else {}
    if mode == "NEW_AND_OLD_IMAGES":  # an update there always has the new image
        with pytest.raises(CodecError, match="update without newImage in NEW_AND_OLD_IMAGES"):
            decode(SEED_OLD_ONLY, **options)
        return
    assert decode(SEED_OLD_ONLY, **options) == expected(
        "update", {"key": [1, 2, 3]}, before=OLD_IMAGE
    )


@pytest.mark.parametrize("mode", [None, "UPDATES"])
def test_seed_virtual_timestamp_sets_step_txid_and_created_at(mode):
    options = {"mode": mode} if mode else {}
    assert decode(SEED_TS, **options, **{"key.columns": "id"}, collection="orders") == expected(
        "update",
        {"id": 1},
        after={"id": 1, "created": "2022-12-12T00:00:00.000000Z", "customer": "Name123"},
        ydb_partial="true",
        ydb_step="1670792400890",
        ydb_txId="562949953607163",
        created_at=1670792400890 * 1_000_000,
        collection="orders",
    )


@pytest.mark.parametrize("mode", [None, "UPDATES", "KEYS_ONLY"])
def test_seed_records_in_modes_they_do_not_fit_are_errors_naming_the_mode(mode):
    if mode is not None:
        with pytest.raises(CodecError, match=f"oldImage in {mode} mode"):
            decode(SEED_IMAGES, mode=mode)
    for image_mode in ("NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"):
        with pytest.raises(CodecError, match=f"update holds columns in {image_mode} mode"):
            decode(SEED_UPDATES, mode=image_mode)
    with pytest.raises(CodecError, match="oldImage in NEW_IMAGE mode"):
        decode(SEED_IMAGES, mode="NEW_IMAGE")
    with pytest.raises(CodecError, match="newImage in OLD_IMAGE mode"):
        decode(SEED_IMAGES, mode="OLD_IMAGE")


# --- operations and modes -----------------------------------------------------------


def test_a_new_row_is_a_create_only_in_new_and_old_images_mode():
    new_row = SEED_NEW_ONLY
    assert decode(new_row, mode="NEW_AND_OLD_IMAGES").operation is Operation.CREATE
    assert decode(SEED_IMAGES, mode="NEW_AND_OLD_IMAGES").operation is Operation.UPDATE
    # one record cannot tell NEW_IMAGE from a new row in NEW_AND_OLD_IMAGES
    assert decode(new_row).operation is Operation.UPDATE
    assert decode(new_row, mode="NEW_IMAGE").operation is Operation.UPDATE


def test_an_old_image_update_of_a_new_row_carries_the_key_alone():
    # OLD_IMAGE: a row that did not exist has no image at all
    record = decode(b'{"key":[7],"update":{}}', mode="OLD_IMAGE", **{"key.columns": "id"})
    assert record == expected("update", {"id": 7})


def test_the_mode_option_takes_any_case_and_spacing():
    assert decode(SEED_NEW_ONLY, mode=" new_and_old_images ").operation is Operation.CREATE


def test_keys_only_records_carry_no_images():
    assert decode(b'{"key":[1],"update":{}}', mode="KEYS_ONLY") == expected("update", {"key": [1]})
    with pytest.raises(CodecError, match="update holds columns in KEYS_ONLY mode"):
        decode(b'{"key":[1],"update":{"a":1}}', mode="KEYS_ONLY")


def test_only_updates_are_partial_a_reset_is_a_whole_row():
    assert decode(SEED_UPDATES).metadata["ydb.partial"] == "true"
    reset = decode(b'{"key":[1],"reset":{"a":1}}', **{"key.columns": "id"})
    assert reset == expected("update", {"id": 1}, after={"id": 1, "a": 1})
    assert "ydb.partial" not in reset.metadata
    for value in (SEED_IMAGES, SEED_NEW_ONLY, SEED_ERASE):
        assert "ydb.partial" not in decode(value).metadata
    # an update touching key columns only: a partial row of nothing but the key
    empty = decode(b'{"key":[1],"update":{}}', **{"key.columns": "id"})
    assert empty == expected("update", {"id": 1}, after={"id": 1}, ydb_partial="true")


def test_an_erase_keeps_its_old_image_as_before():
    record = decode(
        b'{"key":[5],"erase":{},"oldImage":{"v":"x"}}',
        mode="NEW_AND_OLD_IMAGES",
        **{"key.columns": "id"},
    )
    assert record == expected("delete", {"id": 5}, before={"id": 5, "v": "x"})


# --- keys ---------------------------------------------------------------------------


def test_without_key_columns_the_key_is_the_array_and_images_stay_as_sent():
    record = decode(b'{"key":["a",null,{"j":1}],"update":{},"newImage":{"v":1}}')
    assert record.key == {"key": ["a", None, {"j": 1}]}
    assert record.payload.after == {"v": 1}


def test_key_columns_are_added_back_and_a_key_column_in_an_image_must_agree():
    same = decode(b'{"key":[1],"update":{},"newImage":{"id":1,"v":2}}', **{"key.columns": "id"})
    assert same.payload.after == {"id": 1, "v": 2}
    with pytest.raises(CodecError, match=r"newImage\.id is 9 but key\.columns makes it .* 1"):
        decode(b'{"key":[1],"update":{},"newImage":{"id":9}}', **{"key.columns": "id"})
    with pytest.raises(CodecError, match=r"update\.id is 9"):
        decode(b'{"key":[1],"update":{"id":9}}', **{"key.columns": "id"})


@pytest.mark.parametrize(
    ("columns", "key", "reason"),
    [
        ("id", b"[1,2]", "key has 2 components but option key.columns names 1 (id)"),
        ("a,b,c", b"[1,2]", "key has 2 components but option key.columns names 3 (a,b,c)"),
    ],
)
def test_key_columns_must_match_the_key_array(columns, key, reason):
    with pytest.raises(CodecError) as caught:
        decode(b'{"key":' + key + b',"erase":{}}', **{"key.columns": columns})
    assert caught.value.reason == reason


def test_key_column_names_are_trimmed():
    assert decode(SEED_ERASE, **{"key.columns": " id , name "}).key == {"id": 2, "name": "two"}


# --- skipped messages ---------------------------------------------------------------


def test_resolved_timestamps_are_skipped_as_heartbeats():
    with pytest.raises(SkipMessage) as caught:
        decode(b'{"resolved":[1670792400890,562949953607163]}')
    assert caught.value.reason == "resolved timestamp"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b'{"resolved":[1]}', "resolved must be an array [step, txId], not an array of 1"),
        (b'{"resolved":"x"}', "resolved must be an array [step, txId], not string"),
        (b'{"resolved":[1,-2]}', "resolved[1] must be an unsigned 64-bit integer, not -2"),
        (b'{"resolved":[1,2],"key":[1]}', "a resolved timestamp has no other members"),
    ],
)
def test_a_malformed_resolved_timestamp_is_an_error(value, reason):
    with pytest.raises(CodecError) as caught:
        decode(value)
    assert reason in caught.value.reason


def test_a_tombstone_is_skipped():
    with pytest.raises(SkipMessage, match="tombstone"):
        decode(None)


# --- bad input ----------------------------------------------------------------------

BAD_INPUT = [
    (b"{", "invalid JSON"),
    (b"\xff", "invalid JSON: invalid UTF-8 at byte 0"),
    (b"[1]", "a YDB change record must be a JSON object, not array"),
    (b"null", "a YDB change record must be a JSON object, not null"),
    (b'{"update":{}}', "no 'key'"),
    (b'{"key":1,"update":{}}', "key must be an array of key column values, not number"),
    (b'{"key":{"id":1},"update":{}}', "key must be an array of key column values, not object"),
    (b'{"key":[],"update":{}}', "key is an empty array"),
    (b'{"key":[1]}', "no operation: the record has neither 'update' nor 'erase'"),
    (b'{"key":[1],"update":{},"erase":{}}', "both 'update' and 'erase'"),
    (b'{"key":[1],"reset":{},"erase":{}}', "both 'reset' and 'erase'"),
    (b'{"key":[1],"update":[]}', "update must be an object, not array"),
    (b'{"key":[1],"update":null}', "update must be an object, not null"),
    (b'{"key":[1],"erase":true}', "erase must be an object, not boolean"),
    (b'{"key":[1],"erase":{"a":1}}', "erase must be an empty object"),
    (b'{"key":[1],"erase":{},"newImage":{}}', "erase with a newImage"),
    (b'{"key":[1],"update":{},"newImage":"x"}', "newImage must be an object, not string"),
    (b'{"key":[1],"update":{},"oldImage":[]}', "oldImage must be an object, not array"),
    (b'{"key":[1],"update":{"a":1},"newImage":{}}', "update holds columns in an image mode"),
    (b'{"key":[1],"update":{},"ts":[1]}', "ts must be an array [step, txId], not an array of 1"),
    (b'{"key":[1],"update":{},"ts":null}', "ts must be an array [step, txId], not null"),
    (b'{"key":[1],"update":{},"ts":[1.5,2]}', "ts[0] must be an unsigned 64-bit integer"),
    (b'{"key":[1],"update":{},"ts":["1",2]}', "ts[0] must be an unsigned 64-bit integer"),
    (b'{"key":[1],"update":{},"ts":[1,true]}', "ts[1] must be an unsigned 64-bit integer"),
    (b'{"key":[1],"update":{},"ts":[-1,2]}', "ts[0] must be an unsigned 64-bit integer, not -1"),
    # a step whose nanoseconds (opencdc.createdAt) do not fit in 64 bits
    (b'{"key":[1],"update":{},"ts":[9223372036855,2]}', "beyond the nanoseconds 64 bits hold"),
    # numbers a double would change: refused, never rounded
    (b'{"key":[18446744073709551616],"erase":{}}', "does not fit in 64 bits"),
    (b'{"key":[1],"update":{"n":-9223372036854775809}}', "does not fit in 64 bits"),
    (b'{"key":[1],"update":{"n":1e400}}', "beyond the range of a double"),
    (b'{"key":[1],"update":{},"ts":[18446744073709551616,1]}', "does not fit in 64 bits"),
]


@pytest.mark.parametrize(("value", "reason"), BAD_INPUT)
def test_bad_input_is_a_codec_error_with_its_reason(value, reason):
    with pytest.raises(CodecError) as caught:
        decode(value)
    assert reason in caught.value.reason


def test_numbers_are_read_exactly():
    record = decode(
        b'{"key":[18446744073709551615],"update":{"d":0.1000000000000000055511151231257827,'
        b'"f":0.5,"i":-9223372036854775808}}'
    )
    assert record.key == {"key": [2**64 - 1]}
    assert record.payload.after == {
        "d": Decimal("0.1000000000000000055511151231257827"),
        "f": 0.5,
        "i": -(2**63),
    }


# --- options ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"mode": "FULL"}, "option 'mode' must be one of UPDATES, NEW_IMAGE, .* not 'FULL'"),
        ({"mode": ""}, "option 'mode' must be one of"),
        ({"key.columns": "a,,b"}, "option 'key.columns' must name every column"),
        ({"key.columns": ""}, "option 'key.columns' must name every column"),
        ({"key.columns": "a,b,a"}, "option 'key.columns' names 'a' twice"),
        ({"collection": " "}, "option 'collection' is empty"),
        ({"topic": "x"}, "format 'ydb-json' has no option 'topic'"),
    ],
)
def test_bad_options_are_format_option_errors_naming_the_option(options, reason):
    with pytest.raises(FormatOptionError, match=reason):
        YdbJsonFormat(options)


def test_position_is_the_place_of_the_message_and_there_is_no_encoder():
    fmt = YdbJsonFormat()
    (record,) = fmt.decode(Message(SEED_ERASE, where="topic/3/42"))
    assert record.position == b"topic/3/42"
    with pytest.raises(CodecError, match="read-only"):
        fmt.encode(record)


# --- end to end ---------------------------------------------------------------------


def test_a_changefeed_converts_to_opencdc_json_with_dead_letters_for_bad_lines():
    lines = [
        SEED_TS,
        b'{"resolved":[1670792400900,0]}',
        b'{"key":[2],"update":{},"erase":{}}',
        b'{"key":[3],"erase":{},"ts":[1670792400950,562949953607170]}',
        b"not json",
    ]
    out, dead = io.BytesIO(), io.BytesIO()
    stats = convert_stream(
        io.BytesIO(b"\n".join(lines) + b"\n"),
        out,
        YdbJsonFormat({"key.columns": "id", "collection": "orders", "mode": "UPDATES"}),
        OpenCDCJsonFormat(),
        dead_letters=DeadLetterWriter(dead, "convert:ydb-json->opencdc-json"),
        source_name="feed.jsonl",
    )
    assert (stats.messages, stats.written, stats.errors) == (5, 2, 2)
    assert stats.skipped == {"resolved timestamp": 1}

    first, second = (record_from_json(line) for line in out.getvalue().splitlines())
    assert first.position == b"feed.jsonl:1"
    assert first.operation is Operation.UPDATE
    assert first.key == {"id": 1}
    assert first.payload.after == {
        "id": 1,
        "created": "2022-12-12T00:00:00.000000Z",
        "customer": "Name123",
    }
    assert first.metadata.collection == "orders"
    assert first.metadata.created_at == 1670792400890000000
    assert first.metadata["ydb.partial"] == "true"
    assert (second.position, second.operation, second.key) == (
        b"feed.jsonl:4",
        Operation.DELETE,
        {"id": 3},
    )
    assert second.metadata["ydb.txId"] == "562949953607170"

    letters = [record_from_json(line) for line in dead.getvalue().splitlines()]
    assert [d.position for d in letters] == [b"feed.jsonl:3", b"feed.jsonl:5"]
    assert [d.payload.after for d in letters] == [lines[2], lines[4]]
    reasons = [d.metadata[keys.CONDUIT_DLQ_NACK_ERROR] for d in letters]
    assert reasons[0] == "both 'update' and 'erase': a record has one operation"
    assert reasons[1].startswith("invalid JSON")
    # what was written is plain OpenCDC JSON with sorted, string metadata
    assert orjson.loads(out.getvalue().splitlines()[0])["metadata"]["ydb.step"] == "1670792400890"
