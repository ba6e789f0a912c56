"""Writing to a table: tasks turn rows into changes, the job's commit applies them.

Each task reads its rows (the OpenCDC layout, or messages whose values are OpenCDC JSON
records, as a pipeline hands them over), makes them a batch of changes
(:class:`~cdc_connectors.table.records.ChangeBatch`), keeps of each key only the changes the
merge needs (:func:`~cdc_connectors.table.plan.needed`) and returns them, Arrow IPC in its
commit message, with the records it refused. The commit (on the driver) joins them and
applies them in one table transaction (:func:`~cdc_connectors.table.apply.apply_changes`),
then writes the refused records to the dead-letter directory: OpenCDC JSON lines, each with
``conduit.dlq.nack.error``, as every dead-letter output of this package. A task holds one
task's changes; the driver, the batch's changes after each task kept the last of a key.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pickle
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import StructType

from cdc_connectors.connectors.messages import SettingError
from cdc_connectors.connectors.table_settings import NAME, Settings
from cdc_connectors.connectors.table_types import RegisteredTypes
from cdc_connectors.convert.deadletter import dead_letter
from cdc_connectors.errors import CodecError, ConfigError
from cdc_connectors.formats.base import Message
from cdc_connectors.opencdc import Record, keys
from cdc_connectors.opencdc.json_codec import load_exact, record_from_json, record_to_json
from cdc_connectors.spark.arrow import records_from_batch
from cdc_connectors.table.apply import Applied, KeyColumnsError, apply_changes, row_schema
from cdc_connectors.table.evolve import BatchTypes
from cdc_connectors.table.plan import needed
from cdc_connectors.table.records import ChangeBatch, RecordParts, column_of
from cdc_connectors.table.store import Txn
from cdc_connectors.text import printable_bytes

__all__ = [
    "Committed",
    "TableCommitMessage",
    "TaskChanges",
    "commit_changes",
    "is_record_layout",
    "letter_reason",
    "task_commits",
    "write_task",
]

NODE_ID = NAME


@dataclass
class TableCommitMessage(WriterCommitMessage):
    """One task's changes (Arrow IPC) and dead letters (OpenCDC JSON lines)."""

    changes: bytes = b""
    key_columns: list[str] = field(default_factory=list)
    letters: list[bytes] = field(default_factory=list)
    records: int = 0
    others: int = 0  # records of other collections, left out
    offered: int = 0  # records made changes of, or refused as such
    keyless: int = 0  # of those, refused for lacking a key column
    unordered: int = 0  # of those, refused for lacking the metadata key orderBy names
    typed: bool = False  # whether a change had columns typed by a registered schema
    #: The columns' registered types the task's records gave (and any conflict of two).
    registered: BatchTypes = field(default_factory=BatchTypes)


def is_record_layout(schema: StructType) -> bool:
    """Rows of the OpenCDC layout (else messages with a ``value`` column)."""
    names = set(schema.fieldNames())
    return {"position", "operation", "payload"} <= names


_OPERATIONS = frozenset({"create", "update", "delete", "snapshot"})


def plain_parts(data: bytes) -> RecordParts | None:
    """The parts of an OpenCDC JSON record read without making a :class:`Record`: for one
    of the plain form the pipeline's encoder writes (a position, metadata of strings, an
    operation that is a change, structured or base64 data); ``None`` for anything else,
    which the record codec then reads (and names what is wrong with it)."""
    try:
        obj = load_exact(data)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    position, metadata, payload = obj.get("position"), obj.get("metadata"), obj.get("payload")
    operation = obj.get("operation")
    if type(position) is not str or type(metadata) is not dict or operation not in _OPERATIONS:
        return None
    if payload is None:
        payload = {}
    if type(payload) is not dict:
        return None
    try:
        # text values only, and no lone surrogates, as Metadata checks (join checks in C)
        "".join(metadata.values()).encode("utf-8")
        found = [
            _plain_data(obj.get("key")),
            *map(_plain_data, (payload.get("before"), payload.get("after"))),
        ]
        return RecordParts(operation, _b64(position), metadata, *found)
    except (ValueError, TypeError, UnicodeEncodeError):
        return None


