"""Debezium JSON messages -> ``debezium-avro`` change events, from Arrow columns.

:class:`DebeziumToDebeziumAvro` writes what ``DebeziumJsonFormat.decode`` (with a registry,
which names each row's and key's Avro schema) then ``DebeziumAvroFormat.encode`` give, for
the messages the columns take exactly. The value is AvroConverter's envelope record, its
schema what :meth:`DebeziumAvroFormat.envelope_schema
<cdc_connectors.formats.debezium.avro_format.DebeziumAvroFormat.envelope_schema>` builds
from the named row schema and the record's metadata, registered under the destination's
value subject. Its body is the fields Avro writes one after the other:

- ``before`` and ``after``: the union's branch, then the typed image written with the row
  schema (:class:`~cdc_connectors.columnar.avro_rows.AvroRows`, which registers nothing
  here);
- ``source`` and ``transaction``: each field of the metadata (``debezium.source.*``,
  ``debezium.transaction.*``) after its branch: a 64-bit integer as a zig-zag varint, any
  other text as its length and bytes; ``table`` (the collection) and ``ts_ms``, ``ts_us``,
  ``ts_ns`` (``opencdc.createdAt``) where the per-message way adds them;
- ``op`` (one letter) and ``ts_ms``, ``ts_us``, ``ts_ns`` (``opencdc.readAt`` in milli-,
  micro- and nanoseconds).

Rows are grouped by the schema their envelope gets (the row schema, the collection, the
metadata names and which of their values are 64-bit integers), in the order each first
comes. The key is written as for the ``avro`` destination
(:class:`~cdc_connectors.columnar.debezium_avro_rows.DebeziumToAvroRows`).

Every other message goes the per-message way: what the ``avro`` rows leave, a change whose
metadata names no row schema (one without an image), an operation without a Debezium
letter, a metadata name that is no Avro name, and a time that is no integer's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.avro_rows import Encoded, codes
from cdc_connectors.columnar.debezium_avro_rows import (
    DebeziumToAvroRows,
    lookup,
    names_schemas_for,
)
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium.avro_format import DebeziumAvroFormat
from cdc_connectors.formats.debezium.envelope import TIME_FIELDS
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc import keys as metadata_keys
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.schema import framing
from cdc_connectors.schema.connect import ConnectSchema

__all__ = ["DebeziumToDebeziumAvro"]

#: Each operation's ``op``: a string of one letter (its length, 1, as a zig-zag varint).
_OPERATIONS = ["create", "update", "delete", "snapshot"]
_LETTERS = pa.array([b"\x02c", b"\x02u", b"\x02d", b"\x02r"], pa.binary())
_NAME = "[A-Za-z_][A-Za-z0-9_]*"
_LONG_TEXT = "^-?(0|[1-9][0-9]{0,18})$"
_MIN_LONG, _MAX_LONG = -(2**63), 2**63 - 1
_PLACE_NAMES = ("db", "schema", "table", "collection")
_NANOS_PER = {"ts_ms": 10**6, "ts_us": 10**3, "ts_ns": 1}
_NULL, _SET = b"\x00", b"\x02"  # a union's branch: null first, the value second


@dataclass
class _Shapes:
    """What decides each row's envelope schema besides its row schema and collection."""

    #: Each row's metadata names (``source`` and ``transaction``), each marked long or text.
    names: pa.Array
    #: Whether ``table`` (the collection) and the times (``createdAt``) are added.
    adds_table: np.ndarray
    adds_time: np.ndarray
    #: The rows the per-message way must write.
    refused: np.ndarray


