"""Typed columns from schema-encoded keys and payloads, and back: on Arrow batches.

:func:`expand` turns an OpenCDC DataFrame whose key or payload is schema-encoded (Avro
bytes named by Conduit's metadata, or Avro, Protobuf or JSON Schema in Confluent's wire
format) into
typed columns of one subject's reader schema: the latest version when the call is made,
or a pinned one.
Every writer version of the subject is resolved into it (Avro schema resolution), so a
stream written by versions 1, 2 and 3 is one typed DataFrame. :func:`encode` writes
typed columns back as schema-encoded bytes.

Both run in ``mapInArrow``: each Arrow batch is grouped by writer schema and decoded
column by column (:mod:`cdc_connectors.spark.avro_decode`,
:mod:`~cdc_connectors.spark.avro_encode`), with no Python object per
row between the decoder and Arrow. Executors open the registry from its URL and cache
schemas by id.

Modes, as Spark's own readers name them: ``PERMISSIVE`` (default) keeps a bad row with
null data and the reason in the ``error`` column (which rows are bad: bytes that do not
decode, an unknown schema id, a writer schema that cannot be resolved to the reader);
``FAILFAST`` fails the job at the first bad row, naming its position and the reason.

Neither replaces a column of its input: a DataFrame that already has a column of the
output's names (``error``, say, when ``encode`` is given what ``expand`` gave) is refused
with one line naming it. Drop or rename that column, or pass ``error_column`` (and
``encode``'s ``output``) to name the new ones otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, DataType, StringType, StructField, StructType

from cdc_connectors.opencdc import CodecError
from cdc_connectors.registry import registry_for
from cdc_connectors.schema import avro_values, framing
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.subjects import Part
from cdc_connectors.spark.arrow_names import member
from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.avro_encode import AvroBatchEncoder
from cdc_connectors.spark.avro_types import arrow_type, avro_to_spark

if TYPE_CHECKING:
    from cdc_connectors.registry.store import Resolved, SchemaStore

__all__ = ["AvroColumnDecoder", "ProtobufColumnDecoder", "encode", "expand"]

Mode = Literal["PERMISSIVE", "FAILFAST"]
_MODES = ("PERMISSIVE", "FAILFAST")
ERROR_COLUMN = "error"


class AvroColumnDecoder:
    """Schema-encoded values of one subject -> one Arrow struct array of its reader schema."""

    def __init__(self, store: SchemaStore, reader: Resolved):
        self.store = store
        self.reader = reader
        self.spark_type = avro_to_spark(avro_values.standalone(reader))
        self.type = arrow_type(self.spark_type)
        self._decoders: dict[int, AvroBatchDecoder | str] = {}
        self._subject_ids: dict[int, bool] = {}

    def decode(
        self,
        values: Sequence[bytes | None],
        named: Sequence[tuple[str, int] | None] | None = None,
    ) -> tuple[pa.Array, list[str | None], list[bool]]:
        """Decode ``values``: Confluent-framed, or bare Avro where ``named`` gives the
        writer's subject and version (Conduit's framing).

        Returns the struct array (null where a value is null or bad), each row's error
        (or ``None``), and whether each row belongs to the reader's subject.
        """
        count = len(values)
        errors: list[str | None] = [None] * count
        mine = [True] * count
        single = None if named is not None else self._single_schema(values)
        if single is not None:
            return self._decode_group(single, values, errors, mine)
        groups: dict[int, tuple[Resolved, list[int], list[bytes], list[int]]] = {}
        for i, value in enumerate(values):
            if value is None:
                continue
            try:
                writer, offset = self._writer(value, named[i] if named is not None else None)
            except CodecError as exc:
                errors[i] = exc.reason
                continue
            if not self._of_subject(writer):
                mine[i] = False
                continue
            group = groups.setdefault(writer.schema_id, (writer, [], [], []))
            group[1].append(i)
            group[2].append(value)
            group[3].append(offset)
        parts: list[pa.Array] = []
        order: list[int] = []
        for writer, rows, messages, offsets in groups.values():
            decoder = self._decoder(writer)
            if isinstance(decoder, str):
                for i in rows:
                    errors[i] = decoder
                continue
            array, row_errors = decoder.decode(messages, offsets)
            for i, problem in zip(rows, row_errors, strict=True):
                if problem is not None:
                    errors[i] = problem
            parts.append(array)
            order.extend(rows)
        return _scatter(parts, order, count, self.type), errors, mine

    def _single_schema(self, values: Sequence[bytes | None]) -> Resolved | None:
        """The writer when every value starts with one v0 prefix (the common batch)."""
        if not values or not isinstance(values[0], bytes) or values[0][:1] != b"\x00":
            return None
        prefix = values[0][:5]
        try:
            if not all(map(bytes.startswith, values, repeat(prefix))):  # type: ignore[arg-type]
                return None
        except TypeError:  # a null value among them
            return None
        try:
            writer = self._writer(values[0], None)[0]
        except CodecError:
            return None
        return writer if writer.schema_type == "AVRO" and self._of_subject(writer) else None

    def _decode_group(
        self,
        writer: Resolved,
        values: Sequence[bytes | None],
        errors: list[str | None],
        mine: list[bool],
    ) -> tuple[pa.Array, list[str | None], list[bool]]:
        decoder = self._decoder(writer)
        if isinstance(decoder, str):
            return pa.nulls(len(values), self.type), [decoder] * len(values), mine
        array, problems = decoder.decode(values, [5] * len(values))  # type: ignore[arg-type]
        if any(problems):
            # Rows that failed hold placeholders: make them null in the struct.
            array = _nulled(array, problems)
        return array, list(problems), mine

    def _writer(self, value: bytes, named: tuple[str, int] | None) -> tuple[Resolved, int]:
        if named is not None:
            return self.store.by_version(*named), 0
        frame = framing.read_frame(value)
        return self.store.by_frame(frame), frame.offset

    def _of_subject(self, writer: Resolved) -> bool:
        if writer.subject is not None:
            return writer.subject == self.reader.subject
        found = self._subject_ids.get(writer.schema_id)
        if found is None:
            named = self.store.named(writer, self.reader.subject or "")
            found = self._subject_ids[writer.schema_id] = named.subject is not None
        return found

    def _decoder(self, writer: Resolved) -> AvroBatchDecoder | str:
        found = self._decoders.get(writer.schema_id)
        if found is None:
            found = self._new_decoder(writer)
            self._decoders[writer.schema_id] = found
        return found

    def _new_decoder(self, writer: Resolved) -> AvroBatchDecoder | str:
        """The decoder of a writer's rows, or why none of them can be read."""
        if writer.schema_type != "AVRO":
            return f"{writer.label()} is {writer.schema_type}, not Avro"
        try:
            reader = avro_values.standalone(self.reader)
            if writer.schema_id == self.reader.schema_id:
                return AvroBatchDecoder(reader)
            from cdc_connectors.registry.serde import resolution_problem

            problem = resolution_problem(writer, self.reader)
            if problem is None:
                return AvroBatchDecoder(avro_values.standalone(writer), reader)
        except (ValueError, SchemaError, CodecError) as exc:
            # Every row of this writer fails with the reason; the job goes on.
            return f"{writer.label()} cannot be read as {self.reader.label()}: {exc}"
        named = self.store.named(writer, self.reader.subject or "")
        return (
            f"written with {named.label()}, which cannot be read as "
            f"{self.reader.label()}: {problem}"
        )


