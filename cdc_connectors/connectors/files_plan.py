"""The plan of a ``cdc-files`` read as rows (``cdc-files-plan``), and a file's raw messages.

Each row is one file the ``cdc-files`` source with the same settings would read: ``file``,
batch or streaming (the files a micro-batch adds, kept in the checkpoint as that source keeps
them). A task given a row reads the file itself with :func:`raw_batches`: its messages as
they are, each placed ``file:line`` (or ``file: message N, byte B``), not decoded. A pipeline
that reads, converts and writes in one task reads this source
(:mod:`cdc_connectors.pipeline.in_task`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StringType, StructField, StructType

from cdc_connectors.connectors.arrow_bytes import binary_array
from cdc_connectors.connectors.errors import bare
from cdc_connectors.connectors.files import (
    NAME,
    FilePartition,
    FilesDataSource,
    FilesReader,
    FilesStreamReader,
    Settings,
    open_input,
    raw_bytes,
)
from cdc_connectors.connectors.messages import SettingError
from cdc_connectors.convert.kv_columns import UNCHECKED, ValueChecks
from cdc_connectors.convert.line_chunks import LineChunk, line_chunks
from cdc_connectors.convert.streams import CHUNK_BYTES, Chunk, layout_of, read_chunks
from cdc_connectors.opencdc import CodecError
from cdc_connectors.text import encodes, printable

__all__ = ["PLAN_SCHEMA", "FilesPlanDataSource", "files_of", "raw_batches"]

PLAN_SCHEMA = StructType([StructField("file", StringType(), False)])
_ARROW = pa.schema([pa.field("file", pa.string(), False)])
#: A file's messages as they are: key, value and place.
RAW_ARROW = pa.schema(
    [pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("place", pa.string())]
)


class FilesPlanDataSource(FilesDataSource):
    """The files a ``cdc-files`` read with these settings would read; read only."""

    @classmethod
    def name(cls) -> str:
        return f"{NAME}-plan"

    def schema(self) -> StructType:
        if self.settings.typed:
            raise bare(SettingError(f"{self.name()}: typed reads are not planned as files"))
        return PLAN_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        planned = super().reader(schema)
        assert isinstance(planned, FilesReader)
        return PlanReader(planned.settings)

    def _stream_reader(self) -> DataSourceStreamReader:
        planned = super()._stream_reader()
        assert isinstance(planned, FilesStreamReader)
        return PlanStreamReader(planned.settings)


class PlanReader(FilesReader):
    """A batch read's files, one row per task."""

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _row(partition)


class PlanStreamReader(FilesStreamReader):
    """A micro-batch's new files, one row per task."""

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _row(partition)


def _row(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    if isinstance(partition, FilePartition):  # else Spark's placeholder of an empty plan
        yield pa.RecordBatch.from_pylist([{"file": partition.file}], schema=_ARROW)


def files_of(batch: pa.RecordBatch) -> Sequence[str]:
    """The files of a batch of this source's rows."""
    return [str(file) for file in batch.column("file").to_pylist()]


def raw_batches(
    settings: Settings, file: str, checks: ValueChecks | None = None
) -> Iterator[pa.RecordBatch | CodecError]:
    """The messages of ``file`` in batches of at most ``maxRecordsPerBatch``, bytes as they
    are (:data:`RAW_ARROW`); bytes that are no message, and the rest of a file that cannot be
    read, as a :class:`CodecError` carrying them (a dead letter, as ``cdc-files`` makes).
    Where ``checks`` says so, the values of kv lines of a text format are left
    unchecked (:func:`~cdc_connectors.convert.kv_columns.kv_columns`), and each batch of
    them says so (its schema's metadata is :data:`~cdc_connectors.convert.kv_columns.
    UNCHECKED`)."""
    fmt = type(settings.open_format())
    try:
        with open_input(file) as stream:
            size = settings.batch_size
            layout = layout_of(fmt, settings.kv)
            if (layout == "lines" or (layout == "kv" and not fmt.binary)) and encodes(file):
                # one message per line (or kv line of text): straight into Arrow columns
                for lines in line_chunks(stream, file, size, CHUNK_BYTES):
                    if layout == "kv":
                        lines = lines.split_kv(checks)
                    for row in sorted(lines.errors):  # no kv line; a line too long
                        error = lines[row]
                        assert isinstance(error, CodecError)
                        yield error
                    yield _lines_batch(lines)
                return
            for chunk in read_chunks(stream, fmt, kv=settings.kv, source=file, size=size):
                yield chunk if isinstance(chunk, CodecError) else _batch(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        # as cdc-files reads it: the rest of the file is the dead letter
        reason = f"cannot read {printable(file)}: {exc}"
        yield CodecError(reason, where=printable(file), data=raw_bytes(file))


def _lines_batch(lines: LineChunk) -> pa.RecordBatch:
    values, keys, places = lines.without_errors()
    return pa.RecordBatch.from_arrays(
        [
            pa.nulls(len(values), pa.binary()) if keys is None else keys,
            values,
            places.cast(pa.string()),
        ],
        schema=RAW_ARROW if lines.unchecked is None else RAW_ARROW.with_metadata(UNCHECKED),
    )


def _batch(chunk: Chunk) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            binary_array(chunk.keys),
            binary_array(chunk.values),
            pa.array(chunk.places, pa.string()),
        ],
        schema=RAW_ARROW,
    )