class DebeziumToDebeziumAvro(DebeziumToAvroRows):
    """Debezium JSON -> Confluent-framed Debezium Avro, column by column (module docstring)."""

    destination: DebeziumAvroFormat  # type: ignore[assignment]

    @staticmethod
    def serves(source: Format, destination: Format) -> bool:
        """Debezium JSON dialects described by their envelope alone, without ``key.fields``,
        naming schemas in the registry ``debezium-avro`` writes with (the same URL)."""
        return type(destination) is DebeziumAvroFormat and names_schemas_for(source, destination)

    # --- the envelope ------------------------------------------------------------------------

    def _encode_values(
        self,
        batch: pa.RecordBatch,
        metadata: pa.MapArray,
        collections: pa.Array,
        row: ConnectSchema,
    ) -> Encoded:
        """Each row's envelope body, grouped by its envelope schema (each group's text,
        collection and record name in :attr:`Encoded.groups`, which :meth:`AvroRows.framed`
        registers under the value subject), and the rows refused."""
        count = len(metadata)
        subject_key, version_key = framing.CONDUIT_KEYS["payload"]
        subjects, versions = lookup(metadata, subject_key), lookup(metadata, version_key)
        images = {part: batch.column(part) for part in ("before", "after")}
        present = {part: wire.valid(image) for part, image in images.items()}
        bodies = {
            part: self._values.encode(image, present[part], subjects, versions, collections)
            for part, image in images.items()
        }
        operations = pc.index_in(batch.column("operation"), pa.array(_OPERATIONS))
        created = lookup(metadata, metadata_keys.CREATED_AT)
        read_at = lookup(metadata, metadata_keys.READ_AT)
        shapes = self._shapes(metadata, collections, created)
        refused = (
            bodies["before"].refused
            | bodies["after"].refused
            | ~(wire.valid(subjects) & wire.valid(versions))
            | ~wire.valid(operations)
            | shapes.refused
            | ~_longs_or_null(read_at)
        )
        encoded = Encoded([None] * count, refused)
        flags = pa.array(
            np.where(shapes.adds_table, "t", "") + np.where(shapes.adds_time, "s", ""), pa.string()
        )
        group_codes, names = codes([subjects, versions, collections, shapes.names, flags])
        # each envelope schema in the order its first row taken comes, as the per-message
        # way registers them
        taken = np.flatnonzero(~refused)
        _, first, group_of = np.unique(group_codes[taken], return_index=True, return_inverse=True)
        parts = _Parts(metadata, collections, created, read_at, operations, present, bodies)
        for number in np.argsort(first, kind="stable").tolist():
            group = taken[group_of == number]
            subject, version = names[0][int(group[0])], names[1][int(group[0])]
            found = None
            if version.isascii() and version.isdigit() and 0 < int(version) < 2**31:
                found = self.destination.named_record((subject, int(version)))
            if found is None:
                encoded.refused[group] = True
                continue
            first_metadata = Metadata(metadata[int(group[0])].as_py())
            try:
                schema, _, _ = self.destination.envelope_schema(
                    first_metadata, orjson.loads(found[1])
                )
            except CodecError:
                encoded.refused[group] = True
                continue
            body = parts.body(group, schema, self.destination.prefix, first_metadata)
            for at, data in zip(group.tolist(), body.to_pylist(), strict=True):
                encoded.bodies[at] = data
            text = orjson.dumps(schema).decode()
            encoded.groups.append((group, text, first_metadata.collection, str(schema["name"])))
        return encoded

    def _shapes(self, metadata: pa.MapArray, collections: pa.Array, created: pa.Array) -> _Shapes:
        """What decides each row's envelope schema besides its row schema and collection
        (:class:`_Shapes`): its ``source`` and ``transaction`` metadata names in order,
        each marked as a long or a text, as :meth:`DebeziumAvroFormat.envelope_schema`
        types them."""
        count = len(metadata)
        offsets = np.asarray(metadata.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        start, end = int(offsets[0]), int(offsets[-1])
        keys = metadata.keys.slice(start, end - start)
        items = metadata.items.slice(start, end - start)
        parents = np.repeat(np.arange(count), np.diff(offsets))
        source = f"{self.destination.prefix}.source."
        transaction = f"{self.destination.prefix}.transaction."
        chosen = wire.mask(pc.starts_with(keys, source)) | wire.mask(
            pc.starts_with(keys, transaction)
        )
        named = wire.mask(
            pc.match_substring_regex(
                keys, f"^({re.escape(source)}|{re.escape(transaction)}){_NAME}$"
            )
        )
        refused = np.zeros(count, dtype=bool)
        refused[parents[chosen & ~named]] = True
        longs = _longs(items)
        labels = pc.binary_join_element_wise(
            keys, pa.array(np.where(longs, "\x01L", "\x01S"), pa.string()), ""
        ).filter(pa.array(chosen))
        counts = np.bincount(parents[chosen], minlength=count)
        list_offsets = np.zeros(count + 1, dtype=np.int32)
        np.cumsum(counts, out=list_offsets[1:])
        names = pc.binary_join(pa.ListArray.from_arrays(pa.array(list_offsets), labels), "\x02")

        def having(fields: tuple[str, ...]) -> np.ndarray:
            wanted = pa.array([source + name for name in fields], pa.string())
            hits = wire.mask(pc.is_in(keys, value_set=wanted))
            return np.bincount(parents[hits], minlength=count) > 0

        named_collection = wire.valid(collections) & (wire.lengths(collections) > 0)
        adds_time = ~having(TIME_FIELDS) & wire.valid(created)
        refused |= adds_time & ~_longs_or_null(created)
        return _Shapes(names, ~having(_PLACE_NAMES) & named_collection, adds_time, refused)


@dataclass
class _Parts:
    """The columns an envelope body is written from."""

    metadata: pa.MapArray
    collections: pa.Array
    created: pa.Array
    read_at: pa.Array
    operations: pa.Array
    present: dict[str, np.ndarray]
    bodies: dict[str, Encoded]

    def body(
        self, group: np.ndarray, schema: dict[str, object], prefix: str, first: Metadata
    ) -> pa.Array:
        """The envelope bodies of the rows of ``group`` (one envelope ``schema``; ``first``
        is the metadata of its first row)."""
        count = len(group)
        taken = pa.array(group)
        pieces = wire.Pieces.empty(count)
        for part in ("before", "after"):
            present = self.present[part][group]
            branch = wire.choose(present, wire.constant(_SET, count), wire.constant(_NULL, count))
            images = pa.array([self.bodies[part].bodies[at] for at in group.tolist()], pa.binary())
            pieces = pieces + wire.segments([branch]) + wire.Pieces.of(images)
        fields = {str(field["name"]): field for field in schema["fields"]}  # type: ignore[attr-defined]
        metadata = self.metadata.take(taken)
        pieces = pieces + self._record(
            fields["source"]["type"], metadata, taken, f"{prefix}.source.", first
        )
        pieces = pieces + wire.Pieces.of(_LETTERS.take(self.operations.take(taken)))
        read_at = self.read_at.take(taken)
        for name in TIME_FIELDS:
            pieces = pieces + _optional_long(read_at, _NANOS_PER[name])
        if "transaction" in fields:
            block = fields["transaction"]["type"][1]
            pieces = pieces + wire.segments([wire.constant(_SET, count)])
            pieces = pieces + self._record(block, metadata, taken, f"{prefix}.transaction.", first)
        return pieces.joined()

    def _record(
        self,
        block: dict[str, object],
        metadata: pa.MapArray,
        taken: pa.Array,
        prefix: str,
        first: Metadata,
    ) -> wire.Pieces:
        """The fields of a ``source`` or ``transaction`` record of the rows ``taken`` (whose
        ``metadata`` it is): each a set union branch and its value, from the metadata under
        ``prefix`` (or the collection and creation time the per-message way adds where the
        metadata has no such names)."""
        count = len(metadata)
        pieces = wire.Pieces.empty(count)
        for field in block["fields"]:  # type: ignore[attr-defined]
            name, long = field["name"], field["type"] == ["null", "long"]
            if prefix + name in first:
                values = pc.map_lookup(metadata, pa.scalar(prefix + name, pa.string()), "first")
            elif name == "table":
                values = self.collections.take(taken)
            else:  # ts_ms, ts_us or ts_ns: the creation time
                created = pc.cast(self.created.take(taken), pa.int64())
                values = pa.array(np.floor_divide(created.to_numpy(), _NANOS_PER[name]))
            pieces = pieces + wire.segments([wire.constant(_SET, count)])
            if long:
                pieces = pieces + wire.segments([_long(pc.cast(values, pa.int64()).to_numpy())])
            else:
                text = values.cast(pa.binary())
                pieces = pieces + wire.segments([_long(wire.lengths(text))]) + wire.Pieces.of(text)
        return pieces


def _optional_long(texts: pa.Array, divisor: int) -> wire.Pieces:
    """A ``["null","long"]`` of each integer text divided (floored) by ``divisor``."""
    count = len(texts)
    present = wire.valid(texts)
    numbers = np.zeros(count, dtype=np.int64)
    if present.any():
        numbers[present] = pc.cast(texts.filter(pa.array(present)), pa.int64()).to_numpy()
    matrix, sizes = _long(np.floor_divide(numbers, divisor))
    tagged = (np.hstack([np.full((count, 1), 2, dtype=np.uint8), matrix]), sizes + 1)
    return wire.segments([wire.choose(present, tagged, wire.constant(_NULL, count))])


def _long(values: np.ndarray) -> wire.Segment:
    """Each 64-bit integer as Avro writes a ``long``: zig-zag, then a varint."""
    signed = values.astype(np.int64)
    return wire.varint64((signed << 1) ^ (signed >> 63))


def _longs(texts: pa.Array) -> np.ndarray:
    """Which texts are a 64-bit integer as the per-message way reads one (at most 19
    digits, no leading zero, within the range of a ``long``): digits of one length
    compare as text as they do as numbers."""
    found = wire.mask(pc.match_substring_regex(texts, _LONG_TEXT))
    sizes = wire.lengths(texts)
    negative = wire.mask(pc.starts_with(texts, "-"))
    for size, sign, largest in ((19, False, _MAX_LONG), (20, True, -_MIN_LONG)):
        wide = found & (sizes == size) & (negative == sign)
        if wide.any():
            digits = pc.utf8_slice_codeunits(texts, 1) if sign else texts
            fits = wire.mask(pc.fill_null(pc.less_equal(digits, str(largest)), False))
            found &= ~wide | fits
    return found


def _longs_or_null(texts: pa.Array) -> np.ndarray:
    """Which texts are null or a 64-bit integer (a time the columns read)."""
    found: np.ndarray = ~wire.valid(texts) | _longs(texts)
    return found