def _b64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def _plain_data(value: Any) -> Any:
    if value is None or type(value) is dict:
        return value
    if type(value) is str:
        return _b64(value)
    raise ValueError("not data")


def _records(batch: pa.RecordBatch, records_layout: bool, letters: list[bytes]):  # type: ignore[no-untyped-def]
    """``(parts, origin)`` of a batch's records; a message that is no record becomes a dead
    letter."""
    if records_layout:
        for record in records_from_batch(batch):
            yield RecordParts.of(record), record
        return
    values = batch.column("value").to_pylist()
    places = batch.column("key").to_pylist() if "key" in batch.schema.names else None
    for index, value in enumerate(values):
        data = value.encode() if isinstance(value, str) else value
        parts = plain_parts(data) if data is not None else None
        if parts is not None:
            yield parts, data
            continue
        try:
            if data is None:
                raise CodecError("the message has no value")
            record = record_from_json(data)
            yield RecordParts.of(record), record
        except CodecError as exc:
            key = places[index] if places is not None else None
            message = Message(data, key, where=f"{NAME} row {index}")
            letters.append(record_to_json(dead_letter(message, str(exc), NODE_ID)))


#: Records a task turns into Arrow changes at once (then keeps only those the merge needs).
CHUNK = 20_000


class TaskChanges:
    """One task's changes, gathered batch by batch: every :data:`CHUNK` records become
    Arrow and only the changes the merge needs are kept, so a task holds about a chunk of
    records and the last change of each key it saw."""

    def __init__(self, settings: Settings, records_layout: bool):
        self.settings, self.records_layout = settings, records_layout
        self.types = RegisteredTypes(settings.registry) if settings.registry else None
        self.letters: list[bytes] = []
        self.kept: list[pa.Table] = []
        self.key_columns: list[str] | None = list(settings.key_columns) or None
        self.count = self.others = self.offered = self.keyless = self.unordered = 0
        self.typed = False
        self.registered = BatchTypes()
        #: The source messages the records came from (place, key, value), when given.
        self.originals: list[tuple[pa.Array, pa.Array | None, pa.Array]] = []
        self.held = _held_columns(settings)
        self._batch = self._new()

    def _new(self) -> ChangeBatch:
        given = bool(self.settings.key_columns)
        return ChangeBatch(
            self.key_columns, self.settings.order_by, self.types, given, held=self.held
        )

    def add(self, batch: pa.RecordBatch) -> None:
        collection = self.settings.collection
        for parts, origin in _records(batch, self.records_layout, self.letters):
            self.count += 1
            if keys.CONDUIT_DLQ_NACK_ERROR in parts.metadata:  # a dead letter already
                self.letters.append(_json(origin))
            elif collection and parts.metadata.get(keys.COLLECTION) != collection:
                self.others += 1  # another table's change: not this table's
            else:
                self.offered += 1
                self._batch.add_parts(parts, origin)
                if len(self._batch.rows) >= CHUNK:
                    self._flush()

    def original(self, places: pa.Array, message_keys: pa.Array | None, values: pa.Array) -> None:
        """Source messages the next records come from, each at its place (a record's
        position): a record refused is a dead letter of its message's bytes. Those of
        records gathered already are dropped when they become changes."""
        self.originals.append((places, message_keys, values))

    def _flush(self) -> None:
        batch, self._batch = self._batch, self._new()
        table = batch.table()
        self.keyless += batch.keyless
        self.unordered += batch.unordered
        self.typed = self.typed or bool(batch.typed)
        self.registered.update(batch.typed)
        sources = _by_place(self.originals) if batch.refused and self.originals else {}
        for refusal in batch.refused:
            where = printable_bytes(refusal.position)
            key, value = sources.get(refusal.position, (None, None))
            if value is not None:
                original = Message(value, key, where=where)
            else:
                original = Message(_json(refusal.origin), None, where=where)
            self.letters.append(record_to_json(dead_letter(original, refusal.reason, NODE_ID)))
        del self.originals[:-1]  # (the last one's records may not all be read yet)
        self.key_columns = self.key_columns or batch.key_columns
        if table.num_rows and self.key_columns:
            self.kept.append(self._needed(table))

    def _needed(self, table: pa.Table) -> pa.Table:
        assert self.key_columns
        mode, deletes = self.settings.mode, self.settings.deletes
        return needed(table, self.key_columns, mode, deletes)  # type: ignore[arg-type]

    def close(self) -> TableCommitMessage:
        """The task's commit message: its changes (Arrow IPC) and dead letters."""
        self._flush()
        sink = pa.BufferOutputStream()
        if self.kept:
            table = concat_changes(self.kept)
            table = self._needed(table) if len(self.kept) > 1 else table
            options = pa.ipc.IpcWriteOptions(compression="zstd")
            with pa.ipc.new_stream(sink, table.schema, options=options) as stream:
                stream.write_table(table)
        return TableCommitMessage(
            sink.getvalue().to_pybytes(),
            self.key_columns or [],
            self.letters,
            self.count,
            self.others,
            self.offered,
            self.keyless,
            self.unordered,
            self.typed,
            self.registered,
        )


