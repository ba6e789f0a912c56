"""Debezium JSON messages -> OpenCDC protobuf messages, from Arrow columns.

:class:`DebeziumToProto` takes a batch of raw Debezium JSON messages (values, keys and
places as binary columns) and writes the ``opencdc-proto`` message of every one it can
take exactly: those that start with a ``{"schema": ...,`` block it has a decoder for
(:class:`~cdc_connectors.spark.debezium_typed.TypedDebeziumDecoder`, one per envelope
schema, built from the first message that carries it) and that the typed columns and
:class:`~cdc_connectors.columnar.proto_records.ProtoRecordWriter` take exactly. Each
message it writes is byte for byte what ``DebeziumJsonFormat.decode`` then
``OpenCDCProtoFormat.encode`` give; every other message (bad ones, tombstones, other
schemas, values a double would change) is left to the caller, for the per-message way,
so its dead letter or skip stays what it is there.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.proto_records import NotColumnar, ProtoRecordWriter
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCProtoFormat
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.json_codec import data_to_bytes
from cdc_connectors.opencdc.proto_codec import record_to_proto_bytes
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder

__all__ = ["Columnar", "DebeziumToProto"]

#: Envelope schemas kept decoders for; the least recently used goes first.
MAX_DECODERS = 32
# Messages of unknown shape looked at per batch before the rest go the per-message way.
_LOOKS_PER_BATCH = 16
_SCHEMA_START = b'{"schema":'


@dataclass
class Columnar:
    """The messages written from columns: their rows in the batch (ascending), their
    values (``opencdc.v1.Record`` bytes) and keys (binary, null for none)."""

    rows: np.ndarray
    values: pa.Array
    keys: pa.Array


@dataclass
class _Envelope:
    decoder: TypedDebeziumDecoder
    writer: ProtoRecordWriter


class DebeziumToProto:
    """Debezium JSON -> OpenCDC protobuf, column by column (module docstring)."""

    def __init__(self, fmt: DebeziumJsonFormat):
        self.fmt = fmt
        self._envelopes: OrderedDict[bytes, _Envelope | None] = OrderedDict()

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Whether the columns write what ``source.decode`` and ``destination.encode`` do:
        Debezium JSON itself (no dialect, no ``key.fields``) to OpenCDC protobuf."""
        return (
            type(source) is DebeziumJsonFormat
            and not source.key_fields
            and type(destination) is OpenCDCProtoFormat
        )

    def convert(self, values: pa.Array, keys: pa.Array | None, places: pa.Array) -> Columnar:
        """The messages of the rows the columns take (:class:`Columnar`); the others are
        the caller's. ``values``, ``keys`` (or ``None``) and ``places`` (each record's
        position) are binary columns of one row per message."""
        rows: list[np.ndarray] = []
        written: list[pa.Array] = []
        written_keys: list[pa.Array] = []
        for envelope, matched in self._envelopes_of(values):
            found = self._write(envelope, values, keys, places, matched)
            if found is not None:
                rows.append(found.rows)
                written.append(found.values)
                written_keys.append(found.keys)
        if not rows:
            empty = np.zeros(0, dtype=np.int64)
            return Columnar(empty, pa.array([], pa.binary()), pa.array([], pa.binary()))
        every = np.concatenate(rows)
        order = np.argsort(every, kind="stable")
        take = pa.array(order)
        return Columnar(
            every[order],
            pa.concat_arrays(written).take(take),
            pa.concat_arrays(written_keys).take(take),
        )

    # --- envelope schemas ---------------------------------------------------------------

    def _envelopes_of(self, values: pa.Array) -> list[tuple[_Envelope, np.ndarray]]:
        """Each known envelope schema with the rows that start with its block; schemas
        met first in this batch are learnt from a sample message."""
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        unmatched = wire.mask(pc.starts_with(values, _SCHEMA_START))
        found: list[tuple[_Envelope, np.ndarray]] = []
        for prefix in list(self._envelopes):
            if not unmatched.any():
                break
            unmatched = self._match(prefix, values, unmatched, found)
        for _ in range(_LOOKS_PER_BATCH):
            if not unmatched.any():
                break
            row = int(np.argmax(unmatched))
            learnt = self._learn(values[row].as_py())
            if learnt is None:
                unmatched[row] = False
                continue
            prefix = learnt
            unmatched = self._match(prefix, values, unmatched, found)
            unmatched[row] = False
        return found

    def _match(
        self,
        prefix: bytes,
        values: pa.Array,
        unmatched: np.ndarray,
        found: list[tuple[_Envelope, np.ndarray]],
    ) -> np.ndarray:
        hits = unmatched & wire.mask(pc.starts_with(values, prefix))
        if hits.any():
            self._envelopes.move_to_end(prefix)
            envelope = self._envelopes[prefix]
            if envelope is not None:
                found.append((envelope, np.flatnonzero(hits)))
        left: np.ndarray = unmatched & ~hits
        return left

    def _learn(self, value: bytes | None) -> bytes | None:
        """The schema block prefix of a sample message, its decoder now known (``None``
        stands for a schema the columns do not take); ``None`` for a message whose text
        does not start with its own schema block as the decoders spell it."""
        try:
            document = orjson.loads(value or b"")
        except orjson.JSONDecodeError:
            return None
        schema = document.get("schema") if isinstance(document, dict) else None
        if not isinstance(schema, dict):
            return None
        prefix = _SCHEMA_START + orjson.dumps(schema) + b","
        if not (value or b"").startswith(prefix):
            return None
        if prefix not in self._envelopes:
            self._envelopes[prefix] = self._envelope(schema)
            while len(self._envelopes) > MAX_DECODERS:
                self._envelopes.popitem(last=False)
        return prefix

    def _envelope(self, schema: dict[str, object]) -> _Envelope | None:
        try:
            decoder = TypedDebeziumDecoder(self.fmt, schema)
            writer = ProtoRecordWriter(decoder.row.connect, decoder.row_type)
        except (CodecError, NotColumnar):
            return None
        return _Envelope(decoder, writer)

    # --- writing ------------------------------------------------------------------------

    def _write(
        self,
        envelope: _Envelope,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        matched: np.ndarray,
    ) -> Columnar | None:
        if len(matched) < len(values):
            taken = pa.array(matched)
            values, places = values.take(taken), places.take(taken)
        batch, local = envelope.decoder.decode_fast(values, places)
        if not len(local):
            return None
        rows = matched[local]
        key_fields, message_keys, bad = self._keys(
            None if keys is None else keys.take(pa.array(rows)), len(rows)
        )
        records, refused = envelope.writer.write(batch, key_fields)
        keep = ~(bad | refused)
        if not keep.all():
            kept = pa.array(keep)
            return Columnar(rows[keep], records.filter(kept), message_keys.filter(kept))
        return Columnar(rows, records, message_keys)

    def _keys(self, keys: pa.Array | None, count: int) -> tuple[pa.Array, pa.Array, np.ndarray]:
        """Each row's serialized ``key`` field and message key, as the per-message way
        makes them from the Kafka key, and the rows whose key it alone can write."""
        bad = np.zeros(count, dtype=bool)
        if keys is None or keys.null_count == count:
            nothing = pa.nulls(count, pa.binary())
            return pa.array([b""] * count, pa.binary()), nothing, bad
        fields: list[bytes] = []
        message_keys: list[bytes | None] = []
        named = bool(self.fmt.registry_url)
        for n, key in enumerate(keys.to_pylist()):
            try:
                data, key_schema = self.fmt.kafka_key(key)
                if key_schema is not None and named:
                    raise CodecError("the key's schema is named per message")
                fields.append(record_to_proto_bytes(Record(key=data)))
                message_keys.append(data_to_bytes(data))
            except CodecError:
                bad[n] = True
                fields.append(b"")
                message_keys.append(None)
        return pa.array(fields, pa.binary()), pa.array(message_keys, pa.binary()), bad
