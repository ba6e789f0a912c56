"""Kafka-to-Kafka pipelines that read, convert and write in one pass per task
(:mod:`cdc_connectors.pipeline.in_task`): the same messages, in the same order per
partition, and the same dead letters as the staged way; streaming from a checkpoint; topics
routed per record; bytes copied as they are; and the staged way kept for pipelines that stop
on dead letters."""

from __future__ import annotations

import base64
import re
import signal
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from cdc_connectors.pipeline.config import parse
from cdc_connectors.pipeline.in_task import in_task
from cdc_connectors.pipeline.runner import _Job
from tests.kafka_broker import KafkaBroker
from tests.pipeline.support import SPARK, records, run_here
from tests.pipeline.test_launcher_death import descendants, kill_all, launch, stop, wait_gone

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ONE_PASS = "read and written in one pass per task"
PARTITIONS = 2
_FIELDS = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "12"},
        "field": "price",
    },
    {
        "type": "int64",
        "optional": True,
        "name": "io.debezium.time.MicroTimestamp",
        "version": 1,
        "field": "placed",
    },
    {"type": "double", "optional": True, "field": "ratio"},
]
_SOURCE = [
    {"type": "string", "optional": False, "field": "connector"},
    {"type": "string", "optional": False, "field": "db"},
    {"type": "string", "optional": False, "field": "schema"},
    {"type": "string", "optional": False, "field": "table"},
    {"type": "int64", "optional": False, "field": "ts_ms"},
]
KEY_SCHEMA = {"type": "struct", "optional": False, "fields": _FIELDS[:1], "name": "k.Key"}


def _envelope(table: str) -> dict[str, Any]:
    image = {"type": "struct", "optional": True, "fields": _FIELDS, "name": f"{table}.Value"}
    return {
        "type": "struct",
        "optional": False,
        "name": f"{table}.Envelope",
        "fields": [
            {**image, "field": "before"},
            {**image, "field": "after"},
            {
                "type": "struct",
                "optional": False,
                "fields": _SOURCE,
                "name": "io.debezium.connector.postgresql.Source",
                "field": "source",
            },
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }


def _unscaled(number: int) -> bytes:
    """An unscaled decimal as Kafka Connect writes it: two's complement, fewest bytes."""
    return number.to_bytes(number.bit_length() // 8 + 1, "big", signed=True)


def change(n: int, table: str = "orders") -> tuple[bytes, bytes]:
    """Key and value of one Debezium JSON change with schema blocks (no wall-clock times)."""
    cents = (n * 7919) % 10**9 - 5 * 10**8
    row = {
        "id": n,
        "name": f"customer {n} \u00e9",
        "price": base64.b64encode(_unscaled(cents)).decode(),
        "placed": 1_700_000_000_000_000 + n * 1_000_003,
        # 17 digits now and then: a double's shortest text, read by the columns
        "ratio": 0.12345678901234566 + n if n % 10 == 7 else n / 4,
    }
    op = "cu"[n % 2]
    value = {
        "schema": _envelope(table),
        "payload": {
            "before": row if op == "u" else None,
            "after": row,
            "source": {
                "connector": "postgresql",
                "db": "shop",
                "schema": "public",
                "table": table,
                "ts_ms": 1_700_000_000_000 + n,
            },
            "op": op,
            "ts_ms": 1_700_000_000_500 + n,
        },
    }
    key = {"schema": KEY_SCHEMA, "payload": {"id": n}}
    return orjson.dumps(key), orjson.dumps(value)


JUNK = [b"{not json", b"[1, 2]", b'{"payload": {"op": "x"}}']


def fill(broker: KafkaBroker, topic: str, first: int, count: int, junk: bool = True) -> None:
    """Changes ``first`` .. ``first + count - 1``, some of them in a second table, with a
    key without schema and a long double now and then and junk (dead letters, the
    per-message way)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for n in range(first, first + count):
        key, value = change(n, "orders" if n % 3 else "customers")
        if n % 10 == 7:
            key = orjson.dumps({"id": n})  # a key without a schema block
        producer.produce(topic, value, key, partition=n % PARTITIONS, headers=[("h", b"%d" % n)])
        if junk and n % 25 == 3:
            producer.produce(topic, JUNK[n % 3], partition=n % PARTITIONS)
    assert producer.flush(30) == 0


def messages(broker: KafkaBroker, topic: str) -> dict[int, list[tuple[Any, ...]]]:
    """Every message of ``topic``, per partition in offset order: (key, value, headers)."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "enable.partition.eof": True,
        }
    )
    metadata = consumer.list_topics(topic, timeout=10).topics[topic]
    found: dict[int, list[tuple[Any, ...]]] = {p: [] for p in metadata.partitions}
    consumer.assign([TopicPartition(topic, p, 0) for p in found])
    ended: set[int] = set()
    try:
        while len(ended) < len(found):
            message = consumer.poll(10)
            assert message is not None, f"{topic}: no end of partition within 10 s"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                ended.add(int(message.partition() or 0))
                continue
            found[int(message.partition() or 0)].append(
                (message.key(), message.value(), message.headers())
            )
    finally:
        consumer.close()
    return found


