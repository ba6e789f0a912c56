"""Writing ``cdc-files``: staged task files, committed whole (see :mod:`.files`).

A batch job's commit renames each task's staged file into place; a micro-batch's commit
renames one directory ``batch-<N>/`` into place, once.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, StringType, StructType

from cdc_connectors.columnar import wire
from cdc_connectors.connectors.errors import ConnectorError, bare
from cdc_connectors.connectors.files import (
    NAME,
    NODE_ID,
    STAGING,
    FilesWriteError,
    Settings,
)
from cdc_connectors.connectors.files_owner import Owner, check, claim, owner_of, refuse_owned
from cdc_connectors.connectors.messages import DLQ_ERROR, SettingError, encode_rows
from cdc_connectors.convert.streams import MessageWriter, layout_of
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.opencdc import CodecError
from cdc_connectors.spark.schema import OPENCDC_COLUMNS

__all__ = [
    "FilesCommitMessage",
    "FilesStreamWriter",
    "FilesWriter",
    "TaskFile",
    "commit_batch",
]

# The bytes a value written one per line cannot hold (wire.rows_holding's table).
_LINE_BREAKS = np.zeros(256, dtype=bool)
_LINE_BREAKS[[0x0A, 0x0D]] = True


@dataclass
class FilesCommitMessage(WriterCommitMessage):
    """What a write task made: its staged file (``None`` for an empty partition)."""

    partition: int
    task: str
    staged: str | None
    name: str
    records: int


def _extension(fmt: Format, settings: Settings) -> str:
    layout = layout_of(type(fmt), settings.kv)
    ext = {"lines": ".jsonl", "kv": ".kv.jsonl", "delimited": ".pb"}[layout]
    return ext + (".gz" if settings.compression == "gzip" else "")


def _message_layout(schema: StructType) -> bool:
    """``True`` for a ``value`` (+ ``key``) layout, ``False`` for OpenCDC rows; else an error."""
    names = [f.name for f in schema.fields]
    if "value" in names:
        for field in schema.fields:
            if field.name not in ("key", "value"):
                raise SettingError(
                    f"{NAME} writes a 'value' column and optionally 'key'; select them "
                    f"(found column {field.name!r})"
                )
            if not isinstance(field.dataType, BinaryType | StringType):
                raise SettingError(
                    f"{NAME}: column {field.name!r} must be binary or string, "
                    f"not {field.dataType.simpleString()}"
                )
        return True
    if tuple(names) != OPENCDC_COLUMNS:
        raise SettingError(
            f"{NAME} writes OpenCDC rows ({', '.join(OPENCDC_COLUMNS)}) or a 'value' column "
            f"with optional 'key'; found columns {', '.join(names)}"
        )
    return False


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _messages_of(
    batch: pa.RecordBatch, fmt: Format, messages_layout: bool, lines: bool, first_row: int
) -> list[Message]:
    if not messages_layout:
        messages, letters = encode_rows(fmt, batch, node_id=NODE_ID)
        if letters:
            letter = letters[0]
            position = letter.position.decode("utf-8", "backslashreplace")
            raise FilesWriteError(
                f"{NAME}: the record at position {position!r} cannot be written as "
                f"{fmt.name}: {letter.metadata.get(DLQ_ERROR)}"
            )
    else:
        if lines:
            _no_keys(batch, fmt, first_row)
        values = [_as_bytes(v) for v in batch.column("value").to_pylist()]
        if "key" in batch.schema.names:
            keys = [_as_bytes(k) for k in batch.column("key").to_pylist()]
        else:
            keys = [None] * len(values)
        messages = [Message(v, key=k) for k, v in zip(keys, values, strict=True)]
    if lines:
        for index, message in enumerate(messages):
            if message.value is None or b"\n" in message.value or b"\r" in message.value:
                what = "a null value" if message.value is None else "a line break"
                raise FilesWriteError(
                    f"{NAME}: row {first_row + index} of the task has {what}, which a file "
                    f"of one {fmt.name} message per line cannot hold (use kv: true)"
                )
    return messages


def _no_keys(batch: pa.RecordBatch, fmt: Format, first_row: int) -> None:
    """:class:`FilesWriteError` naming the first row of ``batch`` with a key, which a file
    of one message per line would drop: a message of a format whose values are whole
    OpenCDC records (their key inside) drops none."""
    if "key" not in batch.schema.names or fmt.whole_records:
        return
    keys = batch.column("key")
    if keys.null_count == len(keys):
        return
    index = int(np.flatnonzero(wire.valid(keys))[0])
    raise FilesWriteError(
        f"{NAME}: row {first_row + index} of the task has a key, which a file of one "
        f"{fmt.name} message per line would drop (use kv: true to keep it, or write the "
        "value column alone)"
    )


def _span(array: pa.Array) -> tuple[np.ndarray, int, int]:
    """The offsets of a ``large_binary`` array's rows, and where its bytes start and stop."""
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset :][: len(array) + 1]
    return offsets, int(offsets[0]), int(offsets[-1])


