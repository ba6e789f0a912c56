"""The pipeline of ARCHITECTURE.md end to end: a Debezium JSON topic (written by a batching
producer) -> `cdc-connectors run` -> an OpenCDC protobuf topic that an independent definition
of Conduit's record reads, and every bad message in the dead-letter files.

The runs here are in the suite's Spark session (:func:`run_here`, the driver's code after
Spark has started): the same pipeline as a command of its own, from its directory, is the
README's (``examples/pipelines/kafka.yaml`` in tests/test_readme_kafka.py)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from google.protobuf.json_format import MessageToDict

from tests.kafka_broker import KafkaBroker
from tests.pipeline.support import run_here
from tests.protoc import compile_proto, message_class

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GOOD = 300
JUNK = [b"{not json", b'{"op": "x", "after": {"id": 1}, "source": {"table": "t"}}', b"[]"]


def change(n: int) -> bytes:
    return orjson.dumps(
        {
            "before": None,
            "after": {"id": n, "name": f"customer {n}", "big": 2**53 - n},
            "source": {"db": "shop", "table": "customers", "ts_ms": 1_700_000_000_000 + n},
            "op": "c" if n % 3 else "u",
            "ts_ms": 1_700_000_000_500 + n,
        }
    )


def write_pipeline(
    path: Path,
    broker: KafkaBroker,
    name: str,
    source: str,
    target: str,
    *,
    destination: str = "format: opencdc-proto",
    registry: str | None = None,
    dead_letters: Path | None = None,
) -> Path:
    """A batch pipeline YAML at ``path``: Debezium JSON from the ``source`` topic, from the
    earliest offset to the latest, into the ``target`` topic with the ``destination``
    settings (besides the broker and the topic); a registry and dead-letter files if given."""
    lines = ['version: "2.2"']
    if registry is not None:
        lines += ["schema-registry:", f"  url: {registry}"]
    lines += [
        "spark:",
        "  master: local[2]",
        '  conf: {spark.sql.shuffle.partitions: "2", spark.ui.enabled: "false"}',
        "pipelines:",
        f"  - id: {name}",
        "    connectors:",
        "      - id: in",
        "        type: source",
        "        plugin: kafka",
        f'        settings: {{servers: "{broker.bootstrap}", topics: {source},',
        "                   format: debezium-json,",
        "                   startingOffsets: earliest, endingOffsets: latest}",
        "      - id: out",
        "        type: destination",
        "        plugin: kafka",
        f'        settings: {{servers: "{broker.bootstrap}", topic: {target}, {destination}}}',
    ]
    if dead_letters is not None:
        lines += [
            "    dead-letter-queue:",
            "      plugin: files",
            f'      settings: {{path: "{dead_letters}", format: opencdc-json}}',
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_run_moves_good_records_to_opencdc_protobuf_and_bad_ones_to_dead_letters(
    kafka_broker: KafkaBroker, tmp_path: Path, spark: object
) -> None:
    source = kafka_broker.create_topic(f"cdc-in-{uuid.uuid4().hex[:8]}", 2)
    target = kafka_broker.create_topic(f"cdc-out-{uuid.uuid4().hex[:8]}", 1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 50})
    sent = [change(n) for n in range(GOOD)]
    for n, value in enumerate(sent):
        producer.produce(source, value, key=orjson.dumps({"id": n}), partition=n % 2)
        if n in (50, 200, 260):
            producer.produce(source, JUNK[(50, 200, 260).index(n)], partition=n % 2)
    assert producer.flush(30) == 0

    dlq = tmp_path / "dlq"
    pipeline = write_pipeline(
        tmp_path / "pipeline.yaml",
        kafka_broker,
        "customers",
        source,
        target,
        registry=f"sqlite:///{tmp_path}/registry.db",
        dead_letters=dlq,
    )
    result = run_here(spark, pipeline)
    assert result.returncode == 1, result.stderr[-3000:]  # 1: some went to the dead letters
    assert f"{GOOD + 3} records in, {GOOD} out, 3 to the dead-letter output" in result.stderr

    record_class = message_class(compile_proto("conduit_record.proto"), "conduitcheck.v1.Rec")
    values = _all_values(kafka_broker, target)
    assert len(values) == GOOD
    ids = set()
    for value in values:
        record = record_class.FromString(value)
        after = MessageToDict(record.payload.after.structured_data)
        assert after["name"] == f"customer {int(after['id'])}"
        assert after["big"] == 2**53 - after["id"]  # exact: below 2^53
        assert dict(record.metadata)["opencdc.collection"] == "shop.customers"
        assert record.position.decode().startswith(f"{source}/")
        ids.add(int(after["id"]))
    assert ids == set(range(GOOD))

    letters = [
        orjson.loads(line)
        for file in sorted(dlq.rglob("*.jsonl"))
        for line in file.read_bytes().splitlines()
    ]
    assert len(letters) == 3
    originals = sorted(_raw(letter["payload"]["after"]) for letter in letters)
    assert originals == sorted(JUNK)
    assert all(letter["metadata"]["conduit.dlq.nack.error"] for letter in letters)


def _raw(data: Any) -> bytes:
    import base64

    return base64.b64decode(data)


def _all_values(broker: KafkaBroker, topic: str) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "check",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "no end of partition within 10 s"
            if message.error() is not None:
                break  # the end of the partition
            values.append(message.value())
    finally:
        consumer.close()
    return values


def test_a_batch_pipeline_over_an_empty_topic_moves_nothing_and_says_so(
    kafka_broker: KafkaBroker, tmp_path: Path, spark: object
) -> None:
    source = kafka_broker.create_topic(f"cdc-empty-{uuid.uuid4().hex[:8]}", 2)
    target = kafka_broker.create_topic(f"cdc-out-{uuid.uuid4().hex[:8]}", 1)
    pipeline = write_pipeline(tmp_path / "pipeline.yaml", kafka_broker, "empty", source, target)
    result = run_here(spark, pipeline)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "AssertionError" not in result.stderr
    assert "0 records in, 0 out, 0 to the dead-letter output" in result.stderr
    assert _all_values(kafka_broker, target) == []


def test_a_streaming_source_setting_refused_is_placed_at_the_source_not_the_destination(
    kafka_broker: KafkaBroker, tmp_path: Path, spark: object
) -> None:
    """A Kafka source and a Kafka destination are one plugin: a refusal naming the
    source's ``startingOffsets`` names the source's line (it named the destination's)."""
    source = kafka_broker.create_topic(f"cdc-past-{uuid.uuid4().hex[:8]}", 1)
    target = kafka_broker.create_topic(f"cdc-out-{uuid.uuid4().hex[:8]}", 1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    for n in range(3):
        producer.produce(source, change(n))
    producer.flush(10)
    del producer  # (closed now: not retrying a broker stopped after the module)
    pipeline = write_pipeline(tmp_path / "pipeline.yaml", kafka_broker, "past", source, target)
    text = pipeline.read_text().replace(
        "startingOffsets: earliest, endingOffsets: latest",
        f"""startingOffsets: '{{"{source}": {{"0": 999}}}}'""",
    )
    pipeline.write_text(text.replace("  - id: past", "  - id: past\n    mode: streaming"))
    (tmp_path / "checkpoints").mkdir()
    result = run_here(spark, pipeline, available_now=True)
    assert result.returncode == 2, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: {pipeline}:"), last
    assert ": pipelines[0].connectors[0].settings.startingOffsets: " in last, last
    assert "999" in last, last


def test_a_pipeline_writes_confluent_protobuf_rows_from_columns(
    kafka_broker: KafkaBroker, tmp_path: Path, spark: object
) -> None:
    """Debezium JSON with schema blocks -> ``protobuf`` rows of ``.proto`` files, in the
    suite's Spark session: every message written from columns, and what confluent-kafka's
    ``ProtobufDeserializer`` reads is each row."""
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from bench.bench_debezium import lines
    from cdc_connectors.registry.embedded import EmbeddedRegistry
    from cdc_connectors.schema.protobuf import message_class as compiled
    from tests.columnar.debezium_batches import KEY_SCHEMA
    from tests.columnar.test_protobuf_rows import _HEAD, _ORDERS

    source = kafka_broker.create_topic(f"cdc-pb-in-{uuid.uuid4().hex[:8]}", 2)
    target = kafka_broker.create_topic(f"cdc-pb-out-{uuid.uuid4().hex[:8]}", 1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 50})
    key_schema = {**KEY_SCHEMA, "name": "shop.public.orders.Key"}
    events = lines(200)
    for n, value in enumerate(events):
        key = orjson.dumps({"schema": key_schema, "payload": {"id": n}})
        producer.produce(source, value, key=key, partition=n % 2)
    assert producer.flush(30) == 0
    (tmp_path / "row.proto").write_text(_ORDERS)
    (tmp_path / "key.proto").write_text(_HEAD + "message Key { int64 id = 1; }\n")
    registry = f"sqlite:///{tmp_path}/registry.db"
    pipeline = write_pipeline(
        tmp_path / "pipeline.yaml",
        kafka_broker,
        "orders",
        source,
        target,
        destination="format: protobuf, format.value.schema: row.proto, "
        "format.key.schema: key.proto",
        registry=registry,
    )
    result = run_here(spark, pipeline)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = "200 records in, 200 out, 0 to the dead-letter output, 0 the per-message way"
    assert summary in result.stderr, result.stderr
    rows = ProtobufDeserializer(
        compiled(_ORDERS), {"use.deprecated.format": False}, EmbeddedRegistry(registry)
    )
    values = _all_values(kafka_broker, target)
    assert len(values) == 200
    context = SerializationContext(target, MessageField.VALUE)
    read = [rows(value, context) for value in values]
    expected = {orjson.loads(event)["payload"]["after"]["id"] for event in events}
    assert {row.id for row in read} == expected
    assert all(row.amount and row.created_at.seconds for row in read)


def test_a_pipeline_unwraps_debezium_avro_to_avro_rows_from_columns(
    kafka_broker: KafkaBroker, tmp_path: Path, spark: object
) -> None:
    """Debezium Avro change events (AvroConverter's envelopes) -> ``avro`` rows of the same
    registry: every message written from columns, and confluent-kafka's
    ``AvroDeserializer`` reads each one's new row and key."""
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from cdc_connectors.registry import open_registry
    from tests.columnar.test_avro_columns import _orders
    from tests.formats.test_debezium_avro import AFTER

    registry = f"sqlite:///{tmp_path}/registry.db"
    source = kafka_broker.create_topic(f"cdc-dav-in-{uuid.uuid4().hex[:8]}", 2)
    target = kafka_broker.create_topic(f"cdc-dav-out-{uuid.uuid4().hex[:8]}", 1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 50})
    for n, (key, value, _) in enumerate(_orders(registry, 60)):
        producer.produce(source, value, key=key, partition=n % 2)
    assert producer.flush(30) == 0
    pipeline = write_pipeline(
        tmp_path / "pipeline.yaml",
        kafka_broker,
        "orders",
        source,
        target,
        # the rows' subjects of their own (the envelopes' subject holds the envelope)
        destination="format: avro, format.topic: orders-rows",
        registry=registry,
    )
    text = pipeline.read_text().replace("format: debezium-json", "format: debezium-avro")
    pipeline.write_text(text)
    result = run_here(spark, pipeline)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = "60 records in, 60 out, 0 to the dead-letter output, 0 the per-message way"
    assert summary in result.stderr, result.stderr
    read = AvroDeserializer(open_registry(registry))
    rows = [
        read(value, SerializationContext(target, MessageField.VALUE))
        for value in _all_values(kafka_broker, target)
    ]
    assert len(rows) == 60
    assert sum(row == AFTER for row in rows) == 40  # creates; the updates' rows have no notes
    assert sum(row == {**AFTER, "notes": None} for row in rows) == 20
