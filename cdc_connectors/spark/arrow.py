"""OpenCDC records <-> Arrow record batches <-> Spark rows.

Batches always carry :data:`OPENCDC_ARROW_SCHEMA`: a batch whose column is all
null would otherwise get Arrow type ``null`` and Spark would reject it
(``DATA_SOURCE_RETURN_SCHEMA_MISMATCH``).

Structured data that has no VARIANT form (nested deeper than
:data:`~cdc_connectors.spark.variant.MAX_DEPTH`, an object key that is not a
string, a string UTF-8 cannot encode, an unsupported type) raises
:class:`CodecError` naming the record, the field and the path inside it; reading
a VARIANT too deep for PySpark's decoder does too. Decimals read back exact,
never rounded; a number no VARIANT decimal holds (more than 38 digits) is a
VARIANT string of its exact text (:mod:`cdc_connectors.spark.variant`).

A dead letter (a record whose metadata holds Conduit's ``conduit.dlq.nack.error``: a message
that did not convert) is no change: its row's ``operation`` is
:data:`DEAD_LETTER_OPERATION` (``dead-letter``), so counting by operation shows dead letters
apart and ``df.filter("operation != 'dead-letter'")`` drops them. Read back into a record,
it is what Conduit's DLQ writes: operation ``create``, the reason in the metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Row
from pyspark.sql.types import VariantVal

from cdc_connectors.formats.base import Format, Message
from cdc_connectors.opencdc import Change, CodecError, Data, Metadata, Operation, Record, keys
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA
from cdc_connectors.spark.variant import VariantError, from_variant, python_value, to_variant

_DATA = OPENCDC_ARROW_SCHEMA.field("key").type
_VARIANT = _DATA.field("structured_data").type
_PAYLOAD = OPENCDC_ARROW_SCHEMA.field("payload").type
_METADATA = OPENCDC_ARROW_SCHEMA.field("metadata").type

#: The ``operation`` of a dead-letter row (module docstring); no OpenCDC operation.
DEAD_LETTER_OPERATION = "dead-letter"
_DLQ_ERROR = keys.CONDUIT_DLQ_NACK_ERROR


def operation_name(record: Record) -> str:
    """The ``operation`` column of ``record``'s row: its JSON name, or
    :data:`DEAD_LETTER_OPERATION` for a dead letter."""
    if _DLQ_ERROR in record.metadata:
        return DEAD_LETTER_OPERATION
    return str(record.operation)


def data_array(items: list[Data], what: str) -> pa.StructArray:
    """One ``struct<raw_data, structured_data: variant>`` column, null where data is absent."""
    raw: list[bytes | None] = []
    values: list[bytes] = []
    metadata: list[bytes] = []
    no_variant: list[bool] = []
    absent: list[bool] = []
    for index, data in enumerate(items):
        if isinstance(data, dict):
            try:
                value, meta = to_variant(data)
            except VariantError as exc:
                raise CodecError(f"record {index}: {what}{exc.where}: {exc}") from None
            raw.append(None)
            values.append(value)
            metadata.append(meta)
            no_variant.append(False)
        elif data is None or isinstance(data, bytes | bytearray | memoryview):
            raw.append(None if data is None else bytes(data))
            values.append(b"")  # placeholders under a null variant
            metadata.append(b"")
            no_variant.append(True)
        else:  # bytes(5) would be five zero bytes
            raise CodecError(
                f"record {index}: {what} must be bytes, a dict or None, not {type(data).__name__}"
            )
        absent.append(data is None)
    variant = pa.StructArray.from_arrays(
        [pa.array(values, pa.binary()), pa.array(metadata, pa.binary())],
        fields=list(_VARIANT),
        mask=pa.array(no_variant, pa.bool_()),
    )
    return pa.StructArray.from_arrays(
        [pa.array(raw, pa.binary()), variant],
        fields=list(_DATA),
        mask=pa.array(absent, pa.bool_()),
    )


def records_to_batch(records: Iterable[Record]) -> pa.RecordBatch:
    """An Arrow batch of records with the explicit OpenCDC Arrow schema, built column by column.

    :class:`CodecError` naming the record (its index in ``records``) and the field when
    structured data has no VARIANT form; :class:`TypeError` for ``records`` that are not
    :class:`~cdc_connectors.opencdc.Record` objects.
    """
    if records is None or isinstance(records, str | bytes | Record):
        raise TypeError(f"records must be an iterable of Record, not {type(records).__name__}")
    records = list(records)
    for index, record in enumerate(records):
        if not isinstance(record, Record):
            raise TypeError(
                f"record {index} is a {type(record).__name__}, not a Record "
                "(cdc_connectors.opencdc.Record.new builds one)"
            )
    offsets = [0]
    names: list[str] = []
    texts: list[str] = []
    for record in records:
        names.extend(record.metadata.keys())
        texts.extend(record.metadata.values())
        offsets.append(len(names))
    metadata = pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()),
        pa.array(names, pa.string()),
        pa.array(texts, pa.string()),
        type=_METADATA,
    )
    payload = pa.StructArray.from_arrays(
        [
            data_array([r.payload.before for r in records], "payload.before"),
            data_array([r.payload.after for r in records], "payload.after"),
        ],
        fields=list(_PAYLOAD),
    )
    columns = [
        pa.array([r.position for r in records], pa.binary()),
        pa.array(
            [
                DEAD_LETTER_OPERATION if _DLQ_ERROR in r.metadata else str(r.operation)
                for r in records
            ],
            pa.string(),
        ),
        metadata,
        data_array([r.key for r in records], "key"),
        payload,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=OPENCDC_ARROW_SCHEMA)


def decode_batch(
    fmt: Format, messages: Sequence[Message]
) -> tuple[pa.RecordBatch, list[tuple[int, CodecError]]]:
    """The records of ``messages`` decoded by ``fmt`` as one OpenCDC Arrow batch, and the
    errors.

    Records are in message order (skipped messages give none); each error is the index of
    its message and the :class:`CodecError` decoding raised for it, or the one building the
    batch raised (structured data with no VARIANT form): a message whose records cannot all
    be put in the batch gives none of them, and never costs the others theirs.
    """
    records: list[Record] = []
    owners: list[int] = []
    errors: list[tuple[int, CodecError]] = []
    for index, found in fmt.decode_many(messages):
        if isinstance(found, CodecError):
            errors.append((index, found))
        elif isinstance(found, list):
            records.extend(found)
            owners.extend([index] * len(found))
    try:
        return records_to_batch(records), errors
    except CodecError:
        pass
    by_message: dict[int, list[Record]] = {}
    for record, index in zip(records, owners, strict=True):
        by_message.setdefault(index, []).append(record)
    kept: list[Record] = []
    for index, own in by_message.items():
        try:
            records_to_batch(own)
        except CodecError as exc:
            errors.append((index, CodecError(str(exc).partition(": ")[2] or str(exc))))
            continue
        kept.extend(own)
    errors.sort(key=lambda pair: pair[0])
    return records_to_batch(kept), errors


def _variant_value(variant: Any) -> Any:
    try:
        if isinstance(variant, VariantVal):
            return python_value(variant)
        return from_variant(variant["value"], variant["metadata"])
    except VariantError as exc:
        raise CodecError(str(exc)) from None


def _data_from(cell: Any) -> Data:
    if cell is None:
        return None
    raw = cell["raw_data"]
    if raw is not None:
        return bytes(raw)
    structured = cell["structured_data"]
    if structured is not None:
        return dict(_variant_value(structured))
    return None


def _operation(value: Any) -> Operation:
    # A dead letter is a create, as Conduit's DLQ writes it (its metadata says what it is).
    if value == DEAD_LETTER_OPERATION:
        return Operation.CREATE
    return Operation.parse(value)


def _record_from(cell: Any) -> Record:
    metadata = cell["metadata"]
    if isinstance(metadata, list):  # Arrow maps come out as lists of pairs
        metadata = dict(metadata)
    payload = cell["payload"] or {"before": None, "after": None}
    return Record(
        bytes(cell["position"]),
        _operation(cell["operation"]),
        Metadata(metadata or {}),
        _data_from(cell["key"]),
        Change(_data_from(payload["before"]), _data_from(payload["after"])),
    )


def records_from_batch(batch: pa.RecordBatch | pa.Table) -> Iterator[Record]:
    """The records of an Arrow batch or table with the OpenCDC schema."""
    for row in batch.to_pylist():
        yield _record_from(row)


def record_from_row(row: Row) -> Record:
    """A record from a Spark row of the OpenCDC schema (e.g. ``df.collect()``)."""
    return _record_from(row)