def _lines_of(values: pa.Array, fmt: Format, first_row: int) -> pa.Buffer:
    """The values of a batch one per line, each then ``\\n``: the bytes
    :meth:`~cdc_connectors.convert.streams.MessageWriter.write_all` writes for them, made
    without a Python object per message; :class:`FilesWriteError` naming the first value a
    line cannot hold (none, or one with a line break), as :func:`_messages_of` names it."""
    values = values.cast(pa.large_binary())
    broken = np.flatnonzero(wire.rows_holding(values, _LINE_BREAKS))
    nulls = np.flatnonzero(~wire.valid(values))
    if len(broken) or len(nulls):
        index = int(min(np.concatenate([broken, nulls])))
        what = "a null value" if values[index].as_py() is None else "a line break"
        raise FilesWriteError(
            f"{NAME}: row {first_row + index} of the task has {what}, which a file "
            f"of one {fmt.name} message per line cannot hold (use kv: true)"
        )
    ends = pa.scalar(b"", pa.large_binary()), pa.scalar(b"\n", pa.large_binary())
    lines = pc.binary_join_element_wise(values, *ends)
    _, start, stop = _span(lines)
    buffer: pa.Buffer = lines.buffers()[2].slice(start, stop - start)
    return buffer


def _open_output(file: str, compression: str) -> gzip.GzipFile | io.BufferedWriter:
    if compression == "gzip":
        return gzip.GzipFile(file, "wb")
    return open(file, "wb")


