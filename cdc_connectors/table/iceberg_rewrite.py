"""One OVERWRITE snapshot of an Iceberg table, its data files rewritten a batch at a time.

Each data file that may hold a row that goes (the scan's own pruning by the files' column
statistics) is read first in its key columns alone; a file none of whose rows goes stays.
The others are read a row group at a time, their columns found by Iceberg field id (a column
added after the file was written is null; a widened one is cast), and their rows that stay
written again in data files of at most :data:`CHUNK_BYTES` of Arrow data each, by pyiceberg's
own writer (its field ids, statistics and file names). A file with delete files (another
writer's merge-on-read), or whose columns cannot be matched so, is read by pyiceberg's reader
whole instead, which applies them. The new rows are added; the snapshot carries the
stream's transaction properties. (pyiceberg's own ``overwrite`` commits a delete snapshot and
then an append: a reader of the first would see the keys' rows gone.)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cdc_connectors.table import folding
from cdc_connectors.table.batches import ROW_GROUP, read_one
from cdc_connectors.table.batches import conformed as to_table
from cdc_connectors.table.layout import plain, plain_schema

__all__ = ["CHUNK_BYTES", "overwrite_once", "rows_where"]

#: Arrow bytes of kept rows gathered before they are written as one data file (a file larger
#: than that is rewritten as several).
CHUNK_BYTES = 16 * 1024 * 1024
_FIELD_ID = b"PARQUET:field_id"
#: Bytes of a column read at once (else a column's whole chunk of a row group is read).
_READ_BUFFER = 1024 * 1024

Goes = Callable[[pa.RecordBatch], np.ndarray]


def overwrite_once(
    table: Any,
    overwrite: Any,
    goes: Goes,
    goes_reads: list[str],
    written: pa.Table,
    properties: dict[str, str],
) -> None:
    """One OVERWRITE snapshot of ``table``: each data file holding a row ``goes`` takes
    (of those the filter ``overwrite`` may hold) rewritten without it, and ``written``
    added. ``goes`` is given batches of the columns ``goes_reads`` first."""
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    tasks = list(table.scan(row_filter=overwrite).plan_files())
    if not tasks and written.num_rows == 0:
        return
    with table.transaction() as transaction:
        metadata = transaction.table_metadata
        arrow = metadata.schema().as_arrow()
        counter = itertools.count(0)
        with transaction.update_snapshot(snapshot_properties=properties).overwrite() as snapshot:

            def add(rows: pa.Table) -> None:
                for data_file in _dataframe_to_data_files(
                    table_metadata=metadata,
                    df=rows.select(arrow.names).cast(arrow),
                    io=table.io,
                    write_uuid=snapshot.commit_uuid,
                    counter=counter,
                ):
                    snapshot.append_data_file(data_file)

            def rewritten(task: Any, stays: Goes) -> None:
                """The file's rows ``stays`` takes in new files of up to
                :data:`CHUNK_BYTES` each."""
                snapshot.delete_data_file(task.file)
                held: list[pa.RecordBatch] = []
                for batch in _rows(table, metadata, task):
                    kept = batch.filter(pa.array(stays(batch)))
                    if kept.num_rows:
                        held.append(kept)
                    if sum(b.nbytes for b in held) >= CHUNK_BYTES:
                        add(pa.Table.from_batches(held))
                        held = []
                if held:
                    add(pa.Table.from_batches(held))

            replaced = set()
            for task in tasks:
                if not any(goes(b).any() for b in _rows(table, metadata, task, goes_reads)):
                    continue  # no row of the file goes: it stays as it is
                rewritten(task, lambda batch: ~goes(batch))
                replaced.add(task.file.file_path)
            folded = _to_fold(table, replaced)
            if folded:  # small files, folded into one
                fold = _StreamedFile(table, metadata, snapshot.commit_uuid, next(counter))
                for task in folded:
                    snapshot.delete_data_file(task.file)
                    for batch in _rows(table, metadata, task):
                        fold.write(batch)
                snapshot.append_data_file(fold.close())
            if written.num_rows:
                add(written)


def _to_fold(table: Any, replaced: set[str]) -> list[Any]:
    """The small data files a batch folds (:mod:`.folding`), none it ``replaced``; the
    table's files are listed only once it holds enough of them for that (and never for a
    partitioned table, whose files one file cannot hold)."""
    snapshot = table.current_snapshot()
    total = int((snapshot.summary or {}).get("total-data-files", 0)) if snapshot else 0
    if total - len(replaced) < folding.FOLD_AT or not table.spec().is_unpartitioned():
        return []
    tasks = list(table.scan().plan_files())
    sizes = [task.file.file_size_in_bytes for task in tasks]
    taken = np.array([task.file.file_path in replaced for task in tasks], dtype=bool)
    return [tasks[i] for i in folding.to_fold(sizes, taken)]


class _StreamedFile:
    """One data file written a batch at a time by pyiceberg's own file writer (its field
    ids, name and statistics, as its ``write_file`` makes them), so that rows of any number
    of files become one file without being held together."""

    def __init__(self, table: Any, metadata: Any, write_uuid: Any, task_id: int):
        from pyiceberg.io.fileformat import FileFormatFactory
        from pyiceberg.io.pyarrow import pyarrow_to_schema
        from pyiceberg.manifest import FileFormat
        from pyiceberg.schema import sanitize_column_names
        from pyiceberg.table import TableProperties
        from pyiceberg.table.locations import load_location_provider

        properties = metadata.properties
        self.metadata = metadata
        self.format = FileFormat(
            properties.get(
                TableProperties.WRITE_FILE_FORMAT, TableProperties.WRITE_FILE_FORMAT_DEFAULT
            )
        )
        self.model = FileFormatFactory.get(self.format)
        schema = metadata.schema()
        self.file_schema = sanitize_column_names(schema)
        self.arrow = schema.as_arrow()
        self.batch_schema = pyarrow_to_schema(
            self.arrow,
            name_mapping=schema.name_mapping,
            format_version=metadata.format_version,
        )
        provider = load_location_provider(metadata.location, properties)
        self.path = provider.new_data_location(
            f"00000-{task_id}-{write_uuid}.{self.model.file_extension()}"
        )
        self.output = table.io.new_output(self.path)
        self.writer = self.model.create_writer(self.output, self.file_schema, properties)

    def write(self, batch: pa.RecordBatch) -> None:
        from pyiceberg.io.pyarrow import _to_requested_schema

        batch = pa.Table.from_batches([batch]).select(self.arrow.names).cast(self.arrow)
        for part in batch.to_batches():
            written = _to_requested_schema(
                requested_schema=self.file_schema,
                file_schema=self.batch_schema,
                batch=part,
                include_field_ids=True,
                format_model=self.model,
            )
            self.writer.write(pa.Table.from_batches([written]))

    def close(self) -> Any:
        """The file's :class:`pyiceberg.manifest.DataFile`."""
        from pyiceberg.manifest import DataFile, DataFileContent
        from pyiceberg.typedef import Record

        statistics = self.writer.close()
        return DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=self.path,
            file_format=self.format,
            partition=Record(),
            file_size_in_bytes=len(self.output),
            sort_order_id=None,
            spec_id=self.metadata.default_spec_id,
            equality_ids=None,
            key_metadata=None,
            **statistics.to_serialized_dict(),
        )


