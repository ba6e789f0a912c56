"""A table task reads plain OpenCDC JSON records without making a Record: the parts it
reads are the record codec's, and anything else goes to the codec (which names the fault)."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given

from cdc_connectors.connectors.table_write import plain_parts
from cdc_connectors.errors import CodecError
from cdc_connectors.opencdc.json_codec import record_from_json, record_to_json
from cdc_connectors.table.records import RecordParts
from tests.strategies import records


@given(records())
def test_plain_parts_are_the_codecs(record: object) -> None:
    data = record_to_json(record)  # type: ignore[arg-type]
    expected = RecordParts.of(record_from_json(data))
    found = plain_parts(data)
    if found is None:  # not plain (an operation that is no change): the codec reads it
        assert expected.operation not in ("create", "update", "delete", "snapshot")
        return
    assert found == expected


@pytest.mark.parametrize(
    "document",
    [
        b"[1]",
        b"not json",
        b'{"position": 1, "operation": "create", "metadata": {}}',
        b'{"position": "??", "operation": "create", "metadata": {}}',
        b'{"position": "", "operation": "create", "metadata": {"a": 1}}',
        b'{"position": "", "operation": "create", "metadata": {"a": "\\ud800"}}',
        b'{"position": "", "operation": "create", "metadata": {}, "key": 5}',
        b'{"position": "", "operation": "create", "metadata": {}, "payload": {"after": "%%"}}',
        b'{"position": "", "operation": "create", "metadata": {}, "payload": []}',
        b'{"position": "", "operation": "truncate", "metadata": {}}',
    ],
)
def test_anything_not_plain_goes_to_the_codec(document: bytes) -> None:
    assert plain_parts(document) is None
    try:
        record = record_from_json(document)
    except CodecError:
        return  # the codec names what is wrong: a dead letter
    assert RecordParts.of(record).operation not in ("create", "update", "delete", "snapshot")


def test_a_plain_record() -> None:
    document = orjson.dumps(
        {
            "position": "dC8wLzE=",
            "operation": "update",
            "metadata": {"opencdc.collection": "shop.orders"},
            "key": {"id": 1},
            "payload": {"before": None, "after": {"id": 1, "amount": 12.5}},
        }
    )
    parts = plain_parts(document)
    assert parts is not None
    assert (parts.operation, parts.position, parts.key) == ("update", b"t/0/1", {"id": 1})
    assert parts.after == {"id": 1, "amount": 12.5}