class ProtobufColumnDecoder(AvroColumnDecoder):
    """Confluent-framed Protobuf values of one subject -> one Arrow struct array.

    Protobuf needs no schema resolution: every writer version's bytes parse with the
    reader version's message class, by field number. A value whose header names another
    message of the file than the reader's is an error row.
    """

    def __init__(self, store: SchemaStore, reader: Resolved, indexes: Sequence[int] = (0,)):
        from cdc_connectors.schema.protobuf import message_class
        from cdc_connectors.spark.protobuf_batch import ProtobufBatchDecoder

        self.store = store
        self.reader = reader
        self.indexes = tuple(indexes)
        self.batch = ProtobufBatchDecoder(
            message_class(reader.text, reader.references, self.indexes)
        )
        self.spark_type = self.batch.struct_type
        self.type = self.batch.arrow_type
        self._subject_ids: dict[int, bool] = {}

    def decode(
        self,
        values: Sequence[bytes | None],
        named: Sequence[tuple[str, int] | None] | None = None,
    ) -> tuple[pa.Array, list[str | None], list[bool]]:
        count = len(values)
        errors: list[str | None] = [None] * count
        mine = [True] * count
        rows: list[int] = []
        messages: list[bytes] = []
        offsets: list[int] = []
        for i, value in enumerate(values):
            if value is None:
                continue
            try:
                offset = self._offset(value, named[i] if named is not None else None, i, mine)
            except CodecError as exc:
                errors[i] = exc.reason
                continue
            if offset is not None:
                rows.append(i)
                messages.append(value)
                offsets.append(offset)
        if not rows:
            return pa.nulls(count, self.type), errors, mine
        array, problems = self.batch.decode(messages, offsets)
        for i, problem in zip(rows, problems, strict=True):
            if problem is not None:
                errors[i] = problem
        return _scatter([array], rows, count, self.type), errors, mine

    def _offset(
        self, value: bytes, named: tuple[str, int] | None, row: int, mine: list[bool]
    ) -> int | None:
        """Where the body starts, or ``None`` for a value of another subject."""
        frame_indexes: tuple[int, ...]
        if named is not None:
            writer, frame_indexes, offset = self.store.by_version(*named), (0,), 0
        else:
            frame = framing.read_frame(value, protobuf=True)
            writer = self.store.by_frame(frame)
            frame_indexes, offset = frame.indexes or (0,), frame.offset
        if writer.schema_type != "PROTOBUF":
            raise CodecError(f"{writer.label()} is {writer.schema_type}, not Protobuf")
        if not self._of_subject(writer):
            mine[row] = False
            return None
        if tuple(frame_indexes) != self.indexes:
            raise CodecError(
                f"the header names message {list(frame_indexes)} of {writer.label()}, "
                f"not the reader's message {list(self.indexes)}"
            )
        return offset


