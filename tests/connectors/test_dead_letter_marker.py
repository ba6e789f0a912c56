"""Dead-letter rows are no changes: in a DataFrame their ``operation`` is ``dead-letter``.

So counting by operation shows them apart, a writer refuses them in one line saying how to
filter them, and a pipeline still routes them to its dead-letter output, where they are
what Conduit's DLQ writes (operation ``create``, the reason in ``conduit.dlq.nack.error``).
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_connectors.connectors.files import FilesDataSource
from cdc_connectors.connectors.kafka import KafkaDataSource
from cdc_connectors.connectors.messages import DLQ_ERROR, encode_rows, is_dead_letter
from cdc_connectors.convert.deadletter import dead_letter
from cdc_connectors.formats import load_format
from cdc_connectors.formats.base import Message
from cdc_connectors.opencdc import Operation, Record
from cdc_connectors.opencdc.json_codec import record_from_json
from cdc_connectors.pipeline.connectors import resolve
from cdc_connectors.pipeline.plan import Stage
from cdc_connectors.spark.arrow import (
    DEAD_LETTER_OPERATION,
    records_from_batch,
    records_to_batch,
)
from cdc_connectors.spark.deadletters import dead_letters
from tests.connectors.test_kafka_destination import consume_all, records
from tests.connectors.test_kafka_source import produce
from tests.kafka_broker import KafkaBroker

BAD = b"not json {"
FILTER = "df.filter(\"operation != 'dead-letter'\")"


def debezium(row_id: int, op: str = "c") -> bytes:
    row = {"id": row_id, "name": f"n{row_id}"}
    event = {
        "before": row if op in "ud" else None,
        "after": None if op == "d" else row,
        "source": {"db": "shop", "table": "orders"},
        "op": op,
        "ts_ms": 1_700_000_000_000,
    }
    return orjson.dumps(event)


def source_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    lines = [debezium(1), debezium(2), BAD, debezium(1, "u")]
    (folder / "orders.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return folder


def read_files(spark: Any, folder: Path, **options: str) -> Any:
    spark.dataSource.register(FilesDataSource)
    reader = spark.read.format("cdc-files").option("format", "debezium-json")
    return reader.options(**options).load(str(folder))


# Without Spark: the Arrow layout of records.


def test_a_dead_letter_record_is_a_dead_letter_row_and_reads_back_as_conduit_wrote_it() -> None:
    letter = dead_letter(Message(BAD, b"k", where="in.jsonl:3"), "not JSON", "cdc-files")
    change = Record.new(Operation.CREATE, position=b"p", after={"id": 1})
    batch = records_to_batch([change, letter])

    assert batch.column("operation").to_pylist() == ["create", DEAD_LETTER_OPERATION]
    assert is_dead_letter(batch).to_pylist() == [False, True]
    back = list(records_from_batch(batch))
    assert back[1].operation is Operation.CREATE
    assert back[1].metadata[DLQ_ERROR] == "not JSON"
    assert back[1].payload.after == BAD


def test_encoding_dead_letter_rows_is_refused_in_one_line_saying_how_to_filter() -> None:
    letter = dead_letter(Message(BAD, where="in.jsonl:3"), "not JSON", "cdc-files")
    batch = records_to_batch([Record.new(Operation.CREATE, position=b"p"), letter])
    fmt = load_format("opencdc-json")({}, registry=None)

    with pytest.raises(Exception) as refused:
        encode_rows(fmt, batch, node_id="cdc-files")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("cdc-files: the DataFrame holds dead-letter rows")
    assert "'in.jsonl:3'" in message and "not JSON" in message
    assert FILTER in message


# In Spark.


@pytest.mark.spark
def test_counting_by_operation_shows_dead_letters_apart(spark: Any, tmp_path: Path) -> None:
    df = read_files(spark, source_dir(tmp_path))

    counts = {r["operation"]: r["count"] for r in df.groupBy("operation").count().collect()}
    assert counts == {"create": 2, "update": 1, "dead-letter": 1}
    assert df.filter("operation != 'dead-letter'").count() == 3
    letter = df.where("operation = 'dead-letter'").first()
    assert letter is not None
    assert dict(letter["metadata"])[DLQ_ERROR]
    assert bytes(letter["payload"]["after"]["raw_data"]) == BAD


@pytest.mark.spark
def test_a_typed_read_marks_dead_letters_too(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "typed"
    folder.mkdir()
    event = {
        "schema": {
            "type": "struct",
            "name": "shop.orders.Envelope",
            "fields": [
                {
                    "field": "after",
                    "type": "struct",
                    "name": "shop.orders.Value",
                    "optional": True,
                    "fields": [{"field": "id", "type": "int32", "optional": False}],
                },
                {
                    "field": "source",
                    "type": "struct",
                    "optional": False,
                    "fields": [
                        {"field": "db", "type": "string", "optional": False},
                        {"field": "table", "type": "string", "optional": False},
                    ],
                },
                {"field": "op", "type": "string", "optional": False},
            ],
        },
        "payload": {"after": {"id": 1}, "source": {"db": "shop", "table": "orders"}, "op": "c"},
    }
    (folder / "t.jsonl").write_bytes(orjson.dumps(event) + b"\n" + BAD + b"\n")

    df = read_files(spark, folder, typed="true")
    operations = sorted(r["operation"] for r in df.select("operation").collect())
    assert operations == ["create", "dead-letter"]


@pytest.mark.spark
def test_writing_dead_letter_rows_to_files_fails_in_one_line(spark: Any, tmp_path: Path) -> None:
    df = read_files(spark, source_dir(tmp_path))
    out = tmp_path / "out"

    with pytest.raises(Exception) as refused:
        df.write.format("cdc-files").mode("append").save(str(out))
    reason = str(refused.value).splitlines()[-1]
    assert "cdc-files: the DataFrame holds dead-letter rows (operation 'dead-letter')" in reason
    assert FILTER in reason
    assert not list(out.glob("part-*")), "a refused write left files"

    df.filter("operation != 'dead-letter'").write.format("cdc-files").mode("append").save(str(out))
    written = [json.loads(line) for f in out.glob("part-*") for line in f.read_text().split()]
    assert sorted(r["operation"] for r in written) == ["create", "create", "update"]


@pytest.mark.spark
def test_dead_letters_helper_gives_what_conduit_writes_to_its_dlq(
    spark: Any, tmp_path: Path
) -> None:
    df = read_files(spark, source_dir(tmp_path))
    out = tmp_path / "dlq"

    dead_letters(df).write.format("cdc-files").mode("append").save(str(out))

    lines = [line for f in out.glob("part-*") for line in f.read_bytes().splitlines()]
    assert len(lines) == 1
    found = json.loads(lines[0])
    assert found["operation"] == "create"
    assert found["metadata"][DLQ_ERROR]
    assert base64.b64decode(found["payload"]["after"]) == BAD
    assert record_from_json(lines[0]).operation is Operation.CREATE


@pytest.mark.spark
def test_the_readme_kafka_write_of_a_frame_with_a_dead_letter_fails_in_one_line(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    topic = kafka_broker.create_topic(f"in-{uuid.uuid4().hex[:10]}", 1)
    produce(kafka_broker, topic, [(0, None, debezium(1)), (0, None, BAD), (0, None, debezium(2))])
    spark.dataSource.register(KafkaDataSource)
    df = (
        spark.read.format("cdc-kafka")
        .option("servers", kafka_broker.bootstrap)
        .option("topics", topic)
        .option("format", "debezium-json")
        .option("endingOffsets", "latest")
        .load()
    )
    prefix = f"cdc{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(f"{prefix}.shop.orders", 1)

    def write(frame: Any) -> None:
        frame.write.format("cdc-kafka").option("servers", kafka_broker.bootstrap).option(
            "topic", prefix + ".{collection}"
        ).mode("append").save()

    letter = df.where(df.operation == "dead-letter").first()
    assert letter is not None
    with pytest.raises(Exception) as refused:
        write(df)
    lines = str(refused.value).splitlines()
    assert lines[-1] == (
        "cdc_connectors.connectors.errors.ConnectorError: cdc-kafka: the DataFrame holds "
        "dead-letter rows (operation 'dead-letter'), which are no changes to write: 1 in "
        f"this batch, the first at position '{topic}/0/1' "
        f"({dict(letter['metadata'])[DLQ_ERROR]}); "
        f"filter them out with {FILTER}, or write "
        "cdc_connectors.spark.deadletters.dead_letters(df) to a dead-letter output"
    )
    assert sum(line.startswith("  File ") for line in lines) == 1, lines

    write(df.filter("operation != 'dead-letter'"))
    written = records(consume_all(kafka_broker, f"{prefix}.shop.orders"))
    afters = [r.payload.after for r in written]
    assert sorted(a["id"] for a in afters if isinstance(a, dict)) == [1, 2]


@pytest.mark.spark
def test_a_pipeline_stage_still_routes_dead_letters_as_conduit_writes_them(
    spark: Any, tmp_path: Path
) -> None:
    rows = read_files(spark, source_dir(tmp_path))
    files = resolve("files")
    assert files is not None
    fmt = load_format("opencdc-json")({}, registry=None)
    stage = Stage(rows, fmt, "p:out", files.message_columns)
    try:
        counts = stage.count()
        assert (counts.records, counts.written, counts.source_letters) == (4, 3, 1)
        letters = stage.letters()
        assert [r["operation"] for r in letters.collect()] == ["create"]
        dlq = tmp_path / "dlq"
        letters.write.format("cdc-files").mode("append").save(str(dlq))  # as the runner does
    finally:
        stage.release()
    lines = [line for f in dlq.glob("part-*") for line in f.read_bytes().splitlines()]
    assert len(lines) == 1
    found = record_from_json(lines[0])
    assert found.operation is Operation.CREATE
    assert found.payload.after == BAD
    assert found.metadata[DLQ_ERROR]


def test_a_row_with_no_operation_of_opencdc_is_one_line_naming_its_position() -> None:
    import pyarrow as pa
    import pytest

    from cdc_connectors.connectors.errors import ConnectorError
    from cdc_connectors.connectors.messages import encode_rows
    from cdc_connectors.formats.opencdc import OpenCDCJsonFormat
    from cdc_connectors.opencdc import Operation, Record
    from cdc_connectors.spark.arrow import records_to_batch

    batch = records_to_batch(
        [Record(position=b"f.jsonl:%d" % i, operation=Operation.CREATE) for i in (1, 2)]
    )
    index = batch.schema.get_field_index("operation")
    batch = batch.set_column(index, "operation", pa.array(["create", "SNAPSHOT"]))
    with pytest.raises(ConnectorError) as caught:
        encode_rows(OpenCDCJsonFormat(), batch, node_id="cdc-files")
    assert str(caught.value) == (
        "cdc-files: the row at position 'f.jsonl:2' is no OpenCDC record: "
        "unknown operation 'SNAPSHOT'"
    )
