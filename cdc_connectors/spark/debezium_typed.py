"""Debezium JSON with ``schema`` blocks -> typed Arrow columns, column by column.

:class:`TypedDebeziumDecoder` turns a batch of Debezium change events into one Arrow batch
of the *typed* OpenCDC layout::

    position   binary              not null   the message's place when the format sets none
    operation  string              not null
    metadata   map<string,string>  not null   as the per-message path writes it
    key        struct<raw_data, structured_data: variant>
    before     struct<...>                    the row schema's columns, typed
    after      struct<...>

``before`` and ``after`` have the Spark types of the row's Kafka Connect schema as
Confluent's AvroConverter spells it (a Debezium decimal is ``decimal(p, s)``, a
MicroTimestamp a ``timestamp``, a Date a ``date``): exactly what expanding the per-message
records through the registry gives (:func:`cdc_connectors.spark.expand`). A decimal Spark
has no type for (more than 38 digits, no ``connect.decimal.precision``, a negative scale)
and a ``VariableScaleDecimal`` are ``string`` columns of the exact decimal text
(:mod:`cdc_connectors.spark.decimal_text`).

The columns are one collection's (``opencdc.collection``): a decoder made from a sample
message (:meth:`TypedDebeziumDecoder.from_message`) knows the sample's collection, and a
message of another one is a dead letter saying so, or, when the user chose the collection
among several (``others="skip"``), left out. A message whose collection cannot be told
(not JSON, no ``source``) is decoded as any other: a dead letter when it is bad.

The fast path has no Python object per row. Every message whose text starts with the
batch's own ``{"schema": ...,`` block (what one connector writes for one table) has that
block cut off; the rest is parsed by Arrow's JSON reader; each column is converted with
Arrow kernels (base64 decimals in one loop over the column). Any other message, a row the
fast path cannot take exactly (an unknown op, a null for a required column, a column the
schema does not declare, a decimal out of range), or a batch Arrow cannot read goes the
per-message way: :meth:`DebeziumJsonFormat.decode`, then its images written as Avro of
their own row schema and read back as the batch's (Avro schema resolution), so a message
of an older schema version still lands in the typed columns, and a bad one becomes an
error of its own, never costing the good ones their records.

Messages without a row schema, schemaless ones (``schemas.enable=false``) and MongoDB's
(whose ``before`` / ``after`` are the document's JSON text), get a row schema inferred from
sample images (:func:`infer_envelope`): a JSON boolean is ``boolean``; integers ``bigint``;
numbers with a fraction ``double`` (a number a double would change makes the column
``string``, its exact text); an object whose keys are all Avro names a struct (the union
of the samples' keys); arrays of their items' type; anything else (a column of mixed
kinds, MongoDB's ``{"$oid": ...}`` wrappers, only nulls in the samples) ``string``, a
value's JSON text where it is no string. Each column is nullable. A later image that does
not fit the inferred columns (a column the samples did not have, a string where they had
numbers) is a dead letter saying so.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
from fastavro.schema import SchemaParseException
from pyspark.sql.types import StructField, StructType

from cdc_connectors.formats.base import Message, SkipMessage
from cdc_connectors.formats.debezium import (
    DebeziumJsonFormat,
    json_kind,
)
from cdc_connectors.formats.debezium.row_schemas import RowSchema
from cdc_connectors.json_values import is_json
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.json_codec import json_default, long_fractions_alike
from cdc_connectors.opencdc.metadata import Metadata
from cdc_connectors.schema import avro_values, float32, framing
from cdc_connectors.schema.connect import (
    DEFAULT_DECIMAL_PRECISION,
    ConnectSchema,
    connect_to_avro,
)
from cdc_connectors.schema.connect.node import string_keys
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.spark.arrow import data_array
from cdc_connectors.spark.arrow_lists import item_rows, list_offsets, list_sizes
from cdc_connectors.spark.arrow_names import names_are_text
from cdc_connectors.spark.avro_decode import AvroBatchDecoder
from cdc_connectors.spark.decimal_text import (
    MAX_TEXT_DIGITS,
    image_texts,
    text_avro,
    unscaled_text,
)
from cdc_connectors.spark.envelope_columns import (
    EnvelopeColumns,
    NotColumnar,
    mask,
    metadata_map,
)
from cdc_connectors.spark.json_blocks import read_lines, too_deep
from cdc_connectors.spark.map_columns import MapColumn, MapColumns, Parsed
from cdc_connectors.spark.schema import OPENCDC_ARROW_SCHEMA, OPENCDC_SCHEMA

__all__ = [
    "TypedDebeziumDecoder",
    "TypedKeyReader",
    "doubles_for_floats",
    "infer_envelope",
    "one_json_value",
    "output_schema",
    "spark_schema",
    "two_documents",
    "typed_schema",
]

_AVRO_MISFIT = "does not fit its Avro schema: "
_JSON_TYPES = {
    "int8": pa.int64(),
    "int16": pa.int64(),
    "int32": pa.int64(),
    "int64": pa.int64(),
    "float32": pa.float64(),
    "float64": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
    "bytes": pa.string(),
}
#: The values of a map column the typed read takes: Connect type -> their JSON kind.
_MAP_VALUES = {
    "string": "string",
    "boolean": "boolean",
    "int8": "integer",
    "int16": "integer",
    "int32": "integer",
    "int64": "integer",
}
_INT_RANGE = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_PRECISION = "connect.decimal.precision"
_DEFAULT_PRECISION = DEFAULT_DECIMAL_PRECISION
_OTHERS = ("error", "skip")
_CANONICAL_UUID = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
# Years 1-9999 (Python's and Spark's dates): what the per-message way refuses outside them.
# A number with a point among 16+ digits (a double holds 15-17), an exponent of 3 digits,
# NaN or Infinity: sixteen-character windows with the point at each place (RE2 has no
# lookahead). Runs of digits alone are integers: Arrow reads them exactly into integer
# columns, and into a double column only those below 2**53 are sure to stay the same
# (:func:`_big_integral`), so a microsecond timestamp beside a double keeps the fast path.
_POINT_AMONG_16 = [f"[0-9.]{{{k}}}\\.[0-9.]{{{15 - k}}}" for k in range(16)]
# An exponent counts where a number starts (after ':', ',' or '['), so that hex text in
# strings (a UUID's "4e907") does not send its message the per-message way.
_BIG_EXPONENT = "[:,\\[][ \\t\\n\\r]*-?[0-9]+(?:\\.[0-9]+)?[eE][-+]?[0-9]{3}"
# The integer -0: Arrow reads it into a double column as -0.0, the per-message way as 0.
_INTEGER_MINUS_ZERO = "[:,\\[][ \\t\\n\\r]*-0[,}\\] \\t\\n\\r]"
# Sixteen digits or more with an exponent but no point (12345678901234567e-1).
_DIGITS_WITH_EXPONENT = "[0-9]{16}[0-9]*[eE]"
# Numbers of 16 digits or more: a double holds most (Debezium writes a double's shortest
# text); each message holding one is looked at number by number.
_LONG_NUMBER = "|".join([*_POINT_AMONG_16, _DIGITS_WITH_EXPONENT])
# NaN and Infinity where a number starts (not in text: "BaNaNa", base64 holding "NaN").
_NOT_A_NUMBER = "[:,\\[][ \\t\\n\\r]*-?(?:NaN|Infinity)"
_ODD_NUMBER = "|".join([_BIG_EXPONENT, _INTEGER_MINUS_ZERO, _NOT_A_NUMBER])
# A message holding more than one JSON document (or the start of another after its own):
# read together, documents could shift between messages.
_TWO_DOCUMENTS = "\\}[ \\t\\n\\r]*\\{"
# A before or after image spelt {} (or a column of that name holding {}: sent the
# per-message way too, rarely).
_EMPTY_IMAGE = '"(before|after)"[ \\t\\n\\r]*:[ \\t\\n\\r]*\\{[ \\t\\n\\r]*\\}'
_EMPTY_OR_ODD = f"{_EMPTY_IMAGE}|{_ODD_NUMBER}"

#: Parts of a batch Arrow may refuse whole before the rest it refuses is left unsplit
#: (:meth:`TypedDebeziumDecoder._fast_parts`): enough to find a couple of bad messages
#: among thousands (each takes about one refused part per halving).
_FAILED_PARTS = 32
_EXACT_DOUBLE = float(2**53)
_MIN_MICROS, _MAX_MICROS = -62_135_596_800_000_000, 253_402_300_799_999_999
# Bytes, not Arrow scalars, at import: pyarrow imports pandas to make its first value
# from a Python object, which a Spark task that only plans or commits never needs.
_PAYLOAD_KEY, _CLOSE = b'"payload":', b"}"


def typed_schema(row_avro: str) -> pa.StructType:
    """The Arrow struct type of a row whose Avro schema is ``row_avro`` (JSON text)."""
    return AvroBatchDecoder(orjson.loads(row_avro)).arrow_type


def spark_schema(row: StructType) -> StructType:
    """The typed OpenCDC layout as a Spark schema, for rows of Spark type ``row``."""
    base = OPENCDC_SCHEMA
    return StructType(
        [
            base["position"],
            base["operation"],
            base["metadata"],
            base["key"],
            StructField("before", row, True),
            StructField("after", row, True),
        ]
    )


def output_schema(row: pa.StructType) -> pa.Schema:
    """The typed OpenCDC layout for rows of type ``row`` (module docstring)."""
    base = OPENCDC_ARROW_SCHEMA
    return pa.schema(
        [
            base.field("position"),
            base.field("operation"),
            base.field("metadata"),
            base.field("key"),
            pa.field("before", row, nullable=True),
            pa.field("after", row, nullable=True),
        ]
    )


class TypedDebeziumDecoder:
    """Debezium JSON of one envelope schema -> typed OpenCDC Arrow batches (module docstring).

    ``envelope`` is the value's ``schema`` block (a Connect struct with ``before`` and
    ``after``); :meth:`from_message` takes it from a sample message.

    ``collection`` is the collection the rows are of (:meth:`from_message` takes the
    sample's): a message of another collection is a dead letter saying so (``others``
    ``"error"``), or left out (``"skip"``: the user chose this collection among several).
    ``None`` takes messages of any collection.

    ``spelled`` is the text the messages of the fast path start with: the schema block as
    they write it, up to and including the comma after it (JsonConverter's compact
    ``{"schema":<block>,`` when ``None``); empty for messages without one, typed by an
    envelope inferred from them (:mod:`cdc_connectors.columnar.schemaless`).

    ``floats_as_doubles`` keeps ``float32`` fields as the double their JSON text reads as
    (what the per-message way holds, for writers of doubles such as OpenCDC's) instead of
    Spark's ``float``; such a decoder serves :meth:`decode_fast` only.
    """

    def __init__(
        self,
        fmt: DebeziumJsonFormat,
        envelope: Mapping[str, Any],
        collection: str | None = None,
        others: str = "error",
        *,
        inferred: bool = False,
        spelled: bytes | None = None,
        floats_as_doubles: bool = False,
    ):
        if others not in _OTHERS:
            raise ValueError(f"others must be one of {', '.join(_OTHERS)}, not {others!r}")
        self.fmt = fmt
        self.envelope = dict(envelope)
        self.collection = collection
        self.others = others
        #: The row schema was inferred from sample images (:func:`infer_envelope`): images
        #: are fitted to it before they are written.
        self.inferred = inferred
        rows = fmt.envelope_rows(envelope)
        row = rows[1] or rows[0]
        if row is None or row.avro_text is None:
            raise CodecError(
                (row.problem if row is not None else None)
                or "value schema: the envelope has no before/after row schema with an Avro form"
            )
        self.row = row
        self._writers: dict[str, _Writer] = {}
        reader = self._writer(row.avro_text, row.connect)
        try:
            decoder = AvroBatchDecoder(orjson.loads(reader.avro))
        except (ValueError, TypeError, KeyError, SchemaParseException) as exc:
            raise CodecError(f"value schema: the row has no Spark type: {exc}") from None
        self.floats_as_doubles = floats_as_doubles
        self.row_type = decoder.arrow_type
        if floats_as_doubles:
            widened = doubles_for_floats(self.row_type)
            assert isinstance(widened, pa.StructType)
            self.row_type = widened
        self.schema = output_schema(self.row_type)
        #: The same layout as a Spark schema (``mapInArrow``, a data source's ``schema()``).
        self.spark_schema = spark_schema(decoder.spark_type)
        self._reader_avro = reader.avro
        self._decoders: dict[str, AvroBatchDecoder] = {}
        self._prefix = _compact_prefix(envelope) if spelled is None else spelled
        self._plan: _Plan | None = None
        # The columns read both images by one row schema: an envelope whose before and
        # after differ (as AvroData tells schemas apart) is read the per-message way.
        before, after = rows
        one_row = before is None or after is None or _fields_of(before) == _fields_of(after)
        if not inferred and fmt.described_by_envelope() and one_row:
            try:
                self._plan = _Plan(envelope, row.connect, self.row_type, fmt)
            except NotColumnar:
                self._plan = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Parsed plans hold functions: executors rebuild them from the format and schema.
        return (
            _rebuilt,
            (
                self.fmt,
                self.envelope,
                self.collection,
                self.others,
                self.inferred,
                self._prefix,
                self.floats_as_doubles,
            ),
        )

    @classmethod
    def from_message(
        cls, fmt: DebeziumJsonFormat, message: Message, *, others: str = "error"
    ) -> TypedDebeziumDecoder:
        """The decoder for the envelope schema of ``message`` (a change event with one), of
        the collection ``message`` is of."""
        if message.value is None:
            raise CodecError("value: a tombstone carries no schema")
        try:
            document = orjson.loads(message.value)
        except orjson.JSONDecodeError as exc:
            raise CodecError(f"value is not valid JSON: {exc}") from None
        schema = document.get("schema") if isinstance(document, dict) else None
        if not isinstance(schema, dict):
            raise CodecError("value: no 'schema' block (Kafka Connect schemas.enable=false)")
        return cls(fmt, schema, fmt.collection_of_value(message.value)[1], others)

    def _writer(self, avro_text: str, connect: ConnectSchema) -> _Writer:
        """How images of a row schema (its Avro text as registered) are written for the
        typed columns: decimals Spark has no type for as their text (:mod:`decimal_text`)."""
        found = self._writers.get(avro_text)
        if found is None:
            try:
                texts = image_texts(connect)
                spark_avro = (
                    avro_text
                    if texts is None
                    else orjson.dumps(text_avro(orjson.loads(avro_text))).decode()
                )
            except ValueError as exc:
                raise CodecError(f"value schema: the row has no Spark type: {exc}") from None
            found = self._writers[avro_text] = _Writer(spark_avro, texts)
        return found

    def _two_documents(self, values: pa.Array) -> np.ndarray:
        """:func:`two_documents` of what follows the prefix: all that can hold a second."""
        return two_documents(pc.binary_slice(values, len(self._prefix), 2**31 - 1))

    def _foreign(self, collection: str | None) -> str | None:
        """Why a row of ``collection`` is not one of this decoder's, or None if it is."""
        if self.collection is None or collection is None or collection == self.collection:
            return None
        return (
            f"collection {collection!r}: the typed columns of this read are those of "
            f"{self.collection!r}; typed columns are one collection's, so read "
            f"{collection!r} on its own (setting 'collection')"
        )

    # --- the batch ---------------------------------------------------------------------------

    def decode(
        self, messages: Sequence[Message]
    ) -> tuple[pa.RecordBatch, list[tuple[int, CodecError]]]:
        """The typed batch of ``messages`` (in message order; skipped messages give no row)
        and the errors, each with the index of its message."""
        values = pa.array([m.value for m in messages], pa.binary())
        keys = (
            None
            if all(m.key is None for m in messages)
            else pa.array([m.key for m in messages], pa.binary())
        )
        places = pa.array(
            [m.where.encode("utf-8", "surrogateescape") for m in messages], pa.binary()
        )
        return self.decode_arrays(values, keys, places)

    def decode_arrays(
        self, values: pa.Array, keys: pa.Array | None = None, places: pa.Array | None = None
    ) -> tuple[pa.RecordBatch, list[tuple[int, CodecError]]]:
        """:meth:`decode` over Arrow columns: message values, keys (or ``None``) and places
        (each record's position when the format sets none; empty when ``None``), all binary.
        No Python object per row on the fast path."""
        if self.floats_as_doubles:
            raise ValueError("a decoder of floats as doubles serves decode_fast only")
        count = len(values)
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        fast = np.zeros(count, dtype=bool)
        if self._plan is not None and not self.fmt.key_fields and count:
            fast = mask(pc.starts_with(values, self._prefix)) & ~self._two_documents(values)
        fast_rows = np.flatnonzero(fast)
        slow_rows = [int(row) for row in np.flatnonzero(~fast)]
        parts: list[tuple[list[int], pa.RecordBatch]] = []
        errors: list[tuple[int, CodecError]] = []
        if len(fast_rows):
            taken = pa.array(fast_rows)
            fast_parts = self._fast_parts(
                values.take(taken),
                _places(places, count).take(taken),
                fast_rows,
                [_FAILED_PARTS],
                None if keys is None else keys.take(taken),
            )
            done = np.zeros(count, dtype=bool)
            for batch, rows in fast_parts:
                done[rows] = True
                parts.append(([int(r) for r in rows], batch))
            slow_rows.extend(int(row) for row in fast_rows[~done[fast_rows]])
        if slow_rows:
            slow_rows.sort()
            messages = _messages(values, keys, places, slow_rows)
            owners, batch, slow_errors = self._slow(messages, slow_rows)
            parts.append((owners, batch))
            errors.extend(slow_errors)
        errors.sort(key=lambda pair: pair[0])
        return self._merge(parts), errors

    def decode_fast(
        self,
        values: pa.Array,
        places: pa.Array | None = None,
        read: pa.Array | None = None,
        prefixed: bool = False,
    ) -> tuple[pa.RecordBatch, np.ndarray]:
        """Only the rows the fast path takes exactly: their typed batch (``key`` left null)
        and their indexes in ``values``. Every other row is the caller's to decode the
        per-message way; no row is taken when the fast path is off for this decoder.
        ``read``: each value's payload as Arrow's JSON reader read it already (events
        without a schema block, whose types it inferred), not read again where its types
        are the decoder's. ``prefixed``: every value is known to start with this decoder's
        schema block (the caller matched them by it)."""
        count = len(values)
        none = np.zeros(0, dtype=np.int64)
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        if self._plan is None or self.fmt.key_fields or not count:
            return _empty(self.schema), none
        alone = ~self._two_documents(values)
        if not prefixed:
            alone &= mask(pc.starts_with(values, self._prefix))
        rows = np.flatnonzero(alone)
        if not len(rows):
            return _empty(self.schema), none
        places = _places(places, count)
        if len(rows) < count:
            taken = pa.array(rows)
            values, places = values.take(taken), places.take(taken)
            read = None if read is None else read.take(taken)
        if read is not None:
            read = _conformed(read, self._plan.payload_type)
        parts = self._fast_parts(values, places, rows, [_FAILED_PARTS], None, read=read)
        if not parts:
            return _empty(self.schema), none
        if len(parts) == 1:
            return parts[0]
        return pa.concat_batches([b for b, _ in parts]), np.concatenate([r for _, r in parts])

    def _fast_parts(
        self,
        values: pa.Array,
        places: pa.Array,
        rows: np.ndarray,
        budget: list[int],
        keys: pa.Array | None,
        screen: bool = True,
        read: pa.Array | None = None,
    ) -> list[tuple[pa.RecordBatch, np.ndarray]]:
        """The fast path over ``values`` (with their ``places`` and ``keys``; each message's
        row in the batch in ``rows``): the typed batches of the rows it takes, in order. A
        part Arrow refuses whole is first looked through for messages that are no JSON
        value (``screen``: once, the first time; :func:`one_json_value`), which go the
        per-message way, and the rest tried again; a part refused still (a value of
        another type than its column's, one that is two documents) is split in halves and
        each tried again, so that one bad message sends only itself the per-message way,
        not its whole batch; after ``budget[0]`` refused parts, the parts not yet tried go
        that way unread (a batch refused throughout costs a few reads more, not one a
        message). ``read``: the payloads as read already (:meth:`decode_fast`)."""
        if budget[0] <= 0:
            return []
        try:
            batch, rejected = self._fast(values, keys, places, read)
        except (NotColumnar, pa.ArrowInvalid, pa.ArrowNotImplementedError):
            budget[0] -= 1
            if len(rows) < 2:
                return []
            if screen:
                whole = one_json_value(values)
                if not whole.all():
                    kept = np.flatnonzero(whole)
                    taken = pa.array(kept)
                    return self._fast_parts(
                        values.take(taken),
                        places.take(taken),
                        rows[kept],
                        budget,
                        None if keys is None else keys.take(taken),
                        False,
                        None if read is None else read.take(taken),
                    )
            half = len(rows) // 2
            return [
                *self._fast_parts(
                    values.slice(0, half),
                    places.slice(0, half),
                    rows[:half],
                    budget,
                    None if keys is None else keys.slice(0, half),
                    False,
                    None if read is None else read.slice(0, half),
                ),
                *self._fast_parts(
                    values.slice(half),
                    places.slice(half),
                    rows[half:],
                    budget,
                    None if keys is None else keys.slice(half),
                    False,
                    None if read is None else read.slice(half),
                ),
            ]
        if rejected.any():
            batch = batch.filter(pa.array(~rejected))
            rows = rows[~rejected]
        return [(batch, rows)] if len(rows) else []

    def _merge(self, parts: list[tuple[list[int], pa.RecordBatch]]) -> pa.RecordBatch:
        parts = [(owners, batch) for owners, batch in parts if batch.num_rows]
        if not parts:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        if len(parts) == 1:
            return parts[0][1]
        owners = np.concatenate([np.asarray(o, dtype=np.int64) for o, _ in parts])
        table = pa.Table.from_batches([b for _, b in parts], schema=self.schema)
        order = np.argsort(owners, kind="stable")
        return table.take(pa.array(order)).combine_chunks().to_batches()[0]

    # --- the fast path -----------------------------------------------------------------------

    def _fast(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        read: pa.Array | None = None,
    ) -> tuple[pa.RecordBatch, np.ndarray]:
        """The fast path: the batch (one row per value) and which rows must go the
        per-message way instead (``read``: the payloads as read already, of this
        decoder's types)."""
        assert self._plan is not None
        count = len(values)
        # Each value without its schema block: {"payload": ...}, one per line (a value
        # without one, the empty prefix, is the payload itself).
        if self._prefix:
            rest = pc.binary_slice(values, len(self._prefix), 2**31 - 1)
        else:
            rest = pc.binary_join_element_wise(_PAYLOAD_KEY, values, _CLOSE, b"")
        maps, maps_bad = None, None
        if self._plan.maps is not None:
            if read is not None:
                raise NotColumnar("maps in events without a schema block")
            maps, maps_bad = self._plan.maps.parse(rest)
        if read is None:
            table = _read_rests(rest, self._plan.json_schema)
            if table.num_rows != count:
                raise NotColumnar("a message is more than one JSON document")
            if table.schema.names != ["payload"]:
                raise NotColumnar("top-level fields besides schema and payload")
            payload = table.column("payload").combine_chunks()
        else:
            payload = read
        # Arrow's reader passes invalid UTF-8 and lone surrogates into strings: refused
        # here as the per-message way refuses them (the batch goes that way).
        payload.validate(full=True)
        columns, bad = self._plan.convert(payload, maps)
        if maps_bad is not None:
            bad |= maps_bad
        # An image spelt {} is none (Arcion's "absent"); Arrow reads it as a row of nulls.
        if not self._plan.has_doubles:
            bad |= mask(pc.match_substring_regex(rest, _EMPTY_IMAGE))
        else:
            # And numbers a double would change, and NaN / Infinity, which JSON has not:
            # Arrow reads them all; the per-message way keeps them exact or refuses them.
            bad |= _inexact_numbers(rest, _EMPTY_OR_ODD)
            for image in ("before", "after"):
                bad |= _big_integral(payload.field(image))
        key_data, key_bad = self._keys(keys, count)
        bad |= key_bad
        if self.collection is not None:
            # Rows of another collection: the per-message way says what becomes of them.
            bad |= mask(pc.not_equal(columns["collection"], self.collection))
        batch = pa.RecordBatch.from_arrays(
            [
                places,
                columns["operation"],
                self._metadata(columns, count, bad),
                key_data,
                columns["before"],
                columns["after"],
            ],
            schema=self.schema,
        )
        return batch, bad

    def _keys(self, keys: pa.Array | None, count: int) -> tuple[pa.Array, np.ndarray]:
        """The Kafka keys as OpenCDC data (small: parsed one by one)."""
        bad = np.zeros(count, dtype=bool)
        if keys is None or keys.null_count == count:
            return pa.nulls(count, OPENCDC_ARROW_SCHEMA.field("key").type), bad
        found: list[Any] = []
        for n, key in enumerate(keys.to_pylist()):
            if key is None:
                found.append(None)
                continue
            try:
                data, key_schema = self.fmt.kafka_key(key)
            except CodecError:
                bad[n] = True
                data, key_schema = None, None
            if key_schema is not None and self.fmt.registry_url:
                bad[n] = True  # the key's schema is named per message: the per-message way
            found.append(data)
        try:
            return data_array(found, "key"), bad
        except CodecError as exc:
            raise NotColumnar(str(exc)) from None

    def _metadata(self, columns: dict[str, Any], count: int, bad: np.ndarray) -> pa.MapArray:
        if not self.fmt.registry_url:
            return metadata_map(columns, count)
        # The per-message way names the row's schema for a change with an image only.
        imageless = ~(mask(pc.is_valid(columns["before"])) | mask(pc.is_valid(columns["after"])))
        more = self._schema_entries(columns["collection"], count, bad, imageless)
        return metadata_map(columns, count, more)

    def _schema_entries(
        self, collection: pa.Array, count: int, bad: np.ndarray, unnamed: np.ndarray
    ) -> list[tuple[str, pa.Array]]:
        """``opencdc.payload.schema.*`` for each row: registered once per collection of the
        rows that are not ``bad`` (those go the per-message way, which registers nothing for
        a message it refuses); a bad row of another collection, and an ``unnamed`` one, is
        named by none. The rows of a collection whose schema the registry refuses are made
        ``bad``: the per-message way makes them dead letters saying why."""
        names: dict[str | None, tuple[str | None, str | None]] = {None: (None, None)}
        named = ~bad & ~unnamed
        good = collection.filter(pa.array(named)) if not named.all() else collection
        for value in pc.unique(good).to_pylist():
            metadata = Metadata()
            try:
                self.fmt.name_schema(metadata, "payload", self.row, value)
            except CodecError:
                refused = mask(
                    pc.is_null(collection) if value is None else pc.equal(collection, value)
                )
                bad |= refused
                continue
            named = framing.conduit_schema(metadata, "payload")
            assert named is not None  # just set
            names[value] = (named[0], str(named[1]))
        values = [
            v if ok and v in names else None
            for v, ok in zip(collection.to_pylist(), (~bad & ~unnamed).tolist(), strict=True)
        ]
        subject_key, version_key = framing.CONDUIT_KEYS["payload"]
        return [
            (subject_key, pa.array([names[v][0] for v in values], pa.string())),
            (version_key, pa.array([names[v][1] for v in values], pa.string())),
        ]

    # --- the per-message path ----------------------------------------------------------------

    def _slow(
        self, messages: Mapping[int, Message], indexes: list[int]
    ) -> tuple[list[int], pa.RecordBatch, list[tuple[int, CodecError]]]:
        records: list[Record] = []
        owners: list[int] = []
        bodies: dict[str, list[tuple[int, int, bytes | None, bytes | None]]] = {}
        errors: list[tuple[int, CodecError]] = []
        for index in indexes:
            message = messages[index]
            if self.collection is not None:
                foreign = self._foreign(self.fmt.collection_of_value(message.value)[1])
                if foreign is not None:
                    if self.others == "error":
                        errors.append((index, CodecError(foreign)))
                    continue
            try:
                found = self.fmt.decode(message)
                foreign = next(
                    (w for w in (self._foreign(r.metadata.collection) for r in found) if w), None
                )
                if foreign is not None:
                    if self.others == "skip":
                        continue
                    raise CodecError(foreign)
                writer = self._writer_schema(message)
                images = [self._bodies(writer, r) for r in found]
            except SkipMessage:
                continue
            except CodecError as exc:
                errors.append((index, exc))
                continue
            for record, (before, after) in zip(found, images, strict=True):
                if not record.position:
                    record.position = message.where.encode("utf-8")
                bodies.setdefault(writer.avro, []).append((len(records), index, before, after))
                records.append(record)
                owners.append(index)
        befores: list[pa.Array | None] = [None] * len(records)
        afters: list[pa.Array | None] = [None] * len(records)
        bad: dict[int, str] = {}
        for avro, rows in bodies.items():
            try:
                decoder = self._decoder(avro)
            except (ValueError, TypeError, KeyError, SchemaParseException) as exc:
                # This writer schema has no Spark reading: its messages' own dead letters.
                for _, owner, *_rest in rows:
                    bad.setdefault(owner, f"value schema: no typed reading: {exc}")
                continue
            for side, out in ((2, befores), (3, afters)):
                present = [r for r in rows if r[side] is not None]
                if not present:
                    continue
                array, problems = decoder.decode([r[side] for r in present], [0] * len(present))  # type: ignore[misc]
                for n, (slot, owner, *_rest) in enumerate(present):
                    if problems[n] is not None:
                        bad.setdefault(owner, problems[n])  # type: ignore[arg-type]
                    out[slot] = array.slice(n, 1)
        keep = [i for i, owner in enumerate(owners) if owner not in bad]
        errors.extend((owner, CodecError(reason)) for owner, reason in bad.items())
        base = _records_base([records[i] for i in keep])
        batch = pa.RecordBatch.from_arrays(
            [
                *base,
                _stack([befores[i] for i in keep], self.row_type),
                _stack([afters[i] for i in keep], self.row_type),
            ],
            schema=self.schema,
        )
        return [owners[i] for i in keep], batch, errors

    def _writer_schema(self, message: Message) -> _Writer:
        """How the images of ``message`` are written: the Avro text (Spark's side) of the
        row schema it was written with."""
        document = orjson.loads(message.value) if message.value is not None else None
        schema = document.get("schema") if isinstance(document, dict) else None
        if schema is None:
            return self._writer(self.row.avro_text or "", self.row.connect)  # schemaless
        rows = self.fmt.envelope_rows(schema)
        row = rows[1] or rows[0]
        if row is None and rows == (None, None) and self.inferred:
            # No row struct (MongoDB's JSON text images): the inferred row is theirs.
            return self._writer(self.row.avro_text or "", self.row.connect)
        if row is None or row.avro_text is None:
            raise CodecError(
                (row.problem if row is not None else None) or "value schema: no row schema"
            )
        return self._writer(row.avro_text, row.connect)

    def _bodies(self, writer: _Writer, record: Record) -> tuple[bytes | None, bytes | None]:
        if writer.parsed is None:
            try:
                writer.parsed = avro_values.parse_schema(writer.avro)
            except SchemaError as exc:
                raise CodecError(f"value schema: no Avro reading: {exc}") from None
        out: list[bytes | None] = []
        for side, image in (("before", record.payload.before), ("after", record.payload.after)):
            if image is None:
                out.append(None)
            elif isinstance(image, dict):
                if self.inferred and writer.avro == self._reader_avro:
                    image = _fit_row(self.row.connect, image)
                if writer.texts is not None:
                    image = writer.texts(image)
                try:
                    out.append(avro_values.encode(writer.parsed, image))
                except CodecError as exc:  # (the images travel as Avro of their row schema)
                    reason = exc.reason.removeprefix(_AVRO_MISFIT).replace(" an Avro ", " a ")
                    raise CodecError(f"the typed columns do not hold it: {side}.{reason}") from None
            else:
                raise CodecError("a raw image has no typed columns")
        return out[0], out[1]

    def _decoder(self, writer: str) -> AvroBatchDecoder:
        found = self._decoders.get(writer)
        if found is None:
            found = self._decoders[writer] = AvroBatchDecoder(
                orjson.loads(writer), orjson.loads(self._reader_avro)
            )
        return found


class TypedKeyReader:
    """Kafka keys that start with one ``{"schema": ...,`` block (JsonConverter's, for a
    struct key) -> a typed struct column of their payloads, column by column.

    ``block`` is the keys' ``schema`` block and ``connect`` its parsed schema
    (:meth:`DebeziumJsonFormat.kafka_key` of a sample key). The column has the Spark types
    of the key's schema, as the row's images have theirs. :class:`ValueError` when the
    schema has no such column."""

    def __init__(
        self, block: Mapping[str, Any], connect: ConnectSchema, spelled: bytes | None = None
    ):
        #: The text every key of this reader starts with (``spelled``, as the keys write
        #: their block; JsonConverter's compact spelling when ``None``).
        self.prefix = spelled or _compact_prefix(block)
        self.connect = connect
        try:
            avro = connect_to_avro(connect)
            if image_texts(connect) is not None:
                avro = text_avro(avro)
            if not isinstance(avro, dict):
                raise TypeError("a key that is no struct")
            self.row_type: pa.StructType = AvroBatchDecoder(avro).arrow_type
            self._column = _column(connect, self.row_type, optional=False)
        except (SchemaError, NotColumnar, TypeError, KeyError, SchemaParseException) as exc:
            raise ValueError(f"key schema: no typed columns: {exc}") from None
        self._json_schema = pa.schema([pa.field("payload", self._column.json_type)])
        self._has_doubles = _has_doubles(self._column.json_type)

    def read(self, keys: pa.Array) -> tuple[pa.Array, np.ndarray]:
        """The typed payload of each key (each starts with :attr:`prefix`) and the keys
        the per-message way must read instead; :class:`ValueError` when Arrow cannot read
        them together (then every one goes that way)."""
        count = len(keys)
        rest = pc.binary_slice(keys, len(self.prefix), 2**31 - 1)
        try:
            table = _read_rests(rest, self._json_schema)
            if table.num_rows != count or table.schema.names != ["payload"]:
                raise ValueError("keys Arrow reads otherwise")
            payload = table.column("payload").combine_chunks()
            payload.validate(full=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValueError(str(exc)) from None
        if payload.type != self._column.json_type:
            raise ValueError("key fields the schema does not declare")
        flagged = self._column.convert(payload)
        bad = flagged.bad  # a null payload too: the struct is required
        if self._has_doubles:
            bad |= _inexact_numbers(rest, _ODD_NUMBER)
            bad |= _big_integral(payload)
        return flagged.array, bad


def _fields_of(row: RowSchema) -> list[tuple[str, bool, bytes]]:
    """What tells two row schemas' values apart: each field's name, whether it is optional,
    and its type (the row's own name, doc and version do not: CDL names its before and
    after rows apart)."""
    return [(name, child.optional, child.identity) for name, child in row.connect.fields]


def _rebuilt(
    fmt: DebeziumJsonFormat,
    envelope: Mapping[str, Any],
    collection: str | None,
    others: str,
    inferred: bool,
    spelled: bytes,
    floats_as_doubles: bool,
) -> TypedDebeziumDecoder:
    return TypedDebeziumDecoder(
        fmt,
        envelope,
        collection,
        others,
        inferred=inferred,
        spelled=spelled,
        floats_as_doubles=floats_as_doubles,
    )


def doubles_for_floats(type_: pa.DataType) -> pa.DataType:
    """``type_`` with every ``float32`` (at any depth of structs and lists) a ``float64``."""
    if pa.types.is_struct(type_):
        return pa.struct([field.with_type(doubles_for_floats(field.type)) for field in type_])
    if pa.types.is_list(type_):
        return pa.list_(type_.value_field.with_type(doubles_for_floats(type_.value_type)))
    return pa.float64() if type_ == pa.float32() else type_


def _inexact_numbers(values: pa.Array, odd: str) -> np.ndarray:
    """Rows of ``values`` matching ``odd`` (NaN, Infinity, what else the caller looks
    for), and those holding a number of 16 digits or more that a double changes, which
    the per-message way keeps exact or refuses: each such row looked at alone."""
    text = values.cast(pa.string())
    bad = np.zeros(len(values), dtype=bool)
    # One pass over every row for either; the few that match are told apart after.
    rows = np.flatnonzero(mask(pc.match_substring_regex(text, f"{odd}|{_LONG_NUMBER}")))
    if len(rows):
        taken = pa.array(rows)
        odd_rows = mask(pc.match_substring_regex(text.take(taken), odd))
        bad[rows[odd_rows]] = True
        rows = rows[~odd_rows]
        texts = values.take(pa.array(rows)).to_pylist()
        bad[rows] = [not long_fractions_alike(found) for found in texts]
    return bad


def _conformed(read: pa.Array, type_: pa.DataType) -> pa.Array | None:
    """``read`` (payloads as Arrow inferred them) as the typed read gives them, ``type_``:
    the same values where each field's type is the one inferred (a field null throughout,
    which Arrow types as null, and a field no event holds are nulls of their type);
    ``None`` where a type differs or a field is not of ``type_``, for the typed read to
    read them."""
    if read.type == type_:
        return read
    if pa.types.is_null(read.type):
        return pa.nulls(len(read), type_)
    if not (pa.types.is_struct(read.type) and pa.types.is_struct(type_)):
        return None
    names = {read.type.field(i).name for i in range(read.type.num_fields)}
    wanted = [type_.field(i) for i in range(type_.num_fields)]
    if not names <= {field.name for field in wanted}:
        return None
    children = []
    for field in wanted:
        if field.name not in names:  # in no event: what the typed read gives
            children.append(pa.nulls(len(read), field.type))
            continue
        child = _conformed(read.field(field.name), field.type)
        if child is None:
            return None
        children.append(child)
    mask = read.is_null() if read.null_count else None
    return pa.StructArray.from_arrays(children, fields=wanted, mask=mask)


def one_json_value(values: pa.Array) -> np.ndarray:
    """Whether each value is one JSON value, as the per-message way reads one
    (:func:`~cdc_connectors.json_values.is_json`, each where it lies in the column)."""
    if values.type != pa.binary():  # 32-bit offsets are read below
        values = values.cast(pa.binary())
    found = np.zeros(len(values), dtype=bool)
    buffer = values.buffers()[2]
    if buffer is None:
        return found
    data = memoryview(buffer).cast("B")
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)
    offsets = offsets[values.offset : values.offset + len(values) + 1].tolist()
    valid = values.is_valid().to_numpy(zero_copy_only=False) if values.null_count else None
    for row in range(len(values)):
        if valid is None or valid[row]:
            found[row] = is_json(data[offsets[row] : offsets[row + 1]])
    return found


def two_documents(texts: pa.Array) -> np.ndarray:
    """Messages whose text holds more than one JSON document, or the start of another
    after its own (``}{``, with any whitespace between: no single document has it outside
    its strings). Read together with others, their documents would not be theirs."""
    return mask(pc.match_substring_regex(texts, _TWO_DOCUMENTS))


def _read_rests(rest: pa.Array, json_schema: pa.Schema) -> pa.Table:
    """Arrow's JSON reader over ``{`` + each of ``rest`` (what follows a schema block), one
    document a line; documents written over several lines (a pretty printer's) are read
    again with newlines allowed inside them, which is slower."""
    count = len(rest)
    if too_deep(rest).any():
        raise pa.ArrowInvalid("a message nested deeper than Arrow's reader reads safely")
    # "\n{" before each: the first line is blank (the reader skips it), and the text is
    # the joined column's own buffer, not copied.
    lines = _after_a_blank(rest.cast(pa.binary()))
    joined = pc.binary_join(
        pa.ListArray.from_arrays(pa.array([0, count + 1], pa.int32()), lines), b"\n{"
    )
    text = joined[0].as_buffer()
    options = pajson.ParseOptions(explicit_schema=json_schema, unexpected_field_behavior="infer")
    try:
        table = read_lines(text, options)
        if table.num_rows == count:
            return _named_as_text(table)
    except pa.ArrowInvalid:
        table = None
    if not pc.any(pc.match_substring(rest, "\n")).as_py():
        if table is None:
            raise pa.ArrowInvalid("a message Arrow's JSON reader refuses")
        return _named_as_text(table)
    options = pajson.ParseOptions(
        explicit_schema=json_schema, unexpected_field_behavior="infer", newlines_in_values=True
    )
    return _named_as_text(read_lines(text, options))


def _after_a_blank(values: pa.Array) -> pa.Array:
    """An empty value, then ``values`` (binary): over the same bytes where none is null."""
    if values.null_count:
        return pa.concat_arrays([pa.array([b""], pa.binary()), values])
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)
    offsets = offsets[values.offset : values.offset + len(values) + 1]
    data = values.buffers()[2]
    return pa.Array.from_buffers(
        pa.binary(),
        len(values) + 1,
        [None, pa.py_buffer(np.concatenate([offsets[:1], offsets])), data],
    )


def _named_as_text(table: pa.Table) -> pa.Table:
    """``table``, or :class:`pyarrow.ArrowInvalid` when a member name read is no UTF-8."""
    if not names_are_text(table.schema):
        raise pa.ArrowInvalid("a member name that is no UTF-8")
    return table


def _compact_prefix(block: Mapping[str, Any]) -> bytes:
    """How JsonConverter starts a message with schema block ``block``."""
    return b'{"schema":' + orjson.dumps(block) + b","


# --- rows without a schema: inferred from sample images (module docstring) ----------------

_AVRO_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEXT: dict[str, Any] = {"type": "string", "optional": True}


def infer_envelope(images: Iterable[Mapping[str, Any]], name: str | None = None) -> dict[str, Any]:
    """An envelope ``schema`` block whose ``before`` / ``after`` row is inferred from
    ``images`` (decoded rows: what :meth:`DebeziumJsonFormat.decode` gives for messages
    without a row schema); ``name`` names the row struct. ``ValueError`` when no image
    has a column, or a column name is no Avro name (the typed columns go through Avro)."""
    rows = [image for image in images if image]
    if not rows:
        raise ValueError("no sample image has a column to infer the row from")
    for image in rows:
        for column in image:
            if not _AVRO_FIELD.fullmatch(column):
                raise ValueError(f"column {column!r} is no Avro field name")
    row = _infer_struct(rows)
    if name:
        row["name"] = name
    return {
        "type": "struct",
        "optional": False,
        "fields": [{**row, "field": "before"}, {**row, "field": "after"}],
    }


def _infer_struct(objects: list[Mapping[str, Any]]) -> dict[str, Any]:
    names: list[str] = []
    for value in objects:
        names.extend(n for n in value if n not in names)
    fields = [{**_infer([o.get(n) for o in objects]), "field": n} for n in names]
    return {"type": "struct", "optional": True, "fields": fields}


def _infer(values: list[Any]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    if not present:
        return dict(_TEXT)
    if all(isinstance(v, bool) for v in present):
        return {"type": "boolean", "optional": True}
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return {"type": "int64", "optional": True}
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return {"type": "double", "optional": True}
    if all(isinstance(v, list) for v in present):
        items = _infer([item for v in present for item in v])
        return {"type": "array", "optional": True, "items": items}
    if all(
        isinstance(v, Mapping) and v and all(_AVRO_FIELD.fullmatch(str(k)) for k in v)
        for v in present
    ):
        return _infer_struct(present)
    return dict(_TEXT)


def _fit_row(row: ConnectSchema, image: Mapping[str, Any]) -> dict[str, Any]:
    """An image fitted to an inferred row (module docstring), or why it does not fit."""
    return _fit(row, image, "")  # type: ignore[no-any-return]


def _fit(node: ConnectSchema, value: Any, where: str) -> Any:
    if value is None:
        return None
    place = where or "the row"
    kind = node.type
    if kind == "string":
        if isinstance(value, str):
            return value
        return orjson.dumps(value, default=json_default).decode()
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "int64" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "float64" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "array" and isinstance(value, list):
        assert node.items is not None
        return [_fit(node.items, item, f"{place}[{n}]") for n, item in enumerate(value)]
    if kind == "struct" and isinstance(value, Mapping):
        prefix = f"{where}." if where else ""
        extra = [name for name in value if name not in node.field_names]
        if extra:
            raise CodecError(
                f"{prefix}{extra[0]}: a column the sample messages did not have (the typed "
                f"columns were inferred from them: {', '.join(sorted(node.field_names))})"
            )
        return {name: _fit(child, value.get(name), prefix + name) for name, child in node.fields}
    shown = "a double" if kind == "float64" else kind
    raise CodecError(
        f"{place}: {json_kind(value)} where the sample messages had {shown} (the typed columns "
        "were inferred from them)"
    )


@dataclass
class _Writer:
    """A row schema as the typed columns are written from it: Avro text (Spark's side),
    its parsed form once needed, and how its images become values of it."""

    avro: str
    texts: Callable[[Any], Any] | None
    parsed: Any = None


# --- the plan: Connect schema -> Arrow JSON schema and column converters --------------------


@dataclass
class _Flagged:
    """A converted column and the rows it could not take exactly (per-message way)."""

    array: pa.Array
    bad: np.ndarray


Convert = Callable[[pa.Array], _Flagged]


@dataclass(frozen=True)
class _Column:
    """How one Connect node is read by Arrow's JSON reader and converted to its typed column."""

    json_type: pa.DataType
    convert: Convert


class _Plan:
    """What the fast path reads and how it turns the parsed payload into columns."""

    def __init__(
        self,
        envelope: Mapping[str, Any],
        row: ConnectSchema,
        target: pa.StructType,
        fmt: DebeziumJsonFormat,
    ):
        self.envelope = EnvelopeColumns(envelope, row, fmt)
        #: The row's map columns, read apart (:mod:`~cdc_connectors.spark.map_columns`).
        self.maps = _map_columns(row, target)
        if self.maps is not None:
            names = {column.name for column in self.maps.columns}
            row = replace(row, fields=tuple(f for f in row.fields if f[0] not in names))
            target = pa.struct([field for field in target if field.name not in names])
        self.row = _column(row, target, optional=True)
        self.payload_type = pa.struct(
            [
                pa.field("before", self.row.json_type),
                pa.field("after", self.row.json_type),
                *self.envelope.fields(),
            ]
        )
        self.json_schema = pa.schema([pa.field("payload", self.payload_type)])
        self.has_doubles = _has_doubles(self.row.json_type)

    def convert(
        self, payload: pa.StructArray, maps: Parsed | None = None
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The columns of the parsed payloads (and of ``maps``, the messages' maps parsed
        apart, for a row that has map columns), and which rows must go the per-message
        way."""
        if payload.null_count:
            raise NotColumnar("a null payload")
        if self.maps is not None:
            if maps is None:
                raise NotColumnar("maps not read")
            payload = self.maps.without_maps(payload)
        if payload.type != self.payload_type:
            raise NotColumnar("fields the schema does not declare")
        images = {}
        bad = np.zeros(len(payload), dtype=bool)
        for name in ("before", "after"):
            images[name] = self.row.convert(payload.field(name))
            if self.maps is not None and maps is not None:
                image, refused = self.maps.with_maps(images[name].array, maps, name)
                images[name] = _Flagged(image, images[name].bad | refused)
            bad |= images[name].bad
        columns, refused = self.envelope.columns(
            payload, images["before"].array, images["after"].array
        )
        return columns, bad | refused


def _map_columns(row: ConnectSchema, target: pa.StructType) -> MapColumns | None:
    """The map columns among the row's own (string keys, values of text, integers or
    booleans without a semantic type), or ``None`` for a row without any;
    :class:`NotColumnar` for a map the typed read does not take (one with a default,
    other keys or values, or inside another column)."""
    columns = []
    for name, child in row.fields:
        if child.type != "map":
            _refuse_nested_maps(child)
            continue
        index = target.get_field_index(name)
        type_ = target.field(index).type if index >= 0 else None
        values = child.values
        if (
            not isinstance(type_, pa.MapType)
            or child.has_default
            or not string_keys(child)
            or values is None
            or values.semantic is not None
            or values.has_default
            or values.type not in _MAP_VALUES
        ):
            raise NotColumnar(f"{child.path}: a map the typed read does not take")
        item = _column(values, type_.item_type)
        kind, json_type = _MAP_VALUES[values.type], item.json_type

        def convert(array: pa.Array, item: _Column = item) -> tuple[pa.Array, np.ndarray]:
            flagged = item.convert(array)
            return flagged.array, flagged.bad

        columns.append(MapColumn(name, type_, child.optional, kind, json_type, convert))
    return MapColumns(columns, target) if columns else None


def _refuse_nested_maps(node: ConnectSchema) -> None:
    """:class:`NotColumnar` for a map inside a struct or an array."""
    if node.type == "map":
        raise NotColumnar(f"{node.path}: a map inside another column")
    for _, child in node.fields:
        _refuse_nested_maps(child)
    if node.items is not None:
        _refuse_nested_maps(node.items)


def _big_integral(array: pa.Array) -> np.ndarray:
    """Rows with a whole number of 2**53 or more in a double column: an integer Arrow may
    have rounded on the way in (the per-message way refuses those; a double that is one
    goes that way too, rarely)."""
    found = np.zeros(len(array), dtype=bool)
    if pa.types.is_struct(array.type):
        for index in range(array.type.num_fields):
            found |= _big_integral(array.field(index))
    elif pa.types.is_list(array.type):
        inner = _big_integral(pc.list_flatten(array))
        if inner.any():
            found[item_rows(list_sizes(array))[inner]] = True
    elif pa.types.is_floating(array.type):
        big = pc.and_(
            pc.greater_equal(pc.abs(array), _EXACT_DOUBLE), pc.equal(pc.floor(array), array)
        )
        found |= mask(pc.fill_null(big, False))
    return found


def _has_doubles(type_: pa.DataType) -> bool:
    if pa.types.is_struct(type_):
        return any(_has_doubles(field.type) for field in type_)
    if pa.types.is_list(type_):
        return _has_doubles(type_.value_type)
    return bool(pa.types.is_floating(type_))


def _column(node: ConnectSchema, target: pa.DataType, optional: bool | None = None) -> _Column:
    """How one Connect node is read and converted to ``target`` (its Spark type in Arrow);
    :class:`NotColumnar` if the fast path does not take it."""
    if node.has_default:
        # null (or no field) is the default: read as optional, then filled.
        fill = _default_scalar(node, target)
        inner = _column(replace(node, has_default=False), target, optional=True)
        return _Column(inner.json_type, _filled(inner.convert, fill))
    optional = node.optional if optional is None else optional
    name, kind = node.name, node.type
    if node.semantic is not None:
        way = node.semantic.columnar
        if way is None:
            raise NotColumnar(f"{node.path}: semantic type {name}")
        if way.kind == "decimal" and pa.types.is_decimal(target):
            return _Column(pa.string(), _decimal(target, optional))
        if way.kind == "decimal" and target == pa.string():  # no Spark decimal: the exact text
            scale = int(node.parameters["scale"])
            precision = int(node.parameters.get(_PRECISION, _DEFAULT_PRECISION))
            return _Column(pa.string(), _decimal_text(scale, precision, optional))
        if way.kind == "timestamp" and pa.types.is_timestamp(target):
            return _Column(pa.int64(), _timestamp(way.micros_per_unit, optional))
        if way.kind == "decimal_text" and pa.types.is_decimal(target):
            return _Column(pa.string(), _plain_decimal(target, optional))
        if way.kind == "iso_timestamp" and target == pa.timestamp("us", tz="UTC"):
            return _Column(pa.string(), _iso_timestamp(optional))
        if way.kind == "enum" and target == pa.string():
            return _Column(pa.string(), _enum(node.parameters.get("allowed"), optional))
        if way.kind == "uuid" and target == pa.string():
            return _Column(pa.string(), _uuid(optional))
        if way.kind == "by_value" and target == pa.string() and kind == "struct":
            return _by_value(node, optional)
        if way.kind in ("count", "time_of_day", "text") and kind in _JSON_TYPES:
            return _Column(_JSON_TYPES[kind], _plain(kind, target, optional, way.bounds))
        raise NotColumnar(f"{node.path}: semantic type {name}")
    if kind in _JSON_TYPES:
        return _Column(_JSON_TYPES[kind], _plain(kind, target, optional))
    if kind == "array" and pa.types.is_list(target) and node.items is not None:
        item = _column(node.items, target.value_type)
        return _Column(pa.list_(item.json_type), _list(item.convert, target, optional))
    if kind == "struct" and pa.types.is_struct(target):
        children = [
            (child_name, _column(child, target.field(child_name).type))
            for child_name, child in node.fields
        ]
        json_type = pa.struct([pa.field(n, c.json_type) for n, c in children])
        return _Column(json_type, _struct(children, target, optional))
    raise NotColumnar(f"{node.path}: {kind}")


def _default_scalar(node: ConnectSchema, target: pa.DataType) -> pa.Scalar:
    """A node's default as a value of its typed column; :class:`NotColumnar` when the
    column cannot hold it exactly (or it is a struct's)."""
    if node.type == "struct" or node.default is None:
        raise NotColumnar(f"{node.path}: a default of a struct or of null")
    try:
        fill = pa.scalar(node.default, type=target)
        same = fill.as_py() == node.default and type(fill.as_py()) is type(node.default)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        same = False
    if not same:
        raise NotColumnar(f"{node.path}: a default its typed column does not hold exactly")
    return fill


def _filled(convert: Convert, fill: pa.Scalar) -> Convert:
    def filled(array: pa.Array) -> _Flagged:
        flagged = convert(array)
        return _Flagged(pc.fill_null(flagged.array, fill), flagged.bad)

    return filled


def _nulls_bad(array: pa.Array, optional: bool) -> np.ndarray:
    if optional or not array.null_count:
        return np.zeros(len(array), dtype=bool)
    return mask(pc.is_null(array))


def _outside(array: pa.Array, low: int, high: int) -> pa.Array | None:
    """Which values of an integer column lie outside ``[low, high]`` (nulls: no), or
    ``None`` when none does: one look at the column's extremes decides the common case."""
    extremes = pc.min_max(array)
    least, most = extremes["min"].as_py(), extremes["max"].as_py()
    if least is None or (least >= low and most <= high):
        return None
    return pc.fill_null(pc.or_(pc.less(array, low), pc.greater(array, high)), False)


def _plain(
    kind: str, target: pa.DataType, optional: bool, bounds: tuple[int, int] | None = None
) -> Convert:
    if bounds is None and kind in _INT_RANGE and kind != "int64":
        bounds = _INT_RANGE[kind]

    def convert(array: pa.Array) -> _Flagged:
        bad = _nulls_bad(array, optional)
        if bounds is not None:
            low, high = bounds
            outside = _outside(array, low, high)
            if outside is not None:
                bad |= mask(outside)
                array = pc.if_else(outside, pa.scalar(0, array.type), array)
        if kind == "bytes":
            decoded, bad = _base64_column(array, bad)
            return _Flagged(decoded, bad)
        if kind == "float32":
            bad |= mask(pc.greater_equal(pc.abs(array), float32.RANGE))
            if target == pa.float32():  # (Spark's float: a number it would change is refused)
                doubles = pc.fill_null(pc.cast(array, pa.float64()), 0.0).to_numpy()
                bad |= ~float32.holds_each(doubles)
        if pa.types.is_date32(target):
            array = pc.cast(array, pa.int32())
        return _Flagged(pc.cast(array, target), bad)

    return convert


def _base64_column(array: pa.Array, bad: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    out: list[bytes | None] = []
    for n, text in enumerate(array.to_pylist()):
        if text is None:
            out.append(None)
            continue
        try:
            out.append(base64.b64decode(text, validate=True))
        except (binascii.Error, ValueError):
            bad[n] = True
            out.append(None)
    return pa.array(out, pa.binary()), bad


def _decimal(target: pa.Decimal128Type, optional: bool) -> Convert:
    limit = 10**target.precision

    def convert(array: pa.Array) -> _Flagged:
        bad = _nulls_bad(array, optional)
        numbers, done = _base64_int64(array)
        if limit <= 2**63:
            outside = done & ((numbers <= -limit) | (numbers >= limit))
            bad |= outside
            numbers[outside] = 0
        wide: dict[int, int] = {}
        rest = np.flatnonzero(~done & mask(pc.is_valid(array)))
        b64decode, from_bytes = base64.b64decode, int.from_bytes
        for n, text in zip(rest, array.take(pa.array(rest)).to_pylist(), strict=True):
            try:
                raw = b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raw = b""
            if not raw:  # no base64, or empty bytes: no decimal
                bad[n] = True
            number = from_bytes(raw, "big", signed=True)
            if not -limit < number < limit:
                bad[n] = True
                number = 0
            wide[int(n)] = number
        return _Flagged(_decimal_array(numbers, wide, array, target), bad)

    return convert


# Base64 digits -> their 6-bit values; 64 for the padding '=', 255 for anything else.
_BASE64_VALUES = np.full(256, 255, dtype=np.uint8)
_BASE64_VALUES[
    np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)
] = np.arange(64, dtype=np.uint8)
_BASE64_VALUES[ord("=")] = 64


def _base64_int64(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Big-endian two's complement integers of 1 to 8 bytes written as padded base64 (what
    Connect writes for a decimal's unscaled value): the numbers, and which rows were read
    here. Any other row (null, longer, text of another shape) is left to the exact
    per-value reading."""
    count = len(texts)
    numbers = np.zeros(count, dtype=np.int64)
    done = np.zeros(count, dtype=bool)
    if not count:
        return numbers, done
    binary = texts.cast(pa.binary())
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int32)[
        binary.offset : binary.offset + count + 1
    ].astype(np.int64)
    data = np.frombuffer(binary.buffers()[2] or b"", dtype=np.uint8)
    sizes = np.diff(offsets)
    present = mask(pc.is_valid(binary))
    for width in (4, 8, 12):
        rows = np.flatnonzero(present & (sizes == width))
        if not len(rows):
            continue
        codes = _BASE64_VALUES[data[offsets[rows][:, None] + np.arange(width)[None, :]]]
        pads = (codes[:, -1] == 64).astype(np.int64) + (codes[:, -2] == 64)
        shaped = (codes[:, :-2] < 64).all(axis=1) & (codes[:, -1] <= 64)
        shaped &= (codes[:, -2] < 64) | (codes[:, -1] == 64)
        length = width // 4 * 3 - pads
        shaped &= length <= 8
        digits = np.where(codes < 64, codes, 0).astype(np.uint64).reshape(len(rows), -1, 4)
        groups = (digits[..., 0] << 18) | (digits[..., 1] << 12) | (digits[..., 2] << 6)
        groups |= digits[..., 3]
        raw = np.stack([(groups >> 16) & 255, (groups >> 8) & 255, groups & 255], axis=-1)
        raw = raw.reshape(len(rows), -1)
        value = np.zeros(len(rows), dtype=np.uint64)
        for k in range(raw.shape[1]):
            inside = k < length
            value = np.where(inside, (value << np.uint64(8)) | raw[:, k], value)
        negative = raw[:, 0] >= 128
        short = negative & (length < 8)
        value[short] -= np.left_shift(np.uint64(1), (8 * length[short]).astype(np.uint64))
        numbers[rows[shaped]] = value[shaped].view(np.int64)
        done[rows[shaped]] = True
    return numbers, done


def _by_value(node: ConnectSchema, optional: bool) -> _Column:
    """A struct-shaped semantic type held as text (``VariableScaleDecimal``): each object
    read by the type's own ``convert``, the per-message way's function, one at a time; a
    value it refuses goes that way."""
    semantic = node.semantic
    assert semantic is not None
    read, parameters = semantic.convert, node.parameters
    if any(child.type not in _JSON_TYPES for _, child in node.fields):
        raise NotColumnar(f"{node.path}: semantic type {node.name}")
    json_type = pa.struct([pa.field(name, _JSON_TYPES[child.type]) for name, child in node.fields])

    def convert(array: pa.Array) -> _Flagged:
        bad = _nulls_bad(array, optional)
        texts: list[str | None] = []
        for n, value in enumerate(array.to_pylist()):
            if value is None:
                texts.append(None)
                continue
            try:
                texts.append(read(value, parameters))
            except (ValueError, TypeError, ArithmeticError):
                bad[n] = True
                texts.append(None)
        return _Flagged(pa.array(texts, pa.string()), bad)

    return _Column(json_type, convert)


def _decimal_text(scale: int, precision: int, optional: bool) -> Convert:
    """Base64 two's complement -> the decimal's exact text (a column Spark has no decimal
    for); a number of more than ``precision`` digits is refused, as the per-message way
    refuses it."""
    limit = 10 ** min(precision, MAX_TEXT_DIGITS)

    def convert(array: pa.Array) -> _Flagged:
        bad = _nulls_bad(array, optional)
        texts: list[str | None] = []
        b64decode, from_bytes = base64.b64decode, int.from_bytes
        for n, text in enumerate(array.to_pylist()):
            if text is None:
                texts.append(None)
                continue
            try:
                raw = b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raw = b""
            number = from_bytes(raw, "big", signed=True)
            # (zero has a digit: a precision below 1 holds no number)
            if not raw or not -limit < number < limit or precision < 1:
                bad[n] = True
                texts.append("")
                continue
            texts.append(unscaled_text(number, scale))
        return _Flagged(pa.array(texts, pa.string()), bad)

    return convert


def _decimal_array(
    numbers: np.ndarray, wide: Mapping[int, int], array: pa.Array, type_: pa.Decimal128Type
) -> pa.Array:
    """A decimal128 column of unscaled integers (``numbers``, and ``wide`` by row where
    they may not fit 64 bits), null where ``array`` is, from their 16-byte two's
    complement."""
    count = len(numbers)
    words = np.empty((count, 2), dtype=np.int64)
    words[:, 0] = numbers
    words[:, 1] = np.where(numbers < 0, -1, 0)
    data = bytearray(words.tobytes())
    for row, number in wide.items():
        data[16 * row : 16 * row + 16] = number.to_bytes(16, "little", signed=True)
    nulls = array.null_count
    validity = None if not nulls else pa.array(mask(pc.is_valid(array))).buffers()[1]
    return pa.Array.from_buffers(
        type_, count, [validity, pa.py_buffer(bytes(data))], null_count=nulls
    )


def _timestamp(micros_per_unit: int, optional: bool) -> Convert:
    target = pa.timestamp("us", tz="UTC")
    low, high = -(-_MIN_MICROS // micros_per_unit), _MAX_MICROS // micros_per_unit

    def convert(array: pa.Array) -> _Flagged:
        bad = _nulls_bad(array, optional)
        outside = _outside(array, low, high)
        if outside is not None:
            bad |= mask(outside)
            array = pc.if_else(outside, pa.scalar(0, pa.int64()), array)
        if micros_per_unit != 1:
            array = pc.multiply(array, micros_per_unit)
        return _Flagged(pc.cast(array, target), bad)

    return convert


# A decimal's plain text, as Decimal() reads it the same (no exponent, no NaN, no -0).
_PLAIN_DECIMAL = "^[-+]?[0-9]+(\\.[0-9]+)?$"
_NEGATIVE_ZERO = "^-0+(\\.0+)?$"
# ISO 8601 date-times Python's fromisoformat and Arrow read alike: a real time of day, a
# fraction of at most microseconds, an offset within a day or none (UTC).
_ISO_DATE_TIME = (
    "^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?"
    "(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?$"
)
_WITH_OFFSET = "(Z|[+-][0-9]{2}:[0-9]{2})$"


def _plain_decimal(target: pa.Decimal128Type, optional: bool) -> Convert:
    """Decimal text (CDL's) -> ``target``: text that is no plain decimal, has more fraction
    digits than the scale or more digits than the precision goes the per-message way."""
    whole = target.precision - target.scale

    def convert(array: pa.Array) -> _Flagged:
        bad = _nulls_bad(array, optional)
        text = pc.utf8_trim_whitespace(array)
        plain = pc.and_(
            pc.match_substring_regex(text, _PLAIN_DECIMAL),
            pc.invert(pc.match_substring_regex(text, _NEGATIVE_ZERO)),
        )
        unsigned = pc.utf8_ltrim(text, "+-")
        point = pc.find_substring(unsigned, ".")
        length = pc.utf8_length(unsigned)
        integral = pc.if_else(pc.equal(point, -1), length, point)
        fraction = pc.if_else(pc.equal(point, -1), 0, pc.subtract(pc.subtract(length, point), 1))
        leading = pc.utf8_length(pc.utf8_ltrim(pc.utf8_slice_codeunits(unsigned, 0, 10**6), "0"))
        digits = pc.subtract(integral, pc.subtract(length, leading))  # integral digits, no 0s
        fits = pc.and_(
            plain,
            pc.and_(pc.less_equal(fraction, target.scale), pc.less_equal(digits, whole)),
        )
        fits = pc.fill_null(fits, False)
        bad |= mask(pc.and_(pc.is_valid(array), pc.invert(fits)))
        kept = pc.if_else(fits, pc.utf8_ltrim(text, "+"), pa.scalar(None, pa.string()))
        return _Flagged(pc.cast(kept, target), bad)

    return convert


def _iso_timestamp(optional: bool) -> Convert:
    """ISO 8601 text (CDL's timestamps; without an offset, UTC) -> microseconds since the
    epoch: text the pattern does not take, a day that is not in its month or a time
    outside years 1..9999 goes the per-message way."""
    target = pa.timestamp("us", tz="UTC")

    def convert(array: pa.Array) -> _Flagged:
        bad = _nulls_bad(array, optional)
        fits = pc.fill_null(pc.match_substring_regex(array, _ISO_DATE_TIME), False)
        day = pc.utf8_slice_codeunits(array, 0, 10)
        real_day = pc.is_valid(pc.strptime(day, "%Y-%m-%d", unit="s", error_is_null=True))
        fits = pc.and_(
            pc.and_(fits, real_day), pc.not_equal(pc.utf8_slice_codeunits(array, 0, 4), "0000")
        )
        fits = pc.fill_null(fits, False)
        text = pc.if_else(fits, array, pa.scalar("1970-01-01T00:00:00Z", pa.string()))
        text = pc.replace_substring_regex(text, "^([0-9-]{10}) ", "\\1T")
        zoned = pc.match_substring_regex(text, _WITH_OFFSET)
        text = pc.if_else(zoned, text, pc.binary_join_element_wise(text, "Z", ""))
        micros = pc.cast(text, target).cast(pa.int64())
        fits = pc.and_(
            fits, pc.and_(pc.greater_equal(micros, _MIN_MICROS), pc.less_equal(micros, _MAX_MICROS))
        )
        fits = pc.fill_null(fits, False)
        bad |= mask(pc.and_(pc.is_valid(array), pc.invert(fits)))
        micros = pc.if_else(fits, micros, pa.scalar(None, pa.int64()))
        return _Flagged(micros.cast(target), bad)

    return convert


def _enum(allowed: str | None, optional: bool) -> Convert:
    symbols = pa.array(allowed.split(","), pa.string()) if allowed is not None else None

    def convert(array: pa.Array) -> _Flagged:
        bad = _nulls_bad(array, optional)
        if symbols is not None:
            bad |= mask(pc.and_(pc.is_valid(array), pc.invert(pc.is_in(array, symbols))))
        return _Flagged(array, bad)

    return convert


def _uuid(optional: bool) -> Convert:
    def convert(array: pa.Array) -> _Flagged:
        bad = _nulls_bad(array, optional)
        canonical = pc.match_substring_regex(array, _CANONICAL_UUID)
        bad |= mask(pc.and_(pc.is_valid(array), pc.invert(pc.fill_null(canonical, False))))
        return _Flagged(array, bad)

    return convert


def _struct(children: list[tuple[str, _Column]], target: pa.StructType, optional: bool) -> Convert:
    def convert(array: pa.Array) -> _Flagged:
        valid = mask(pc.is_valid(array)) if array.null_count else np.ones(len(array), bool)
        bad = np.zeros(len(array), dtype=bool) if optional else ~valid
        arrays = []
        for name, child in children:
            flagged = child.convert(array.field(name))
            bad |= flagged.bad & valid
            arrays.append(flagged.array)
        nulls = None if valid.all() else pa.array(~valid)
        return _Flagged(pa.StructArray.from_arrays(arrays, fields=list(target), mask=nulls), bad)

    return convert


def _list(item: Convert, target: pa.ListType, optional: bool) -> Convert:
    """A list column: its items converted together; a row with a bad item is bad."""

    def convert(array: pa.Array) -> _Flagged:
        valid = mask(pc.is_valid(array))
        bad = np.zeros(len(array), dtype=bool) if optional else ~valid
        sizes = list_sizes(array)
        flagged = item(pc.list_flatten(array))
        if flagged.bad.any():
            bad[item_rows(sizes)[flagged.bad]] = True
        nulls = None if valid.all() else pa.array(~valid)
        rebuilt = pa.ListArray.from_arrays(
            list_offsets(sizes), flagged.array, type=target, mask=nulls
        )
        return _Flagged(rebuilt, bad)

    return convert


def _records_base(records: list[Record]) -> list[pa.Array]:
    """Position, operation, metadata and key columns of records (the per-message path)."""
    base = OPENCDC_ARROW_SCHEMA
    return [
        pa.array([r.position for r in records], base.field("position").type),
        pa.array([str(r.operation) for r in records], pa.string()),
        pa.array([list(r.metadata.items()) for r in records], base.field("metadata").type),
        data_array([r.key for r in records], "key"),
    ]


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=schema)


def _stack(pieces: list[pa.Array | None], type_: pa.StructType) -> pa.Array:
    if not pieces:
        return pa.nulls(0, type_)
    return pa.concat_arrays([p if p is not None else pa.nulls(1, type_) for p in pieces])


def _places(places: pa.Array | None, count: int) -> pa.Array:
    if places is None:
        return pa.array([b""] * count, pa.binary())
    return places if places.type == pa.binary() else places.cast(pa.binary())


def _messages(
    values: pa.Array, keys: pa.Array | None, places: pa.Array | None, rows: list[int]
) -> dict[int, Message]:
    """The messages of ``rows`` (the per-message way), by row."""
    taken = pa.array(rows, pa.int64())
    found = values.take(taken).to_pylist()
    found_keys = [None] * len(rows) if keys is None else keys.take(taken).to_pylist()
    found_places = [b""] * len(rows) if places is None else places.take(taken).to_pylist()
    return {
        row: Message(value, key, where=(place or b"").decode("utf-8", "backslashreplace"))
        for row, value, key, place in zip(rows, found, found_keys, found_places, strict=True)
    }
