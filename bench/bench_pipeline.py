"""Kafka pipelines against a bare copy of the same messages on the same Tansu broker.

The messages are PostgreSQL change events in Debezium JSON with schema blocks
(:mod:`bench.postgres_events`, about 3.5 KB), ``BENCH_MESSAGES`` of them over 4 partitions.
The anchor, :func:`bench.bare_copy.kafka_copy`, consumes and produces them unchanged in one
Python process. Each side is measured ``BENCH_ROUNDS`` times, in turn, best taken; a pipeline
by its own clock (first batch start to last batch end: not Spark's start), run as
``cdc-connectors run`` runs it (in this process, on one session).

- ``pipeline_vs_bare_copy``: Kafka Debezium JSON -> Kafka OpenCDC protobuf, ``local[2]``.
- ``raw_connectors_vs_bare_copy``: the same connectors with ``format: raw``, bytes unchanged.
- ``raw_connectors_uncompressed_vs_bare_copy``: the copy with ``kafka.compression.type:
  none``, its batches as large as the bare copy's. The rows above and below write Snappy
  batches, the destination's default: on this one-machine setup the broker's work per byte
  bounds both the bare copy and ours, and compressed batches cut it to a third.
- ``pipeline_idempotent_vs_bare_copy``: the pipeline with its default, idempotent producer.
  The rows above write as the bare copy does, without idempotence
  (``kafka.enable.idempotence: false``, which keeps one request in flight): on Tansu an
  idempotent producer writes a third as fast, which would measure the broker, not us.
- ``scaling_2_vs_1_cores``: the pipeline on ``local[2]`` against ``local[1]``.
- ``scaling_2_vs_1_cores_of_bound``: that ratio against the most two cores can give when
  the broker and Spark's JVM share them: on ``local[1]`` they run on the core the task
  leaves free (the job takes the workers' CPU time W), on ``local[2]`` they take their part
  of both cores (the job takes at least (W + broker + JVM) / 2), so the bound is
  2W / (W + broker + JVM), from the CPU time of each process over the ``local[2]`` runs.
- ``pipeline_worker_memory_1x_vs_3x``: the peak resident memory of the Python workers over a
  run of the pipeline on the messages and on three times as many (each in a fresh session:
  a worker's peak lasts as long as the worker); 1.0 is flat.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from bench.bare_copy import kafka_copy
from bench.common import entry
from bench.pipeline_runs import (
    MESSAGES,
    ROUNDS,
    ProcessCpu,
    WorkerMemory,
    dead_letters,
    run_pipeline,
    spark_session,
    stop_spark,
)
from bench.postgres_events import events
from tests.kafka_broker import KafkaBroker

PARTITIONS = 4
LONG_FACTOR = 3  # the memory run reads this many times MESSAGES
WARM_MESSAGES = 4_000
#: Distinct events generated; the topic repeats them.
DISTINCT = 20_000


def fill(servers: str, topic: str, messages: int) -> None:
    """``messages`` events produced to ``topic``, spread evenly over its partitions."""
    data = events(min(messages, DISTINCT))
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 20})
    for n in range(messages):
        key, value = data[n % len(data)]
        while True:
            try:
                producer.produce(topic, value, key, partition=n % PARTITIONS)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.2)
        if n % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


def _pipeline(
    servers: str,
    source: str,
    target: str,
    raw: bool,
    master: str,
    dlq: str,
    idempotent: bool,
    compressed: bool = True,
) -> str:
    fmt_in = "raw" if raw else "debezium-json"
    fmt_out = "" if raw else ", format: opencdc-proto"
    if not idempotent:  # as the bare copy's producer: not idempotent (and one request at once)
        fmt_out += ', kafka.enable.idempotence: "false"'
    if not compressed:  # as the bare copy's producer: batches as they are
        fmt_out += ", kafka.compression.type: none"

    return f"""
version: "2.2"
spark:
  master: "{master}"
