"""The files connector: directories of change messages as OpenCDC rows, and back.

Spark name ``cdc-files`` (:class:`FilesDataSource`): batch and streaming reads, batch and
streaming writes. A file holds the messages of one format as ``cdc-connectors convert``
reads and writes them: one message per line for JSON formats, ``{"key": ..., "value": ...}``
lines with ``kv``, length-delimited messages for ``opencdc-proto``. A name ending in ``.gz``
is read through gzip.

```python
spark.dataSource.register(FilesDataSource)
df = spark.read.format("cdc-files").option("format", "debezium-json").load("in/")
df.write.format("cdc-files").mode("append").save("out/")
```

| setting | default | meaning |
|---|---|---|
| ``path`` | required | a directory, one file or a glob (``in/*.jsonl.gz``) |
| ``format`` | ``opencdc-json`` | a format of the ``cdc_connectors.formats`` entry points |
| ``format.<option>`` | | an option of that format (``format.topic``, ``format.key.columns``) |
| ``registry`` | none | schema registry URL for formats that use one |
| ``kv`` | ``false`` | lines are ``{"key": ..., "value": ...}`` (``convert --kv``) |
| ``failFast`` | ``false`` | read: a bad message fails the query (else a dead-letter row) |
| ``typed`` | ``false`` | read: Debezium JSON schema blocks as typed columns (below) |
| ``collection`` | | typed read: the collection to read (below) |
| ``maxRecordsPerBatch`` | ``10000`` | read: messages decoded into one Arrow batch |
| ``maxFilesPerTrigger`` | all | streaming read: new files taken per micro-batch |
| ``compression`` | ``none`` | write: ``gzip`` writes ``.gz`` files |
| ``batchId`` | none | batch write of micro-batch N (pipelines): commits as ``batch-<N>/``, once |

**Reading.** A directory is read with its subdirectories; names starting with ``.`` or ``_``
are skipped at every level (temporary files, ``_staging``, ``_spark_metadata``). Each file is
one input partition, read in order; every row's empty position becomes ``file:line`` (or
``file: message N, byte B`` for length-delimited files). A message that does not convert is a
dead-letter row (the original bytes, the reason in ``conduit.dlq.nack.error``), unless
``failFast``.

**Typed read.** With ``typed``, ``before`` and ``after`` are structs of one row schema's
Spark types (:mod:`cdc_connectors.spark.debezium_typed`), so a typed read is of one
collection (``opencdc.collection``, ``db.schema.table``): ``collection`` names it, and
messages of other collections are left out; without it, files holding several collections
(among the first messages of each file) are refused with the list of those found. The
schema is the first of the collection's messages whose schema block has typed columns
(:mod:`cdc_connectors.connectors.typed_read`); a message of another schema version is read
into its columns or is a dead letter, as is one of another collection found later.

**Streaming read.** Every trigger lists the path and takes the files it has not seen, in
name order (at most ``maxFilesPerTrigger``). The offset is ``{"files": [...]}``, the sorted
list of the files read so far (paths as listed from ``path``), so a query restarted from its
checkpoint reads no file twice; it grows with the number of files, so keep directories of
a few thousand files per query, moving old ones out.
A file is taken whole the first time it is listed: a writer must create it under a name
starting with ``.`` or ``_`` and rename it into place once complete, as this connector does.
Files that change after they were read are not read again. ``Trigger.AvailableNow`` reads
the files present when the query starts.

**Batch write.** Each task writes its rows to a file under ``<path>/_staging/``; the job's
commit renames them to ``<path>/part-<partition:05d>-<task uuid>.<ext>`` (``.jsonl``,
``.kv.jsonl`` or ``.pb``, then ``.gz``), and an abort deletes them, with those of tasks the
failure cancelled. A file appears whole; a job killed during its commit may leave some of its
files. ``mode("overwrite")`` deletes the ``part-*`` and ``batch-*`` entries of the directory
first.

**Streaming write: exactly once for any reader.** Tasks write to ``<path>/_staging/``
(hidden). The commit of micro-batch ``N`` gathers the batch's files in a staging directory
and renames that directory to ``<path>/batch-<N:012d>/`` (files ``part-<partition:05d>.<ext>``)
in one atomic step, so a reader of the output (``jq`` over ``batch-*/*.jsonl``, pyarrow, this
connector) sees a micro-batch whole or not at all. A micro-batch replayed after a crash has
the same ``N``: when ``batch-N`` already exists, the earlier commit went through, and the
replay's files are discarded; otherwise the replay commits as above. Files of killed attempts
stay hidden in ``_staging`` and are removed by the next commit. Empty partitions write no
file, an empty micro-batch no directory. One streaming query (one checkpoint) per output
directory: a commit that finds a later micro-batch in the directory fails the query, and a
new query's micro-batch whose number is already the directory's last one is discarded.

**Input of writers.** Either the OpenCDC layout (the rows this connector reads), encoded with
``format``, a row that cannot be encoded failing the task with its position; or a message
layout, a ``value`` column (binary or string) and optionally ``key``, written as is.
"""

