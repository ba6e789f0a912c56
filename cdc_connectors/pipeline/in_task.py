"""A Kafka-to-Kafka pipeline run inside its Spark tasks: read, convert and write in one pass.

```
cdc-kafka-ranges rows (one planned range each)
  -> mapInArrow, per range: read_range (raw messages)
                            -> converter (or bytes as they are, for a copy)
                            -> messages produced to the destination, every report awaited
                            -> dead-letter rows and two WRITTEN rows (the counts) out
```

The messages never cross into Spark's JVM and back (three hand-offs of every byte in the
staged way: source to stage, stage to cache, cache to writer); only dead letters and counts
do. Spark still plans the ranges, runs the tasks on its executors and keeps a streaming
query's offsets in its checkpoint.

What it gives up, and so when the runner takes it (:func:`applies`): a task writes its
messages before the batch's dead letters are counted, so a pipeline that stops on dead
letters (``fail-fast``, ``max-error-ratio``, a source's ``failFast``) keeps the staged way,
where nothing of a stopped batch is written. Dead letters are written after the messages. A
task Spark retries writes its messages again: at least once, as every Kafka write here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.connectors import task_heap
from cdc_connectors.connectors.errors import guarded
from cdc_connectors.connectors.kafka_offsets import KafkaRange
from cdc_connectors.connectors.kafka_ranges import ranges_of
from cdc_connectors.connectors.kafka_read import read_range
from cdc_connectors.connectors.kafka_settings import (
    CONNECTOR,
    DestinationSettings,
    SourceSettings,
    destination_settings,
    source_settings,
)
from cdc_connectors.connectors.kafka_write import Output, TopicTemplate, message_rows
from cdc_connectors.connectors.messages import SettingError
from cdc_connectors.formats.base import Format
from cdc_connectors.pipeline.config import Pipeline
from cdc_connectors.pipeline.plan import (
    Route,
    SourceFormat,
    converter,
    is_messages,
    message_layout,
    written_batch,
)

__all__ = ["RANGES", "InTask", "in_task", "tasks"]

#: The data source an in-task pipeline reads its ranges from.
RANGES = f"{CONNECTOR}-ranges"

_PER_MESSAGE = "_per_message"


@dataclass(frozen=True)
class InTask:
    """What each task of an in-task pipeline needs (pickled to the executors)."""

    source: SourceSettings
    destination: DestinationSettings
    fmt: Format  # the destination's
    node_id: str
    decode: SourceFormat | None  # None: a copy, bytes as they are
    route: Route | None
    columns: tuple[str, ...]  # the message columns a copy writes


def in_task(
    pipeline: Pipeline,
    read_with: dict[str, str],
    write_with: dict[str, str],
    fmt: Format,
    route: Route | None,
    decode: SourceFormat | None,
) -> InTask | None:
    """How ``pipeline`` runs in its tasks, or ``None`` when it keeps the staged way: it is
    not Kafka to Kafka, it stops on dead letters (module docstring), or it has no topic to
    write to (the staged way's writer then says so). ``read_with``/``write_with``: the
    settings the source is read and the destination written with; ``decode``: the format a
    fused stage decodes with (``None`` for a copy)."""
    dlq = pipeline.dead_letters
    kafka = {pipeline.source.plugin.spark_name, pipeline.destination.plugin.spark_name}
    if kafka != {CONNECTOR} or dlq.fail_fast or dlq.max_error_ratio is not None:
        return None
    try:
        source = source_settings(read_with)
        destination = destination_settings(write_with)
        fixed = destination.topic is not None and TopicTemplate(destination.topic).fixed
    except SettingError:  # refused where the staged way refuses it, with its place
        return None
    if source.typed or (decode is None and (not source.raw or route is not None)):
        return None
    if (decode is not None and decode.fail_fast) or not (fixed or route is not None):
        return None
    columns = pipeline.destination.plugin.message_columns
    node_id = f"{pipeline.id}:{pipeline.destination.id}"
    return InTask(source, destination, fmt, node_id, decode, route, columns)


def tasks(plan: InTask) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function over ``cdc-kafka-ranges`` rows (module docstring)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_heap.settle()
        for batch in batches:
            for part in ranges_of(batch):
                yield from guarded(_one_range(plan, part))

    return run


def _one_range(plan: InTask, part: KafkaRange) -> Iterator[pa.RecordBatch]:
    topic = plan.destination.topic
    template = TopicTemplate(topic) if topic is not None else None
    raw = read_range(plan.source, part)
    out = Output(plan.destination)
    from_columns = per_message = 0
    try:
        if plan.decode is None:
            for batch in raw:
                kept = [c for c in plan.columns if c in batch.schema.names]
                out.produce(message_rows(batch.select(kept), template))
                out.serve()
                from_columns += batch.num_rows
        else:
            convert = converter(plan.decode, plan.fmt, plan.node_id, plan.route)
            for staged in convert(raw):
                if not is_messages(staged):
                    yield staged  # dead letters
                    continue
                out.produce(message_rows(message_layout(staged), template))
                out.serve()
                slow = int(pc.sum(staged.column(_PER_MESSAGE)).as_py() or 0)
                per_message += slow
                from_columns += staged.num_rows - slow
        out.finish()
    except BaseException:
        out.abandon()
        raise
    yield written_batch(from_columns, per_message)
