"""``expand`` and ``encode`` given a DataFrame that has a column of their output's names.

``expand`` adds an ``error`` column and ``encode`` adds ``value`` and ``error``: given what
``expand`` gave, ``encode`` would make a second ``error`` column, which Spark's Arrow
exchange refuses with an error naming nothing. Both refuse such a DataFrame at once, with
one line naming the column; ``error_column`` (and ``output``) name theirs otherwise.
"""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdc_connectors.opencdc import Record
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.serde import RecordEncoder
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.schema import framing
from cdc_connectors.spark import records_dataframe
from cdc_connectors.spark.expand import encode, expand

pytestmark = pytest.mark.spark

ITEM = {
    "type": "record",
    "name": "Item",
    "fields": [
        {"name": "id", "type": "long"},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
    ],
}
KEY = {"type": "record", "name": "ItemKey", "fields": [{"name": "id", "type": "long"}]}


@pytest.fixture
def stream(tmp_path: Path) -> tuple[str, list[Record]]:
    """Two good records (key and payload Conduit-framed) and one whose payload is cut."""
    url = f"sqlite:///{tmp_path}/registry.db"
    store = SchemaStore(open_registry(url))
    store.register("items-value", json.dumps(ITEM))
    store.register("items-key", json.dumps(KEY))
    records = []
    for n in (1, 2):
        record = Record.new(
            "create",
            position=b"%d" % n,
            key={"id": n},
            after={"id": n, "amount": Decimal(n) / 4},
        )
        metadata = record.metadata.copy()
        framing.set_conduit_schema(metadata, "payload", "items-value", 1)
        framing.set_conduit_schema(metadata, "key", "items-key", 1)
        records.append(RecordEncoder(store).encode(replace(record, metadata=metadata)))
    cut = records[1].payload.after
    assert isinstance(cut, bytes)
    records.append(
        replace(records[1], position=b"3", payload=replace(records[1].payload, after=cut[:-1]))
    )
    return url, records


def test_encode_refuses_what_expand_gave_naming_the_error_column(spark: Any, stream: Any) -> None:
    url, records = stream
    typed = expand(records_dataframe(spark, records), url, "items-value")
    with pytest.raises(ValueError, match="column 'error'") as refused:
        encode(typed, url, "items-value", "after")
    message = str(refused.value)
    assert "\n" not in message and "error_column" in message


def test_encode_with_its_own_error_column_keeps_expands_errors(spark: Any, stream: Any) -> None:
    url, records = stream
    typed = expand(records_dataframe(spark, records), url, "items-value")
    written = encode(typed, url, "items-value", "after", error_column="encode_error")
    assert written.columns[-3:] == ["error", "value", "encode_error"]
    rows = {r.position: r for r in written.collect()}
    framed = {r.position: r.payload.after for r in records}
    # The good rows encode back to their bytes; the cut one keeps expand's reason beside
    # encode's own.
    store = SchemaStore(open_registry(url))
    schema_id = store.by_version("items-value", 1).schema_id
    for position in (b"1", b"2"):
        assert rows[position].value == framing.frame(schema_id, framed[position])
        assert rows[position].error is None and rows[position].encode_error is None
    assert "payload.after" in rows[b"3"].error
    assert rows[b"3"].value is None and rows[b"3"].encode_error == "the row is null"


def test_expanding_the_key_of_what_expand_gave_needs_another_error_column(
    spark: Any, stream: Any
) -> None:
    url, records = stream
    typed = expand(records_dataframe(spark, records), url, "items-value")
    with pytest.raises(ValueError, match="column 'error'"):
        expand(typed, url, "items-key", part="key")
    both = expand(typed, url, "items-key", part="key", error_column="key_error")
    rows = {r.position: r for r in both.collect()}
    assert [rows[p].key.id for p in (b"1", b"2", b"3")] == [1, 2, 2]
    assert rows[b"3"].error is not None and rows[b"3"].key_error is None


def test_other_names_taken_are_refused_too(spark: Any, stream: Any) -> None:
    url, records = stream
    df = records_dataframe(spark, records)
    typed = expand(df, url, "items-value").drop("error")
    # Spark compares column names case-insensitively (spark.sql.caseSensitive is off).
    with pytest.raises(ValueError, match="column 'Error'"):
        encode(typed.withColumnRenamed("operation", "Error"), url, "items-value", "after")
    with pytest.raises(ValueError, match="column 'value'"):
        encode(typed.withColumnRenamed("operation", "value"), url, "items-value", "after")
    with pytest.raises(ValueError, match="output='error' and error_column='error' name one column"):
        encode(typed, url, "items-value", "after", output="error")
    with pytest.raises(ValueError, match="column 'after'"):
        expand(df.withColumnRenamed("operation", "after"), url, "items-value")
