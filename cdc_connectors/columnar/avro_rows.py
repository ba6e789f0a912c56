"""Typed rows -> the ``avro`` destination's key or value bytes, column by column.

:class:`AvroRows` writes one part of a batch of typed rows (the record's key, or its
``after`` image) as :meth:`AvroFormat.encode <cdc_connectors.formats.avro.AvroFormat.encode>`
writes a row whose metadata names its Avro record schema (``opencdc.payload.schema.*``,
``opencdc.key.schema.*``, as a Debezium schema block gives with a registry): the schema of
that name, registered under the destination's subject for the row's collection, frames the
body that :class:`~cdc_connectors.spark.avro_encode.AvroBatchEncoder` writes from the column.

A row is refused, for the per-message way (which then infers a schema, or says why it
cannot), where its metadata names no schema or a malformed version, the registry holds no
Avro record of that name, the value does not fit the schema (the encoder's row errors), or
a double is too large for a ``float`` field. A schema is registered under the destination's
subject only once some row fits it, as the per-message way registers it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.opencdc import CodecError
from cdc_connectors.registry.store import Resolved, SchemaStore
from cdc_connectors.schema import avro_values, framing
from cdc_connectors.schema.subjects import Part
from cdc_connectors.spark.avro_encode import AvroBatchEncoder

__all__ = ["AvroRows", "Encoded", "RecordSchemas", "codes"]

#: The largest finite value of an Avro ``float`` (IEEE 754 single precision).
_FLOAT_MAX = float(np.finfo(np.float32).max)


class RecordSchemas(Protocol):
    """A destination writing Avro records with the schemas metadata names: ``avro``,
    ``debezium-avro``."""

    @property
    def store(self) -> SchemaStore: ...

    def named_record(self, named: tuple[str, int]) -> tuple[Resolved, str, str] | None: ...

    def subject_for(self, collection: str | None, part: Part, record_name: str | None) -> str: ...


@dataclass
class Encoded:
    """The Avro bodies of one part of a batch, before their schemas are registered under
    the destination's subjects (:meth:`AvroRows.framed`)."""

    #: Each row's body (``None``: no part, or refused).
    bodies: list[bytes | None]
    #: The rows the per-message way must write.
    refused: np.ndarray
    #: (rows, schema text, collection, record name) of each schema and collection.
    groups: list[tuple[np.ndarray, str, str | None, str]] = field(default_factory=list)


