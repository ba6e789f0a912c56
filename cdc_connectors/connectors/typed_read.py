"""The columns of a typed read: one collection's row schema, found in sample messages.

A typed read (setting ``typed``) gives ``before`` and ``after`` as structs of one row
schema's Spark types (:class:`~cdc_connectors.spark.debezium_typed.TypedDebeziumDecoder`),
so it reads one collection (``opencdc.collection``: ``db.schema.table``). Which one:

- setting ``collection``: that one, typed by the first of its messages whose schema block
  has typed columns; messages of other collections are left out of the read.
- no ``collection``: the collection of the samples. Samples naming several collections
  refuse the read, listing them, so the user picks one per read; a message of another
  collection found later (past the samples) is a dead letter saying so.

No single message's schema ends a read: a sample whose schema has no typed columns (junk,
a schema block without an Avro form) is passed over for the next one of the collection,
and becomes its own dead letter when the read gets to it. Only when no message of the
collection has a usable schema is the read refused, with the first reason.

Messages with no row schema at all (schemaless, ``schemas.enable=false``; MongoDB's, whose
images are JSON text) have their row schema inferred from the images of up to
:data:`INFER_SAMPLES` of them (:func:`~cdc_connectors.spark.debezium_typed.infer_envelope`)
when no message of the collection has a schema block with typed columns.

Connectors give the samples (:func:`typed_read_decoder`): ``cdc-files`` the first
:data:`SAMPLES_PER_SOURCE` messages of each file while :data:`SAMPLES_TOTAL` last (always
the first of each file), then, when those do not settle it, every message in read order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from cdc_connectors.connectors.messages import SettingError
from cdc_connectors.formats.base import Format, Message, SkipMessage
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder, infer_envelope

__all__ = [
    "INFER_SAMPLES",
    "SAMPLES_PER_SOURCE",
    "SAMPLES_TOTAL",
    "bounded_samples",
    "typed_read_decoder",
]

#: Messages of one source (file, partition) looked at for the collections of a read.
SAMPLES_PER_SOURCE = 100
#: Messages looked at in all; past it, one per source.
SAMPLES_TOTAL = 2000
#: Messages without a row schema whose images a read's inferred columns are made from.
INFER_SAMPLES = 200
# Distinct schema blocks tried before the read is refused as having no typed columns.
_MAX_TRIES = 100


def bounded_samples(sources: Iterable[Iterable[Message]]) -> Iterator[Message]:
    """The first :data:`SAMPLES_PER_SOURCE` messages of each source while
    :data:`SAMPLES_TOTAL` last, then the first of each (tombstones left out)."""
    budget = SAMPLES_TOTAL
    for source in sources:
        taken = 0
        try:
            for message in source:
                if message.value is None:
                    continue
                yield message
                taken += 1
                budget -= 1
                if taken >= (SAMPLES_PER_SOURCE if budget > 0 else 1):
                    break
        finally:
            close = getattr(source, "close", None)
            if close is not None:  # a generator: its file or consumer is let go now
                close()


def typed_read_decoder(
    fmt: Format,
    samples: Iterable[Message],
    *,
    connector: str,
    collection: str | None = None,
    more: Iterable[Message] = (),
) -> TypedDebeziumDecoder:
    """The typed decoder of a read (module docstring): ``samples`` tell the collections
    (all of them are looked at; keep them bounded); ``more`` (lazy, read only as needed)
    is searched when the samples hold no usable message of the collection.

    :class:`SettingError` naming the setting when the read has no typed columns.
    """
    if not isinstance(fmt, DebeziumJsonFormat):
        raise SettingError(
            f"{connector} setting 'typed': typed columns come from Debezium JSON schema "
            f"blocks; format {fmt.name!r} has none (use expand() for Avro and Protobuf)"
        )
    by_collection: dict[str | None, list[Message]] = {}
    for message in samples:
        event, found = fmt.collection_of_value(message.value)
        by_collection.setdefault(found if event else None, []).append(message)
    known = sorted(c for c in by_collection if c is not None)
    if collection is None and len(known) > 1:
        raise SettingError(
            f"{connector} setting 'typed': the messages hold several collections "
            f"({', '.join(known)}); typed columns are one collection's: set 'collection' to "
            "one of them, one read per collection"
        )
    target = collection if collection is not None else (known[0] if known else None)
    others = "skip" if collection is not None else "error"

    def candidates() -> Iterator[Message]:
        yield from by_collection.get(target, [])
        for message in more:
            event, found = fmt.collection_of_value(message.value)
            if target is None or (event and found == target):
                yield message

    first: tuple[Message, str] | None = None
    tried: set[bytes] = set()
    plain: list[Message] = []  # messages with no row schema: the columns are inferred
    for message in candidates():
        if _no_row_schema(fmt, message):
            plain.append(message)
            if len(plain) >= INFER_SAMPLES:
                break
            continue
        schema = _schema_text(message)
        if schema in tried:
            continue
        try:
            decoder = TypedDebeziumDecoder.from_message(fmt, message, others=others)
        except CodecError as exc:
            first = first or (message, exc.reason)
            tried.add(schema)
            if len(tried) >= _MAX_TRIES:
                break
            continue
        if target is not None and decoder.collection != target:
            continue  # a sample that is no change event of the collection
        return decoder
    if plain and first is None:
        return _inferred(fmt, plain, target, others, connector)
    if first is not None:
        message, reason = first
        of = f" of collection {target!r}" if target is not None else ""
        raise SettingError(
            f"{connector} setting 'typed': no message{of} has a schema block with typed "
            f"columns; {message.where or 'the first message'}: {reason}"
        )
    if collection is not None:
        listed = ", ".join(known) if known else "none"
        raise SettingError(
            f"{connector} setting 'collection': no message of collection {collection!r} "
            f"(collections found: {listed})"
        )
    raise SettingError(f"{connector} setting 'typed': no message to read the schema from (yet)")


def _no_row_schema(fmt: DebeziumJsonFormat, message: Message) -> bool:
    """Whether ``message`` is a change event without a row schema: no schema block, or one
    whose ``before`` / ``after`` are no row structs (MongoDB's JSON text)."""
    try:
        document = orjson.loads(message.value) if message.value is not None else None
    except orjson.JSONDecodeError:
        return False
    if not isinstance(document, dict):
        return False
    schema = document.get("schema")
    payload = document.get("payload", document) if schema is not None else document
    if isinstance(payload, dict) and "payload" in payload and schema is None:
        payload = payload["payload"]
    if not isinstance(payload, dict) or not isinstance(payload.get("op"), str):
        return False
    if schema is None:
        return True
    try:
        return fmt.envelope_rows(schema) == (None, None)
    except CodecError:
        return False


def _inferred(
    fmt: DebeziumJsonFormat,
    messages: list[Message],
    target: str | None,
    others: str,
    connector: str,
) -> TypedDebeziumDecoder:
    """The decoder of columns inferred from the images of ``messages`` (no row schema)."""
    images: list[dict[str, Any]] = []
    for message in messages:
        try:
            records = fmt.decode(message)
        except (CodecError, SkipMessage):
            continue  # its own dead letter (or skip) when the read gets to it
        for record in records:
            if target is not None and record.metadata.collection != target:
                continue
            images.extend(
                i for i in (record.payload.before, record.payload.after) if isinstance(i, dict)
            )
    name = f"{target}.Value" if target else None
    try:
        envelope = infer_envelope(images, name)
        return TypedDebeziumDecoder(fmt, envelope, target, others, inferred=True)
    except (ValueError, CodecError) as exc:
        reason = exc.reason if isinstance(exc, CodecError) else str(exc)
        of = f" of collection {target!r}" if target is not None else ""
        raise SettingError(
            f"{connector} setting 'typed': the messages{of} have no schema blocks and no "
            f"columns could be inferred from them: {reason}"
        ) from None


def _schema_text(message: Message) -> bytes:
    """The message's schema block as text, so one that failed is not tried again."""
    try:
        document = orjson.loads(message.value) if message.value is not None else None
    except orjson.JSONDecodeError:
        return b"not json"
    schema = document.get("schema") if isinstance(document, dict) else None
    return orjson.dumps(schema)
