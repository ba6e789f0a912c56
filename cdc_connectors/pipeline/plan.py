"""The Spark job of one pipeline, for one (micro-)batch of source rows.

```
source rows (OpenCDC layout)
  -> mapInArrow: dead-letter rows (metadata has conduit.dlq.nack.error) split off;
                 the rest encoded for the destination (messages.encode_rows); a record
                 the destination format cannot encode (or whose topic template has no
                 value) becomes a dead-letter row
  -> persisted once, counted, then
       kind 0: message layout (key, value[, headers, topic]) -> destination writer, as is
       kind 1, 2: OpenCDC layout                     -> dead-letter writer
```

A dead-letter row's ``operation`` is ``dead-letter`` in the stage as in the source's rows;
:meth:`Stage.letters` gives it as Conduit's DLQ writes it (``create``), which the
dead-letter output's writer takes.

A source that yields a message layout (Kafka with ``format: raw``) is copied as is, read once
and counted in passing as it is written (an ``Observation``), never persisted. A Kafka
source with a format is read as raw messages and the stage decodes and encodes them in one
pass (:func:`converter`): the records never take the OpenCDC Arrow layout in between, whose
``VARIANT`` images cost most of the time of a conversion. Each batch is read from the source
once: the stage's output is persisted before the counts and both writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import SparkContext, StorageLevel
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from cdc_connectors.columnar.choose import columns_for
from cdc_connectors.columnar.debezium_opencdc import Columnar
from cdc_connectors.connectors.errors import ConnectorError
from cdc_connectors.connectors.messages import (
    DLQ_ERROR,
    FailFastError,
    encode_rows,
    is_dead_letter,
)
from cdc_connectors.convert.deadletter import dead_letter
from cdc_connectors.convert.kv_columns import UNCHECKED, ValueChecks, compact_line, reread
from cdc_connectors.formats.base import Format, Message, SkipMessage
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.json_codec import record_to_json
from cdc_connectors.spark.arrow import records_from_batch, records_to_batch
from cdc_connectors.spark.deadletters import as_conduit_writes
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA, OPENCDC_SCHEMA

__all__ = [
    "Counts",
    "Sizes",
    "SourceFormat",
    "Stage",
    "converter",
    "encoder",
    "is_messages",
    "letter_bytes",
    "letters_batch",
    "message_bytes",
    "message_layout",
    "per_message_rows",
    "places_of",
    "written_batch",
]

#: Row kinds of the stage's output; WRITTEN: how many messages a task wrote itself (COUNT);
#: SKIPPED: how many messages carried no change (tombstones, heartbeats: COUNT).
MESSAGE, SOURCE_LETTER, ENCODE_LETTER, WRITTEN, SKIPPED, TALLY = 0, 1, 2, 3, 4, 5
KIND = "_kind"
COUNT = "_count"
_MESSAGE_KEY, _MESSAGE_VALUE, _MESSAGE_HEADERS = "_message_key", "_message_value", "_headers"
_TOPIC = "_topic"
#: Whether a stage row came the per-message way (every dead letter does), not from columns.
_PER_MESSAGE = "_per_message"
#: A record -> the topic of its message (a destination's topic template); ValueError if none.
Route = Callable[[Record], str]
HEADERS = ArrayType(
    StructType([StructField("key", StringType(), False), StructField("value", BinaryType())]),
    containsNull=False,
)
STAGE_SCHEMA = StructType(
    [
        StructField(KIND, IntegerType(), False),
        StructField(_MESSAGE_KEY, BinaryType()),
        StructField(_MESSAGE_VALUE, BinaryType()),
        StructField(_MESSAGE_HEADERS, HEADERS),
        StructField(_TOPIC, StringType()),
        StructField(_PER_MESSAGE, BooleanType(), False),
        StructField(COUNT, LongType()),
        *OPENCDC_SCHEMA.fields,
    ]
)
_HEADERS_ARROW = pa.list_(
    pa.field(
        "element",
        pa.struct([pa.field("key", pa.string(), False), pa.field("value", pa.binary())]),
        False,
    )
)
STAGE_ARROW_SCHEMA = pa.schema(
    [
        pa.field(KIND, pa.int32(), False),
        pa.field(_MESSAGE_KEY, pa.binary()),
        pa.field(_MESSAGE_VALUE, pa.binary()),
        pa.field(_MESSAGE_HEADERS, _HEADERS_ARROW),
        pa.field(_TOPIC, pa.string()),
        pa.field(_PER_MESSAGE, pa.bool_(), False),
        pa.field(COUNT, pa.int64()),
        *OPENCDC_ARROW_SCHEMA,
    ]
)
_OPENCDC_COLUMNS = OPENCDC_SCHEMA.fieldNames()


def _placeholders(rows: int, places: pa.Array | None = None) -> list[pa.Array]:
    """OpenCDC columns for message rows (the layout's columns are not null): the place of
    the message each came from as its position (``places``; none for other rows), which
    a message the destination refuses is a dead letter of (:func:`unwritten_letters`)."""
    fields = list(OPENCDC_ARROW_SCHEMA)
    return [
        pa.array([b""] * rows, fields[0].type) if places is None else places.cast(fields[0].type),
        pa.array(["create"] * rows, fields[1].type),
        pa.array([[]] * rows, fields[2].type),
        pa.nulls(rows, fields[3].type),
        pa.nulls(rows, fields[4].type),
    ]


def _messages_batch(
    messages: list[Message],
    topics: list[str] | None,
    per_message: bool = True,
    places: pa.Array | None = None,
) -> pa.RecordBatch:
    rows = len(messages)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([MESSAGE] * rows, pa.int32()),
            pa.array([m.key for m in messages], pa.binary()),
            pa.array([m.value for m in messages], pa.binary()),
            pa.array(
                [[{"key": k, "value": v} for k, v in m.headers] for m in messages],
                _HEADERS_ARROW,
            ),
            pa.array(topics, pa.string()) if topics is not None else pa.nulls(rows, pa.string()),
            pa.array([per_message] * rows, pa.bool_()),
            pa.nulls(rows, pa.int64()),
            *_placeholders(rows, places),
        ],
        schema=STAGE_ARROW_SCHEMA,
    )


def unwritten_letters(
    staged: pa.RecordBatch, refused: list[tuple[int, str]], node_id: str
) -> pa.RecordBatch:
    """Dead letters (of the destination's kind) of the message rows of ``staged`` a
    destination refused (each row and why): the message's key and bytes, placed where the
    message it was made of came from."""
    layout = message_layout(staged)
    keys, values = layout.column("key"), layout.column("value")
    positions = staged.column(_OPENCDC_COLUMNS[0])
    letters = [
        dead_letter(
            Message(
                values[row].as_py(),
                keys[row].as_py(),
                where=(positions[row].as_py() or b"").decode("utf-8", "backslashreplace"),
            ),
            reason,
            node_id,
        )
        for row, reason in refused
    ]
    return encode_letters_batch(letters)


def _count_rows(
    kind: int, counts: list[int], per_message: list[bool], values: list[bytes | None]
) -> pa.RecordBatch:
    """Rows of ``kind`` that carry a count (``COUNT``) instead of a message."""
    rows = len(counts)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([kind] * rows, pa.int32()),
            pa.nulls(rows, pa.binary()),
            pa.array(values, pa.binary()),
            pa.nulls(rows, _HEADERS_ARROW),
            pa.nulls(rows, pa.string()),
            pa.array(per_message, pa.bool_()),
            pa.array(counts, pa.int64()),
            *_placeholders(rows),
        ],
        schema=STAGE_ARROW_SCHEMA,
    )


def written_batch(from_columns: int, per_message: int, commit: bytes | None) -> pa.RecordBatch:
    """Two ``WRITTEN`` rows: how many messages a task wrote itself, from columns and the
    per-message way; the first carries ``commit``, what the task's writer gives its job to
    commit (pickled), as its value."""
    return _count_rows(WRITTEN, [from_columns, per_message], [False, True], [commit, None])


def tally_batch(source_letters: int, encode_letters: int) -> pa.RecordBatch:
    """Two ``TALLY`` rows: how many dead letters of the source, and of the destination's
    format, a task gave (the second marked ``_per_message``), so that an in-task stage is
    counted without an aggregation (:meth:`Stage.count`)."""
    return _count_rows(TALLY, [source_letters, encode_letters], [False, True], [None, None])


def letter_kind(batch: pa.RecordBatch) -> int | None:
    """``SOURCE_LETTER`` or ``ENCODE_LETTER`` for a stage batch of dead letters, else None."""
    if not batch.num_rows:
        return None
    kind = batch.column(KIND)[0].as_py()
    return kind if kind in (SOURCE_LETTER, ENCODE_LETTER) else None


def skipped_batch(count: int) -> pa.RecordBatch:
    """One ``SKIPPED`` row: how many messages of a batch carried no change."""
    return _count_rows(SKIPPED, [count], [False], [None])


def is_messages(batch: pa.RecordBatch) -> bool:
    """Whether a stage batch holds messages (a stage batch holds rows of one kind)."""
    return bool(batch.num_rows) and batch.column(KIND)[0].as_py() == MESSAGE


def per_message_rows(batch: pa.RecordBatch) -> int:
    """How many rows of a stage batch came the per-message way."""
    return int(pc.sum(batch.column(_PER_MESSAGE)).as_py() or 0)


def message_layout(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A stage batch of messages in the message layout: ``key, value, headers`` and, when
    the pipeline routes records to topics, ``topic``."""
    names = ["key", "value", "headers"]
    columns = [batch.column(c) for c in (_MESSAGE_KEY, _MESSAGE_VALUE, _MESSAGE_HEADERS)]
    topics = batch.column(_TOPIC)
    if topics.null_count < batch.num_rows:
        names.append("topic")
        columns.append(topics)
    return pa.RecordBatch.from_arrays(columns, names=names)


def letters_batch(letters: list[Record]) -> pa.RecordBatch:
    """Dead letters of a source, as stage rows."""
    return _letters_batch(records_to_batch(letters), SOURCE_LETTER)


def encode_letters_batch(letters: list[Record]) -> pa.RecordBatch:
    """Dead letters of the destination (its format, or its writer), as stage rows."""
    return _letters_batch(records_to_batch(letters), ENCODE_LETTER)


def _letters_batch(letters: pa.RecordBatch, kind: int) -> pa.RecordBatch:
    """Dead-letter rows with the stage's columns; the rows are rebuilt because Spark's Arrow
    types are nullable where the OpenCDC layout's are not (few rows: dead letters)."""
    rows = letters.num_rows
    opencdc = records_to_batch(records_from_batch(letters))
    return pa.RecordBatch.from_arrays(
        [
            pa.array([kind] * rows, pa.int32()),
            pa.nulls(rows, pa.binary()),
            pa.nulls(rows, pa.binary()),
            pa.nulls(rows, _HEADERS_ARROW),
            pa.nulls(rows, pa.string()),
            pa.array([True] * rows, pa.bool_()),
            pa.nulls(rows, pa.int64()),
            *opencdc.columns,
        ],
        schema=STAGE_ARROW_SCHEMA,
    )


def _encode_one(
    fmt: Format,
    record: Record,
    route: Route | None,
    node_id: str,
    where: str,
    source: Message | None = None,
) -> tuple[Message, str | None] | Record:
    """The message of ``record`` and its topic (``route``'s), or its dead letter when the
    destination cannot encode it or route it: the record as OpenCDC JSON, or the
    ``source`` message it was read from when the record has no JSON form (a NaN)."""
    try:
        topic = route(record) if route is not None else None
        return fmt.encode(record), topic
    except (CodecError, ValueError, ConnectorError) as exc:
        reason = exc.reason if isinstance(exc, CodecError) else str(exc)
        try:
            letter = Message(record_to_json(record), where=where)
        except CodecError:
            if source is None:
                raise
            letter = Message(source.value, source.key, where=where)
        return dead_letter(letter, reason, node_id)


def _routed(
    fmt: Format, batch: pa.RecordBatch, route: Route, node_id: str
) -> tuple[list[Message], list[str], list[Record]]:
    """As :func:`encode_rows`, with each message's topic; a record without one is a dead
    letter too."""
    messages: list[Message] = []
    topics: list[str] = []
    letters: list[Record] = []
    for record in records_from_batch(batch):
        where = record.position.decode("utf-8", "backslashreplace")
        done = _encode_one(fmt, record, route, node_id, where)
        if isinstance(done, Record):
            letters.append(done)
            continue
        messages.append(done[0])
        topics.append(str(done[1]))
    return messages, topics, letters


def encoder(
    fmt: Format, node_id: str, route: Route | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function of the stage (module docstring); runs on the executors."""

    def encode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if not batch.num_rows:
                continue
            dead = is_dead_letter(batch)
            if pc.any(dead).as_py():
                letters = batch.filter(dead)
                good = batch.filter(pc.invert(dead))
                yield _letters_batch(letters, SOURCE_LETTER)
            else:
                good = batch
            topics: list[str] | None = None
            if route is None:
                messages, failed = encode_rows(fmt, good, node_id=node_id)
            else:
                messages, topics, failed = _routed(fmt, good, route, node_id)
            if messages:
                yield _messages_batch(messages, topics, per_message=False)
            if failed:
                yield _letters_batch(records_to_batch(failed), ENCODE_LETTER)

    return encode


@dataclass(frozen=True)
class SourceFormat:
    """How a fused stage decodes the raw messages of its source."""

    fmt: Format
    node_id: str
    fail_fast: bool


def _raw_messages(batch: pa.RecordBatch) -> list[Message]:
    """Messages of a batch of raw messages, each placed: ``topic/partition/offset`` in
    Spark's Kafka layout, its ``place`` column in a file's (``file:line``)."""
    names = batch.schema.names
    rows = batch.num_rows
    places = places_of(batch).to_pylist()
    headers = batch.column("headers").to_pylist() if "headers" in names else [None] * rows
    return [
        Message(
            value,
            key,
            [(h["key"], h["value"]) for h in pairs or ()],
            where=place.decode("utf-8", "backslashreplace"),
        )
        for key, value, place, pairs in zip(
            batch.column("key").to_pylist(),
            batch.column("value").to_pylist(),
            places,
            headers,
            strict=True,
        )
    ]


def _reread(
    rows: np.ndarray, messages: list[Message], source: SourceFormat, checks: ValueChecks | None
) -> tuple[np.ndarray, list[Message], list[Record]]:
    """The messages of ``rows`` of kv lines whose values were not checked, read again from
    their lines (:func:`~cdc_connectors.convert.kv_columns.reread`): those still messages,
    and the dead letters of the lines that are no kv line, as reading the file makes them."""
    kept: list[int] = []
    found: list[Message] = []
    letters: list[Record] = []
    for at, message in enumerate(messages):
        try:
            value, key = reread(message.key, message.value, checks)
        except CodecError as exc:  # as in_task's dead letters of a file's bad lines
            error = exc.at(message.where, compact_line(message.key, message.value))
            letter = Message(error.data, where=error.where or "")
            letters.append(dead_letter(letter, error.reason, source.node_id))
            continue
        kept.append(at)
        found.append(Message(value, key, message.headers, where=message.where))
    return rows[np.asarray(kept, dtype=np.int64)], found, letters


def places_of(batch: pa.RecordBatch) -> pa.Array:
    """The place of each message of a batch of raw messages, as bytes (:func:`_raw_messages`)."""
    if "place" in batch.schema.names:
        return batch.column("place").cast(pa.binary())
    return pc.binary_join_element_wise(
        batch.column("topic"),
        batch.column("partition").cast(pa.string()),
        batch.column("offset").cast(pa.string()),
        "/",
    ).cast(pa.binary())


@dataclass
class _Converted:
    """What the per-message way made of some messages: messages (with the index of the
    message each came from), their topics, and dead letters."""

    out: list[Message]
    owners: list[int]
    topics: list[str] | None
    source_letters: list[Record]
    encode_letters: list[Record]
    skipped: int = 0  # messages without a change (tombstones, heartbeats)


def _per_message(
    source: SourceFormat,
    fmt: Format,
    node_id: str,
    route: Route | None,
    messages: list[Message],
) -> _Converted:
    """Messages decoded with the source's format and encoded with the destination's one by
    one; a message that does not decode and a record that does not encode are dead letters."""
    done = _Converted([], [], [] if route is not None else None, [], [])
    for index, found in source.fmt.decode_many(messages):
        message = messages[index]
        if isinstance(found, SkipMessage):
            done.skipped += 1
            continue
        if isinstance(found, CodecError):
            if source.fail_fast:
                raise FailFastError(f"{message.where}: {found.reason}")
            done.source_letters.append(dead_letter(message, found.reason, source.node_id))
            continue
        where = message.where.encode("utf-8")
        for record in found:
            if not record.position:
                record.position = where
            encoded = _encode_one(fmt, record, route, node_id, message.where, message)
            if isinstance(encoded, Record):
                done.encode_letters.append(encoded)
                continue
            done.out.append(encoded[0])
            done.owners.append(index)
            if done.topics is not None and encoded[1] is not None:
                done.topics.append(encoded[1])
    return done


def _merged_messages(
    columnar: Columnar, done: _Converted, slow: np.ndarray, places: pa.Array
) -> pa.RecordBatch:
    """The messages written from columns and those of the per-message way, in the order of
    the messages they came from (whose ``places`` they carry)."""
    fast = len(columnar.rows)
    rows = fast + len(done.out)
    if not done.out and bool((np.diff(columnar.rows) > 0).all()):
        return _in_order(columnar, rows, places)  # the columns wrote every message, in order
    owners = np.concatenate([columnar.rows, slow[np.asarray(done.owners, dtype=np.int64)]])
    sorting = np.argsort(owners, kind="stable")
    order = pa.array(sorting)
    keys = pa.concat_arrays([columnar.keys, pa.array([m.key for m in done.out], pa.binary())])
    values = pa.concat_arrays([columnar.values, pa.array([m.value for m in done.out], pa.binary())])
    headers = pa.concat_arrays(
        [
            pa.ListArray.from_arrays(
                pa.array(np.zeros(fast + 1, dtype=np.int32)),
                pa.array([], _HEADERS_ARROW.value_type),
                type=_HEADERS_ARROW,
            ),
            pa.array(
                [[{"key": k, "value": v} for k, v in m.headers] for m in done.out],
                _HEADERS_ARROW,
            ),
        ]
    )
    per_message = np.concatenate([np.zeros(fast, dtype=bool), np.ones(len(done.out), dtype=bool)])
    topics = (
        pa.nulls(rows, pa.string())
        if columnar.topics is None
        else pa.concat_arrays([columnar.topics, pa.array(done.topics or [], pa.string())]).take(
            order
        )
    )
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(rows, MESSAGE, dtype=np.int32)),
            keys.take(order),
            values.take(order),
            headers.take(order),
            topics,
            pa.array(per_message).take(order),
            pa.nulls(rows, pa.int64()),
            *_placeholders(rows, places.take(pa.array(owners[sorting]))),
        ],
        schema=STAGE_ARROW_SCHEMA,
    )


def _in_order(columnar: Columnar, rows: int, places: pa.Array) -> pa.RecordBatch:
    """:func:`_merged_messages` of messages the columns all wrote in order: their columns
    as they are (no copy of the messages)."""
    if rows < len(places):
        places = places.take(pa.array(columnar.rows))
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(rows, MESSAGE, dtype=np.int32)),
            columnar.keys,
            columnar.values,
            pa.ListArray.from_arrays(
                pa.array(np.zeros(rows + 1, dtype=np.int32)),
                pa.array([], _HEADERS_ARROW.value_type),
                type=_HEADERS_ARROW,
            ),
            pa.nulls(rows, pa.string()) if columnar.topics is None else columnar.topics,
            pa.array(np.zeros(rows, dtype=bool)),
            pa.nulls(rows, pa.int64()),
            *_placeholders(rows, places),
        ],
        schema=STAGE_ARROW_SCHEMA,
    )


def converter(
    source: SourceFormat,
    fmt: Format,
    node_id: str,
    route: Route | None = None,
    checks: ValueChecks | None = None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function of a fused stage: raw source messages decoded with the
    source's format and encoded with the destination's, in one pass; a message that does
    not decode and a record that does not encode are dead letters, as in the two-step way.

    The formats the columns serve to OpenCDC protobuf or JSON, with or without a topic
    template, are written from columns
    (:func:`~cdc_connectors.columnar.choose.columns_for`): only the messages the columns
    cannot take exactly go the per-message way, in the same output order (kv lines whose
    values were left unchecked read again whole, and ``checks`` told of a bad value)."""
    columns = None
    template = getattr(route, "template", None)  # a TopicRoute's, rendered from columns too
    if route is None or template is not None:
        columns = columns_for(source.fmt, fmt, None if template is None else template.parts)

    def convert(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if not batch.num_rows:
                continue
            places = places_of(batch)
            if columns is None:
                done = _per_message(source, fmt, node_id, route, _raw_messages(batch))
                messages = None
                if done.out:
                    owners = pa.array(np.asarray(done.owners, dtype=np.int64))
                    messages = _messages_batch(done.out, done.topics, places=places.take(owners))
            else:
                keys = batch.column("key")
                found = columns.convert(
                    batch.column("value"),
                    keys if keys.null_count < len(keys) else None,
                    places,
                    batch.column("headers") if "headers" in batch.schema.names else None,
                )
                rest = np.ones(batch.num_rows, dtype=bool)
                rest[found.rows] = False
                slow = np.flatnonzero(rest)
                messages_of_rest = _raw_messages(batch.take(pa.array(slow))) if len(slow) else []
                unread: list[Record] = []
                if batch.schema.metadata == UNCHECKED:  # kv lines, read again whole
                    slow, messages_of_rest, unread = _reread(slow, messages_of_rest, source, checks)
                done = _per_message(source, fmt, node_id, route, messages_of_rest)
                done.source_letters[:0] = unread
                messages = (
                    _merged_messages(found, done, slow, places)
                    if len(found.rows) or done.out
                    else None
                )
            if done.source_letters:
                yield _letters_batch(records_to_batch(done.source_letters), SOURCE_LETTER)
            if messages is not None:
                yield messages
            if done.encode_letters:
                yield _letters_batch(records_to_batch(done.encode_letters), ENCODE_LETTER)
            if done.skipped:
                yield skipped_batch(done.skipped)

    return convert


@dataclass
class Counts:
    """What one batch did."""

    records: int = 0  # rows the source gave
    written: int = 0  # messages to the destination
    source_letters: int = 0  # dead-letter rows of the source
    encode_letters: int = 0  # records the destination format could not encode
    #: Stage rows (messages and dead letters) of a fused stage that came the per-message
    #: way, not from columns; ``None`` for other stages.
    per_message: int | None = None
    skipped: int = 0  # messages of a fused stage without a change (tombstones, heartbeats)

    @property
    def letters(self) -> int:
        return self.source_letters + self.encode_letters

    def add(self, other: Counts) -> None:
        self.records += other.records
        self.written += other.written
        self.source_letters += other.source_letters
        self.encode_letters += other.encode_letters
        self.skipped += other.skipped
        if other.per_message is not None:
            self.per_message = (self.per_message or 0) + other.per_message


def _length(column: Column) -> Column:
    """Bytes of a binary or text column; 0 for null."""
    return F.coalesce(F.octet_length(column), F.lit(0)).cast("long")


def _sum_of(items: Column, size: Callable[[Column], Column]) -> Column:
    """The sum of ``size`` over the items of an array (0 for null or empty)."""
    total = F.aggregate(items, F.lit(0).cast("long"), lambda acc, item: acc + size(item))
    return F.coalesce(total, F.lit(0).cast("long"))


def _data_bytes(data: Column) -> Column:
    """Bytes of an OpenCDC data struct: its raw bytes, or its structured value as JSON."""
    return _length(data["raw_data"]) + _length(F.to_json(data["structured_data"]))


def _header_bytes(header: Column) -> Column:
    return _length(header["key"]) + _length(header["value"])


def message_bytes() -> Column:
    """About the bytes a stage row's message takes (key, value, headers and topic)."""
    return (
        _length(F.col(_MESSAGE_KEY))
        + _length(F.col(_MESSAGE_VALUE))
        + _sum_of(F.col(_MESSAGE_HEADERS), _header_bytes)
        + _length(F.col(_TOPIC))
    )


def letter_bytes() -> Column:
    """About the bytes a stage row's dead letter takes: its position, metadata, key and
    images (a structured value counted as its JSON text)."""
    metadata = F.col("metadata")
    return (
        _length(F.col("position"))
        + _sum_of(F.map_keys(metadata), _length)
        + _sum_of(F.map_values(metadata), _length)
        + _data_bytes(F.col("key"))
        + _data_bytes(F.col("payload")["before"])
        + _data_bytes(F.col("payload")["after"])
    )


def _count_columns() -> list[Column]:
    """What :meth:`Stage.count` aggregates over a staged batch."""
    return _built_once("count", _counting)


def _letter_sizes() -> list[Column]:
    """The bytes of a stage's dead letters, as one aggregate."""
    return _built_once("letters", lambda: [_letters_size().alias("lb")])


_TALLY_COLUMNS = (KIND, COUNT, _PER_MESSAGE, _MESSAGE_VALUE)
_BUILT: dict[str, tuple[object, list[Column]]] = {}


def _built_once(name: str, build: Callable[[], list[Column]]) -> list[Column]:
    """Columns built once a process (and again for another JVM): each function of an
    expression is a call into the JVM, and building a batch's took a sixth of a second."""
    gateway = SparkContext._gateway
    found = _BUILT.get(name)
    if found is None or found[0] is not gateway:
        found = _BUILT[name] = (gateway, build())
    return found[1]


def _letters_size() -> Column:
    letter = F.col(KIND).isin(SOURCE_LETTER, ENCODE_LETTER)
    return F.coalesce(F.sum(F.when(letter, letter_bytes())), F.lit(0).cast("long"))


def _counting() -> list[Column]:
    kind = F.col(KIND)
    written, per_message = kind == WRITTEN, F.col(_PER_MESSAGE)
    no_bytes = F.lit(0).cast("long")
    return [
        F.coalesce(F.sum(F.when(kind == MESSAGE, message_bytes())), no_bytes).alias("mb"),
        _letters_size().alias("lb"),
        F.count(F.when(kind == MESSAGE, 1)).alias("messages"),
        F.coalesce(F.sum(F.when(written, F.col(COUNT))), F.lit(0)).alias("produced"),
        F.count(F.when(kind == SOURCE_LETTER, 1)).alias("source"),
        F.count(F.when(kind == ENCODE_LETTER, 1)).alias("encode"),
        F.coalesce(F.sum(F.when(kind == SKIPPED, F.col(COUNT))), F.lit(0)).alias("skipped"),
        (
            F.count(F.when(per_message & ~written, 1))
            + F.coalesce(F.sum(F.when(per_message & written, F.col(COUNT))), F.lit(0))
        ).alias("per_message"),
    ]


@dataclass(frozen=True)
class Sizes:
    """About how many bytes a batch's messages and its dead letters take (rows of the
    stage; a copy's rows are not sized)."""

    messages: int = 0
    letters: int = 0


class Stage:
    """One batch of source rows, staged: counted once, then split to the two writers."""

    def __init__(
        self,
        rows: DataFrame,
        fmt: Format,
        node_id: str,
        columns: tuple[str, ...],
        route: Route | None = None,
        source: SourceFormat | None = None,
        in_task: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]] | None = None,
    ):
        names = rows.schema.fieldNames()
        self.in_task = in_task is not None
        self._commits: list[bytes] = []
        #: The sizes of its messages and letters, once counted (:meth:`count`).
        self.sizes: Sizes | None = None
        self.copy = names != _OPENCDC_COLUMNS and source is None and in_task is None
        self.fused = source is not None
        if in_task is not None:  # tasks that read, convert and write: letters and counts
            self.frame = rows.mapInArrow(in_task, STAGE_SCHEMA)
        elif source is not None:  # raw messages, decoded and encoded in one pass
            self.frame = rows.mapInArrow(converter(source, fmt, node_id, route), STAGE_SCHEMA)
        elif self.copy:  # a message layout (Kafka raw): written as is
            if "value" not in names:
                raise ValueError(
                    f"the source gives columns {', '.join(names)}: neither the OpenCDC "
                    "layout nor a message layout with a 'value' column"
                )
            # Counted in passing as the rows are written: read once, never persisted.
            self._copied = Observation()
            self.frame = rows.select(*[c for c in columns if c in names]).observe(
                self._copied, F.count(F.lit(1)).alias("rows")
            )
        else:
            self.frame = rows.mapInArrow(encoder(fmt, node_id, route), STAGE_SCHEMA)
        self.columns = (*columns, "topic") if route is not None else columns
        if not self.copy:
            self.frame = self.frame.persist(StorageLevel.MEMORY_AND_DISK)

    def count(self) -> Counts:
        """What the batch holds; a copy's rows are counted as they are written, so a copy
        is counted after :meth:`messages` was written (the runner's order). The sizes of
        its messages and dead letters come in the same job (:attr:`sizes`)."""
        if self.copy:
            total = int(self._copied.get["rows"])
            return Counts(records=total, written=total)
        if self.in_task:
            return self._count_in_task()
        row = self.frame.agg(*_count_columns()).first()
        assert row is not None
        self.sizes = Sizes(messages=int(row["mb"]), letters=int(row["lb"]))
        out = int(row["messages"]) + int(row["produced"])
        return Counts(
            records=out + int(row["source"]) + int(row["encode"]),
            written=out,
            source_letters=int(row["source"]),
            encode_letters=int(row["encode"]),
            per_message=int(row["per_message"]) if self.fused else None,
            skipped=int(row["skipped"]),
        )

    def _count_in_task(self) -> Counts:
        """An in-task stage's counts from the rows its tasks count in (``WRITTEN``,
        ``SKIPPED``, ``TALLY``): a narrow job, without the exchange an aggregation takes (a
        third of a small batch's time); the bytes of its dead letters, when it has any, in a
        second one."""
        kinds = [WRITTEN, SKIPPED, TALLY]
        rows = self.frame.where(F.col(KIND).isin(kinds)).select(*_TALLY_COLUMNS).collect()
        produced = skipped = source = encode = per_message = 0
        commits: list[bytes] = []
        for kind, count, slow, value in rows:
            if kind == WRITTEN:
                produced += count
                per_message += count if slow else 0
                if value is not None:
                    commits.append(bytes(value))
            elif kind == SKIPPED:
                skipped += count
            elif slow:
                encode += count
            else:
                source += count
        self._commits = commits
        letters = 0
        if source or encode:
            found = self.frame.agg(*_letter_sizes()).first()
            assert found is not None
            letters = int(found["lb"])
        self.sizes = Sizes(messages=0, letters=letters)
        return Counts(
            records=produced + source + encode,
            written=produced,
            source_letters=source,
            encode_letters=encode,
            per_message=per_message + source + encode if self.fused else None,
            skipped=skipped,
        )

    def commits(self) -> list[bytes]:
        """What the tasks of an in-task stage gave their writer's job to commit (read by
        :meth:`count`, which comes first)."""
        return self._commits

    def first_letter(self) -> tuple[str, str]:
        """Position and reason of one dead letter of the batch."""
        if self.copy:
            return "", ""
        row = (
            self.frame.where(F.col(KIND).isin(SOURCE_LETTER, ENCODE_LETTER))
            .select("position", F.col("metadata").getItem(DLQ_ERROR).alias("error"))
            .first()
        )
        if row is None:
            return "", ""
        position = bytes(row["position"]).decode("utf-8", "backslashreplace")
        return position, str(row["error"])

    def messages(self) -> DataFrame:
        """The destination's rows: the message layout."""
        if self.copy:
            return self.frame
        names = {
            "key": _MESSAGE_KEY,
            "value": _MESSAGE_VALUE,
            "headers": _MESSAGE_HEADERS,
            "topic": _TOPIC,
        }
        return self.frame.where(F.col(KIND) == MESSAGE).select(
            *[F.col(names[c]).alias(c) for c in self.columns if c in names]
        )

    def letters(self) -> DataFrame:
        """The dead-letter rows: the OpenCDC layout, as Conduit writes dead letters
        (operation ``create``, the reason in the metadata)."""
        columns = [
            as_conduit_writes(F.col(c)).alias(c) if c == "operation" else F.col(c)
            for c in _OPENCDC_COLUMNS
        ]
        return self.frame.where(F.col(KIND).isin(SOURCE_LETTER, ENCODE_LETTER)).select(*columns)

    def release(self) -> None:
        if not self.copy:
            self.frame.unpersist()