pipelines:
  - id: bench
    connectors:
      - id: in
        type: source
        plugin: kafka
        settings: {{servers: "{servers}", topics: {source}, format: {fmt_in},
                   startingOffsets: earliest, endingOffsets: latest}}
      - id: out
        type: destination
        plugin: kafka
        settings: {{servers: "{servers}", topic: {target}{fmt_out}}}
{dlq}"""


class _Bench:
    """One broker, its topics, and the best time of each side."""

    def __init__(self, broker: KafkaBroker, folder: Path):
        self.broker = broker
        self.servers = broker.bootstrap
        self.folder = folder
        self.numbers = count()
        self.best: dict[str, float] = {}
        #: CPU seconds by kind of process, summed over the runs :meth:`accounted` took.
        self.cpu: dict[str, float] = {}

    def accounted(self, run: Callable[[], float]) -> Callable[[], float]:
        """``run``, its processes' CPU time added to :attr:`cpu`."""

        def side() -> float:
            assert self.broker.process is not None
            with ProcessCpu(self.broker.process.pid) as spent:
                seconds = run()
            for kind, used in spent.seconds.items():
                self.cpu[kind] = self.cpu.get(kind, 0.0) + used
            return seconds

        return side

    def scaling_bound(self) -> float:
        """2W / (W + broker + JVM) over the runs :meth:`accounted` took (module docstring)."""
        workers = self.cpu.get("workers", 0.0)
        return 2 * workers / (workers + self.cpu.get("broker", 0.0) + self.cpu.get("jvm", 0.0))

    def topic(self, name: str, messages: int) -> str:
        self.broker.create_topic(name, PARTITIONS)
        fill(self.servers, name, messages)
        return name

    def _target(self) -> str:
        return self.broker.create_topic(f"bench-out-{next(self.numbers)}", PARTITIONS)

    def drop(self, topic: str) -> None:
        # Tansu keeps topics in memory: each copy would add its size.
        for future in self.broker.admin().delete_topics([topic]).values():
            future.result(timeout=60)

    def pipeline(
        self,
        source: str,
        messages: int,
        raw: bool,
        master: str,
        idempotent: bool = False,
        compressed: bool = True,
    ) -> float:
        target = self._target()
        dlq = dead_letters(self.folder, f"dlq-{next(self.numbers)}")
        text = _pipeline(self.servers, source, target, raw, master, dlq, idempotent, compressed)
        try:
            return run_pipeline(text, messages)
        finally:
            self.drop(target)

    def bare(self, source: str, messages: int) -> float:
        target = self._target()
        try:
            start = time.perf_counter()
            kafka_copy(self.servers, source, PARTITIONS, target, messages)
            return time.perf_counter() - start
        finally:
            self.drop(target)

    def measure(self, sides: dict[str, Callable[[], float]], rounds: int) -> None:
        for _ in range(rounds):
            for name, side in sides.items():
                seconds = side()
                self.best[name] = min(self.best.get(name, float("inf")), seconds)
                print(f"  {name}: {MESSAGES / seconds:,.0f} msg/s", file=sys.stderr, flush=True)


def run() -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp, KafkaBroker() as broker:
        bench = _Bench(broker, Path(tmp))
        source = bench.topic("bench-in", MESSAGES)
        warm = bench.topic("bench-warm", WARM_MESSAGES)

        spark_session("local[2]")
        for raw in (True, False):  # Python workers started, modules imported, topics known
            bench.pipeline(warm, WARM_MESSAGES, raw, "local[2]")
        bench.measure(
            {
                "bare copy": lambda: bench.bare(source, MESSAGES),
                "raw": lambda: bench.pipeline(source, MESSAGES, True, "local[2]"),
                "raw uncompressed": lambda: bench.pipeline(
                    source, MESSAGES, True, "local[2]", compressed=False
                ),
                "pipeline": bench.accounted(
                    lambda: bench.pipeline(source, MESSAGES, False, "local[2]")
                ),
                "idempotent": lambda: bench.pipeline(source, MESSAGES, False, "local[2]", True),
            },
            ROUNDS,
        )

        spark_session("local[1]")
        bench.pipeline(warm, WARM_MESSAGES, False, "local[1]")
        bench.measure(
            {"one core": lambda: bench.pipeline(source, MESSAGES, False, "local[1]")}, ROUNDS
        )

        spark_session("local[2]")
        with WorkerMemory() as short:
            bench.pipeline(source, MESSAGES, False, "local[2]")
        bench.drop(source)
        long = bench.topic("bench-long", MESSAGES * LONG_FACTOR)
        spark_session("local[2]")
        with WorkerMemory() as longer:
            bench.pipeline(long, MESSAGES * LONG_FACTOR, False, "local[2]")
        stop_spark()

    rate = {name: MESSAGES / seconds for name, seconds in bench.best.items()}
    print(
        f"peak Python worker memory: {short.peak_kib / 1024:.0f} MiB over {MESSAGES:,} "
        f"messages, {longer.peak_kib / 1024:.0f} MiB over {MESSAGES * LONG_FACTOR:,}",
        file=sys.stderr,
    )
    copy = f"bare confluent-kafka consume -> produce, one process, {MESSAGES:,} messages"
    return {
        "pipeline_vs_bare_copy": entry(rate["pipeline"], "msg/s", copy, rate["bare copy"]),
        "raw_connectors_vs_bare_copy": entry(rate["raw"], "msg/s", copy, rate["bare copy"]),
        "raw_connectors_uncompressed_vs_bare_copy": entry(
            rate["raw uncompressed"], "msg/s", copy, rate["bare copy"]
        ),
        "pipeline_idempotent_vs_bare_copy": entry(
            rate["idempotent"], "msg/s", copy, rate["bare copy"]
        ),
        "scaling_2_vs_1_cores": entry(
            rate["pipeline"], "msg/s", "the pipeline on local[1]", rate["one core"]
        ),
        "scaling_2_vs_1_cores_of_bound": entry(
            rate["pipeline"] / rate["one core"],
            "x",
            "2W / (W + broker + JVM): the most two cores shared with the broker can give, "
            f"from CPU seconds W {bench.cpu.get('workers', 0):.1f}, broker "
            f"{bench.cpu.get('broker', 0):.1f}, JVM {bench.cpu.get('jvm', 0):.1f}",
            bench.scaling_bound(),
            digits=2,
        ),
        # 1.0: flat; below 1: memory grows with the number of records.
        "pipeline_worker_memory_1x_vs_3x": entry(
            short.peak_kib / 1024,
            "MiB",
            f"peak Python worker memory over 3x the messages ({MESSAGES * LONG_FACTOR:,})",
            longer.peak_kib / 1024,
        ),
    }


if __name__ == "__main__":
    for name, row in run().items():
        print(name, row)