def rows_where(table: Any, row_filter: Any, keep: Goes, columns: list[str]) -> pa.Table:
    """The rows ``keep`` takes (given ``columns``, plain types) of the data files
    ``row_filter`` may hold (pyiceberg's pruning by the files' statistics), read a batch at
    a time: what is held is the rows kept."""
    metadata = table.metadata
    wanted = pa.schema([plain_schema(metadata.schema().as_arrow()).field(n) for n in columns])
    kept = []
    for task in table.scan(row_filter=row_filter).plan_files():
        for batch in _rows(table, metadata, task, columns):
            found = batch.filter(pa.array(keep(batch)))
            if found.num_rows:
                kept.append(found)
    return pa.Table.from_batches(kept, wanted) if kept else wanted.empty_table()


def _rows(
    table: Any, metadata: Any, task: Any, columns: list[str] | None = None
) -> Iterator[pa.RecordBatch]:
    """A data file's rows in the table's current columns (only ``columns``, if given),
    plain types: a batch at a time, or whole through pyiceberg's reader."""
    schema = metadata.schema()
    wanted = plain_schema(schema.as_arrow())
    if columns is not None:
        wanted = pa.schema([wanted.field(n) for n in columns])
    if not task.delete_files:
        with table.io.new_input(task.file.file_path).open() as source:
            data = pq.ParquetFile(source, pre_buffer=False, buffer_size=_READ_BUFFER)
            names = _by_field_id(data.schema_arrow, schema, wanted)
            if names is not None:
                # batch by batch within a row group (pyiceberg writes groups of a million rows)
                given = False
                for read in data.iter_batches(ROW_GROUP, columns=sorted(set(names.values()))):
                    read_one()
                    conformed = to_table(pa.Table.from_batches([read]), wanted, names)
                    if conformed is None and given:  # (a file's types are the same throughout)
                        raise pa.ArrowInvalid(f"{task.file.file_path}: a column does not cast")
                    if conformed is None:
                        break  # a type no cast gives: read whole below
                    given = True
                    yield conformed
                else:
                    return
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    projected = schema if columns is None else schema.select(*columns)
    whole = plain(ArrowScan(metadata, table.io, projected, AlwaysTrue()).to_table([task]))
    yield from whole.select(wanted.names).cast(wanted).to_batches()


def _by_field_id(file: pa.Schema, schema: Any, wanted: pa.Schema) -> dict[str, str] | None:
    """The file's column of each wanted column the file holds (by Iceberg field id), or
    ``None`` when the file's columns carry no field ids."""
    ids: dict[int, str] = {}
    for field in file:
        found = (field.metadata or {}).get(_FIELD_ID)
        if found is None:
            return None
        ids[int(found)] = field.name
    names = {}
    for name in wanted.names:
        field_id = schema.find_field(name).field_id
        if field_id in ids:
            names[name] = ids[field_id]
            if not _alike_inside(file.field(ids[field_id]).type, wanted.field(name).type):
                return None  # nested names the file spells otherwise: pyiceberg's reader
    return names


def _alike_inside(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether every field nested in ``found`` has its name in ``wanted`` (a cast matches a
    struct's fields by name: a name written sanitized, ``a_x2Db`` for ``a-b``, would be
    read as null; a field ``wanted`` has and the file not, added since, is null)."""
    if pa.types.is_struct(found) and pa.types.is_struct(wanted):
        names = {f.name: f.type for f in wanted}
        return all(f.name in names and _alike_inside(f.type, names[f.name]) for f in found)
    lists = (pa.types.is_list(t) or pa.types.is_large_list(t) for t in (found, wanted))
    if all(lists):
        return _alike_inside(found.value_type, wanted.value_type)
    if pa.types.is_map(found) and pa.types.is_map(wanted):
        return _alike_inside(found.key_type, wanted.key_type) and _alike_inside(
            found.item_type, wanted.item_type
        )
    return True