from __future__ import annotations

import glob
import gzip
import io
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from cdc_connectors.connectors.errors import ConnectorError, bare, guarded
from cdc_connectors.connectors.messages import (
    FailFastError,
    SettingError,
    decode_messages,
    decode_typed,
    open_format,
    registry_setting,
    typed_dead_letters,
    typed_schema,
)
from cdc_connectors.connectors.refused import stream_reader
from cdc_connectors.connectors.typed_read import bounded_samples, typed_read_decoder
from cdc_connectors.convert.deadletter import dead_letter
from cdc_connectors.convert.streams import read_messages
from cdc_connectors.formats.base import Format, Message
from cdc_connectors.opencdc import CodecError
from cdc_connectors.options import parse_bool
from cdc_connectors.spark.arrow import records_to_batch
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder
from cdc_connectors.spark.schema import OPENCDC_SCHEMA
from cdc_connectors.text import printable

__all__ = ["FilesDataSource", "FilesWriteError", "Settings", "list_files"]

NAME = "cdc-files"
NODE_ID = NAME
STAGING = "_staging"
_MAX_DEAD_FILE = 64 * 1024 * 1024  # bytes of an unreadable file kept in its dead letter
_READ_BUFFER = 1 << 20  # bytes read from a file at a time
DEFAULT_BATCH = 10_000

#: Settings by their lowercase spelling (Spark lowercases option names) -> as documented.
_COMMON = {"path": "path", "format": "format", "registry": "registry", "kv": "kv"}
_READ_ONLY = {
    "failfast": "failFast",
    "typed": "typed",
    "collection": "collection",
    "maxrecordsperbatch": "maxRecordsPerBatch",
    "maxfilespertrigger": "maxFilesPerTrigger",
}
_WRITE_ONLY = {"compression": "compression", "batchid": "batchId"}
_KNOWN = {**_COMMON, **_READ_ONLY, **_WRITE_ONLY}
#: Options Spark itself passes to a sink; not ours to check.
_SPARK_OWN = frozenset({"checkpointlocation"})
_COMPRESSIONS = ("none", "gzip")


#: Errors of ours that reach the user as one frame and one line.
_REFUSALS = (SettingError, ConnectorError)