def pipeline_text(
    broker: KafkaBroker,
    source: str,
    destination: str,
    dead: Path,
    *,
    source_format: str = "debezium-json",
    batch: bool = True,
    policy: str = "",
) -> str:
    ending = ", endingOffsets: latest" if batch else ""
    return f"""version: "2.2"
pipelines:
  - id: p
    connectors:
      - id: in
        type: source
        plugin: kafka
        settings: {{servers: "{broker.bootstrap}", topics: {source}, format: {source_format},
                   startingOffsets: earliest{ending}}}
      - id: out
        type: destination
        plugin: kafka
        settings: {{servers: "{broker.bootstrap}", topic: "{destination}"}}
    dead-letter-queue:
      plugin: files
      settings: {{path: "{dead}", format: opencdc-json}}
      {policy}
"""


def _run(spark: Any, folder: Path, text: str, *, available_now: bool = False) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"p-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(text)
    return run_here(spark, path, available_now=available_now)


def _letters(dead: Path) -> list[tuple[str, str, str]]:
    return sorted(
        (
            r["position"],
            r["metadata"]["conduit.dlq.nack.error"],
            r["payload"]["after"],
        )
        for r in records(dead)
    )


@pytest.fixture(scope="module")
def source(kafka_broker: KafkaBroker) -> str:
    topic = kafka_broker.create_topic(f"in-task-{uuid.uuid4().hex[:8]}", PARTITIONS)
    fill(kafka_broker, topic, 0, 400)
    return topic


def _by_source(found: dict[int, list[tuple[Any, ...]]]) -> dict[tuple[int, int], list[Any]]:
    """Messages per (destination partition, source partition), in the order written: two
    tasks write to one destination partition at once, each in its source partition's order."""
    split: dict[tuple[int, int], list[Any]] = {}
    for partition, written in found.items():
        for message in written:
            place = re.search(rb"in-task-[0-9a-f]{8}/(\d+)/(\d+)", message[1])
            assert place is not None, message
            split.setdefault((partition, int(place.group(1))), []).append(message)
    return split


def test_one_pass_per_task_writes_what_the_staged_way_writes(
    spark: Any, kafka_broker: KafkaBroker, source: str, tmp_path: Path
) -> None:
    outputs = {}
    for way, policy in (("one pass", ""), ("staged", "max-error-ratio: 1.0")):
        target = kafka_broker.create_topic(f"out-{uuid.uuid4().hex[:8]}", PARTITIONS)
        dead = tmp_path / f"dead-{way}"
        text = pipeline_text(kafka_broker, source, target, dead, policy=policy)
        result = _run(spark, tmp_path, text)
        assert result.returncode == 1, result.stderr  # junk went to the dead letters
        assert (ONE_PASS in result.stderr) == (way == "one pass"), result.stderr
        assert "416 records in, 400 out, 16 to the dead-letter output" in result.stderr
        outputs[way] = (messages(kafka_broker, target), _letters(dead), result.stderr)
    one_pass, staged = outputs["one pass"], outputs["staged"]
    # every message, byte for byte, in its source partition's order
    assert _by_source(one_pass[0]) == _by_source(staged[0])
    assert sum(len(m) for m in one_pass[0].values()) == 400
    assert one_pass[1] == staged[1] and len(one_pass[1]) == 16
    # the junk took the per-message way; the rest came from columns (the doubles of 17
    # digits are a double's shortest text, and keys without a schema block flat objects)
    assert "16 the per-message way" in one_pass[2], one_pass[2]
    assert "16 the per-message way" in staged[2], staged[2]


