"""`cdc-kafka` as a source: a real Tansu broker, a real local[2] Spark session."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer

from cdc_connectors.connectors.errors import ConnectorError
from cdc_connectors.connectors.kafka import KafkaBatchReader, KafkaDataSource
from cdc_connectors.connectors.kafka_offsets import Broker, KafkaRange, limit, plan, to_json
from cdc_connectors.connectors.kafka_read import read_range
from cdc_connectors.connectors.kafka_settings import source_settings
from cdc_connectors.connectors.messages import DLQ_ERROR, SettingError
from tests.conftest import ROOT
from tests.connectors.streams import drain
from tests.kafka_broker import KafkaBroker, free_port

pytestmark = pytest.mark.spark

Sent = tuple[int, bytes | None, bytes | None]  # partition, key, value


def new_topic(broker: KafkaBroker, partitions: int) -> str:
    return broker.create_topic(f"src-{uuid.uuid4().hex[:10]}", partitions)


def produce(broker: KafkaBroker, topic: str, messages: Iterable[Sent]) -> None:
    """Batching producer, as real ones are (Tansu lists offsets wrong after batches)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
    for partition, key, value in messages:
        producer.produce(topic, value=value, key=key, partition=partition, headers=[("h", b"1")])
    assert producer.flush(30) == 0


def debezium(row_id: int, table: str = "orders") -> bytes:
    event = {
        "before": None,
        "after": {"id": row_id, "name": f"n{row_id}"},
        "source": {"db": "shop", "table": table},
        "op": "c",
        "ts_ms": 1_700_000_000_000,
    }
    return orjson.dumps(event)


def source(spark: Any, broker: KafkaBroker, topic: str, **options: str) -> Any:
    spark.dataSource.register(KafkaDataSource)
    reader = spark.read.format("cdc-kafka").option("servers", broker.bootstrap)
    return reader.option("topics", topic).options(**options).load()