class FilesWriteError(ConnectorError):
    """A row cannot be written in the chosen format or layout; the message names it."""


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    """The connector's settings, checked (module docstring)."""

    path: str
    format_settings: tuple[tuple[str, str], ...]
    registry: str | None
    kv: bool
    fail_fast: bool
    typed: bool
    collection: str | None
    batch_size: int
    max_files: int | None
    compression: str
    batch_id: int | None
    given: frozenset[str]

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Settings:
        lowered = {
            str(k).lower(): str(v) for k, v in options.items() if str(k).lower() not in _SPARK_OWN
        }
        for key in map(str, options):
            lower = key.lower()
            if lower not in _KNOWN and lower not in _SPARK_OWN and not lower.startswith("format."):
                raise SettingError.unknown(NAME, key, _KNOWN, "format.<option>")
        path = lowered.get("path", "")
        if not path:
            raise SettingError(f"{NAME} setting 'path' is required (a directory, file or glob)")
        compression = lowered.get("compression", "none").lower()
        if compression not in _COMPRESSIONS:
            raise SettingError(
                f"{NAME} setting 'compression' must be none or gzip, not {compression!r}"
            )
        max_files = lowered.get("maxfilespertrigger")
        batch_id = lowered.get("batchid")
        collection = lowered.get("collection")
        if collection is not None and not collection.strip():
            raise SettingError(f"{NAME} setting 'collection' must name a collection")
        typed = _flag(lowered, "typed")
        if collection is not None and not typed:
            raise SettingError(
                f"{NAME} setting 'collection' chooses the collection of a typed read: "
                "set 'typed' to true as well"
            )
        if batch_id is not None and not (batch_id.isdigit() and len(batch_id) <= 12):
            raise SettingError(f"{NAME} setting 'batchId' must be a micro-batch number")
        return cls(
            path=path,
            format_settings=tuple(
                sorted(
                    (k, v) for k, v in lowered.items() if k == "format" or k.startswith("format.")
                )
            ),
            registry=registry_setting(NAME, lowered.get("registry")),
            kv=_flag(lowered, "kv"),
            fail_fast=_flag(lowered, "failfast"),
            typed=typed,
            collection=collection,
            batch_size=_positive(lowered, "maxrecordsperbatch", DEFAULT_BATCH),
            max_files=None if max_files is None else _positive(lowered, "maxfilespertrigger", 0),
            compression=compression,
            batch_id=None if batch_id is None else int(batch_id),
            given=frozenset(lowered),
        )

    def refuse(self, names: Mapping[str, str], use: str) -> None:
        """:class:`SettingError` if a setting of ``names`` was given for ``use``."""
        for key in sorted(self.given & set(names)):
            raise SettingError(f"{NAME} setting {names[key]!r} does not apply to {use}")

    def open_format(self) -> Format:
        return open_format(
            dict(self.format_settings),
            default="opencdc-json",
            registry=self.registry,
            connector=NAME,
        )


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key)
    if value is None:
        return False
    try:
        return parse_bool(value, f"{NAME} setting {_KNOWN[key]!r}")
    except ValueError as exc:
        raise SettingError(str(exc)) from None


def _positive(options: Mapping[str, str], key: str, default: int) -> int:
    value = options.get(key)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise SettingError(
            f"{NAME} setting {_KNOWN[key]!r} must be a positive integer, not {value!r}"
        )
    return number


# --------------------------------------------------------------------------- listing


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _walk(directory: str) -> Iterator[str]:
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        for name in sorted(files):
            if not _hidden(name):
                yield os.path.join(root, name)


def list_files(path: str, *, must_exist: bool = True) -> list[str]:
    """The visible files of a directory (with its subdirectories), a file or a glob, sorted.

    :class:`SettingError` naming the path when it does not exist, or is a glob that
    matches nothing (``must_exist``: a batch read, which Spark's file sources refuse then
    too; a stream's glob may match nothing yet).
    """
    if glob.has_magic(path):
        found: list[str] = []
        matches = glob.glob(path)
        if must_exist and not matches:
            raise SettingError(f"{NAME} setting 'path': {path!r} matches no file")
        for match in matches:
            if os.path.isdir(match):
                found.extend(_walk(match))
            elif os.path.isfile(match) and not _hidden(os.path.basename(match)):
                found.append(match)
        return sorted(set(found))
    if os.path.isdir(path):
        return sorted(_walk(path))
    if os.path.isfile(path):
        return [path]
    if must_exist:
        raise SettingError(f"{NAME} setting 'path': {path!r} does not exist")
    return []


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class FilePartition(InputPartition):
    """One input file."""

    file: str