def _nulled(array: pa.Array, problems: Sequence[str | None]) -> pa.Array:
    """``array`` with the rows that have a problem null."""
    if array.null_count == sum(p is not None for p in problems):
        return array
    keep = pa.array([p is None for p in problems])
    return pc.if_else(keep, array, pa.nulls(len(array), array.type))


def _scatter(parts: list[pa.Array], order: list[int], count: int, type_: pa.DataType) -> pa.Array:
    """One array of ``count`` rows: row ``order[k]`` from the parts' k-th row, else null."""
    if not parts:
        return pa.nulls(count, type_)
    present = pa.concat_arrays([*parts, pa.nulls(1, type_)])
    missing = len(present) - 1
    take = [missing] * count
    for position, row in enumerate(order):
        take[row] = position
    return present.take(pa.array(take, pa.int64()))


def _column_decoder(store: SchemaStore, reader: Resolved) -> AvroColumnDecoder:
    """The column decoder for the reader schema's language."""
    if reader.schema_type == "PROTOBUF":
        return ProtobufColumnDecoder(store, reader)
    if reader.schema_type == "JSON":
        from cdc_connectors.spark.json_schema_decode import JsonSchemaColumnDecoder

        return JsonSchemaColumnDecoder(store, reader)
    if reader.schema_type != "AVRO":
        raise ValueError(
            f"{reader.label()} is {reader.schema_type}: expand reads Avro, Protobuf and JSON"
        )
    return AvroColumnDecoder(store, reader)


def _resolve_reader(store: SchemaStore, subject: str, reader: str | int) -> Resolved:
    if reader == "latest":
        return store.latest(subject)
    if isinstance(reader, int) and not isinstance(reader, bool):
        return store.by_version(subject, reader)
    raise ValueError(f"reader must be 'latest' or a version number, not {reader!r}")


