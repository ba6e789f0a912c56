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

import os
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import StructType

from cdc_connectors.connectors.table_settings import NAME, Settings
from cdc_connectors.connectors.table_types import RegisteredTypes
from cdc_connectors.convert.deadletter import dead_letter
from cdc_connectors.errors import CodecError
from cdc_connectors.formats.base import Message
from cdc_connectors.opencdc import keys
from cdc_connectors.opencdc.json_codec import record_from_json, record_to_json
from cdc_connectors.spark.arrow import records_from_batch
from cdc_connectors.table.apply import Applied, apply_changes
from cdc_connectors.table.plan import needed
from cdc_connectors.table.records import ChangeBatch
from cdc_connectors.table.store import Txn
from cdc_connectors.text import printable_bytes

__all__ = [
    "Committed",
    "TableCommitMessage",
    "commit_changes",
    "is_record_layout",
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


def is_record_layout(schema: StructType) -> bool:
    """Rows of the OpenCDC layout (else messages with a ``value`` column)."""
    names = set(schema.fieldNames())
    return {"position", "operation", "payload"} <= names


def _records(batches: Iterator[pa.RecordBatch], records_layout: bool, letters: list[bytes]):  # type: ignore[no-untyped-def]
    """The records of a task's rows; a message that is no record becomes a dead letter."""
    for batch in batches:
        if records_layout:
            yield from records_from_batch(batch)
            continue
        values = batch.column("value").to_pylist()
        places = batch.column("key").to_pylist() if "key" in batch.schema.names else None
        for index, value in enumerate(values):
            data = value.encode() if isinstance(value, str) else value
            try:
                if data is None:
                    raise CodecError("the message has no value")
                yield record_from_json(data)
            except CodecError as exc:
                key = places[index] if places is not None else None
                message = Message(data, key, where=f"{NAME} row {index}")
                letters.append(record_to_json(dead_letter(message, str(exc), NODE_ID)))


def write_task(
    settings: Settings, records_layout: bool, batches: Iterator[pa.RecordBatch]
) -> TableCommitMessage:
    """One task: its rows as the changes the merge needs, and its dead letters."""
    letters: list[bytes] = []
    types = RegisteredTypes(settings.registry) if settings.registry else None
    changes = ChangeBatch(settings.key_columns or None, settings.order_by, types)
    count = others = 0
    for record in _records(batches, records_layout, letters):
        count += 1
        if keys.CONDUIT_DLQ_NACK_ERROR in record.metadata:  # a dead letter already
            letters.append(record_to_json(record))
            continue
        if settings.collection and record.metadata.get(keys.COLLECTION) != settings.collection:
            others += 1  # another table's change: not this table's
            continue
        changes.add(record)
    table = changes.table()
    for refusal in changes.refused:
        where = printable_bytes(bytes(refusal.record.position))
        original = Message(record_to_json(refusal.record), None, where=where)
        letters.append(record_to_json(dead_letter(original, refusal.reason, NODE_ID)))
    key_columns = changes.key_columns or []
    if table.num_rows and key_columns:
        table = needed(table, key_columns, settings.mode, settings.deletes)  # type: ignore[arg-type]
    sink = pa.BufferOutputStream()
    if table.num_rows:
        options = pa.ipc.IpcWriteOptions(compression="zstd")
        with pa.ipc.new_stream(sink, table.schema, options=options) as stream:
            stream.write_table(table)
    return TableCommitMessage(sink.getvalue().to_pybytes(), key_columns, letters, count, others)


def _joined(messages: Sequence[TableCommitMessage]) -> tuple[pa.Table | None, list[str]]:
    """The tasks' changes as one table (columns a task lacks are nulls) and the keys."""
    tables = [pa.ipc.open_stream(m.changes).read_all() for m in messages if m.changes]
    key_columns = next((m.key_columns for m in messages if m.key_columns), [])
    if not tables:
        return None, key_columns
    try:
        return pa.concat_tables(tables, promote_options="permissive"), key_columns
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CodecError(f"the tasks' changes have columns of different types: {exc}") from None


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
            f"{NAME}: {where}: {self.records} records, {done.applied} changes applied"
            f"{f', {superseded} replaced by a later change of their key' if superseded > 0 else ''}"
            f"{f', {done.stale} older than the table (left)' if done.stale else ''}"
            f"{f', {self.refused} refused ({dead_letters})' if self.refused else ''}"
            f"{f', {self.others} of other collections (left out)' if self.others else ''}"
        )


def commit_changes(
    settings: Settings, messages: Sequence[WriterCommitMessage | None], txn: Txn | None
) -> Committed:
    """Apply the tasks' changes to the table in one transaction; then write their dead
    letters."""
    ours = [m for m in messages if isinstance(m, TableCommitMessage)]
    changes, key_columns = _joined(ours)
    done = Applied(0, 0)
    if changes is not None:
        store = settings.store()
        done = apply_changes(store, changes, settings.table_settings(key_columns), txn)
    letters = [line for m in ours for line in m.letters]
    if letters and not (done.replayed and txn is not None):
        _write_letters(settings.dead_letters, letters, txn)
    return Committed(sum(m.records for m in ours), done, len(letters), sum(m.others for m in ours))


def _write_letters(directory: str, letters: list[bytes], txn: Txn | None) -> None:
    """The dead letters as one file, appearing whole (written aside, then renamed)."""
    os.makedirs(directory, exist_ok=True)
    name = f"part-{uuid.uuid4().hex}.jsonl" if txn is None else f"batch-{txn.version:012d}.jsonl"
    target = os.path.join(directory, name)
    hidden = os.path.join(directory, f".{name}.{uuid.uuid4().hex}")
    with open(hidden, "wb") as out:
        out.write(b"".join(line + b"\n" for line in letters))
    os.replace(hidden, target)


def say(line: str) -> None:
    """A line of the commit for the user (the driver's standard error)."""
    print(line, file=sys.stderr, flush=True)