class TaskFile:
    """The staged file of one write task, written batch by batch (:meth:`add`), then
    :meth:`close`-d into its commit message or :meth:`discard`-ed."""

    def __init__(self, settings: Settings, messages_layout: bool, job: str = ""):
        context = TaskContext.get()
        self.partition = context.partitionId() if context is not None else 0
        self.task = uuid.uuid4().hex
        self.settings = settings
        self.messages_layout = messages_layout
        self.fmt = settings.open_format()
        self.ext = _extension(self.fmt, settings)
        self.lines = layout_of(type(self.fmt), settings.kv) == "lines"
        self.staging = os.path.join(settings.path, STAGING)
        self.staged = os.path.join(
            self.staging, f"{job}{self.task}-part-{self.partition:05d}{self.ext}"
        )
        self.out: gzip.GzipFile | io.BufferedWriter | None = None
        self.writer: MessageWriter | None = None
        self.records = 0

    def add(self, batch: pa.RecordBatch) -> None:
        """Write the rows of ``batch``; :class:`FilesWriteError` for a row a file cannot hold.
        Messages one per line are written from the value column as it is."""
        if self.messages_layout and self.lines:
            if not batch.num_rows:
                return
            _no_keys(batch, self.fmt, self.records)
            data = _lines_of(batch.column("value"), self.fmt, self.records)
            self._writer()
            assert self.out is not None
            self.out.write(memoryview(data))
            self.records += batch.num_rows
            return
        messages = _messages_of(batch, self.fmt, self.messages_layout, self.lines, self.records)
        if not messages:
            return
        writer = self._writer()
        try:
            writer.write_all(messages)
        except CodecError as exc:
            raise FilesWriteError(f"{NAME}: a row of the task cannot be written: {exc}") from None
        self.records += len(messages)

    def _writer(self) -> MessageWriter:
        """The writer of the staged file, opened on the first rows."""
        if self.writer is None:
            os.makedirs(self.staging, exist_ok=True)
            self.out = _open_output(self.staged, self.settings.compression)
            self.writer = MessageWriter(self.out, type(self.fmt), kv=self.settings.kv)
        return self.writer

    def close(self) -> FilesCommitMessage:
        """The file closed and synced; its commit message."""
        if self.out is not None:
            self.out.close()
            _sync(self.staged)
        return FilesCommitMessage(
            partition=self.partition,
            task=self.task,
            staged=self.staged if self.out is not None else None,
            name=f"part-{self.partition:05d}{self.ext}",
            records=self.records,
        )

    def discard(self) -> None:
        """The task failed: its file removed."""
        if self.out is not None:
            self.out.close()
            _remove(self.staged)


def write_task(
    settings: Settings, messages_layout: bool, batches: Iterator[pa.RecordBatch], job: str = ""
) -> FilesCommitMessage:
    """Write one task's rows to a staged file (its name starts with ``job``); its commit
    message says where."""
    file = TaskFile(settings, messages_layout, job)
    try:
        for batch in batches:
            file.add(batch)
        return file.close()
    except BaseException:
        file.discard()
        raise


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _refuse_file_in_the_way(path: str) -> None:
    """:class:`SettingError` naming ``path`` where it, or the nearest of its parents there
    is, is a file: the output is a directory (checked before any task runs)."""
    place = os.path.abspath(path)
    while not os.path.exists(place) and os.path.dirname(place) != place:
        place = os.path.dirname(place)
    if os.path.exists(place) and not os.path.isdir(place):
        said = (
            "is a file, not a directory"
            if place == os.path.abspath(path)
            else (f"cannot be a directory: {place!r} is a file")
        )
        raise SettingError(f"{NAME} setting 'path': {path!r} {said}")


def _staged(messages: Sequence[WriterCommitMessage | None]) -> list[FilesCommitMessage]:
    return [m for m in messages if isinstance(m, FilesCommitMessage) and m.staged]


class FilesWriter(DataSourceArrowWriter):
    """Batch write: staged task files, renamed into place by the job's commit."""

    def __init__(
        self,
        settings: Settings,
        schema: StructType,
        overwrite: bool,
        checkpoint: str | None = None,
    ):
        self.settings = settings
        self.messages_layout = _message_layout(schema)
        _refuse_file_in_the_way(settings.path)
        self.overwrite = overwrite
        self.job = f"job-{uuid.uuid4().hex}-"
        self.owner = owner_of(checkpoint) if settings.batch_id is not None else None
        settings.open_format()  # a bad format fails the job before any task runs
        self._check_owner()

    def _check_owner(self) -> None:
        if self.owner is not None:
            check(self.settings.path, self.owner)
        elif self.settings.batch_id is None:
            refuse_owned(self.settings.path)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FilesCommitMessage:
        try:
            return write_task(self.settings, self.messages_layout, iterator, self.job)
        except ConnectorError as failure:  # one frame and one line for the user
            raise bare(failure) from None

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        path = self.settings.path
        if self.settings.batch_id is not None:  # a micro-batch of a pipeline: exactly once
            commit_batch(self.settings, messages, self.settings.batch_id, self.owner)
            return
        try:
            self._check_owner()
        except FilesWriteError:
            self.abort(messages)
            raise
        os.makedirs(path, exist_ok=True)  # (written empty, it is there to read, as Spark's)
        if self.overwrite:
            for name in os.listdir(path) if os.path.isdir(path) else []:
                if name.startswith(("part-", "batch-")):
                    target = os.path.join(path, name)
                    if os.path.isdir(target):
                        shutil.rmtree(target)
                    else:
                        os.remove(target)
        for message in _staged(messages):
            assert message.staged is not None
            base, ext = message.name.split(".", 1)
            os.replace(message.staged, os.path.join(path, f"{base}-{message.task}.{ext}"))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        for message in _staged(messages):
            assert message.staged is not None
            _remove(message.staged)
        # tasks cancelled by the failure returned no message: their files carry the job's name
        staging = os.path.join(self.settings.path, STAGING)
        for name in os.listdir(staging) if os.path.isdir(staging) else []:
            if name.startswith(self.job):
                _remove(os.path.join(staging, name))


