"""A pipeline run inside its Spark tasks: read, convert and write in one pass.

```
plan rows: cdc-kafka-ranges (a range of offsets each) or cdc-files-plan (a file each);
           a batch plans them on the driver (planned_rows), Spark reads their numbers
  -> mapInArrow, per row: its raw messages (read_range, or raw_batches of a file)
                          -> converter (or bytes as they are, for a Kafka copy: the
                             fetched messages produced again, no columns made of them)
                          -> messages written: produced to Kafka, every report awaited; or
                             a staged file of the cdc-files writer
                          -> dead-letter rows, two WRITTEN rows (counts, and what the
                             files writer's job commits) and two TALLY rows (its dead
                             letters, counted: Stage.count reads these rows alone) out
```

The messages never cross into Spark's JVM and back (three hand-offs of every byte in the
staged way: source to stage, stage to cache, cache to writer); only dead letters, counts and
commit messages do. Spark runs the tasks on its executors and keeps a streaming query's
offsets in its checkpoint; a batch's ranges or files are planned on the driver by the plan
sources' own code (no Python process to plan a Python read, no Python worker to read plan
rows beside each task's); a files destination is committed by its own writer's job commit
(:meth:`FilesWriter.commit`), on the driver, as in the staged way.

What it gives up, and so when the runner takes it (:func:`in_task`): a task writes its
messages before the batch's dead letters are counted, so a pipeline that stops on dead
letters (``fail-fast``, ``max-error-ratio``, a source's ``failFast``) keeps the staged way,
where nothing of a stopped batch is written. Dead letters are written after the messages. A
Kafka task Spark retries writes its messages again: at least once, as every Kafka write here.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from confluent_kafka import Message as KafkaMessage
from pyspark.sql.types import BinaryType, StructField, StructType

from cdc_connectors.columnar.choose import checks_values
from cdc_connectors.connectors import files, task_heap
from cdc_connectors.connectors import table_settings as table
from cdc_connectors.connectors.errors import guarded
from cdc_connectors.connectors.files_plan import FilesPlanDataSource, raw_batches
from cdc_connectors.connectors.files_write import FilesWriter, TaskFile
from cdc_connectors.connectors.kafka_offsets import KafkaRange
from cdc_connectors.connectors.kafka_ranges import KafkaRangesDataSource
from cdc_connectors.connectors.kafka_read import kafka_headers, read_messages, read_range
from cdc_connectors.connectors.kafka_settings import (
    CONNECTOR,
    DestinationSettings,
    SourceSettings,
    destination_settings,
    source_settings,
)
from cdc_connectors.connectors.kafka_write import Outgoing, Output, TopicTemplate, message_rows
from cdc_connectors.connectors.table_write import TableCommitMessage, TaskChanges
from cdc_connectors.convert.deadletter import dead_letter
from cdc_connectors.convert.kv_columns import ValueChecks
from cdc_connectors.errors import ConfigError
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.pipeline.config import Pipeline
from cdc_connectors.pipeline.plan import (
    ENCODE_LETTER,
    SOURCE_LETTER,
    Route,
    SourceFormat,
    converter,
    encode_letters_batch,
    is_messages,
    letter_kind,
    letters_batch,
    message_layout,
    per_message_rows,
    places_of,
    tally_batch,
    unwritten_letters,
    written_batch,
)

__all__ = [
    "FILES_PLAN",
    "MESSAGE_LAYOUT",
    "RANGES",
    "FilesOut",
    "InTask",
    "TableOut",
    "in_task",
    "planned_rows",
    "tasks",
]

#: The data sources a streaming in-task pipeline reads its plan rows from (a batch plans
#: them on the driver: :func:`planned_rows`).
RANGES = f"{CONNECTOR}-ranges"
FILES_PLAN = f"{files.NAME}-plan"
#: The rows a files destination's writer is made for: messages (key, value).
MESSAGE_LAYOUT = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])


@dataclass(frozen=True)
class KafkaParts:
    """Reads a ``cdc-kafka-ranges`` row: the messages of its range."""

    settings: SourceSettings
    plan_source: str = RANGES

    def read(
        self, row: dict[str, Any], checks: ValueChecks | None = None
    ) -> Iterator[pa.RecordBatch | CodecError]:
        return read_range(self.settings, _range(row))

    def messages(self, row: dict[str, Any]) -> Generator[list[KafkaMessage], None, None]:
        """The messages of its range as librdkafka hands them over (a copy's)."""
        return read_messages(self.settings, _range(row))


def _range(row: dict[str, Any]) -> KafkaRange:
    return KafkaRange(row["topic"], row["partition"], row["start"], row["end"])


@dataclass(frozen=True)
class FileParts:
    """Reads a ``cdc-files-plan`` row: the messages of its file."""

    settings: files.Settings
    plan_source: str = FILES_PLAN
    #: The values of kv lines are left to the converter's columns, which check them
    #: (:func:`~cdc_connectors.columnar.choose.checks_values`).
    values_checked_later: bool = False

    def read(
        self, row: dict[str, Any], checks: ValueChecks | None = None
    ) -> Iterator[pa.RecordBatch | CodecError]:
        """The file's messages (``checks``: whether the values of its kv lines are checked
        before the columns, when the columns check them)."""
        return raw_batches(
            self.settings, row["file"], checks if self.values_checked_later else None
        )


class _KafkaTaskOut:
    """A task's Kafka producer, written batch by batch; a message larger than the producer
    takes is refused (its row and why), for the task to make a dead letter of."""

    def __init__(self, settings: DestinationSettings):
        topic = settings.topic
        self.template = TopicTemplate(topic) if topic is not None else None
        self.output = Output(settings, letters=True)

    def add(self, batch: pa.RecordBatch) -> list[tuple[int, str]]:
        return self._produce(message_rows(batch, self.template))

    def copy(self, messages: list[KafkaMessage]) -> list[tuple[int, str]]:
        """Produce ``messages`` of a Kafka source again, key, value and headers as they
        are: no columns made of them (a copy's tasks hand nothing to Spark)."""
        assert self.template is not None  # a copy writes to its fixed topic (in_task)
        out = Outgoing(
            self.template.text, [m.value() for m in messages], [m.key() for m in messages]
        )
        if any(m.headers() for m in messages):
            out.headers = [kafka_headers(m) or None for m in messages]
        return self._produce(out)

    def _produce(self, rows: Outgoing) -> list[tuple[int, str]]:
        self.output.refused = []
        self.output.produce(rows)
        self.output.serve()
        return self.output.refused

    def close(self) -> None:
        self.output.finish()

    def discard(self) -> None:
        self.output.abandon()


@dataclass(frozen=True)
class KafkaOut:
    """Writes to Kafka: a producer per task, every delivery report awaited."""

    settings: DestinationSettings

    def open(self) -> _KafkaTaskOut:
        return _KafkaTaskOut(self.settings)


@dataclass(frozen=True)
class FilesOut:
    """Writes a staged file per task with the ``cdc-files`` writer of the batch (its job
    commits them on the driver)."""

    writer: FilesWriter | None = None  # set for each batch by the runner

    def open(self) -> TaskFile:
        assert self.writer is not None
        return TaskFile(self.writer.settings, True, self.writer.job)


class _TableTaskOut:
    """A task's changes for a table, gathered as its messages come (OpenCDC JSON records);
    its commit message carries them to the batch's table transaction."""

    def __init__(self, settings: table.Settings):
        self.changes = TaskChanges(settings, records_layout=False)

    def add(self, batch: pa.RecordBatch) -> None:
        self.changes.add(batch)

    def close(self) -> TableCommitMessage:
        return self.changes.close()

    def discard(self) -> None:
        return None  # nothing was written


@dataclass(frozen=True)
class TableOut:
    """Gathers each task's changes for a ``cdc-table`` destination; the runner applies
    them in one transaction on the driver (:meth:`TableWriter.commit`)."""

    settings: table.Settings

    def open(self) -> _TableTaskOut:
        return _TableTaskOut(self.settings)


@dataclass(frozen=True)
class InTask:
    """What each task of an in-task pipeline needs (pickled to the executors)."""

    parts: KafkaParts | FileParts
    out: KafkaOut | FilesOut | TableOut
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
    """How ``pipeline`` runs in its tasks, or ``None`` when it keeps the staged way: a
    connector that is not Kafka or files, a pipeline that stops on dead letters (module
    docstring), a Kafka destination with no topic to write to (the staged way's writer then
    says so). ``read_with``/``write_with``: the settings the source is read and the
    destination written with; ``decode``: the format a fused Kafka stage decodes with
    (``None`` for a copy, and for other sources)."""
    dlq = pipeline.dead_letters
    if dlq.fail_fast or dlq.max_error_ratio is not None:
        return None
    source_name = pipeline.source.plugin.spark_name
    destination_name = pipeline.destination.plugin.spark_name
    try:
        parts: KafkaParts | FileParts
        if source_name == CONNECTOR:
            settings = source_settings(read_with)
            if settings.typed or (decode is None and (not settings.raw or route is not None)):
                return None
            parts = KafkaParts(settings)
        elif source_name == files.NAME:
            read = files.Settings.parse(read_with)
            if read.typed or read.fail_fast:
                return None
            decode = SourceFormat(read.open_format(), files.NODE_ID, False)
            by_columns = route is None or getattr(route, "template", None) is not None
            parts = FileParts(
                read, values_checked_later=by_columns and checks_values(decode.fmt, fmt)
            )
        else:
            return None
        out: KafkaOut | FilesOut | TableOut
        if destination_name == CONNECTOR:
            destination = destination_settings(write_with)
            fixed = destination.topic is not None and TopicTemplate(destination.topic).fixed
            if not (fixed or route is not None):
                return None
            out = KafkaOut(destination)
        elif destination_name == files.NAME and route is None:
            out = FilesOut()
        elif destination_name == table.NAME and route is None:
            out = TableOut(table.Settings.parse(write_with).keyed())
        else:
            return None
    except ConfigError:  # refused where the staged way refuses it, with its place
        return None
    if decode is not None and decode.fail_fast:
        return None
    columns = pipeline.destination.plugin.message_columns
    node_id = f"{pipeline.id}:{pipeline.destination.id}"
    return InTask(parts, out, fmt, node_id, decode, route, columns)


def planned_rows(plan: InTask, read_with: Mapping[str, str]) -> list[dict[str, Any]]:
    """A batch's plan rows, planned here on the driver: the rows the plan source
    (``cdc-kafka-ranges``, ``cdc-files-plan``) would give Spark, without the processes
    Spark starts to plan and read a Python data source (a planner process per step, a
    Python worker per task beside the one of :func:`tasks`)."""
    kind = KafkaRangesDataSource if isinstance(plan.parts, KafkaParts) else FilesPlanDataSource
    source = kind(dict(read_with))
    reader = source.reader(source.schema())
    rows: list[dict[str, Any]] = []
    for part in reader.partitions():
        for batch in reader.read(part):
            assert isinstance(batch, pa.RecordBatch)  # the plan readers give Arrow batches
            rows.extend(batch.to_pylist())
    return rows


def tasks(
    plan: InTask, rows: Sequence[dict[str, Any]] | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function over plan rows (module docstring); with ``rows``
    (:func:`planned_rows`), over the numbers of the rows to run instead (``spark.range``:
    one task each)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_heap.settle()
        for batch in batches:
            if rows is None:
                found = batch.to_pylist()
            else:
                found = [rows[number] for number in batch.column(0).to_pylist()]
            for row in found:
                yield from guarded(_one_part(plan, row))

    return run


def _one_part(plan: InTask, row: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    out = plan.out.open()
    counts = [0, 0]  # messages written from columns, and the per-message way
    letters = {SOURCE_LETTER: 0, ENCODE_LETTER: 0}
    try:
        if plan.decode is None and isinstance(out, _KafkaTaskOut):
            assert isinstance(plan.parts, KafkaParts)  # a copy reads Kafka (in_task)
            with closing(plan.parts.messages(row)) as fetches:  # (its consumer closed now)
                for fetched in fetches:
                    refused = out.copy(fetched)
                    counts[0] += len(fetched) - len(refused)
                    if refused:
                        letters[ENCODE_LETTER] += len(refused)
                        yield _copy_letters(fetched, refused, plan.node_id)
        elif plan.decode is None:
            for batch in plan.parts.read(row):
                assert isinstance(batch, pa.RecordBatch)  # Kafka reads raise, not yield, errors
                out.add(batch.select([c for c in plan.columns if c in batch.schema.names]))
                counts[0] += batch.num_rows
        else:
            for staged in _converted(plan, plan.decode, row, out, counts):
                kind = letter_kind(staged)
                if kind is not None:
                    letters[kind] += staged.num_rows
                yield staged
        commit = out.close()
    except BaseException:
        out.discard()
        raise
    done = pickle.dumps(commit) if commit is not None else None
    yield written_batch(counts[0], counts[1], done)
    yield tally_batch(letters[SOURCE_LETTER], letters[ENCODE_LETTER])


def _converted(
    plan: InTask, decode: SourceFormat, row: dict[str, Any], out: Any, counts: list[int]
) -> Iterator[pa.RecordBatch]:
    """Convert the part's messages and write them; yield its dead letters."""
    broken: list[CodecError] = []
    checks = _value_checks(plan.node_id)

    keeps_originals = isinstance(out, _TableTaskOut)

    def messages() -> Iterator[pa.RecordBatch]:
        for item in plan.parts.read(row, checks):
            if isinstance(item, CodecError):
                broken.append(item)  # bytes that are no message: a dead letter as they are
            else:
                if keeps_originals:  # a record the table refuses: a dead letter of these
                    out.changes.original(places_of(item), _column(item, "key"), item["value"])
                yield item

    convert = converter(decode, plan.fmt, plan.node_id, plan.route, checks)
    for staged in convert(messages()):
        if broken:
            letters = letters_batch(_unsplit(broken, decode.node_id))
            broken.clear()
            if letter_kind(staged) == SOURCE_LETTER:  # the same lines' other dead letters
                staged = _in_line_order(pa.concat_batches([letters, staged]))
            else:
                yield letters
        if not is_messages(staged):
            yield staged  # dead letters, and the count of messages without a change
            continue
        refused = out.add(message_layout(staged)) or []
        slow = per_message_rows(staged)
        counts[1] += slow
        counts[0] += staged.num_rows - slow
        if refused:  # larger than the producer takes: dead letters of what was not written
            rows = pa.array([row for row, _ in refused], pa.int64())
            slow_refused = per_message_rows(staged.take(rows))
            counts[1] -= slow_refused
            counts[0] -= len(refused) - slow_refused
            yield unwritten_letters(staged, refused, plan.node_id)
    if broken:
        yield letters_batch(_unsplit(broken, decode.node_id))


def _copy_letters(
    messages: list[KafkaMessage], refused: list[tuple[int, str]], node_id: str
) -> pa.RecordBatch:
    """Dead letters of the messages of a copy the destination refused: each message's
    bytes, placed at its topic, partition and offset."""
    letters = []
    for row, reason in refused:
        m = messages[row]
        where = f"{m.topic()}/{m.partition()}/{m.offset()}"
        letters.append(
            dead_letter(Message(m.value(), m.key(), kafka_headers(m), where=where), reason, node_id)
        )
    return encode_letters_batch(letters)


def _column(batch: pa.RecordBatch, name: str) -> pa.Array | None:
    return batch.column(name) if name in batch.schema.names else None


def _in_line_order(letters: pa.RecordBatch) -> pa.RecordBatch:
    """Dead letters of a file's lines (placed ``FILE:LINE``) in the order of their lines:
    those of lines that are no kv line and those of lines read again
    (:func:`~cdc_connectors.pipeline.plan.converter`) come apart."""
    places = letters.column("position").to_pylist()
    lines = [_line_number(place) for place in places]
    order = sorted(range(len(lines)), key=lines.__getitem__)
    return letters.take(pa.array(order, pa.int64()))


def _line_number(place: bytes | None) -> int:
    number = (place or b"").rpartition(b":")[2]
    return int(number) if number.isdigit() else -1


#: Each pipeline's value checks in this worker process (:class:`ValueChecks`): shared by
#: the files its tasks read, so that a value that is no JSON value met in one has the next
#: chunks checked, in that file or the next.
_CHECKS: dict[str, ValueChecks] = {}


def _value_checks(node_id: str) -> ValueChecks:
    found = _CHECKS.get(node_id)
    if found is None:
        found = _CHECKS[node_id] = ValueChecks(allowed=True)
    return found


def _unsplit(errors: list[CodecError], node_id: str) -> list[Record]:
    return [
        dead_letter(Message(error.data, where=error.where or ""), error.reason, node_id)
        for error in errors
    ]