def test_batch_reads_every_message_once_though_tansu_lists_latest_wrong(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    topic = new_topic(kafka_broker, 2)
    sent = [(i % 2, f"k{i}".encode(), f"v{i}".encode()) for i in range(613)]
    produce(kafka_broker, topic, sent)

    rows = source(spark, kafka_broker, topic).collect()

    assert len(rows) == 613
    assert {(r.partition, r.offset) for r in rows} == {(0, o) for o in range(307)} | {
        (1, o) for o in range(306)
    }
    assert sorted(bytes(r.value) for r in rows) == sorted(v for _, _, v in sent)
    first = min(rows, key=lambda r: (r.partition, r.offset))
    assert (bytes(first.key), first.topic, first.timestampType) == (b"k0", topic, 0)
    assert [(h.key, bytes(h.value)) for h in first.headers] == [("h", b"1")]


def test_explicit_json_offsets_bound_the_read(spark: Any, kafka_broker: KafkaBroker) -> None:
    topic = new_topic(kafka_broker, 2)
    produce(kafka_broker, topic, [(i % 2, None, b"%d" % i) for i in range(40)])

    df = source(
        spark,
        kafka_broker,
        topic,
        startingOffsets=orjson.dumps({topic: {"0": 5, "1": -2}}).decode(),
        endingOffsets=orjson.dumps({topic: {"0": 12, "1": -1}}).decode(),
    )
    found = {(r.partition, r.offset) for r in df.select("partition", "offset").collect()}

    assert found == {(0, o) for o in range(5, 12)} | {(1, o) for o in range(20)}
    past = orjson.dumps({topic: {"0": 5000}}).decode()
    with pytest.raises(Exception, match=rf"'endingOffsets': {topic}/0 ends at 5000, after its"):
        source(spark, kafka_broker, topic, endingOffsets=past).collect()


def test_large_ranges_are_split_into_tasks_that_meet_exactly(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    topic = new_topic(kafka_broker, 2)
    produce(kafka_broker, topic, [(i % 2, None, b"%d" % i) for i in range(500)])

    df = source(spark, kafka_broker, topic, maxRecordsPerPartition="60")
    offsets = [(r.partition, r.offset) for r in df.select("partition", "offset").collect()]

    assert df.rdd.getNumPartitions() == 2 * 5  # 250 offsets per partition, <= 60 per task
    assert len(offsets) == 500
    assert set(offsets) == {(p, o) for p in (0, 1) for o in range(250)}

    df = source(spark, kafka_broker, topic, minPartitions="7")
    offsets = [(r.partition, r.offset) for r in df.select("partition", "offset").collect()]

    assert df.rdd.getNumPartitions() == 8  # each partition's share, 3.5, rounds to 4
    assert sorted(offsets) == [(p, o) for p in (0, 1) for o in range(250)]


def test_a_partition_is_read_by_one_task_unless_told_to_split_it() -> None:
    """Two tasks of one partition run at once: a key's changes in both could be written out
    of order. One task a partition, however long its range, unless the user splits it."""
    settings = source_settings({"servers": "h:1", "topics": "t"})
    assert settings.max_records_per_partition is None
    ranges = plan({("t", 0): 0, ("t", 1): 5}, {("t", 0): 10**9, ("t", 1): 7}, None)
    assert [(r.partition, r.start, r.end) for r in ranges] == [(0, 0, 10**9), (1, 5, 7)]
    split = source_settings({"servers": "h:1", "topics": "t", "maxRecordsPerPartition": "4"})
    assert split.max_records_per_partition == 4


def test_min_partitions_splits_the_large_ranges_in_proportion_as_spark_does() -> None:
    """Spark's ``KafkaOffsetRangeCalculator``: ranges whose share of ``minPartitions`` rounds
    to one stay whole; the others share the rest in proportion (rounded half up)."""

    def tasks(sizes: list[int], least: int | None, most: int | None = None) -> list[int]:
        start = {("t", p): 100 for p in range(len(sizes))}
        end = {("t", p): 100 + size for p, size in enumerate(sizes)}
        ranges = plan(start, end, most, least)
        covered = [(r.partition, o) for r in ranges for o in range(r.start, r.end)]
        assert covered == [(p, 100 + o) for p, size in enumerate(sizes) for o in range(size)]
        return [sum(r.partition == p for r in ranges) for p in range(len(sizes))]

    assert tasks([1000, 10, 990], 6) == [3, 1, 2]  # shares 3, 0.03, 2.97; then 2.51, 2.49
    assert tasks([50, 50], 5) == [3, 3]  # 2.5 each, rounded half up as Scala's math.round
    assert tasks([100, 100], 2) == [1, 1]  # enough ranges already
    assert tasks([100, 100], None) == [1, 1]
    assert tasks([3], 10) == [3]  # no empty range
    assert tasks([10, 0, 30], 8) == [2, 0, 6]  # a partition with nothing to read has none
    assert tasks([100, 20], 3, 50) == [2, 1]  # maxRecordsPerPartition first: enough then
    # 50 + 50 + 20: the 20 stays whole, the two 50s share 3 (1.5 each, rounded up to 2)
    assert tasks([100, 20], 4, 50) == [4, 1]
    assert tasks([], 5) == []
    settings = source_settings({"servers": "h:1", "topics": "t", "minPartitions": "12"})
    assert settings.min_partitions == 12
    assert source_settings({"servers": "h:1", "topics": "t"}).min_partitions is None


def test_ranges_split_evenly_and_limits_share_in_proportion() -> None:
    ranges = plan({("t", 0): 10}, {("t", 0): 35}, 10)
    assert [(r.start, r.end) for r in ranges] == [(10, 18), (18, 26), (26, 35)]
    end = limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 300, ("t", 1): 100}, 100)
    assert end == {("t", 0): 75, ("t", 1): 25}
    assert to_json({("b", 10): 1, ("a", 2): 3, ("b", 9): 4}) == {
        "a": {"2": 3},
        "b": {"10": 1, "9": 4},
    }


