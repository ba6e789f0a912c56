"""Debezium JSON change events without a schema block (JsonConverter's
``schemas.enable=false``, or its ``{"payload": ...}`` wrapper alone, as YDB writes), typed
from the batch itself so the columns can take them.

:func:`infer_envelope` reads a batch of such values with Arrow's JSON reader, which infers
a type per field, and writes the Kafka Connect envelope schema those types are: flat rows
of integers (``int64``), doubles, strings and booleans, a ``source`` and a
``transaction`` of scalars. Typed by that schema, an event gives the record the
per-message way gives it (which keeps the JSON values as they are) when its images have
exactly the fields of the schema, none missing, and each number is of its column's kind:
:meth:`Inferred.misfits` finds the events that do not, which go the per-message way.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from cdc_connectors.spark.arrow_names import names_are_text

__all__ = ["Inferred", "infer_envelope"]

# One thread: a Spark Python worker has one core.
_READ_OPTIONS = pajson.ReadOptions(block_size=1 << 20, use_threads=False)
_SCALARS = {pa.int64(): "int64", pa.float64(): "double", pa.bool_(): "boolean"}
_IMAGES = ("before", "after")
_METADATA_BLOCKS = ("source", "transaction")
_TOP_SCALARS = {"op": "string", "ts_ms": "int64", "ts_us": "int64", "ts_ns": "int64"}


@dataclass(frozen=True)
class Inferred:
    """An envelope schema block inferred from a batch (:func:`infer_envelope`), with what
    every event must hold to be typed by it exactly."""

    block: dict[str, Any]
    fields: frozenset[str]  # each image's fields
    doubles: frozenset[str]  # image fields read as doubles
    #: The events are ``{"payload": {...}}``: JsonConverter's wrapper without its schema
    #: (YDB writes so).
    wrapped: bool = False
    #: Each event's payload as Arrow read it to infer the block (one row per event), which
    #: the typed read need not read again (:meth:`TypedDebeziumDecoder.decode_fast`).
    payloads: pa.Array | None = dataclass_field(default=None, compare=False, repr=False)

    def misfits(self, values: pa.Array, exact_kinds: bool) -> np.ndarray:
        """Events whose images miss a field or have one more (the per-message way keeps
        them as they are), or are no JSON object; with ``exact_kinds``, also those where a
        double column holds an integer (a writer of JSON text tells ``1`` from ``1.0``)."""
        bad = np.zeros(len(values), dtype=bool)
        fields, doubles = self.fields, self.doubles
        loads = orjson.loads
        wrapped = self.wrapped
        for n, value in enumerate(values.to_pylist()):
            try:
                payload = loads(value)
            except orjson.JSONDecodeError:
                bad[n] = True
                continue
            if wrapped:
                payload = payload.get("payload") if isinstance(payload, dict) else None
                if not isinstance(payload, dict):
                    bad[n] = True
                    continue
            for name in _IMAGES:
                image = payload.get(name) if isinstance(payload, dict) else None
                if image is None:
                    continue
                if not isinstance(image, dict) or image.keys() != fields:
                    bad[n] = True
                    break
                if exact_kinds and any(type(image[f]) is int for f in doubles):
                    bad[n] = True
                    break
        return bad


def infer_envelope(values: pa.Array) -> Inferred | None:
    """The envelope schema of a batch of schemaless change events as Arrow types them;
    ``None`` when Arrow cannot read them together or they hold more than the columns
    take (nested rows, arrays, doubles in metadata, fields that change type)."""
    count = len(values)
    if not count:
        return None
    joined = pc.binary_join(
        pa.ListArray.from_arrays(pa.array([0, count], pa.int32()), values), b"\n"
    )
    try:
        table = pajson.read_json(
            pa.py_buffer(joined[0].as_buffer().to_pybytes()), read_options=_READ_OPTIONS
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != count or not names_are_text(table.schema):
        return None
    schema = table.schema
    wrapped = schema.names == ["payload"] and pa.types.is_struct(schema.field(0).type)
    if wrapped:
        schema = pa.schema(list(schema.field(0).type))
    if "op" not in schema.names:
        return None
    row = _row(schema)
    if row is None:
        return None
    fields: list[dict[str, Any]] = []
    for name in _IMAGES:
        fields.append({**row, "field": name})
    for name in schema.names:
        if name in _IMAGES:
            continue
        if name in _METADATA_BLOCKS:
            block = _scalars_struct(schema.field(name).type, metadata=True)
            if block is None:
                return None
            fields.append({**block, "optional": True, "field": name})
        elif name in _TOP_SCALARS:
            fields.append({"type": _TOP_SCALARS[name], "optional": True, "field": name})
        else:
            return None
    for field in (*fields, *row["fields"]):
        field.pop("untyped", None)
        for child in field.get("fields", ()):
            child.pop("untyped", None)
    block = {"type": "struct", "optional": False, "name": "Envelope", "fields": fields}
    names = frozenset(f["field"] for f in row["fields"])
    doubles = frozenset(f["field"] for f in row["fields"] if f["type"] == "double")
    if wrapped:
        payloads = table.column("payload").combine_chunks()
    else:
        payloads = pa.StructArray.from_arrays(
            [column.combine_chunks() for column in table.columns], fields=list(table.schema)
        )
    return Inferred(block, names, doubles, wrapped, payloads)


def _row(schema: pa.Schema) -> dict[str, Any] | None:
    """The row struct of the images: one type for both (an image null in every event is
    typed by the other one)."""
    found: dict[str, Any] | None = None
    for name in _IMAGES:
        if name not in schema.names:
            continue
        type_ = schema.field(name).type
        if pa.types.is_null(type_):
            continue
        block = _scalars_struct(type_, metadata=False)
        if block is None:
            return None
        if found is None:
            found = block
        elif found != block:
            found = _merged(found, block)
            if found is None:
                return None
    if found is None:
        return None
    return {**found, "optional": True, "name": "Value"}


def _merged(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any] | None:
    """Two row structs of the same fields, a field typed in one and null in every event of
    the other taking its type; ``None`` if they differ otherwise."""
    ones = {f["field"]: f for f in first["fields"]}
    others = {f["field"]: f for f in second["fields"]}
    if ones.keys() != others.keys():
        return None
    fields = []
    for name, one in ones.items():
        other = others[name]
        if one == other or other.get("untyped"):
            fields.append(one)
        elif one.get("untyped"):
            fields.append(other)
        else:
            return None
    return {**first, "fields": fields}


def _scalars_struct(type_: pa.DataType, *, metadata: bool) -> dict[str, Any] | None:
    """A Connect struct of the scalar fields of ``type_``; ``None`` for any other field (a
    double in metadata too: the per-message way writes its JSON text)."""
    if not pa.types.is_struct(type_) or not type_.num_fields:
        return None
    fields = []
    for field in type_:
        if pa.types.is_string(field.type) or pa.types.is_timestamp(field.type):
            # Arrow reads some strings as timestamps; the text is what the event holds.
            kind: str | None = "string"
        elif pa.types.is_null(field.type):
            fields.append({"type": "string", "optional": True, "field": field.name})
            fields[-1]["untyped"] = True
            continue
        else:
            kind = _SCALARS.get(field.type)
        if kind is None or (metadata and kind == "double"):
            return None
        fields.append({"type": kind, "optional": True, "field": field.name})
    return {"type": "struct", "optional": True, "fields": fields}
