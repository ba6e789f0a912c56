"""A pipeline end to end: Kafka Debezium JSON -> Kafka OpenCDC protobuf, on a Tansu broker.

``pipeline_vs_copy``: the pipeline (``cdc-connectors run``'s job: read, convert, split the
dead letters, encode, write) on ``local[2]`` against the same connectors copying the bytes
unchanged (``format: raw`` in, message rows out). ``scaling_2_vs_1_cores``: the pipeline on
``local[2]`` against ``local[1]``. Both measured in one run, each side taken in turn.

Also reported: the peak resident memory of the Python workers over a run of the pipeline with
``MESSAGES`` messages and with ``LONG_FACTOR`` times as many (it must not grow with the number
of records).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from bench.bench_debezium import lines
from bench.common import entry
from tests.kafka_broker import KafkaBroker

MESSAGES = 40_000
LONG_FACTOR = 3  # the memory run reads this many times MESSAGES
PARTITIONS = 4
ROUNDS = 3


def _pipeline(servers: str, source: str, target: str, copy: bool, master: str) -> str:
    fmt_in = "raw" if copy else "debezium-json"
    fmt_out = "" if copy else ", format: opencdc-proto"
    return f"""
version: "2.2"
spark:
  master: "{master}"
  conf: {{spark.sql.shuffle.partitions: "2", spark.ui.enabled: "false"}}
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
    dead-letter-queue:
      plugin: files
      settings: {{path: "{Path(os.environ.get("TMPDIR", "/tmp")) / "bench-dlq"}"}}
"""


def _produce(servers: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 20})
    data = lines(min(count, 5_000))
    for n in range(count):
        while True:
            try:
                producer.produce(topic, data[n % len(data)], key=str(n).encode())
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.5)
        if n % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


class _WorkerMemory:
    """The peak resident set (VmHWM) of Spark's Python worker processes, sampled."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> _WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit():
                    continue
                try:
                    cmdline = (proc / "cmdline").read_bytes()
                    if b"pyspark.daemon" not in cmdline and b"pyspark/daemon" not in cmdline:
                        continue
                    for line in (proc / "status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                except OSError:
                    continue


def run() -> dict[str, dict[str, Any]]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from cdc_connectors.pipeline.config import parse
    from cdc_connectors.pipeline.runner import run as run_pipeline

    with KafkaBroker() as broker:
        servers = broker.bootstrap
        broker.create_topic("bench-in", PARTITIONS)
        broker.create_topic("bench-long", PARTITIONS)
        _produce(servers, "bench-in", MESSAGES)
        counter = iter(range(10**6))

        def job(copy: bool, master: str, topic: str = "bench-in") -> Callable[[], None]:
            def go() -> None:
                config = parse(
                    _pipeline(servers, topic, f"bench-out-{next(counter)}", copy, master)
                )
                spark = SparkSession.getActiveSession()
                assert spark is not None
                status = run_pipeline(config, spark, say=lambda line: None)
                assert status == 0, status

            return go

        def session(master: str) -> None:
            active = SparkSession.getActiveSession()
            if active is not None:
                active.stop()
            spark = (
                SparkSession.builder.master(master)
                .appName("bench-pipeline")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", "2")
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")

        best: dict[str, float] = {}

        def timed(name: str, fn: Callable[[], None]) -> None:
            start = time.perf_counter()
            fn()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)

        session("local[2]")
        job(False, "local[2]")()  # warm up: workers, registry, topics
        job(True, "local[2]")()
        for _ in range(ROUNDS):
            timed("pipeline", job(False, "local[2]"))
            timed("copy", job(True, "local[2]"))
        # Fresh sessions: a Python worker's peak (VmHWM) lasts as long as the worker.
        session("local[2]")
        with _WorkerMemory() as short:
            job(False, "local[2]")()
        _produce(servers, "bench-long", MESSAGES * LONG_FACTOR)
        session("local[2]")
        with _WorkerMemory() as long:
            job(False, "local[2]", "bench-long")()
        session("local[1]")
        job(False, "local[1]")()
        for _ in range(ROUNDS):
            timed("one core", job(False, "local[1]"))
        SparkSession.getActiveSession().stop()  # type: ignore[union-attr]

    rate = {name: MESSAGES / seconds for name, seconds in best.items()}
    print(
        f"peak Python worker memory: {short.peak_kib / 1024:.0f} MiB over {MESSAGES:,} "
        f"messages, {long.peak_kib / 1024:.0f} MiB over {MESSAGES * LONG_FACTOR:,}",
        file=sys.stderr,
    )
    return {
        "pipeline_vs_copy": entry(
            rate["pipeline"], "msg/s", "the same connectors copying bytes, local[2]", rate["copy"]
        ),
        "scaling_2_vs_1_cores": entry(
            rate["pipeline"], "msg/s", "the pipeline on local[1]", rate["one core"]
        ),
        # 1.0: flat; below 1: memory grows with the number of records.
        "pipeline_worker_memory_1x_vs_3x": entry(
            short.peak_kib / 1024,
            "MiB",
            f"peak Python worker memory over 3x the messages ({MESSAGES * LONG_FACTOR:,})",
            long.peak_kib / 1024,
        ),
    }


if __name__ == "__main__":
    for name, row in run().items():
        print(name, row)