def open_input(file: str) -> gzip.GzipFile | io.BufferedReader:
    if file.endswith(".gz"):
        return gzip.GzipFile(file, "rb")
    # change events are kilobytes a line: a small buffer would be refilled every line or two
    return io.BufferedReader(io.FileIO(file, "rb"), buffer_size=_READ_BUFFER)


def decode_chunk(
    fmt: Format,
    messages: Sequence[Message],
    fail_fast: bool,
    typed: TypedDebeziumDecoder | None = None,
) -> pa.RecordBatch:
    """The OpenCDC (or, with ``typed``, typed) Arrow batch of some messages of a file: the
    one place messages are decoded."""
    if typed is not None:
        return decode_typed(typed, messages, node_id=NODE_ID, fail_fast=fail_fast).batch
    return decode_messages(fmt, messages, node_id=NODE_ID, fail_fast=fail_fast).batch


def _broken(
    error: CodecError, file: str, typed: TypedDebeziumDecoder | None = None
) -> pa.RecordBatch:
    """The dead-letter row of bytes the stream layout cannot split into a message."""
    message = Message(error.data, where=error.where or file)
    if typed is not None:
        return typed_dead_letters(typed, [(message, error.reason)], node_id=NODE_ID)
    return records_to_batch([dead_letter(message, error.reason, NODE_ID)])


def file_messages(settings: Settings, file: str) -> Iterator[Message]:
    """The messages of one file, in order (what a typed read samples its schema from);
    bytes that are no message, and a file that cannot be read, give none."""
    fmt_type = type(settings.open_format())
    try:
        with open_input(file) as stream:
            for item in read_messages(stream, fmt_type, kv=settings.kv, source=file):
                if isinstance(item, Message):
                    yield item
    except (OSError, EOFError, zlib.error):
        return


def _every_message(settings: Settings, files: Sequence[str]) -> Iterator[Message]:
    for file in files:
        yield from file_messages(settings, file)


def read_file(
    settings: Settings, file: str, typed: TypedDebeziumDecoder | None = None
) -> Iterator[pa.RecordBatch]:
    """OpenCDC (or typed) Arrow batches of one file, at most ``batch_size`` messages each.

    An unreadable file (gone, a broken gzip stream) is an ``OSError`` naming it.
    """
    try:
        yield from _read_file(settings, file, typed)
    except (OSError, EOFError, zlib.error) as exc:
        reason = f"cannot read {printable(file)}: {exc}"
        if settings.fail_fast:
            raise OSError(f"{NAME}: {reason}") from exc
        # The rest of the file is a dead letter (its bytes as they are, when it can be
        # read at all): one bad file does not stop the read of the others.
        yield _broken(CodecError(reason, where=printable(file), data=raw_bytes(file)), file, typed)


def raw_bytes(file: str) -> bytes:
    """The bytes of a file that failed to read, for its dead letter (if it is still there)."""
    try:
        with open(file, "rb") as stream:
            return stream.read(_MAX_DEAD_FILE)
    except OSError:
        return b""


def _read_file(
    settings: Settings, file: str, typed: TypedDebeziumDecoder | None
) -> Iterator[pa.RecordBatch]:
    fmt = settings.open_format()
    chunk: list[Message] = []
    with open_input(file) as stream:
        for item in read_messages(stream, type(fmt), kv=settings.kv, source=file):
            if isinstance(item, CodecError):
                if chunk:  # an earlier bad message is the first error
                    yield from _nonempty(decode_chunk(fmt, chunk, settings.fail_fast, typed))
                    chunk = []
                if settings.fail_fast:
                    raise FailFastError(str(item)) from None
                yield _broken(item, file, typed)
                continue
            chunk.append(item)
            if len(chunk) >= settings.batch_size:
                yield from _nonempty(decode_chunk(fmt, chunk, settings.fail_fast, typed))
                chunk = []
    if chunk:
        yield from _nonempty(decode_chunk(fmt, chunk, settings.fail_fast, typed))