def test_a_stream_continues_from_its_checkpoint(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    topic = kafka_broker.create_topic(f"stream-{uuid.uuid4().hex[:8]}", PARTITIONS)
    target = kafka_broker.create_topic(f"stream-out-{uuid.uuid4().hex[:8]}", PARTITIONS)
    fill(kafka_broker, topic, 0, 60, junk=False)
    text = pipeline_text(kafka_broker, topic, target, tmp_path / "dead", batch=False)
    text = text.replace(
        'version: "2.2"\n', f'version: "2.2"\nspark:\n  checkpoint: "{tmp_path}/cp"\n'
    )
    counts = []
    for more in (0, 0, 30):
        if more:
            fill(kafka_broker, topic, 1000, more, junk=False)
        result = _run(spark, tmp_path, text, available_now=True)
        assert result.returncode == 0, result.stderr
        assert ONE_PASS in result.stderr
        counts.append(sum(len(m) for m in messages(kafka_broker, target).values()))
    assert counts == [60, 60, 90]  # the second run had nothing new; the third the new 30


def test_records_are_routed_to_the_topics_of_their_collections(
    spark: Any, kafka_broker: KafkaBroker, source: str, tmp_path: Path
) -> None:
    prefix = f"routed-{uuid.uuid4().hex[:6]}"
    for table in ("orders", "customers"):
        kafka_broker.create_topic(f"{prefix}.shop.public.{table}", 1)
    text = pipeline_text(kafka_broker, source, f"{prefix}.{{collection}}", tmp_path / "dead")
    result = _run(spark, tmp_path, text)
    assert result.returncode == 1, result.stderr
    assert ONE_PASS in result.stderr
    orders = messages(kafka_broker, f"{prefix}.shop.public.orders")[0]
    customers = messages(kafka_broker, f"{prefix}.shop.public.customers")[0]
    assert (len(orders), len(customers)) == (266, 134)


def test_a_raw_copy_keeps_keys_values_headers_and_order(
    spark: Any, kafka_broker: KafkaBroker, source: str, tmp_path: Path
) -> None:
    target = kafka_broker.create_topic(f"copy-{uuid.uuid4().hex[:8]}", PARTITIONS)
    text = pipeline_text(kafka_broker, source, target, tmp_path / "dead", source_format="raw")
    result = _run(spark, tmp_path, text)
    assert result.returncode == 0, result.stderr
    assert ONE_PASS in result.stderr and "416 records in, 416 out" in result.stderr
    copied = messages(kafka_broker, target)
    original = messages(kafka_broker, source)
    every = sorted(repr(m) for p in copied.values() for m in p)
    assert every == sorted(repr(m) for p in original.values() for m in p)
    # the copy's partitions are the producer's choice (by key); each keeps the source order
    place = {repr(m): (p, i) for p, found in original.items() for i, m in enumerate(found)}
    for found in copied.values():
        for partition in range(PARTITIONS):
            order = [place[repr(m)][1] for m in found if m[2] and place[repr(m)][0] == partition]
            assert order == sorted(order)


_DLQ = "format: opencdc-json}"


@pytest.mark.parametrize(
    ("old", "new", "one_pass"),
    [
        ("", "", True),
        (_DLQ, f"{_DLQ}\n      fail-fast: true", False),
        (_DLQ, f"{_DLQ}\n      max-error-ratio: 0.5", False),
        ("startingOffsets:", "failFast: true, startingOffsets:", False),
    ],
)
def test_only_pipelines_that_go_on_past_dead_letters_run_in_one_pass(
    spark: Any, old: str, new: str, one_pass: bool, tmp_path: Path
) -> None:
    broker = KafkaBroker(port=9)  # never contacted: the choice is made from the settings
    text = pipeline_text(broker, "t", "out", tmp_path / "dead")
    if old:
        assert old in text
        text = text.replace(old, new)
    (pipeline,) = parse(text).pipelines
    job = _Job(pipeline, spark)
    assert (job.in_task is not None) == one_pass
    assert (ONE_PASS in job.start_line(False)) == one_pass
    chosen = in_task(
        pipeline, job.source_settings, job.writer_settings, job.fmt, job.route, job.fused
    )
    assert (chosen is not None) == one_pass


def test_a_batch_plans_its_files_on_the_driver_and_runs_a_task_each(
    spark: Any, tmp_path: Path
) -> None:
    """Spark reads numbers (``spark.range``, one partition each), not a Python data source:
    no planner process, no Python worker beside each task's."""
    source = tmp_path / "in"
    source.mkdir()
    for number in range(3):
        (source / f"part-{number}.jsonl").write_bytes(change(number)[1] + b"\n")
    text = _files_pipeline(source, tmp_path / "out", tmp_path / "dead")
    (pipeline,) = parse(text).pipelines
    job = _Job(pipeline, spark)
    frame = job.read(streaming=False)
    assert job.plan_rows is not None
    assert sorted(row["file"] for row in job.plan_rows) == sorted(
        str(path) for path in source.glob("*.jsonl")
    )
    assert frame.rdd.getNumPartitions() == 3
    assert "Range" in frame._jdf.queryExecution().analyzed().toString()
    for path in source.glob("*.jsonl"):
        path.unlink()
    nothing = _Job(pipeline, spark)
    assert nothing.read(streaming=False).count() == 0 and nothing.plan_rows == []


def test_an_output_nothing_can_be_written_to_is_refused_in_one_line_with_its_place(
    spark: Any, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.jsonl").write_bytes(change(1)[1] + b"\n{not json\n")
    for target, dead, setting in (
        (Path("/proc/nowhere"), tmp_path / "dead", "connectors[1].settings.path"),
        (tmp_path / "out", Path("/proc/nowhere"), "dead-letter-queue.settings.path"),
    ):
        result = _run(spark, tmp_path, _files_pipeline(source, target, dead))
        assert result.returncode == 2, result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert f"pipelines[0].{setting}: cdc-files setting 'path': cannot write to" in last
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()  # the records are not published without letters


def _files_pipeline(
    source: Path, target: Path, dead: Path, policy: str = "", kv: bool = False
) -> str:
    kv_setting = ", kv: true" if kv else ""
    return f"""version: "2.2"
pipelines:
  - id: f
    mode: batch
    connectors:
      - id: in
        type: source
        plugin: files
        settings: {{path: "{source}", format: debezium-json{kv_setting}}}
      - id: out
        type: destination
        plugin: files
        settings: {{path: "{target}", format: opencdc-json}}
    dead-letter-queue:
      plugin: files
      settings: {{path: "{dead}", format: opencdc-json}}
      {policy}
"""


def _documents(folder: Path) -> list[dict[str, Any]]:
    found = records(folder)
    for record in found:
        record["metadata"].pop("opencdc.readAt", None)  # ts_ms is there: only in letters
    return sorted(found, key=lambda r: orjson.dumps(r, option=orjson.OPT_SORT_KEYS))


def test_files_to_files_in_one_pass_writes_what_the_staged_way_writes(
    spark: Any, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    for number in range(3):
        lines = [change(n + 100 * number)[1] for n in range(40)]
        lines[5] = b"{not json"
        (source / f"part-{number}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (source / "broken.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00 not a gzip stream")
    written = {}
    for way, policy in (("one pass", ""), ("staged", "max-error-ratio: 1.0")):
        target, dead = tmp_path / f"out-{way}", tmp_path / f"dead-{way}"
        result = _run(spark, tmp_path, _files_pipeline(source, target, dead, policy))
        assert result.returncode == 1, result.stderr
        assert (ONE_PASS in result.stderr) == (way == "one pass"), result.stderr
        assert "121 records in, 117 out, 4 to the dead-letter output" in result.stderr
        written[way] = (_documents(target), _documents(dead))
    assert written["one pass"] == written["staged"]
    letters = written["one pass"][1]
    reasons = [letter["metadata"]["conduit.dlq.nack.error"] for letter in letters]
    assert sum("broken.jsonl.gz" in reason for reason in reasons) == 1, reasons


def test_kv_lines_whose_values_the_columns_check_give_what_the_staged_way_gives(
    spark: Any, tmp_path: Path
) -> None:
    """One pass leaves the values of kv lines to the columns, which check them; a line they
    leave to the per-message way is read again whole: the same records and dead letters
    (reason, place, the line's bytes) as the staged way, which checks each value first."""
    source = tmp_path / "in"
    source.mkdir()
    bad_values = [
        b"{not json",
        change(1)[1] + b"x",  # a document and more
        change(2)[1] + b" {}",  # two documents
        change(3)[1][:-1] + b',"extra":NaN}',
        change(4)[1] + b',"value":1',  # the line then has two values
        change(5)[1][:-1] + b',"extra":"\\ud800"}',
    ]
    for number in range(2):
        lines = [
            b'{"key":%s,"value":%s}' % (key, value)
            for key, value in (change(n + 100 * number) for n in range(30))
        ]
        for at, value in enumerate(bad_values):
            lines[3 + 4 * at] = b'{"key":{"id":%d},"value":%s}' % (at, value)
        lines[27] = b"no kv line"
        lines[28] = b'{"key":1, "value":%s}' % change(7)[1]  # spaced: read one by one
        (source / f"part-{number}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    written = {}
    for way, policy in (("one pass", ""), ("staged", "max-error-ratio: 1.0")):
        target, dead = tmp_path / f"out-{way}", tmp_path / f"dead-{way}"
        text = _files_pipeline(source, target, dead, policy, kv=True)
        result = _run(spark, tmp_path, text)
        assert result.returncode == 1, result.stderr
        assert (ONE_PASS in result.stderr) == (way == "one pass"), result.stderr
        assert "60 records in, 46 out, 14 to the dead-letter output" in result.stderr
        written[way] = (_documents(target), _documents(dead))
    assert written["one pass"] == written["staged"]
    letters = written["one pass"][1]
    assert sum(b"{not json" in base64.b64decode(r["payload"]["after"]) for r in letters) == 2
    # each file's dead letters in the order of its lines, as they were written
    for number in range(2):
        lines = [
            int(base64.b64decode(r["position"]).rpartition(b":")[2])
            for r in records(tmp_path / "dead-one pass")
            if f"part-{number}.jsonl".encode() in base64.b64decode(r["position"])
        ]
        assert len(lines) == 7 and lines == sorted(lines), lines


def test_one_pass_counts_the_dead_letters_of_both_formats_as_the_staged_way(
    spark: Any, tmp_path: Path
) -> None:
    """A record the destination's format cannot write (an integer a protobuf ``Struct``
    number would change) is a dead letter of that format, a line that is no message one of
    the source's: one pass counts them from its tasks' tallies as the staged way counts them."""
    source = tmp_path / "in"
    source.mkdir()
    lines = [change(n)[1] for n in range(12)]
    lines[3] = b"{not json"
    for at in (5, 8):
        event = orjson.loads(lines[at])
        event["payload"]["after"]["id"] = 2**53 + 1
        lines[at] = orjson.dumps(event)
    (source / "part.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    said = {}
    for way, policy in (("one pass", ""), ("staged", "max-error-ratio: 1.0")):
        target, dead = tmp_path / f"out-{way}", tmp_path / f"dead-{way}"
        text = _files_pipeline(source, target, dead, policy).replace(
            f'path: "{target}", format: opencdc-json', f'path: "{target}", format: opencdc-proto'
        )
        result = _run(spark, tmp_path, text)
        assert result.returncode == 1, result.stderr
        assert (ONE_PASS in result.stderr) == (way == "one pass"), result.stderr
        said[way] = re.findall(
            r"\d+ records in, \d+ out, \d+ to the dead-letter output", result.stderr
        )
        assert len(_documents(dead)) == 3
    assert (
        said["one pass"] == said["staged"] == ["12 records in, 9 out, 3 to the dead-letter output"]
    )


def test_a_stream_killed_mid_run_loses_no_message(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    """SIGKILL of ``cdc-connectors run`` while its tasks write: the next run goes on from the
    checkpoint, and every source message is in the destination (a micro-batch the kill cut
    short is written again: at least once, as every Kafka write)."""
    topic = kafka_broker.create_topic(f"kill-{uuid.uuid4().hex[:8]}", PARTITIONS)
    target = kafka_broker.create_topic(f"kill-out-{uuid.uuid4().hex[:8]}", PARTITIONS)
    fill(kafka_broker, topic, 0, 600, junk=False)
    text = pipeline_text(kafka_broker, topic, target, tmp_path / "dead", batch=False)
    document = yaml.safe_load(text.replace("earliest", "earliest, maxOffsetsPerTrigger: 100"))
    document["spark"] = {**SPARK, "checkpoint": str(tmp_path / "cp")}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    killed = launch(tmp_path, "p.yaml")
    try:
        killed.wait_for(lambda lines: sum(line.startswith("p: batch ") for line in lines) >= 2)
        tree = descendants(killed.process.pid)
        killed.process.send_signal(signal.SIGKILL)
        killed.process.wait()
        kill_all(set(wait_gone(tree)))
    finally:
        stop(killed)
    assert ONE_PASS in killed.text, killed.text
    before = sum(len(m) for m in messages(kafka_broker, target).values())
    assert before >= 200, killed.text  # two micro-batches were written before the kill
    result = run_here(spark, tmp_path / "p.yaml", available_now=True)
    assert result.returncode == 0, result.stderr
    places = [
        re.search(rb"kill-[0-9a-f]{8}/(\d+)/(\d+)", value)
        for written in messages(kafka_broker, target).values()
        for _, value, _ in written
    ]
    assert all(places)
    found = {(int(p.group(1)), int(p.group(2))) for p in places if p is not None}
    assert found == {(partition, n) for partition in range(PARTITIONS) for n in range(300)}


@pytest.mark.parametrize("source_format", ["debezium-json", "raw"])
def test_a_message_larger_than_the_producer_takes_is_a_dead_letter_and_the_rest_written(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path, source_format: str
) -> None:
    topic = kafka_broker.create_topic(f"large-{uuid.uuid4().hex[:8]}", 1)
    target = kafka_broker.create_topic(f"large-out-{uuid.uuid4().hex[:8]}", 1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    for n in range(20):
        key, value = change(n)
        if n % 5 == 0:  # a long text: its message, and its record, past 4,000 bytes
            value = value.replace(b"customer %d" % n, b"customer " + b"x" * 6000)
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0
    dead = tmp_path / "dead"
    text = pipeline_text(kafka_broker, topic, target, dead, source_format=source_format)
    text = text.replace(f'topic: "{target}"', f'topic: "{target}", kafka.message.max.bytes: 4000')
    result = _run(spark, tmp_path, text)
    assert result.returncode == 1, result.stderr
    assert ONE_PASS in result.stderr
    assert "20 records in, 16 out, 4 to the dead-letter output" in result.stderr, result.stderr
    written = messages(kafka_broker, target)[0]
    assert len(written) == 16 and all(b"x" * 6000 not in m[1] for m in written)
    letters = records(dead)
    where = {base64.b64decode(r["position"]).decode(): r for r in letters}
    assert sorted(where) == [f"{topic}/0/{n}" for n in (0, 10, 15, 5)]
    for letter in letters:
        reason = letter["metadata"]["conduit.dlq.nack.error"]
        assert "is larger than the producer takes, 4000 bytes" in reason, reason
        assert "kafka.message.max.bytes" in reason
    if source_format == "raw":  # the message itself, byte for byte
        first = where[f"{topic}/0/0"]
        assert base64.b64decode(first["payload"]["after"]) == change(0)[1].replace(
            b"customer 0", b"customer " + b"x" * 6000
        )