class AvroRows:
    """One part of typed rows -> Confluent-framed Avro (module docstring)."""

    def __init__(self, destination: RecordSchemas, part: Part):
        self.destination = destination
        self.part: Part = part
        # writer schema id -> its encoder (None: no encoder builds for it)
        self._encoders: dict[int, AvroBatchEncoder | None] = {}
        # (schema text, subject) -> the Confluent header of its registration
        self._headers: dict[tuple[str, str], bytes] = {}

    def write(
        self,
        data: pa.Array,
        present: np.ndarray,
        subjects: pa.Array,
        versions: pa.Array,
        collections: pa.Array,
    ) -> tuple[pa.Array, np.ndarray]:
        """:meth:`encode`, then :meth:`framed` of every row it does not refuse."""
        encoded = self.encode(data, present, subjects, versions, collections)
        return self.framed(encoded, ~encoded.refused)

    def encode(
        self,
        data: pa.Array,
        present: np.ndarray,
        subjects: pa.Array,
        versions: pa.Array,
        collections: pa.Array,
    ) -> Encoded:
        """The body of each row where ``present`` (``data`` is a struct column;
        ``subjects`` and ``versions`` name each row's schema, metadata text or null;
        ``collections`` is each row's collection, or null), and the rows refused."""
        count = len(data)
        encoded = Encoded([None] * count, present & ~(wire.valid(subjects) & wire.valid(versions)))
        named = present & ~encoded.refused
        if not named.any():
            return encoded
        columns = [subjects, versions, collections]
        combined, names = codes(columns)
        # each (subject, version, collection) in the order it first comes, as the
        # per-message way registers them
        _, first, group_of = np.unique(combined, return_index=True, return_inverse=True)
        for number in np.argsort(first, kind="stable").tolist():
            rows = np.flatnonzero(named & (group_of == number))
            if len(rows):
                at = int(rows[0])
                subject, version, collection = (column[at] for column in names)
                self._group(data, rows, subject, version, collection, encoded)
        return encoded

    def _group(
        self,
        data: pa.Array,
        rows: np.ndarray,
        subject: str,
        version: str,
        collection: str | None,
        encoded: Encoded,
    ) -> None:
        """The bodies of ``rows``, of one named schema and collection."""
        found = None
        if version.isascii() and version.isdigit() and 0 < int(version) < 2**31:
            found = self.destination.named_record((subject, int(version)))
        encoder = None if found is None else self._encoder(found[0])
        typed = None if encoder is None else _fitted(data.take(pa.array(rows)), encoder.arrow_type)
        if found is None or encoder is None or typed is None:
            encoded.refused[rows] = True
            return
        _, text, full_name = found
        array, too_large = typed
        bodies, _ = encoder.encode(array)
        fits = np.array([body is not None for body in bodies], dtype=bool) & ~too_large
        encoded.refused[rows[~fits]] = True
        for at in np.flatnonzero(fits).tolist():
            encoded.bodies[int(rows[at])] = bodies[at]
        if fits.any():
            encoded.groups.append((rows[fits], text, collection, full_name))

    def framed(self, encoded: Encoded, keep: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        """The message bytes of the rows to ``keep`` (null elsewhere): each schema with a
        row kept registered under the destination's subject for its collection, its header
        before the body; and the rows refused, those of a subject the registry refuses
        (or that cannot be named) among them."""
        out: list[bytes | None] = [None] * len(encoded.bodies)
        refused = encoded.refused.copy()
        for rows, text, collection, full_name in encoded.groups:
            kept = rows[keep[rows]]
            if not len(kept):
                continue
            try:
                header = self._header(text, collection, full_name)
            except CodecError:
                refused[kept] = True
                continue
            bodies = encoded.bodies
            for row in kept.tolist():
                out[row] = header + bodies[row]
        return pa.array(out, pa.binary()), refused

    def _encoder(self, source: Resolved) -> AvroBatchEncoder | None:
        if source.schema_id not in self._encoders:
            try:
                encoder: AvroBatchEncoder | None = AvroBatchEncoder(avro_values.standalone(source))
            except (ValueError, TypeError, KeyError, CodecError):
                encoder = None
            self._encoders[source.schema_id] = encoder
        return self._encoders[source.schema_id]

    def _header(self, text: str, collection: str | None, full_name: str) -> bytes:
        """The Confluent header of ``text`` registered under the subject of ``collection``
        (registered once a run)."""
        subject = self.destination.subject_for(collection, self.part, full_name)
        found = self._headers.get((text, subject))
        if found is None:
            registered = self.destination.store.register(subject, text)
            found = self._headers[(text, subject)] = framing.frame(registered.schema_id, b"")
        return found


def codes(columns: list[pa.Array]) -> tuple[np.ndarray, list[list[Any]]]:
    """One integer per row that tells the rows' combinations of ``columns`` apart, and
    each column's values."""
    combined = np.zeros(len(columns[0]), dtype=np.int64)
    values = []
    for column in columns:
        encoded = pc.dictionary_encode(column.cast(pa.string()), null_encoding="encode")
        indices = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        combined = combined * (len(encoded.dictionary) + 1) + indices
        values.append(column.to_pylist())
    return combined, values


def _fitted(array: pa.Array, target: pa.StructType) -> tuple[pa.Array, np.ndarray] | None:
    """``array`` cast to the encoder's type, and the rows whose double is too large for a
    ``float`` field there (the per-message way refuses it: Python packs no such float);
    ``None`` when it does not cast, or holds such a field below the top level."""
    too_large = np.zeros(len(array), dtype=bool)
    if array.type == target:
        return array, too_large
    if not pa.types.is_struct(array.type):
        return None
    names = {array.type.field(i).name: i for i in range(array.type.num_fields)}
    for wanted in target:
        at = names.get(wanted.name)
        if at is None:
            return None
        given = array.type.field(at).type
        if wanted.type == pa.float32() and given == pa.float64():
            values = array.field(at).to_numpy(zero_copy_only=False)
            with np.errstate(invalid="ignore"):
                too_large |= np.isfinite(values) & (np.abs(values) > _FLOAT_MAX)
        elif _holds_float(wanted.type) and given != wanted.type:
            return None
    try:
        return array.cast(target), too_large
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _holds_float(type_: pa.DataType) -> bool:
    """Whether ``type_`` is or holds a ``float32``."""
    if type_ == pa.float32():
        return True
    children: Sequence[pa.DataType] = []
    if pa.types.is_struct(type_):
        children = [type_.field(i).type for i in range(type_.num_fields)]
    elif pa.types.is_map(type_):
        children = [type_.key_type, type_.item_type]
    elif hasattr(type_, "value_type"):  # lists
        children = [type_.value_type]
    return any(_holds_float(child) for child in children)