def _nonempty(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    if batch.num_rows:
        yield batch


class FilesReader(DataSourceReader):
    """Batch read: one partition per file."""

    def __init__(self, settings: Settings, typed: TypedDebeziumDecoder | None = None):
        self.settings = settings
        self.typed = typed
        self.files = list_files(settings.path)

    def partitions(self) -> Sequence[InputPartition]:
        return [FilePartition(file) for file in self.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, FilePartition):
            return iter(())  # no file to read: Spark's placeholder partition, 0 rows
        return guarded(read_file(self.settings, partition.file, self.typed))


class FilesStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming read: the files not read yet, by name; the offset lists those read."""

    def __init__(self, settings: Settings, typed: TypedDebeziumDecoder | None = None):
        self.settings = settings
        self.typed = typed
        list_files(settings.path, must_exist=not glob.has_magic(settings.path))
        self.target: frozenset[str] | None = None

    def initialOffset(self) -> dict[str, Any]:
        return {"files": []}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.settings.max_files is not None:
            return ReadMaxFiles(self.settings.max_files)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = frozenset(list_files(self.settings.path, must_exist=False))

    def _new_files(self, seen: Sequence[str]) -> list[str]:
        known = set(seen)
        listed = list_files(self.settings.path, must_exist=False)
        return [f for f in listed if f not in known and (self.target is None or f in self.target)]

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        new = self._new_files(start["files"])
        if isinstance(limit, ReadMaxFiles):
            new = new[: limit.max_files]
        if not new:
            return start
        return {"files": sorted([*start["files"], *new])}

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        seen = set(start["files"])
        return [FilePartition(f) for f in end["files"] if f not in seen]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, FilePartition):
            return iter(())  # no file to read: Spark's placeholder partition, 0 rows
        return guarded(read_file(self.settings, partition.file, self.typed))


# --------------------------------------------------------------------------- the source


class FilesDataSource(DataSource):
    """Files of change messages: ``spark.read.format("cdc-files")`` (module docstring)."""

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        self.settings = Settings.parse(options)

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        try:
            return typed_schema(self._typed()) if self.settings.typed else OPENCDC_SCHEMA
        except _REFUSALS as refused:  # one frame and one line for the user
            raise bare(refused) from None

    def _typed(self) -> TypedDebeziumDecoder:
        """The typed decoder: the collection's schema, from the files' first messages
        (driver side; module docstring)."""
        found: TypedDebeziumDecoder | None = getattr(self, "_decoder", None)
        if found is None:
            settings = self.settings
            files = list_files(settings.path, must_exist=False)
            found = typed_read_decoder(
                settings.open_format(),
                bounded_samples(file_messages(settings, file) for file in files),
                connector=NAME,
                collection=settings.collection,
                more=_every_message(settings, files),
            )
            self._decoder = found
        return found

    def reader(self, schema: StructType) -> DataSourceReader:
        try:
            self.settings.refuse(_WRITE_ONLY, "reading")
            self.settings.open_format()
            return FilesReader(self.settings, self._typed() if self.settings.typed else None)
        except _REFUSALS as refused:
            raise bare(refused) from None

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return stream_reader(self._stream_reader)

    def _stream_reader(self) -> DataSourceStreamReader:
        self.settings.refuse(_WRITE_ONLY, "reading")
        self.settings.open_format()
        return FilesStreamReader(self.settings, self._typed() if self.settings.typed else None)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        from cdc_connectors.connectors.files_write import FilesWriter

        try:
            self.settings.refuse(_READ_ONLY, "writing")
            return FilesWriter(
                self.settings, schema, overwrite, self.options.get("checkpointLocation")
            )
        except _REFUSALS as refused:
            raise bare(refused) from None

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        from cdc_connectors.connectors.files_write import FilesStreamWriter

        try:
            self.settings.refuse(_READ_ONLY, "writing")
            if overwrite:
                raise SettingError(
                    f"{NAME} streaming writes append; complete mode is not supported"
                )
            return FilesStreamWriter(self.settings, schema, self.options.get("checkpointLocation"))
        except _REFUSALS as refused:
            raise bare(refused) from None