def expand(
    df: DataFrame,
    registry: str,
    subject: str,
    *,
    part: Part = "payload",
    reader: str | int = "latest",
    mode: str = "PERMISSIVE",
    error_column: str = ERROR_COLUMN,
) -> DataFrame:
    """``df`` (the OpenCDC schema) with ``part`` decoded into typed columns of ``subject``.

    For ``part="payload"`` the result has ``before`` and ``after`` typed struct columns
    in place of ``payload``; for ``part="key"``, ``key`` becomes the typed struct. Rows
    whose data belongs to another subject are left out (several tables in one stream:
    expand once per subject); rows without data keep nulls. An ``error`` column (or
    ``error_column``) holds each row's problem in ``PERMISSIVE`` mode; a ``df`` that has
    a column of that name already (expanding the key of what expand gave) is a
    :class:`ValueError` naming it.
    """
    mode = _checked_arguments(df, registry, subject, part, mode, error_column)
    columns = [c for c in df.columns if c not in ("key", "payload")]
    other = "key" if part == "payload" else "payload"
    added: list[tuple[str, str | None]] = (
        [("before", None), ("after", None)] if part == "payload" else [("key", None)]
    )
    _refuse_taken(
        "expand",
        df,
        [*columns, *[c for c in df.columns if c == other]],
        [*added, (error_column, "error_column")],
    )
    store = _store(registry)
    resolved = _resolve_reader(store, subject, reader)
    typed = _column_decoder(store, resolved).spark_type
    out_schema = _expanded_schema(df.schema, columns, part, typed, error_column)
    subject_key = framing.CONDUIT_KEYS[part][0]
    # Conduit-framed rows of other subjects are left out here, cheaply, in the JVM.
    if "metadata" in df.columns:
        named = F.col("metadata").getItem(subject_key)
        df = df.where(named.isNull() | (named == F.lit(subject)))
    reader_id = (resolved.subject, resolved.version)
    fail_fast = mode == "FAILFAST"

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        local = _store(registry)
        assert reader_id[0] is not None and reader_id[1] is not None
        decoder = _column_decoder(local, local.by_version(reader_id[0], reader_id[1]))
        for batch in batches:
            yield _expand_batch(batch, decoder, part, out_schema, fail_fast, error_column)

    return df.mapInArrow(run, out_schema)


def _checked_arguments(
    df: DataFrame, registry: str, subject: str, part: Part, mode: str, error_column: str
) -> str:
    """The mode in upper case (Spark's modes are read in any case), once every argument of
    :func:`expand` is one it takes: a :class:`TypeError` or :class:`ValueError` naming the
    first that is not."""
    if not isinstance(df, DataFrame):
        raise TypeError(
            f"expand: df must be a DataFrame of OpenCDC records, not {type(df).__name__}"
        )
    for name, given in (
        ("registry", registry),
        ("subject", subject),
        ("error_column", error_column),
    ):
        if not isinstance(given, str) or not given:
            raise ValueError(f"expand: {name} must be a non-empty string, not {given!r}")
    mode = mode.upper() if isinstance(mode, str) else mode
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}, not {mode!r}")
    if part not in ("key", "payload"):
        raise ValueError(f"part must be 'key' or 'payload', not {part!r}")
    _refuse_not_opencdc(df, part)
    return mode


def _expanded_schema(
    schema: StructType, columns: list[str], part: str, typed: DataType, error_column: str
) -> StructType:
    """What :func:`expand` gives: the ``columns`` kept, ``part`` as ``typed`` struct
    columns (``before`` and ``after`` for the payload), and the error column."""
    fields = [f for f in schema.fields if f.name in columns]
    if part == "payload":
        out_fields = [
            *fields,
            *[f for f in schema.fields if f.name == "key"],
            StructField("before", typed, True),
            StructField("after", typed, True),
        ]
    else:
        out_fields = [
            *fields,
            StructField("key", typed, True),
            *[f for f in schema.fields if f.name == "payload"],
        ]
    out_fields.append(StructField(error_column, StringType(), True))
    return StructType(out_fields)


def _named_column(batch: pa.RecordBatch, part: Part) -> list[tuple[str, int] | None] | None:
    """Each row's writer subject and version from Conduit's metadata, or ``None``."""
    if "metadata" not in batch.schema.names:
        return None
    metadata = batch.column("metadata")
    subjects = pc.map_lookup(
        metadata, pa.scalar(framing.CONDUIT_KEYS[part][0]), "first"
    ).to_pylist()
    if not any(subjects):
        return None
    versions = pc.map_lookup(
        metadata, pa.scalar(framing.CONDUIT_KEYS[part][1]), "first"
    ).to_pylist()
    out: list[tuple[str, int] | None] = []
    for subject, version in zip(subjects, versions, strict=True):
        try:
            out.append(
                framing.conduit_schema(
                    {
                        k: v
                        for k, v in (
                            (framing.CONDUIT_KEYS[part][0], subject),
                            (framing.CONDUIT_KEYS[part][1], version),
                        )
                        if v is not None
                    },
                    part,
                )
            )
        except CodecError:
            out.append(None)
    return out