def _by_place(
    originals: list[tuple[pa.Array, pa.Array | None, pa.Array]],
) -> dict[bytes, tuple[bytes | None, bytes | None]]:
    """The key and value of each source message, by its place."""
    found: dict[bytes, tuple[bytes | None, bytes | None]] = {}
    for places, message_keys, values in originals:
        texts = values.to_pylist()
        names = message_keys.to_pylist() if message_keys is not None else [None] * len(texts)
        for place, key, value in zip(places.to_pylist(), names, texts, strict=True):
            found[place] = (key, value.encode() if isinstance(value, str) else value)
    return found


def _held_columns(settings: Settings) -> pa.Schema | None:
    """The row columns of the table as this task begins, for a value of a type its column
    cannot take to be refused alone, not the whole batch; ``None`` while there is none, or
    where this process does not see it (an executor without the driver's files: its
    commit says what becomes of the batch). Opening it here creates nothing (no catalog of
    the default kind where there is none)."""
    catalog = os.path.join(os.path.abspath(settings.path), "catalog.db")
    if settings.format == "iceberg" and not settings.catalog and not os.path.exists(catalog):
        return None
    try:
        schema = settings.store().schema()
    except Exception:  # (the driver opens it too, and says why it does not open)
        return None
    if schema is None:
        return None
    return pa.schema([f for f in schema if not f.name.startswith("_cdc_")])


def _json(origin: Record | bytes) -> bytes:
    """A record as OpenCDC JSON (given as it is, or as a record)."""
    return origin if isinstance(origin, bytes) else record_to_json(origin)


def write_task(
    settings: Settings, records_layout: bool, batches: Iterator[pa.RecordBatch]
) -> TableCommitMessage:
    """One task: its rows as the changes the merge needs, and its dead letters."""
    changes = TaskChanges(settings, records_layout)
    for batch in batches:
        changes.add(batch)
    return changes.close()


#: The rows of :func:`task_commits`: each task's pickled :class:`TableCommitMessage`.
COMMITS = "commit binary"


