"""The stage of one batch, in Spark: dead letters split off, records encoded for the
destination, a record it cannot encode (or route) turned into a dead letter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc_connectors.connectors.messages import DLQ_ERROR
from cdc_connectors.formats import load_format
from cdc_connectors.opencdc import Operation, Record
from cdc_connectors.pipeline.connectors import resolve
from cdc_connectors.pipeline.plan import Stage
from cdc_connectors.spark import records_dataframe

pytestmark = pytest.mark.spark


def _records() -> list[Record]:
    good = [
        Record.new(
            Operation.CREATE,
            position=f"good-{i}".encode(),
            key={"id": i},
            after={"id": i, "name": f"n{i}"},
            metadata={"opencdc.collection": f"table{i % 2}"},
        )
        for i in range(6)
    ]
    raw = Record.new(  # avro cannot write raw data without a schema
        Operation.UPDATE,
        position=b"raw",
        after=b"\x00\x01",
        metadata={"opencdc.collection": "table0"},
    )
    unrouted = Record.new(  # no collection: the topic template has no value for it
        Operation.CREATE, position=b"no-collection", key={"id": 9}, after={"id": 9}
    )
    letter = Record.new(
        Operation.CREATE,
        position=b"bad-line",
        after=b"not json",
        metadata={DLQ_ERROR: "not JSON", "conduit.dlq.nack.node.id": "cdc-files"},
    )
    return [*good, raw, unrouted, letter]


def test_stage_routes_encodes_and_turns_failures_into_dead_letters(spark: object) -> None:
    fmt = load_format("avro")({}, registry="memory://pipeline-stage")
    kafka = resolve("kafka")
    assert kafka is not None
    route, writer_settings = kafka.routing({"servers": "x:1", "topic": "cdc.{collection}"})
    assert route is not None
    assert "topic" not in writer_settings
    rows = records_dataframe(spark, _records())  # type: ignore[arg-type]
    stage = Stage(rows, fmt, "p:out", kafka.message_columns, route)
    try:
        counts = stage.count()
        assert (counts.records, counts.written) == (9, 6)
        assert (counts.source_letters, counts.encode_letters) == (1, 2)
        messages = stage.messages()
        assert messages.columns == ["key", "value", "headers", "topic"]
        topics = sorted(r["topic"] for r in messages.collect())
        assert topics == ["cdc.table0"] * 3 + ["cdc.table1"] * 3
        letters = {
            bytes(r["position"]).decode(): r["metadata"][DLQ_ERROR]
            for r in stage.letters().collect()
        }
        assert letters["bad-line"] == "not JSON"
        assert "raw data" in letters["raw"]
        assert "opencdc.collection" in letters["no-collection"]
        assert stage.letters().columns == ["position", "operation", "metadata", "key", "payload"]
        # the count sizes what the driver may collect: each message's bytes, and each
        # letter's, a structured value as its JSON text
        assert stage.sizes.messages == sum(map(_message_bytes, messages.collect()))
        assert stage.sizes.letters == sum(map(_letter_bytes, stage.letters().collect()))
        assert stage.sizes.letters > len(b"bad-linenot jsonnot JSON")
    finally:
        stage.release()


def _data_bytes(data: Any) -> int:
    if data is None:
        return 0
    raw, structured = data["raw_data"], data["structured_data"]
    return len(raw or b"") + (0 if structured is None else len(structured.toJson().encode()))


def _message_bytes(message: Any) -> int:
    headers = sum(len(h["key"].encode()) + len(h["value"] or b"") for h in message["headers"] or [])
    return (
        len(message["key"] or b"")
        + len(message["value"] or b"")
        + headers
        + len(message["topic"].encode())
    )


def _letter_bytes(letter: Any) -> int:
    metadata = sum(len(k.encode()) + len((v or "").encode()) for k, v in letter["metadata"].items())
    images = _data_bytes(letter["payload"]["before"]) + _data_bytes(letter["payload"]["after"])
    return len(letter["position"]) + metadata + _data_bytes(letter["key"]) + images


def test_a_fixed_topic_stays_a_writer_setting() -> None:
    kafka = resolve("builtin:kafka")
    assert kafka is not None
    route, settings = kafka.routing({"servers": "x:1", "topic": "orders"})
    assert route is None
    assert settings["topic"] == "orders"


def test_a_setting_refused_when_spark_plans_the_job_names_file_line_and_connector(
    spark: object, tmp_path: Path
) -> None:
    from cdc_connectors.pipeline import parse
    from cdc_connectors.pipeline.runner import run

    missing = tmp_path / "no-such-directory"
    config = parse(
        f"""\
version: "2.2"
pipelines:
  - id: refused
    mode: batch
    connectors:
      - id: in
        type: source
        plugin: files
        settings: {{path: "{missing}", format: debezium-json}}
      - id: out
        type: destination
        plugin: files
        settings: {{path: "{tmp_path / "out"}"}}
    dead-letter-queue:
      plugin: files
      settings: {{path: "{tmp_path / "dead"}"}}
""",
        "refused.yaml",
    )
    lines: list[str] = []
    assert run(config, spark, say=lines.append) == 2  # type: ignore[arg-type]
    assert lines[-1].startswith(
        "Error: refused.yaml:9: pipelines[0].connectors[0].settings.path: cdc-files setting"
    ), lines
    assert "does not exist" in lines[-1]


def test_the_sizes_count_headers_and_structured_values(spark: Any) -> None:
    """A message's headers and a letter's structured key (as its JSON text) are sized too."""
    from pyspark.sql import functions as F

    from cdc_connectors.pipeline.plan import letter_bytes, message_bytes

    image = "struct<raw_data: binary, structured_data: variant>"
    row = spark.range(1).select(  # type: ignore[attr-defined]
        F.lit(b"k").alias("_message_key"),
        F.lit(b"vv").alias("_message_value"),
        F.array(F.struct(F.lit("h1").alias("key"), F.lit(b"hv").alias("value"))).alias("_headers"),
        F.lit("t").alias("_topic"),
        F.lit(b"pos").alias("position"),
        F.create_map(F.lit("a"), F.lit("bc")).alias("metadata"),
        F.struct(
            F.lit(None).cast("binary").alias("raw_data"),
            F.parse_json(F.lit('{"id":9}')).alias("structured_data"),
        ).alias("key"),
        F.struct(
            F.lit(None).cast(image).alias("before"),
            F.struct(
                F.lit(b"xyz").alias("raw_data"),
                F.lit(None).cast("variant").alias("structured_data"),
            ).alias("after"),
        ).alias("payload"),
    )
    sizes = row.select(message_bytes().alias("m"), letter_bytes().alias("l")).first()
    assert (sizes["m"], sizes["l"]) == (1 + 2 + 2 + 2 + 1, 3 + 1 + 2 + len('{"id":9}') + 3)
