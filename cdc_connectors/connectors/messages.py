"""What every connector shares: its format from settings, and messages <-> OpenCDC Arrow.

Reading, :func:`decode_messages` turns a batch of messages into one Arrow batch with the
OpenCDC layout (:data:`~cdc_connectors.spark.schema.OPENCDC_ARROW_SCHEMA`): the records of
good messages, whose empty positions become their message's place (``topic/partition/offset``,
``file:line``), and one dead-letter row per bad message (its place as position, the original
key and value as raw ``key`` and ``payload.after``, the reason in ``conduit.dlq.nack.error``).
Nothing is dropped: skipped messages (tombstones, heartbeats) are counted.

With the ``typed`` setting (Debezium JSON with schema blocks),
:func:`~cdc_connectors.connectors.typed_read.typed_read_decoder` reads the schema from sample
messages and :func:`decode_typed` gives the typed layout of
:class:`~cdc_connectors.spark.debezium_typed.TypedDebeziumDecoder` (``before`` and ``after`` as
structs of Spark types) plus a ``dead_letter`` column: the original value bytes of a
dead-letter row (whose metadata holds the reason and whose ``key.raw_data`` holds the
original key), null for the others.

A dead-letter row's ``operation`` is ``dead-letter``
(:data:`~cdc_connectors.spark.arrow.DEAD_LETTER_OPERATION`): it is no change, and counting
by operation shows it apart.

Writing, :func:`encode_rows` turns an OpenCDC Arrow batch into messages, and a row the format
cannot write into a dead-letter record with the reason. It refuses dead-letter rows, in one
line saying how to filter them out: a destination gets changes; dead letters go to a
dead-letter output, as Conduit writes them (pipelines split them off with
:func:`is_dead_letter`; :func:`cdc_connectors.spark.deadletters.dead_letters` gives them).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import BinaryType, StructField, StructType

from cdc_connectors import errors, plugins
from cdc_connectors.connectors.errors import ConnectorError
from cdc_connectors.convert.deadletter import dead_letter
from cdc_connectors.errors import ConfigError
from cdc_connectors.formats.base import Format, FormatOptionError, Message, SkipMessage
from cdc_connectors.opencdc import CodecError, Record, keys
from cdc_connectors.opencdc.json_codec import record_to_json
from cdc_connectors.spark.arrow import (
    DEAD_LETTER_OPERATION,
    records_from_batch,
    records_to_batch,
)
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder
from cdc_connectors.text import printable_bytes

__all__ = [
    "DEAD_LETTER",
    "DLQ_ERROR",
    "Decoded",
    "FailFastError",
    "SettingError",
    "decode_messages",
    "decode_typed",
    "encode_rows",
    "is_dead_letter",
    "open_format",
    "typed_dead_letters",
    "typed_schema",
]

#: The metadata key that marks a dead-letter row (Conduit's).
DLQ_ERROR = keys.CONDUIT_DLQ_NACK_ERROR
FORMAT_PREFIX = "format."


class SettingError(ConfigError):
    """A connector setting is missing, unknown or has a bad value; the message names it."""

    @classmethod
    def unknown(
        cls, connector: str, given: str, known: Mapping[str, str], more: str
    ) -> SettingError:
        """``given`` (as spelt) is none of ``known`` (each setting by its lowered name):
        the closest one suggested, every one listed, then ``more`` (the prefixed kinds)."""
        close = difflib.get_close_matches(given.lower(), list(known), n=1)
        hint = f"; did you mean {known[close[0]]!r}?" if close else ""
        listed = ", ".join(sorted(known.values()))
        return cls(f"{connector} has no setting {given!r}{hint} (settings: {listed}, {more})")


def registry_setting(connector: str, url: str | None) -> str | None:
    """A connector's ``registry`` setting (``None`` for none), checked without opening it:
    :class:`SettingError` naming the setting for a URL that cannot name a registry (an
    empty password, an unknown scheme, a store's URL with a host), before any task runs."""
    if not url:
        return None
    from cdc_connectors.registry import check_url

    try:
        check_url(url)
    except ValueError as exc:
        raise SettingError(f"{connector} setting 'registry': {exc}") from None
    return url


class FailFastError(ConnectorError, errors.FailFastError):
    """A bad message when the user chose fail-fast: names its place and the reason (one
    line out of a Spark task, as every :class:`ConnectorError`)."""


@dataclass
class Decoded:
    """One decoded batch and what happened to its messages."""

    batch: pa.RecordBatch
    messages: int = 0
    records: int = 0
    errors: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


def open_format(
    settings: Mapping[str, str], *, default: str, registry: str | None, connector: str
) -> Format:
    """The format a connector's settings name: ``format`` (else ``default``) with every
    ``format.<option>`` setting as its option ``<option>``.

    :class:`SettingError` naming the setting for an unknown format or a bad option.
    """
    name = settings.get("format", default)
    options = {
        key[len(FORMAT_PREFIX) :]: value
        for key, value in settings.items()
        if key.startswith(FORMAT_PREFIX)
    }
    try:
        cls = plugins.load(plugins.FORMATS, name, Format)
    except plugins.PluginError as exc:
        raise SettingError(f"{connector} setting 'format': {exc}") from None
    try:
        fmt: Format = cls(options, registry=registry)
    except FormatOptionError as exc:
        raise SettingError(f"{connector} setting 'format.*': {exc}") from None
    return fmt


def decode_messages(
    fmt: Format, messages: Sequence[Message], *, node_id: str, fail_fast: bool = False
) -> Decoded:
    """The OpenCDC Arrow batch of ``messages`` (module docstring).

    With ``fail_fast`` the first bad message raises :class:`FailFastError` naming its place.
    """
    records: list[Record] = []
    owners: list[int] = []
    bad: dict[int, str] = {}
    out = Decoded(records_to_batch([]), messages=len(messages))
    for index, found in fmt.decode_many(messages):
        message = messages[index]
        if isinstance(found, SkipMessage):
            out.skipped[found.reason] += 1
            continue
        if isinstance(found, CodecError):
            bad[index] = found.reason
            if fail_fast:
                raise FailFastError(f"{message.where or 'message'}: {found.reason}") from None
            continue
        where = message.where.encode("utf-8", "surrogateescape")
        for record in found:
            if not record.position:
                record.position = where
        records.extend(found)
        owners.extend([index] * len(found))
    try:
        good = records_to_batch(records)
    except CodecError:
        good, records, owners = _keep_encodable(records, owners, bad)
    letters = [dead_letter(messages[i], reason, node_id) for i, reason in sorted(bad.items())]
    if fail_fast and letters:
        first = min(bad)
        raise FailFastError(f"{messages[first].where or 'message'}: {bad[first]}")
    out.records = len(records)
    out.errors = len(letters)
    out.batch = good if not letters else _concat(good, records_to_batch(letters))
    return out


def _keep_encodable(
    records: list[Record], owners: list[int], bad: dict[int, str]
) -> tuple[pa.RecordBatch, list[Record], list[int]]:
    """Some record has no Arrow form: a message whose records cannot all be written goes to
    the dead letters whole; the others are kept."""
    by_message: dict[int, list[Record]] = {}
    for record, owner in zip(records, owners, strict=True):
        by_message.setdefault(owner, []).append(record)
    kept: list[Record] = []
    kept_owners: list[int] = []
    for owner, own in by_message.items():
        try:
            records_to_batch(own)
        except CodecError as exc:
            # "record N: " counts the message's own records: said only where it has several
            bad[owner] = exc.reason if len(own) > 1 else _RECORD_INDEX.sub("", exc.reason, 1)
            continue
        kept.extend(own)
        kept_owners.extend([owner] * len(own))
    return records_to_batch(kept), kept, kept_owners


#: How :func:`~cdc_connectors.spark.arrow.records_to_batch` names a record it cannot write.
_RECORD_INDEX = re.compile(r"^record \d+: ")


def _concat(first: pa.RecordBatch, second: pa.RecordBatch) -> pa.RecordBatch:
    table = pa.Table.from_batches([first, second])
    return table.combine_chunks().to_batches()[0]


DEAD_LETTER = "dead_letter"


def typed_schema(decoder: TypedDebeziumDecoder) -> StructType:
    """The Spark schema of :func:`decode_typed`'s batches."""
    return StructType([*decoder.spark_schema.fields, StructField(DEAD_LETTER, BinaryType())])


def decode_typed(
    decoder: TypedDebeziumDecoder,
    messages: Sequence[Message],
    *,
    node_id: str,
    fail_fast: bool = False,
) -> Decoded:
    """:func:`decode_messages`, typed (module docstring)."""
    batch, errors = decoder.decode(messages)
    if errors and fail_fast:
        index, error = errors[0]
        raise FailFastError(f"{messages[index].where or 'message'}: {error.reason}")
    out = Decoded(batch, messages=len(messages), records=batch.num_rows, errors=len(errors))
    schema = _typed_arrow_schema(decoder)
    columns = [*batch.columns, pa.nulls(batch.num_rows, pa.binary())]
    good = pa.RecordBatch.from_arrays(columns, schema=schema)
    if not errors:
        out.batch = good
        return out
    bad = typed_dead_letters(
        decoder, [(messages[i], error.reason) for i, error in errors], node_id=node_id
    )
    out.batch = _concat(good, bad)
    return out


def _typed_arrow_schema(decoder: TypedDebeziumDecoder) -> pa.Schema:
    """The Arrow schema of :func:`decode_typed`'s batches (:func:`typed_schema` in Arrow)."""
    return pa.schema([*decoder.schema, pa.field(DEAD_LETTER, pa.binary())])


def typed_dead_letters(
    decoder: TypedDebeziumDecoder, failed: Sequence[tuple[Message, str]], *, node_id: str
) -> pa.RecordBatch:
    """Dead-letter rows in :func:`decode_typed`'s layout: each message with its reason."""
    schema = _typed_arrow_schema(decoder)
    letters = records_to_batch([dead_letter(m, reason, node_id) for m, reason in failed])
    rows = letters.num_rows
    row_type = decoder.schema.field("after").type
    return pa.RecordBatch.from_arrays(
        [
            letters.column("position"),
            letters.column("operation"),
            letters.column("metadata"),
            letters.column("key"),
            pa.nulls(rows, row_type),
            pa.nulls(rows, row_type),
            pa.array([m.value for m, _ in failed], pa.binary()),
        ],
        schema=schema,
    )


def is_dead_letter(batch: pa.RecordBatch) -> pa.BooleanArray:
    """Which rows of an OpenCDC batch are dead letters: their metadata has the DLQ error,
    or their operation says so."""
    found = pc.map_lookup(batch.column("metadata"), pa.scalar(DLQ_ERROR), "first")
    marked = pc.equal(batch.column("operation"), pa.scalar(DEAD_LETTER_OPERATION))
    return pc.or_(pc.is_valid(found), pc.fill_null(marked, False))


def _refuse_dead_letters(batch: pa.RecordBatch, connector: str) -> None:
    """:class:`ConnectorError` when ``batch`` holds dead-letter rows (module docstring)."""
    marked = pc.equal(batch.column("operation"), pa.scalar(DEAD_LETTER_OPERATION))
    if not pc.any(marked).as_py():
        return
    letters = batch.filter(marked)
    position = printable_bytes(bytes(letters.column("position")[0].as_py() or b""))
    metadata = dict(letters.column("metadata")[0].as_py() or [])
    reason = metadata.get(DLQ_ERROR) or "no reason given"
    raise ConnectorError(
        f"{connector}: the DataFrame holds dead-letter rows (operation "
        f"'{DEAD_LETTER_OPERATION}'), which are no changes to write: {letters.num_rows} in "
        f"this batch, the first at position {position!r} ({reason}); filter them out with "
        f"df.filter(\"operation != '{DEAD_LETTER_OPERATION}'\"), or write "
        "cdc_connectors.spark.deadletters.dead_letters(df) to a dead-letter output"
    )


def encode_rows(
    fmt: Format, batch: pa.RecordBatch, *, node_id: str
) -> tuple[list[Message], list[Record]]:
    """Messages for the records of an OpenCDC batch, in order, and the dead-letter records
    of the rows ``fmt`` cannot write (the record as OpenCDC JSON, with the reason).

    A batch holding dead-letter rows is refused: :class:`ConnectorError` naming ``node_id``
    (the connector), the first one and how to filter them out.
    """
    _refuse_dead_letters(batch, node_id)
    messages: list[Message] = []
    letters: list[Record] = []
    records: list[Record] = []
    try:
        records.extend(records_from_batch(batch))
    except CodecError as exc:  # a row that is no OpenCDC record: the DataFrame's, not a message's
        position = batch.column("position")[len(records)].as_py() or b""
        raise ConnectorError(
            f"{node_id}: the row at position {printable_bytes(position)!r} is no OpenCDC record: "
            f"{exc.reason}"
        ) from None
    for record in records:
        try:
            messages.append(fmt.encode(record))
        except CodecError as exc:
            original = Message(record_to_json(record), where=printable_bytes(record.position))
            letters.append(dead_letter(original, exc.reason, node_id))
    return messages, letters