def _raw(batch: pa.RecordBatch, path: Sequence[str]) -> list[bytes | None]:
    column: Any = batch.column(path[0])
    for name in path[1:]:
        column = member(column, name)
    values: list[bytes | None] = column.to_pylist()
    return values


def _expand_batch(
    batch: pa.RecordBatch,
    decoder: AvroColumnDecoder,
    part: Part,
    out_schema: StructType,
    fail_fast: bool,
    error_column: str,
) -> pa.RecordBatch:
    named = _named_column(batch, part)
    paths = (
        [("key", "raw_data")]
        if part == "key"
        else [
            ("payload", "before", "raw_data"),
            ("payload", "after", "raw_data"),
        ]
    )
    decoded: list[pa.Array] = []
    errors: list[str | None] = [None] * batch.num_rows
    keep = [True] * batch.num_rows
    for path in paths:
        values = _raw(batch, path)
        array, problems, mine = decoder.decode(values, named)
        decoded.append(array)
        for i, problem in enumerate(problems):
            if problem is not None and errors[i] is None:
                errors[i] = f"{'.'.join(path[:-1])}: {problem}"
            if not mine[i]:
                keep[i] = False
    if fail_fast:
        for i, problem in enumerate(errors):
            if problem is not None and keep[i]:
                position = (
                    batch.column("position")[i].as_py()
                    if "position" in batch.schema.names
                    else None
                )
                raise CodecError(f"record at position {position!r}: {problem}")
    columns: list[pa.Array] = []
    names: list[str] = []
    for field in out_schema.fields:
        if field.name == error_column:
            columns.append(pa.array(errors, pa.string()))
        elif part == "payload" and field.name in ("before", "after"):
            columns.append(decoded[0 if field.name == "before" else 1])
        elif part == "key" and field.name == "key":
            columns.append(decoded[0])
        else:
            columns.append(batch.column(field.name))
        names.append(field.name)
    out = pa.RecordBatch.from_arrays(columns, names=names)
    if not all(keep):
        out = out.filter(pa.array(keep))
    return out