def task_commits(
    settings: Settings,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function over messages (OpenCDC JSON values): each task's commit
    message, pickled in a row, for a commit the caller runs itself
    (:func:`commit_changes`)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        changes = TaskChanges(settings, records_layout=False)
        for batch in batches:
            changes.add(batch)
        found = pickle.dumps(changes.close())
        yield pa.RecordBatch.from_pydict({"commit": pa.array([found], pa.binary())})

    return run


def letter_reason(letter: bytes) -> tuple[str, str]:
    """The place and reason of a dead letter (OpenCDC JSON)."""
    record = orjson.loads(letter)
    position = base64.b64decode(record.get("position") or "")
    reason = (record.get("metadata") or {}).get(keys.CONDUIT_DLQ_NACK_ERROR, "")
    return printable_bytes(position), str(reason)


def concat_changes(tables: list[pa.Table]) -> pa.Table:
    """Tables of changes as one (columns one lacks are nulls): a column whose type differs
    between them takes the type one table of all their values would have had (numbers as
    exact decimals, else text), as :class:`~cdc_connectors.table.records.ChangeBatch` types
    one batch, so that how the records were split does not change a type."""
    kinds: dict[str, set[pa.DataType]] = {}
    for table in tables:
        for column in table.schema:
            if not pa.types.is_null(column.type):
                kinds.setdefault(column.name, set()).add(column.type)
    for name, types in kinds.items():
        if len(types) > 1:
            tables = _retyped(tables, name)
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CodecError(f"changes have columns of different types: {exc}") from None


def _retyped(tables: list[pa.Table], name: str) -> list[pa.Table]:
    """The tables with column ``name`` retyped from all its values at once."""
    values: list[Any] = []
    for table in tables:
        if name in table.column_names:
            values.extend(table.column(name).to_pylist())
        else:
            values.extend([None] * table.num_rows)
    unified = column_of(name, values)
    found, start = [], 0
    for table in tables:
        part = unified.slice(start, table.num_rows)
        start += table.num_rows
        if name in table.column_names:
            table = table.set_column(table.schema.get_field_index(name), name, part)
        found.append(table)
    return found


def _joined(
    messages: Sequence[TableCommitMessage], where: str
) -> tuple[pa.Table | None, list[str]]:
    """The tasks' changes as one table (columns a task lacks are nulls; a column typed by
    registered schemas, of the type they give together) and the keys;
    :class:`~cdc_connectors.table.evolve.SchemaChangeError` for two schemas of the batch
    that type a column apart (at ``where``, the table)."""
    registered = BatchTypes()
    for message in messages:
        registered.update(message.registered)
    registered.check(where)
    tables = [
        _registered_types(pa.ipc.open_stream(m.changes).read_all(), registered)
        for m in messages
        if m.changes
    ]
    named = {tuple(m.key_columns) for m in messages if m.key_columns}
    if len(named) > 1:
        raise ConfigError(
            "the batch's records name different keys ("
            + "; ".join(", ".join(k) for k in sorted(named))
            + "): records of several tables? set collection (one table a destination) or "
            "keyColumns"
        )
    key_columns = next((m.key_columns for m in messages if m.key_columns), [])
    return (concat_changes(tables) if tables else None), key_columns


def _registered_types(table: pa.Table, registered: BatchTypes) -> pa.Table:
    """``table`` with each column registered schemas type of the type they give together
    (a safe widening of its own: every value kept)."""
    for index, column in enumerate(table.schema):
        wanted = registered.get(column.name)
        if wanted is not None and column.type != wanted and not pa.types.is_null(column.type):
            table = table.set_column(index, column.name, table.column(index).cast(wanted))
    return table


@dataclass(frozen=True)
class Committed:
    """What a write did: the records it was given, what the table did with their changes
    (:class:`~cdc_connectors.table.apply.Applied`) and the records it refused."""

    records: int
    applied: Applied
    refused: int
    others: int = 0

    def line(self, where: str, dead_letters: str, txn: Txn | None) -> str:
        """The write told in one line."""
        if self.applied.replayed:
            said = f"batch {txn.version}" if txn else "the batch"
            return f"{NAME}: {where}: {said} was applied before: nothing changed"
        done = self.applied
        superseded = self.records - self.others - self.refused - done.applied - done.stale
        return (
            f"{NAME}: {where}: {_many(self.records, 'record')}, "
            f"{_many(done.applied, 'change')} applied"
            f"{f', {superseded} replaced by a later change of their key' if superseded > 0 else ''}"
            f"{f', {done.stale} older than the table (left)' if done.stale else ''}"
            f"{f', {self.refused} refused ({dead_letters})' if self.refused else ''}"
            f"{f', {self.others} of other collections (left out)' if self.others else ''}"
        )


def _many(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def commit_changes(
    settings: Settings, messages: Sequence[WriterCommitMessage | None], txn: Txn | None
) -> Committed:
    """Apply the tasks' changes to the table in one transaction; then write their dead
    letters."""
    ours = [m for m in messages if isinstance(m, TableCommitMessage)]
    changes, key_columns = _joined(ours, settings.store().where)
    done = Applied(0, 0)
    offered, keyless = sum(m.offered for m in ours), sum(m.keyless for m in ours)
    named_nothing = changes is None and settings.key_columns and keyless == offered > 0
    unordered = changes is None and sum(m.unordered for m in ours) == offered > 0

    def first() -> bool:  # (a table made has them; a new warehouse is not opened: that
        return settings.fresh_warehouse() or settings.store().schema() is None  # makes one)

    if named_nothing and first():
        raise SettingError(
            f"{NAME} setting 'keyColumns': no record has column(s) "
            f"{', '.join(settings.key_columns)}: nothing was written"
        )
    if unordered and first():  # (a misspelt key: every record a dead letter, batch after batch)
        raise SettingError(
            f"{NAME} setting 'orderBy': no record carries metadata {settings.order_by!r}: "
            "nothing was written"
        )
    if changes is not None:
        store = settings.store()
        try:
            # typed by registered schemas (or, a first batch of keys alone, not by values)
            values = set(row_schema(changes.schema).names) - set(key_columns)
            typed = bool(settings.registry) and (any(m.typed for m in ours) or not values)
            wanted = settings.table_settings(key_columns, typed=typed)
            done = apply_changes(store, changes, wanted, txn)
        except KeyColumnsError as exc:
            raise SettingError(f"{NAME} setting 'keyColumns': {exc}") from None
    letters = [line for m in ours for line in m.letters]
    if letters:  # (on a replay too: a micro-batch's file is written whole, under its name)
        _write_letters(settings.dead_letters, letters, txn)
    return Committed(sum(m.records for m in ours), done, len(letters), sum(m.others for m in ours))


def _write_letters(directory: str, letters: list[bytes], txn: Txn | None) -> None:
    """The dead letters as one file, appearing whole (written aside, then renamed). Out of a
    stream, a replayed batch writes its file again under its name; else a letter a file
    there holds already (the same message at the same place: a batch run again) is not
    written again."""
    os.makedirs(directory, exist_ok=True)
    if txn is None:
        held = _held_letters(directory)
        letters = [line for line in letters if _identity(line) not in held]
        if not letters:
            return
    name = f"part-{uuid.uuid4().hex}.jsonl" if txn is None else f"batch-{txn.version:012d}.jsonl"
    target = os.path.join(directory, name)
    hidden = os.path.join(directory, f".{name}.{uuid.uuid4().hex}")
    with open(hidden, "wb") as out:
        out.write(b"".join(line + b"\n" for line in letters))
    os.replace(hidden, target)


def _held_letters(directory: str) -> set[bytes]:
    """What the dead letters (OpenCDC JSON lines) of the files in ``directory`` are
    (:func:`_identity`)."""
    held: set[bytes] = set()
    for name in os.listdir(directory):
        if name.startswith((".", "_")) or not name.endswith(".jsonl"):
            continue
        with contextlib.suppress(OSError), open(os.path.join(directory, name), "rb") as lines:
            held.update(_identity(line) for line in lines if line.strip())
    return held


def _identity(line: bytes) -> bytes:
    """A dead letter without its metadata (its reason and time change from run to run):
    the message at its place, as it came (the line itself where it is no object)."""
    try:
        letter = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line.strip()
    if not isinstance(letter, dict):
        return line.strip()
    letter.pop("metadata", None)
    return orjson.dumps(letter, option=orjson.OPT_SORT_KEYS)


def say(line: str) -> None:
    """A line of the commit for the user (the driver's standard error)."""
    print(line, file=sys.stderr, flush=True)
