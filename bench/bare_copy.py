"""The anchors of the pipeline benchmarks: copying the bytes with nothing in between.

:func:`kafka_copy` is a one-process confluent-kafka loop: assigned partitions read from their
earliest offsets, every message produced unchanged (key, value, headers) to another topic,
then a flush that waits for every delivery report. :func:`file_copy` reads the lines of some
files and writes them to others.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

#: Messages asked of each ``consume`` call.
CONSUME_BATCH = 10_000


def kafka_copy(servers: str, source: str, partitions: int, target: str, count: int) -> int:
    """Copy the ``count`` messages of ``source`` to ``target``; how many were delivered."""
    consumer = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": f"bare-copy-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 20})
    delivered = 0
    failed: list[KafkaError] = []

    def report(error: KafkaError | None, _message: object) -> None:
        nonlocal delivered
        if error is None:
            delivered += 1
        else:
            failed.append(error)

    consumer.assign([TopicPartition(source, p, 0) for p in range(partitions)])
    copied = 0
    try:
        while copied < count:
            for message in consumer.consume(CONSUME_BATCH, timeout=1.0):
                if message.error() is not None:
                    raise RuntimeError(f"bare copy: {message.error()}")
                while True:
                    try:
                        producer.produce(
                            target,
                            message.value(),
                            message.key(),
                            headers=message.headers(),
                            on_delivery=report,
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
                copied += 1
            producer.poll(0)
        producer.flush(120)
    finally:
        consumer.close()
    if failed or delivered != count:
        raise RuntimeError(f"bare copy: {delivered} of {count} delivered, {failed[:1]}")
    return delivered


def file_copy(sources: list[Path], target: Path) -> int:
    """Copy the lines of ``sources`` to one file each under ``target``; how many lines."""
    target.mkdir(parents=True, exist_ok=True)
    lines = 0
    for source in sources:
        with source.open("rb") as read, (target / source.name).open("wb") as write:
            for line in read:
                write.write(line)
                lines += 1
    return lines