def encode(
    df: DataFrame,
    registry: str,
    subject: str,
    column: str,
    *,
    version: int | None = None,
    framing_name: Literal["confluent", "conduit"] = "confluent",
    output: str = "value",
    mode: str = "PERMISSIVE",
    error_column: str = ERROR_COLUMN,
) -> DataFrame:
    """``df`` with the typed struct ``column`` encoded with ``subject``'s schema.

    The latest version (or ``version``) of ``subject`` is the writer schema, Avro or
    Protobuf (its first message). The bytes go to a new binary column ``output``:
    Confluent-framed, or bare Avro (``framing_name="conduit"``; the schema is then named
    by subject and version, which the caller puts in the records' metadata). A row that
    does not fit the schema is a null with its reason in ``error`` (or ``error_column``;
    ``PERMISSIVE``) or fails the job (``FAILFAST``).

    ``df`` must have no column named ``output`` or ``error_column``: what :func:`expand`
    gave has its own ``error`` column, so drop it (``typed.drop("error")``, once its
    rows are dealt with) or pass ``error_column="encode_error"``; otherwise a
    :class:`ValueError` names the column.
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}, not {mode!r}")
    _refuse_taken("encode", df, df.columns, [(output, "output"), (error_column, "error_column")])
    store = _store(registry)
    writer = _resolve_reader(store, subject, "latest" if version is None else version)
    out_schema = StructType(
        [
            *df.schema.fields,
            StructField(output, BinaryType(), True),
            StructField(error_column, StringType(), True),
        ]
    )
    if writer.schema_type not in ("AVRO", "PROTOBUF"):
        raise ValueError(
            f"{writer.label()} is {writer.schema_type}: encode writes Avro and Protobuf"
        )
    protobuf = writer.schema_type == "PROTOBUF"
    if protobuf and framing_name == "conduit":
        raise ValueError("Conduit's framing is bare Avro: Protobuf is written Confluent-framed")
    schema_id, text, references = writer.schema_id, writer.text, writer.references
    standalone = None if protobuf else avro_values.standalone(writer)
    fail_fast = mode == "FAILFAST"
    conduit = framing_name == "conduit"

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if protobuf:
            from cdc_connectors.schema.protobuf import message_class
            from cdc_connectors.spark.protobuf_batch import ProtobufBatchEncoder

            encoder: Any = ProtobufBatchEncoder(message_class(text, references))
            prefix = framing.frame(schema_id, b"", [0])
        else:
            encoder = AvroBatchEncoder(standalone or {})
            prefix = framing.frame(schema_id, b"")
        for batch in batches:
            bodies, problems = encoder.encode(batch.column(column))
            if fail_fast:
                for problem in problems:
                    if problem is not None:
                        raise CodecError(f"{column}: {problem}")
            values = [
                None if body is None else body if conduit else prefix + body for body in bodies
            ]
            yield pa.RecordBatch.from_arrays(
                [
                    *batch.columns,
                    pa.array(values, pa.binary()),
                    pa.array(problems, pa.string()),
                ],
                names=[*batch.schema.names, output, error_column],
            )

    return df.mapInArrow(run, out_schema)


def _refuse_not_opencdc(df: DataFrame, part: Part) -> None:
    """A :class:`ValueError` at once where ``df`` has no ``part`` column of OpenCDC data
    (``key``: struct<raw_data, structured_data>; ``payload``: struct<before, after> of
    them), instead of a KeyError from a Python worker when the rows are read."""
    data = {"raw_data", "structured_data"}

    def fields(type_: Any) -> dict[str, Any]:
        return {f.name: f.dataType for f in type_.fields} if isinstance(type_, StructType) else {}

    found = fields(df.schema).get(part)
    if part == "key":
        ok = data <= fields(found).keys()
    else:
        images = fields(found)
        ok = {"before", "after"} <= images.keys() and all(
            data <= fields(images[image]).keys() for image in ("before", "after")
        )
    if not ok:
        shape = "struct<raw_data, structured_data>" if part == "key" else "struct<before, after>"
        has = ", ".join(df.columns) or "none"
        raise ValueError(
            f"expand: df has no {part!r} column of OpenCDC data ({shape}; its columns: {has}): "
            "expand reads DataFrames of OpenCDC records (cdc-files, cdc-kafka, records_dataframe)"
        )


def _refuse_taken(
    what: str, df: DataFrame, kept: Sequence[str], new: Sequence[tuple[str, str | None]]
) -> None:
    """A :class:`ValueError` naming a column ``what`` adds (``new``: each name and the
    parameter that sets it) that the output has already (``kept``), compared as Spark
    compares names: case-insensitively unless ``spark.sql.caseSensitive``. Arrow batches
    holding a column twice fail in the JVM with an error that names nothing."""
    sensitive = str(df.sparkSession.conf.get("spark.sql.caseSensitive", "false")) == "true"

    def fold(name: str) -> str:
        return name if sensitive else name.lower()

    # folded name -> the name, and the parameter naming it ("" for the DataFrame's)
    taken: dict[str, tuple[str, str | None]] = {fold(name): (name, "") for name in kept}
    for name, option in new:
        found = taken.get(fold(name))
        if found is None:
            taken[fold(name)] = (name, option)
            continue
        other, source = found
        if source != "":
            first = f"{source}={other!r}" if source else repr(other)
            raise ValueError(f"{what}: {first} and {option}={name!r} name one column")
        hint = f", or pass {option}= another name" if option else ""
        raise ValueError(
            f"{what}: the DataFrame already has a column {other!r} and {what} adds its own "
            f"{name!r}: drop or rename that column first{hint}"
        )


def _store(registry: str) -> SchemaStore:
    """The schemas of the registry at URL ``registry``, cached for this process. (The
    registry client is imported here: a Spark task that imports this package for another
    reason, a connector's, never needs it.)"""
    from cdc_connectors.registry.store import SchemaStore

    return SchemaStore(registry_for(registry))
