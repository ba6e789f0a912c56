"""OpenCDC records <-> Arrow record batches <-> Spark rows.

Batches always carry :data:`OPENCDC_ARROW_SCHEMA`: a batch whose column is all
null would otherwise get Arrow type ``null`` and Spark would reject it
(``DATA_SOURCE_RETURN_SCHEMA_MISMATCH``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import Row
from pyspark.sql.types import VariantVal

from cdc_connectors.opencdc import Change, Data, Metadata, Operation, Record
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA
from cdc_connectors.spark.variant import from_variant, to_variant


def _data_to_arrow(data: Data) -> dict[str, Any] | None:
    if data is None:
        return None
    if isinstance(data, dict):
        value, metadata = to_variant(data)
        return {"raw_data": None, "structured_data": {"value": value, "metadata": metadata}}
    return {"raw_data": bytes(data), "structured_data": None}


def record_to_row_dict(record: Record) -> dict[str, Any]:
    """One record as the plain dict of an Arrow row."""
    payload = record.payload
    before = _data_to_arrow(payload.before)
    after = _data_to_arrow(payload.after)
    return {
        "position": record.position,
        "operation": str(record.operation),
        "metadata": list(record.metadata.items()),
        "key": _data_to_arrow(record.key),
        "payload": {"before": before, "after": after},
    }


def records_to_batch(records: Iterable[Record]) -> pa.RecordBatch:
    """An Arrow batch of records with the explicit OpenCDC Arrow schema."""
    rows = [record_to_row_dict(r) for r in records]
    return pa.RecordBatch.from_pylist(rows, schema=OPENCDC_ARROW_SCHEMA)


def _variant_value(variant: Any) -> Any:
    if isinstance(variant, VariantVal):
        return variant.toPython()
    return from_variant(variant["value"], variant["metadata"])


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


def _record_from(cell: Any) -> Record:
    metadata = cell["metadata"]
    if isinstance(metadata, list):  # Arrow maps come out as lists of pairs
        metadata = dict(metadata)
    payload = cell["payload"] or {"before": None, "after": None}
    return Record(
        bytes(cell["position"]),
        Operation.parse(cell["operation"]),
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