class FilesStreamWriter(DataSourceStreamArrowWriter):
    """Streaming write, exactly once for any reader of the directory (module docstring)."""

    def __init__(self, settings: Settings, schema: StructType, checkpoint: str | None = None):
        self.settings = settings
        self.messages_layout = _message_layout(schema)
        _refuse_file_in_the_way(settings.path)
        self.owner = owner_of(checkpoint)
        settings.open_format()
        if self.owner is not None:  # another query's directory fails the query at its start
            check(settings.path, self.owner)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FilesCommitMessage:
        try:
            return write_task(self.settings, self.messages_layout, iterator)
        except ConnectorError as failure:  # one frame and one line for the user
            raise bare(failure) from None

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        commit_batch(self.settings, messages, batchId, self.owner)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        for message in _staged(messages):
            assert message.staged is not None
            _remove(message.staged)


def commit_batch(
    settings: Settings,
    messages: list[WriterCommitMessage | None],
    batch_id: int,
    owner: Owner | None = None,
) -> None:
    """Micro-batch ``batch_id``'s files become ``batch-<N>/`` in one rename, once: a replay
    of a committed batch discards its files (module docstring). The directory becomes
    ``owner``'s at its first commit; another query's is refused."""
    path = settings.path
    staging = os.path.join(path, STAGING)
    final = os.path.join(path, f"batch-{batch_id:012d}")
    staged = _staged(messages)
    if owner is not None:
        try:
            claim(path, owner)
        except FilesWriteError:
            for message in staged:
                assert message.staged is not None
                _remove(message.staged)
            raise
    later = [
        name
        for name in (os.listdir(path) if os.path.isdir(path) else [])
        if name.startswith("batch-") and name > os.path.basename(final)
    ]
    if later:  # never so for this query's own replays: batches commit in order
        for message in staged:
            assert message.staged is not None
            _remove(message.staged)
        raise FilesWriteError(
            f"{NAME}: {path} already holds {min(later)}, written after micro-batch "
            f"{batch_id} by another query; give each query (checkpoint) its own directory"
        )
    if staged and not os.path.isdir(final):
        gathered = os.path.join(staging, f"batch-{batch_id:012d}-{uuid.uuid4().hex}")
        os.mkdir(gathered)
        for message in staged:
            assert message.staged is not None
            os.replace(message.staged, os.path.join(gathered, message.name))
        _sync(gathered)
        os.rename(gathered, final)  # the batch becomes visible whole
        _sync(path)
    # what is left is this replay's files (the batch was committed before) or
    # those of attempts killed earlier: no other batch is in flight
    if os.path.isdir(staging):
        for name in os.listdir(staging):
            entry = os.path.join(staging, name)
            if os.path.isdir(entry):
                shutil.rmtree(entry, ignore_errors=True)
            else:
                _remove(entry)


def _sync(path: str) -> None:
    """Make a written file, or the renames into a directory, durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
