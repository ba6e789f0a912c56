"""The table connector: change streams applied to Delta Lake and Iceberg tables, and read back.

Spark name ``cdc-table`` (:class:`TableDataSource`): batch and streaming writes of OpenCDC
records (any source, any format) as a table that mirrors the source database, and batch
reads of that table (a snapshot, now or at a version or time) for users without the Delta
or Iceberg JVM jars. No jars at all: Delta through ``deltalake`` (delta-rs), Iceberg through
``pyiceberg``.

```python
df = spark.read.format("cdc-files").option("format", "debezium-json").load("in/")
df.write.format("cdc-table").mode("append").save("tables/orders")          # Delta
spark.read.format("cdc-table").load("tables/orders").show()
```

| setting | default | meaning |
|---|---|---|
| ``path`` | required | the Delta table's directory, or the Iceberg warehouse |
| ``format`` | ``delta`` | ``delta`` or ``iceberg`` |
| ``table`` | ``cdc.<last part of path>`` | Iceberg: the table, ``namespace.name`` |
| ``catalog.<property>`` | SQLite in ``<path>/catalog.db`` | Iceberg: a pyiceberg catalog property |
| ``keyColumns`` | the record key's fields | the table's primary key, ``id,region`` |
| ``mode`` | ``upsert`` | ``upsert``: a row per key; ``history``: every version of a row |
| ``deletes`` | ``hard`` | ``hard`` removes the row; ``soft`` keeps it, ``_cdc_deleted`` true |
| ``orderBy`` | ``auto`` | the log's order, else the position's, else arrival (``table.order``) |
| ``collection`` | all | only records of this ``opencdc.collection`` (a stream of several tables) |
| ``registry`` | none | schema registry URL: columns typed by the records' registered schemas |
| ``deadLetters`` | ``<path>/_cdc_dead_letters`` | where refused records go (OpenCDC JSON lines) |
| ``txnAppId``, ``txnVersion`` | none | batch write as one micro-batch of a stream (pipelines) |
| ``versionAsOf`` / ``timestampAsOf`` | latest | read: the Delta version, or the table at a time |
| ``snapshotId`` / ``timestampAsOf`` | latest | read: the Iceberg snapshot, or the table at a time |

**Writing.** Input rows are the OpenCDC layout (what the ``cdc-files`` and ``cdc-kafka``
sources read), or messages whose ``value`` is an OpenCDC JSON record (what a pipeline hands
over). Each write (a batch job, a micro-batch) is one table transaction. The semantics
(keys, last change wins by order, partial images, soft deletes, history, schema evolution)
are :mod:`cdc_connectors.table`'s. A streaming micro-batch commits with the query's
transaction (``txnAppId``: ``cdc-table:`` and the query's id, kept in its checkpoint;
``txnVersion``: the batch id), so a micro-batch replayed after a crash changes nothing.

**Reading.** The table's rows as they are in the snapshot read, with their bookkeeping
columns (``_cdc_stream``, ``_cdc_offset``, and ``_cdc_deleted``... in those modes). One task
per data file.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from cdc_connectors.connectors.errors import ConnectorError, bare
from cdc_connectors.connectors.files_owner import owner_of
from cdc_connectors.connectors.messages import SettingError
from cdc_connectors.connectors.table_settings import NAME, Settings
from cdc_connectors.connectors.table_write import (
    Committed,
    TableCommitMessage,
    commit_changes,
    is_record_layout,
    say,
    write_task,
)
from cdc_connectors.errors import CdcError
from cdc_connectors.table.layout import plain_schema
from cdc_connectors.table.store import Txn

__all__ = ["NAME", "TableDataSource", "table_app_id"]


def _spark_types(schema: pa.Schema) -> pa.Schema:
    """The Arrow types Spark takes from a data source (plain text, ``us`` UTC timestamps)."""
    fields = []
    for field in plain_schema(schema):
        datatype = field.type
        if pa.types.is_timestamp(datatype) and datatype.tz is not None:
            datatype = pa.timestamp("us", tz="UTC")
        elif pa.types.is_timestamp(datatype):
            datatype = pa.timestamp("us")
        fields.append(pa.field(field.name, datatype, True))
    return pa.schema(fields)


class TableDataSource(DataSource):
    """``cdc-table``: OpenCDC records applied to a Delta or Iceberg table (module docstring)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        try:
            self.settings = Settings.parse(options)
        except SettingError as refused:
            raise bare(refused) from None

    # ------------------------------------------------------------------ reading

    def _snapshot(self) -> tuple[pa.Schema, list[str] | None, int | None]:
        """The table as read: its Arrow schema, and its files (Delta) or snapshot
        (Iceberg)."""
        s = self.settings
        try:
            if s.format == "delta":
                from deltalake import DeltaTable

                if not DeltaTable.is_deltatable(os.path.abspath(s.path)):
                    raise SettingError(f"{NAME} setting 'path': no Delta table at {s.path!r}")
                table = DeltaTable(os.path.abspath(s.path))
                try:
                    if s.version_as_of is not None and s.version_as_of > table.version():
                        raise SettingError(
                            f"{NAME} setting 'versionAsOf': the table's latest version is "
                            f"{table.version()}, not {s.version_as_of}"
                        )
                    if s.version_as_of is not None:
                        table.load_as_version(s.version_as_of)
                    elif s.timestamp_as_of is not None:
                        at = dt.datetime.fromisoformat(s.timestamp_as_of)
                        if at.tzinfo is None:
                            at = at.replace(tzinfo=dt.UTC)
                        first = min(c.get("timestamp", 0) for c in table.history())
                        if at.timestamp() * 1000 < first:
                            raise SettingError(
                                f"{NAME} setting 'timestampAsOf': the table did not exist at {at}"
                            )
                        table.load_as_version(at)
                except Exception as exc:  # deltalake's: no such version, a time before all
                    if isinstance(exc, ValueError) and not type(exc).__name__.startswith("Delta"):
                        raise  # (a SettingError of ours too)
                    which = "versionAsOf" if s.version_as_of is not None else "timestampAsOf"
                    raise SettingError(
                        f"{NAME} setting {which!r}: {' '.join(str(exc).split())}"
                    ) from None
                schema = pa.schema(table.schema().to_arrow())
                return _spark_types(schema), table.file_uris(), None
            if s.fresh_warehouse():  # (opening the catalog would make its file)
                raise SettingError(f"{NAME} setting 'path': no Iceberg warehouse at {s.path!r}")
            iceberg = s.iceberg().table()
            if iceberg is None:
                raise SettingError(f"{NAME} setting 'table': no Iceberg table {s.table!r}")
            snapshot = s.snapshot_id
            if snapshot is not None and iceberg.snapshot_by_id(snapshot) is None:
                raise SettingError(
                    f"{NAME} setting 'snapshotId': the table has no snapshot {snapshot}"
                )
            if snapshot is None and s.timestamp_as_of is not None:
                at = dt.datetime.fromisoformat(s.timestamp_as_of)
                found = iceberg.snapshot_as_of_timestamp(int(at.timestamp() * 1000))
                if found is None:
                    raise SettingError(f"{NAME} setting 'timestampAsOf': no snapshot by {at}")
                snapshot = found.snapshot_id
            if snapshot is None and iceberg.current_snapshot() is not None:
                snapshot = iceberg.current_snapshot().snapshot_id
            schema = _spark_types(iceberg.schema().as_arrow())
            return schema, _iceberg_files(iceberg, snapshot), snapshot
        except (ValueError, OSError) as exc:
            if isinstance(exc, CdcError):
                raise
            raise SettingError(f"{NAME}: cannot read {s.path!r}: {exc}") from None

    def schema(self) -> StructType:
        try:
            self.settings.refuse_writing_settings()
            arrow, _, _ = self._snapshot()
        except SettingError as refused:
            raise bare(refused) from None
        return from_arrow_schema(arrow)

    def reader(self, schema: StructType) -> DataSourceReader:
        try:
            arrow, files, snapshot = self._snapshot()
        except SettingError as refused:
            raise bare(refused) from None
        return TableReader(self.settings, arrow, files, snapshot)

    # ------------------------------------------------------------------ writing

    def _writable(self, schema: StructType, overwrite: bool, why_not_overwrite: str) -> None:
        """A setting for reading, an overwrite, rows that are no records, or a table that
        does not open, refused in one line."""
        try:
            self.settings.refuse_reading_settings()
            if overwrite:
                raise SettingError(f"{NAME} {why_not_overwrite}")
            if not is_record_layout(schema) and "value" not in schema.fieldNames():
                raise SettingError(
                    f"{NAME} writes OpenCDC records: rows of the OpenCDC layout (position, "
                    "operation, payload, ...) or messages with a 'value' column of OpenCDC "
                    f"JSON, not columns {', '.join(schema.fieldNames()[:6]) or 'none'}"
                )
            self.settings.check_table()
        except SettingError as refused:
            raise bare(refused) from None

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        self._writable(
            schema,
            overwrite,
            "applies changes (mode append); to start over, write to a new path",
        )
        return TableWriter(self.settings.keyed(), is_record_layout(schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        self._writable(schema, overwrite, "streaming writes append; complete mode is not supported")
        options = {k.lower(): v for k, v in self.options.items()}
        checkpoint = options.get("checkpointlocation")
        app = self.settings.txn_app_id or table_app_id(checkpoint or self.settings.path, NAME)
        return TableStreamWriter(self.settings.keyed(), is_record_layout(schema), app)


def _iceberg_files(iceberg: Any, snapshot: int | None) -> list[str] | None:
    """The data files of an Iceberg snapshot, a task each; ``None`` (one task through
    pyiceberg) when a file has delete files to apply (another writer's merge-on-read)."""
    if snapshot is None:
        return []
    tasks = list(iceberg.scan(snapshot_id=snapshot).plan_files())
    if any(task.delete_files for task in tasks):
        return None
    return [task.file.file_path for task in tasks]


def table_app_id(checkpoint: str, kind: str) -> str:
    """The application id of a streaming query's table transactions: its query's id, kept
    in its checkpoint (a checkpoint deleted and made anew is a new query, whose batches
    count from 0 again and must not pass for replays of the old one's), else the
    checkpoint's path."""
    owner = owner_of(checkpoint)
    if owner is not None and owner.query:
        return f"{kind}:{owner.query}"
    return f"{kind}:{os.path.abspath(checkpoint)}"


class _Part(InputPartition):
    def __init__(self, index: int, file: str | None):
        super().__init__(index)
        self.file = file


class TableReader(DataSourceReader):
    """A snapshot of the table: one task per data file (an Iceberg snapshot with delete
    files: one task, through pyiceberg)."""

    def __init__(
        self, settings: Settings, schema: pa.Schema, files: list[str] | None, snapshot: int | None
    ):
        self.settings, self.arrow, self.files, self.snapshot = settings, schema, files, snapshot

    def partitions(self) -> list[InputPartition]:
        if self.files is None:
            return [_Part(0, None)]
        return [_Part(i, f) for i, f in enumerate(self.files)] or [_Part(0, None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:

        assert isinstance(partition, _Part)
        if self.files is None:
            iceberg = self.settings.iceberg().table()
            if self.snapshot is None:
                return
            table = iceberg.scan(snapshot_id=self.snapshot).to_arrow()
        elif partition.file is None:
            return
        else:
            table = _read_file(partition.file, self.arrow)
        for field in self.arrow:  # a column added after the snapshot read: nulls in it
            if field.name not in table.column_names:
                table = table.append_column(field.name, pa.nulls(table.num_rows, field.type))
        table = table.select(self.arrow.names).cast(self.arrow)
        yield from table.to_batches(max_chunksize=10_000)


def _read_file(uri: str, schema: pa.Schema) -> pa.Table:
    """A data file's rows (a path, or a URI: ``file://``, ``s3://``)."""
    import pyarrow.dataset as ds
    from pyarrow import fs

    where, path = fs.FileSystem.from_uri(uri) if "://" in uri else (None, uri)
    return ds.dataset([path], schema=schema, format="parquet", filesystem=where).to_table()


class _TaskWrite:
    """A write's task: its rows as changes, in its commit message."""

    settings: Settings
    records_layout: bool

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TableCommitMessage:
        try:
            return write_task(self.settings, self.records_layout, iterator)
        except ConnectorError as failure:
            raise bare(failure) from None


class TableWriter(_TaskWrite, DataSourceArrowWriter):
    """Batch write: one table transaction for the job."""

    def __init__(self, settings: Settings, records_layout: bool):
        self.settings, self.records_layout = settings, records_layout
        self.committed: Committed | None = None  # what the commit did (in this process)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        s = self.settings
        txn = (
            Txn(s.txn_app_id, s.txn_version) if s.txn_app_id and s.txn_version is not None else None
        )
        self.committed = _commit(s, messages, txn)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        return None  # nothing was written: the tasks' changes were in their messages


class TableStreamWriter(_TaskWrite, DataSourceStreamArrowWriter):
    """Streaming write: each micro-batch one table transaction, exactly once."""

    def __init__(self, settings: Settings, records_layout: bool, app_id: str):
        self.settings, self.records_layout, self.app_id = settings, records_layout, app_id

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _commit(self.settings, messages, Txn(self.app_id, batchId))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None


#: A terminal colour of a library's message.
_NO_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def _library_failure(failure: Exception) -> str | None:
    """A table library's failure as one line for the user, or ``None`` for a bug."""
    name = type(failure).__name__
    text = " ".join(_NO_COLOURS.sub("", str(failure)).split())  # (delta-rs colours its chain)
    if name in ("CommitFailedError", "CommitFailedException", "CommitStateUnknownException"):
        return (
            "another writer changed the table while this batch was applied; nothing of the "
            f"batch was written (run it again): {text}"
        )
    if isinstance(failure, OSError):
        return f"cannot write the table: {failure.strerror or text}"
    if name in ("DeltaError", "DeltaProtocolError", "SchemaMismatchError"):
        return f"the Delta table refused the batch; nothing of it was written: {text}"
    return None


def _commit(
    settings: Settings, messages: list[WriterCommitMessage | None], txn: Txn | None
) -> Committed:
    try:
        done = commit_changes(settings, messages, txn)
    except SettingError as refused:  # a setting the records show wrong: one line, exit 2
        raise bare(refused) from None
    except CdcError as failure:
        raise bare(ConnectorError(f"{NAME}: {failure}")) from None
    except Exception as failure:
        reason = _library_failure(failure)
        if reason is None:
            raise
        raise bare(ConnectorError(f"{NAME}: {settings.path}: {reason}")) from None
    where = settings.path if settings.format == "delta" else f"{settings.path} ({settings.table})"
    say(done.line(where, settings.dead_letters, txn))
    return done