def test_debezium_json_becomes_opencdc_rows_positioned_topic_partition_offset(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    topic = new_topic(kafka_broker, 2)
    produce(kafka_broker, topic, [(i % 2, b'{"id":%d}' % i, debezium(i)) for i in range(30)])

    df = source(spark, kafka_broker, topic, format="debezium-json")
    rows = df.selectExpr(
        "cast(position as string) as position",
        "operation",
        "metadata['opencdc.collection'] as collection",
        "variant_get(payload.after.structured_data, '$.id', 'int') as id",
        "variant_get(key.structured_data, '$.id', 'int') as key_id",
    ).collect()

    assert len(rows) == 30
    by_id = {r.id: r for r in rows}
    assert by_id[7].position == f"{topic}/1/3"
    assert by_id[8].position == f"{topic}/0/4"
    assert {(r.operation, r.collection) for r in rows} == {("create", "shop.orders")}
    assert all(r.key_id == r.id for r in rows)


def test_junk_becomes_dead_letters_with_original_bytes_and_counts_add_up(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    topic = new_topic(kafka_broker, 1)
    messages: list[Sent] = []
    for i in range(60):
        if i % 10 == 3:
            messages.append((0, b"k", b"not json %d" % i))
        elif i % 10 == 5:
            messages.append((0, b"k", None))  # a tombstone: skipped by policy, counted
        else:
            messages.append((0, b'{"id":%d}' % i, debezium(i)))
    produce(kafka_broker, topic, messages)

    df = source(spark, kafka_broker, topic, format="debezium-json")
    rows = df.selectExpr(
        "cast(position as string) as position",
        f"metadata['{DLQ_ERROR}'] as error",
        "payload.after.raw_data as raw",
        "key.raw_data as raw_key",
    ).collect()

    letters = [r for r in rows if r.error is not None]
    assert sorted(r.position for r in letters) == sorted(f"{topic}/0/{i}" for i in range(3, 60, 10))
    assert {bytes(r.raw) for r in letters} == {b"not json %d" % i for i in range(3, 60, 10)}
    assert {bytes(r.raw_key) for r in letters} == {b"k"}
    assert all("JSON" in r.error for r in letters)
    tombstones = sum(1 for _, _, v in messages if v is None)
    assert len(rows) - len(letters) + len(letters) + tombstones == len(messages)
    assert len(rows) - len(letters) == 48


def test_fail_fast_fails_the_query_naming_the_message(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    topic = new_topic(kafka_broker, 1)
    produce(kafka_broker, topic, [(0, None, debezium(1)), (0, None, b"{broken")])

    df = source(spark, kafka_broker, topic, format="debezium-json", failFast="true")
    with pytest.raises(Exception, match=rf"FailFastError.*{topic}/0/1"):
        df.collect()


def _stream(
    spark: Any, broker: KafkaBroker, topic: str | None, tmp: Path, name: str, **options: str
) -> Any:
    spark.dataSource.register(KafkaDataSource)
    if topic is not None:
        options["topics"] = topic
    stream = (
        spark.readStream.format("cdc-kafka")
        .option("servers", broker.bootstrap)
        .option("startingOffsets", "earliest")
        .options(**options)
        .load()
        .selectExpr("topic", "partition", "offset", "cast(value as string) as value")
    )
    query = (
        stream.writeStream.format("parquet")
        .option("path", str(tmp / name))
        .option("checkpointLocation", str(tmp / f"{name}-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive
    assert query.exception() is None
    return query


def test_streaming_honours_max_offsets_and_restarts_without_duplicates(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    topic = new_topic(kafka_broker, 2)
    produce(kafka_broker, topic, [(i % 3 % 2, None, b"a%d" % i) for i in range(250)])

    query = _stream(spark, kafka_broker, topic, tmp_path, "out", maxOffsetsPerTrigger="100")

    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [100, 100, 50]
    offsets_log = tmp_path / "out-checkpoint" / "offsets"
    batches = sorted(offsets_log.iterdir())
    last = orjson.loads(batches[-1].read_text().splitlines()[-1])
    assert last == {topic: {"0": 167, "1": 83}}
    # Nothing new: the offsets read back from the checkpoint equal the latest ones, so no
    # (empty) micro-batch is planned.
    _stream(spark, kafka_broker, topic, tmp_path, "out", maxOffsetsPerTrigger="100")
    assert sorted(offsets_log.iterdir()) == batches

    produce(kafka_broker, topic, [(i % 2, None, b"b%d" % i) for i in range(30)])
    _stream(spark, kafka_broker, topic, tmp_path, "out", maxOffsetsPerTrigger="100")

    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert len(rows) == 280
    assert len({(r.partition, r.offset) for r in rows}) == 280
    assert {r.value for r in rows} == {f"a{i}" for i in range(250)} | {f"b{i}" for i in range(30)}


def test_streaming_picks_up_partitions_added_between_runs(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    # Tansu 0.6 has no CreatePartitions: new partitions come as a new topic of the pattern.
    prefix = f"grow-{uuid.uuid4().hex[:8]}"
    first = kafka_broker.create_topic(f"{prefix}-a", 1)
    produce(kafka_broker, first, [(0, None, b"first%d" % i) for i in range(20)])
    _stream(spark, kafka_broker, None, tmp_path, "out", topicPattern=rf"{prefix}-\w+")

    second = kafka_broker.create_topic(f"{prefix}-b", 2)
    produce(kafka_broker, second, [(i % 2, None, b"second%d" % i) for i in range(30)])
    produce(kafka_broker, first, [(0, None, b"third%d" % i) for i in range(5)])
    _stream(spark, kafka_broker, None, tmp_path, "out", topicPattern=rf"{prefix}-\w+")

    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert len(rows) == 55
    assert len({(r.topic, r.partition, r.offset) for r in rows}) == 55
    assert {(r.topic, r.partition) for r in rows if r.value.startswith("second")} == {
        (second, 0),
        (second, 1),
    }


def test_latest_is_resolved_from_a_fetch_not_the_listed_offset(
    kafka_broker: KafkaBroker,
) -> None:
    # Tansu 0.6 answers ListOffsets with 1 here (the last produce batch's base offset + 1).
    topic = new_topic(kafka_broker, 1)
    produce(kafka_broker, topic, [(0, None, b"x")] * 513)
    broker = Broker(source_settings({"servers": kafka_broker.bootstrap, "topics": topic}))
    try:
        assert broker.latest([(topic, 0)]) == {(topic, 0): 513}
        assert broker.earliest([(topic, 0)]) == {(topic, 0): 0}
    finally:
        broker.close()


def test_a_read_with_no_broker_fails_after_poll_timeout() -> None:
    settings = source_settings(
        {"servers": f"127.0.0.1:{free_port()}", "topics": "t", "pollTimeoutMs": "1500"}
    )
    with pytest.raises(ConnectorError, match=r"t/0: nothing fetched .* offset 0"):
        list(read_range(settings, KafkaRange("t", 0, 0, 10)))


def test_a_batch_read_of_a_missing_topic_names_it(kafka_broker: KafkaBroker) -> None:
    settings = source_settings({"servers": kafka_broker.bootstrap, "topics": "no-such-topic"})
    with pytest.raises(SettingError, match="'topics': topic 'no-such-topic' does not exist"):
        KafkaBatchReader(settings).partitions()


def test_a_stream_of_a_missing_topic_says_so_once_and_waits_for_it(
    kafka_broker: KafkaBroker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Said even when librdkafka's lines have used up their minute (their own logger's
    rate limit holds none of ours back)."""
    from cdc_connectors.connectors.kafka_logs import LOGGER, RateLimit

    monkeypatch.setattr(LOGGER, "filters", [RateLimit(lines=0)])
    missing = f"not-yet-{uuid.uuid4().hex[:8]}"
    settings = source_settings({"servers": kafka_broker.bootstrap, "topics": missing})
    broker = Broker(settings)
    try:
        with caplog.at_level("WARNING", logger="cdc_connectors.kafka.topics"):
            assert broker.partitions(require_topics=False) == []
            assert broker.partitions(require_topics=False) == []
        said = [r.getMessage() for r in caplog.records if missing in r.getMessage()]
        assert said == [
            f"cdc-kafka: topic {missing!r} does not exist on {kafka_broker.bootstrap} (yet): "
            "the stream reads it once it is created"
        ]
        kafka_broker.create_topic(missing, 2)
        assert broker.partitions(require_topics=False) == [(missing, 0), (missing, 1)]
    finally:
        broker.close()


@pytest.mark.parametrize(
    ("options", "setting"),
    [
        ({"topics": "t", "colour": "red"}, "colour"),
        ({"topics": "t"}, "servers"),
        ({"servers": "h:1"}, "topics"),
        (
            {"servers": "h:1", "topics": "t", "startingOffsets": '{"t": {"0": "x"}}'},
            "startingOffsets",
        ),
        ({"servers": "h:1", "topics": "t", "startingOffsets": "{not json"}, "startingOffsets"),
        ({"servers": "h:1", "topics": "t", "endingOffsets": "earliest"}, "endingOffsets"),
        ({"servers": "h:1", "topics": "t", "failFast": "maybe"}, "failFast"),
        (
            {"servers": "h:1", "topics": "t", "maxRecordsPerPartition": "0"},
            "maxRecordsPerPartition",
        ),
        ({"servers": "h:1", "topics": "t", "minPartitions": "-3"}, "minPartitions"),
        ({"servers": "h:1", "topics": "t", "minpartitions": "many"}, "minPartitions"),
        ({"servers": "h:1", "topics": "t", "format": "no-such"}, "format"),
        ({"servers": "h:1", "topics": "t", "topicPattern": "("}, "topicPattern"),
    ],
)
def test_bad_settings_name_the_setting(options: dict[str, str], setting: str) -> None:
    with pytest.raises(SettingError, match=setting) as raised:
        KafkaDataSource(options).schema()
    assert "\n" not in str(raised.value)


def test_bad_offsets_fail_in_spark_naming_the_setting(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    topic = new_topic(kafka_broker, 1)
    with pytest.raises(Exception, match="startingOffsets"):
        source(spark, kafka_broker, topic, startingOffsets='{"other": {"0": 1}}').collect()
    with pytest.raises(Exception, match="colour"):
        source(spark, kafka_broker, topic, colour="red").collect()


def test_typed_reads_debezium_schema_blocks_into_spark_types(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    from decimal import Decimal

    from pyspark.sql.types import DateType, DecimalType, TimestampType

    lines = (ROOT / "examples/debezium/shop/orders.jsonl").read_bytes().splitlines()
    topic = new_topic(kafka_broker, 2)
    produce(kafka_broker, topic, [(n % 2, None, line) for n, line in enumerate(lines)])

    df = source(
        spark, kafka_broker, topic, format="debezium-json", typed="true", endingOffsets="latest"
    )
    after = df.schema["after"].dataType
    assert after["amount"].dataType == DecimalType(10, 2)
    assert after["created_at"].dataType == TimestampType()
    assert after["ship_date"].dataType == DateType()
    rows = df.collect()
    good = [r for r in rows if r.dead_letter is None]
    bad = [r for r in rows if r.dead_letter is not None]
    # 8 lines: 5 changes, a cut-off line, a label not allowed, a truncate
    assert (len(good), len(bad)) == (5, 3)
    assert {r.after.amount for r in good if r.after} >= {Decimal("19.99"), Decimal("2500.50")}
    assert all(dict(r.metadata).get(DLQ_ERROR) for r in bad)
    assert sorted(bytes(r.dead_letter) for r in bad) == sorted(
        line for line in lines if line in {bytes(r.dead_letter) for r in bad}
    )
    assert all(bytes(r.position).decode().startswith(f"{topic}/") for r in rows)


def test_typed_needs_a_debezium_format_and_a_message(spark: Any, kafka_broker: KafkaBroker) -> None:
    topic = new_topic(kafka_broker, 1)
    with pytest.raises(Exception, match=r"typed.*no message"):
        source(spark, kafka_broker, topic, format="debezium-json", typed="true").collect()
    with pytest.raises(SettingError, match="'typed'"):
        source_settings({"servers": "x:1", "topics": "t", "typed": "true"})


@pytest.mark.parametrize("fmt", ["raw", "debezium-json"])
def test_a_batch_read_of_an_empty_topic_is_zero_rows(
    spark: Any, kafka_broker: KafkaBroker, fmt: str
) -> None:
    topic = new_topic(kafka_broker, 2)
    assert source(spark, kafka_broker, topic, format=fmt).count() == 0


def test_a_batch_read_of_a_pattern_matching_no_topic_is_zero_rows(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    spark.dataSource.register(KafkaDataSource)
    df = (
        spark.read.format("cdc-kafka")
        .option("servers", kafka_broker.bootstrap)
        .option("topicPattern", f"nothing-{uuid.uuid4().hex}-.*")
        .load()
    )
    assert df.count() == 0


@pytest.mark.parametrize(
    ("options", "named"),
    [({"endingOffsets": "latest"}, "endingOffsets"), ({"colour": "red"}, "colour")],
)
def test_setting_errors_of_a_streaming_read_reach_the_user(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path, options: dict[str, str], named: str
) -> None:
    spark.dataSource.register(KafkaDataSource)
    topic = new_topic(kafka_broker, 1)
    with pytest.raises(Exception, match=named) as raised:
        stream = (
            spark.readStream.format("cdc-kafka")
            .option("servers", kafka_broker.bootstrap)
            .option("topics", topic)
            .options(**options)
            .load()
        )
        drain(stream, tmp_path / "cp")
    assert "UnboundLocalError" not in str(raised.value)


def test_spark_kafka_option_names_read_as_ours(spark: Any, kafka_broker: KafkaBroker) -> None:
    topic = new_topic(kafka_broker, 1)
    produce(kafka_broker, topic, [(0, None, b"v1"), (0, None, b"v2")])
    spark.dataSource.register(KafkaDataSource)
    df = (
        spark.read.format("cdc-kafka")
        .option("kafka.bootstrap.servers", kafka_broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    assert sorted(bytes(r.value) for r in df.collect()) == [b"v1", b"v2"]


def test_spark_pattern_and_poll_names_are_aliases() -> None:
    settings = source_settings(
        {
            "kafka.bootstrap.servers": "h:1",
            "subscribePattern": "orders-.*",
            "kafkaConsumer.pollTimeoutMs": "5000",
            "kafka.default.api.timeout.ms": "7000",
        }
    )
    assert (
        settings.servers,
        settings.topic_pattern,
        settings.poll_timeout_ms,
        settings.request_timeout_ms,
        settings.kafka,
    ) == ("h:1", "orders-.*", 5000, 7000, {})


def test_the_request_timeout_is_30_seconds_unless_set() -> None:
    assert source_settings({"servers": "h:1", "topics": "t"}).request_timeout_ms == 30_000
    given = source_settings({"servers": "h:1", "topics": "t", "requestTimeoutMs": "250"})
    assert given.request_timeout_ms == 250
    with pytest.raises(SettingError, match="requestTimeoutMs"):
        source_settings({"servers": "h:1", "topics": "t", "requestTimeoutMs": "0"})


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (
            {"servers": "a:1", "kafka.bootstrap.servers": "b:1", "topics": "t"},
            "'servers' and 'kafka.bootstrap.servers' name one setting with two values",
        ),
        (
            {"servers": "a:1", "assign": '{"t": [0]}'},
            "Spark's option 'assign' is not supported",
        ),
        (
            {"servers": "a:1", "topics": "t", "startingOffset": "earliest"},
            "did you mean 'startingOffsets'",
        ),
    ],
)
def test_spark_names_that_clash_or_have_no_counterpart_say_so(
    options: dict[str, str], reason: str
) -> None:
    with pytest.raises(SettingError, match=reason):
        source_settings(options)


def _made_again(spark: Any, kafka_broker: KafkaBroker, tmp_path: Path) -> str:
    """A topic of 12 messages a stream read into ``tmp_path / "out"``, then deleted and
    made again with 3."""
    topic = new_topic(kafka_broker, 1)
    produce(kafka_broker, topic, [(0, None, b"old%d" % i) for i in range(12)])
    _stream(spark, kafka_broker, topic, tmp_path, "out")
    for future in kafka_broker.admin().delete_topics([topic]).values():
        future.result(timeout=30)
    kafka_broker.create_topic(topic, 1)
    produce(kafka_broker, topic, [(0, None, b"new%d" % i) for i in range(3)])
    return topic


def _read_on(
    spark: Any, kafka_broker: KafkaBroker, topic: str, tmp_path: Path, **options: str
) -> Any:
    """That stream's query started again on its checkpoint, available now."""
    reader = spark.readStream.format("cdc-kafka").option("servers", kafka_broker.bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    return (
        reader.option("topics", topic)
        .load()
        .selectExpr("topic", "partition", "offset", "cast(value as string) as value")
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "out-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )


def test_a_topic_made_again_behind_the_checkpoint_fails_the_stream_naming_it(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    """The topic deleted and made again with fewer messages than the stream had read: the
    next batch would skip what the new topic holds up to the old offset. The stream fails
    naming the partition and both offsets, reading nothing (as Spark's Kafka source fails
    on data loss)."""
    topic = _made_again(spark, kafka_broker, tmp_path)
    query = _read_on(spark, kafka_broker, topic, tmp_path)
    said = f"{topic}/0 ends at offset 3, before 12 where this query's checkpoint left it"
    with pytest.raises(Exception, match=said):
        query.awaitTermination(120)
    assert not query.isActive
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r.value for r in rows) == sorted(f"old{i}" for i in range(12))


def test_without_fail_on_data_loss_a_topic_made_again_is_read_on_from_its_end(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    """As Spark's Kafka source with ``failOnDataLoss`` false: the partition's range is
    empty (its end is before the checkpoint's offset; what the new topic held by then is
    missed, said in a warning), and the stream goes on from that end."""
    topic = _made_again(spark, kafka_broker, tmp_path)

    def again() -> None:
        query = _read_on(spark, kafka_broker, topic, tmp_path, failOnDataLoss="false")
        query.awaitTermination(120)
        assert query.exception() is None

    again()
    produce(kafka_broker, topic, [(0, None, b"new%d" % i) for i in range(3, 5)])
    again()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    expected = [f"old{i}" for i in range(12)] + ["new3", "new4"]
    assert sorted(r.value for r in rows) == sorted(expected)


def test_data_loss_is_said_and_skipped_when_the_setting_allows_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from cdc_connectors.connectors.kafka_offsets import check_not_behind, check_range

    with caplog.at_level("WARNING", logger="cdc_connectors.kafka"):
        check_not_behind({("t", 1): 12}, {("t", 1): 3}, fail_on_data_loss=False)
        start = {("t", 0): 2}
        check_range(start, {("t", 0): 9}, {("t", 0): 5}, fail_on_data_loss=False)
    assert start == {("t", 0): 5}
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "cdc-kafka: t/1 ends at offset 3, before 12: some messages may have been missed "
        "(setting failOnDataLoss is false)",
        "cdc-kafka: t/0 starts at 2, but its earliest offset is 5: some messages may have "
        "been missed (setting failOnDataLoss is false)",
    ]
    with pytest.raises(SettingError, match="earliest offset is 5"):
        check_range({("t", 0): 2}, {("t", 0): 9}, {("t", 0): 5})
    assert source_settings({"servers": "h:1", "topics": "t"}).fail_on_data_loss
    off = source_settings({"servers": "h:1", "topics": "t", "failondataloss": "False"})
    assert not off.fail_on_data_loss
    with pytest.raises(SettingError, match="failOnDataLoss"):
        source_settings({"servers": "h:1", "topics": "t", "failOnDataLoss": "sometimes"})


def test_a_stream_behind_its_checkpoint_is_refused_naming_the_partition() -> None:
    from cdc_connectors.connectors.kafka_offsets import check_not_behind

    check_not_behind({("t", 0): 5}, {("t", 0): 5, ("u", 0): 0})
    with pytest.raises(ConnectorError, match=r"t/1 ends at offset 3, before 12 where"):
        check_not_behind({("t", 0): 5, ("t", 1): 12}, {("t", 0): 9, ("t", 1): 3})


def test_a_write_refuses_overwrite_and_a_batch_read_ignores_max_offsets_per_trigger(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    """As Spark's own Kafka source and sink do (a pipeline file refuses the option in a
    batch pipeline: its own settings, not code written for Spark's source)."""
    topic = new_topic(kafka_broker, 1)
    produce(kafka_broker, topic, [(0, None, b"x%d" % i) for i in range(20)])
    assert source(spark, kafka_broker, topic, maxOffsetsPerTrigger="10").count() == 20
    frame = source(spark, kafka_broker, topic).select("value")
    writer = frame.write.format("cdc-kafka").option("servers", kafka_broker.bootstrap)
    with pytest.raises(Exception, match="save mode overwrite is not supported"):
        writer.option("topic", topic).mode("overwrite").save()
