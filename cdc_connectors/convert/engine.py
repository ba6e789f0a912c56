"""The convert loop: a stream of messages from one format to another, without Spark.

Every input message ends as output, as a counted skip (tombstone, heartbeat)
or as a dead-letter record with its reason and original bytes. Nothing is
dropped silently. A message whose records cannot all be written writes none
of them: it goes to the dead letters whole.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from cdc_connectors.convert.deadletter import DeadLetterWriter
from cdc_connectors.convert.streams import ByteReader, ByteWriter, MessageWriter, read_messages
from cdc_connectors.formats.base import Format, Message, SkipMessage
from cdc_connectors.opencdc import CodecError


@dataclass
class ConvertStats:
    """What a conversion did, for the counts line on stderr."""

    messages: int = 0
    records: int = 0
    written: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    first_errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        skipped = sum(self.skipped.values())
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(self.skipped.items()))
        return (
            f"read {_count(self.messages, 'message')}, wrote {_count(self.written, 'record')}, "
            f"skipped {skipped}{f' ({reasons})' if reasons else ''}, errors {self.errors}"
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class FailFast(Exception):
    """Raised on the first bad message when the caller chose fail-fast.

    The message is already in the dead letters; ``stats`` counts it.
    """

    def __init__(self, error: CodecError, stats: ConvertStats):
        self.error = error
        self.stats = stats
        super().__init__(str(error))


def convert_stream(
    source: ByteReader,
    sink: ByteWriter,
    decoder: Format,
    encoder: Format,
    *,
    kv_in: bool = False,
    kv_out: bool = False,
    dead_letters: DeadLetterWriter | None = None,
    fail_fast: bool = False,
    source_name: str = "<stdin>",
) -> ConvertStats:
    """Convert every message of ``source`` into ``sink``; bad ones go to ``dead_letters``."""
    stats = ConvertStats()
    writer = MessageWriter(sink, type(encoder), kv=kv_out)

    def fail(message: Message, error: CodecError) -> None:
        stats.errors += 1
        if len(stats.first_errors) < 5:
            stats.first_errors.append(str(error))
        if dead_letters is not None:
            dead_letters.write(message, error.reason)
        if fail_fast:
            raise FailFast(error, stats)

    for item in read_messages(source, type(decoder), kv=kv_in, source=source_name):
        stats.messages += 1
        if isinstance(item, CodecError):
            fail(Message(item.data, where=item.where or source_name), item)
            continue
        try:
            records = decoder.decode(item)
        except SkipMessage as skip:
            stats.skipped[skip.reason] += 1
            continue
        except CodecError as exc:
            fail(item, exc.at(item.where))
            continue
        stats.records += len(records)
        # A record whose format gives it no position is found again by its message's place.
        for record in records:
            if not record.position:
                record.position = item.where.encode("utf-8")
        try:
            writer.write_all([encoder.encode(record) for record in records])
        except CodecError as exc:
            fail(item, exc.at(item.where))
            continue
        stats.written += len(records)
    return stats
