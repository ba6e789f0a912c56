"""The convert loop: a stream of messages from one format to another, without Spark.

Every input message ends as output, as a counted skip (tombstone, heartbeat)
or as a dead-letter record with its reason and original bytes. Nothing is
dropped silently. A message whose records cannot all be written writes none
of them: it goes to the dead letters whole.

A long run on a terminal shows its counts as it goes: :class:`ProgressLine`,
one line rewritten in place about once a second and cleared at the end.
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from cdc_connectors.convert.deadletter import DeadLetterWriter
from cdc_connectors.convert.streams import (
    CHUNK_BYTES,
    ByteReader,
    ByteWriter,
    MessageWriter,
    layout_of,
    read_messages,
)
from cdc_connectors.errors import FailFastError
from cdc_connectors.formats.base import Format, Message, SkipMessage
from cdc_connectors.opencdc import CodecError
from cdc_connectors.text import encodes

if TYPE_CHECKING:
    from cdc_connectors.convert.line_chunks import LineChunk


@dataclass
class ConvertStats:
    """What a conversion did, for the counts line on stderr."""

    messages: int = 0
    records: int = 0
    written: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    first_errors: list[str] = field(default_factory=list)
    #: Messages converted the per-message way where the columns convert the others
    #: (``None``: the columns do not serve this pair of formats).
    per_message: int | None = None

    def summary(self) -> str:
        skipped = sum(self.skipped.values())
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(self.skipped.items()))
        slow = "" if self.per_message is None else f", {self.per_message} the per-message way"
        return (
            f"read {_count(self.messages, 'message')}, wrote {_count(self.written, 'record')}, "
            f"skipped {skipped}{f' ({reasons})' if reasons else ''}, errors {self.errors}{slow}"
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


#: How many messages go by between two looks at the clock.
PROGRESS_EVERY = 64


class ProgressLine:
    """The counts of a run so far, on a terminal: one line rewritten in place (``\\r``) at
    most once every ``interval`` seconds, cut to the terminal's width, and cleared by
    :meth:`clear` so that what is printed next starts on a clean line. Nothing shows
    before the run has lasted ``interval`` seconds."""

    def __init__(
        self,
        stream: TextIO,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stream = stream
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.due = self.started + interval
        self.shown = False

    def __call__(self, stats: ConvertStats) -> None:
        now = self.clock()
        if now < self.due:
            return
        self.due = now + self.interval
        rate = stats.messages / (now - self.started) if now > self.started else 0.0
        text = (
            f"read {_count(stats.messages, 'message')}, wrote {_count(stats.written, 'record')}, "
            f"skipped {sum(stats.skipped.values())}, errors {stats.errors} "
            f"({rate:.0f} messages/s)"
        )
        self._write(f"\r{text[: self._width() - 1]}\x1b[K")
        self.shown = True

    def clear(self) -> None:
        """Wipe the line, if one was shown."""
        if self.shown:
            self.shown = False
            self._write("\r\x1b[K")

    def _width(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (OSError, ValueError):
            return 80

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the counts still end the run
            pass


class FailFast(FailFastError):
    """Raised on the first bad message when the caller chose fail-fast.

    The message is already in the dead letters; ``stats`` counts it.
    """

    def __init__(self, error: CodecError, stats: ConvertStats):
        self.stats = stats
        super().__init__(str(error), error=error)


#: Messages converted together where the columns write them (to OpenCDC protobuf or JSON).
CHUNK = 8192
#: A chunk of a live stream with fewer messages goes the per-message way: the columns cost
#: some milliseconds a chunk whatever its size (wide rows more), a message a fraction of one.
FEW = 8


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
    progress: ProgressLine | None = None,
) -> ConvertStats:
    """Convert every message of ``source`` into ``sink``; bad ones go to ``dead_letters``.

    ``progress`` is given the counts every :data:`PROGRESS_EVERY` messages and cleared
    when the run ends, however it ends, before anyone prints what happened.

    The formats the columns serve are converted to OpenCDC protobuf or JSON :data:`CHUNK`
    messages at a time from Arrow columns
    (:func:`~cdc_connectors.columnar.choose.columns_for`), a chunk of a stream that pauses
    (a pipe, a terminal) as soon as its messages stop coming; the messages the columns do
    not take go the per-message way, so the output, its order, the counts and the dead
    letters are the same."""
    run = _Conversion(
        decoder,
        encoder,
        MessageWriter(sink, type(encoder), kv=kv_out),
        dead_letters=dead_letters,
        fail_fast=fail_fast,
        source_name=source_name,
        progress=progress,
    )
    columnar = _columnar(decoder, encoder)
    waiting = None
    if columnar and _live(source):
        source, waiting = _arriving(source)
    try:
        if columnar:
            from cdc_connectors.convert import columnar_stream

            chunks: Iterable[list[Message | CodecError] | LineChunk]
            if waiting is None and _lines_of_text(decoder, kv_in, source_name):
                from cdc_connectors.convert.line_chunks import line_chunks

                chunks = line_chunks(source, source_name, CHUNK, CHUNK_BYTES)
                if kv_in:
                    from cdc_connectors.columnar.choose import checks_values
                    from cdc_connectors.convert.kv_columns import ValueChecks

                    checks = ValueChecks(allowed=checks_values(decoder, encoder))
                    chunks = (chunk.split_kv(checks) for chunk in chunks)
            else:
                items = read_messages(source, type(decoder), kv=kv_in, source=source_name)
                chunks = columnar_stream.chunks(items, CHUNK, waiting)
            run.by_chunks(chunks, live=waiting is not None)
        else:
            for item in read_messages(source, type(decoder), kv=kv_in, source=source_name):
                run.one(run.counted(item))
    finally:
        if progress is not None:
            progress.clear()
    return run.stats


class _Conversion:
    """One run of :func:`convert_stream`: its counts, and each message converted."""

    def __init__(
        self,
        decoder: Format,
        encoder: Format,
        writer: MessageWriter,
        *,
        dead_letters: DeadLetterWriter | None,
        fail_fast: bool,
        source_name: str,
        progress: ProgressLine | None,
    ):
        self.stats = ConvertStats()
        self.decoder, self.encoder, self.writer = decoder, encoder, writer
        self.dead_letters = dead_letters
        self.fail_fast = fail_fast
        self.source_name = source_name
        self.progress = progress

    def fail(self, message: Message, error: CodecError) -> None:
        """Count a bad message and write its dead letter; stop here when failing fast."""
        stats = self.stats
        stats.errors += 1
        if len(stats.first_errors) < 5:
            stats.first_errors.append(str(error))
        if self.dead_letters is not None:
            self.dead_letters.write(message, error.reason)
        if self.fail_fast:
            raise FailFast(error, stats)

    def one(self, item: Message | CodecError) -> None:
        """Convert one message the per-message way (or fail an unreadable one)."""
        if isinstance(item, CodecError):
            self.fail(Message(item.data, where=item.where or self.source_name), item)
            return
        try:
            records = self.decoder.decode(item)
        except SkipMessage as skip:
            self.stats.skipped[skip.reason] += 1
            return
        except CodecError as exc:
            self.fail(item, exc.at(item.where))
            return
        self.stats.records += len(records)
        # A record whose format gives it no position is found again by its message's place.
        for record in records:
            if not record.position:
                record.position = item.where.encode("utf-8")
        try:
            self.writer.write_all([self.encoder.encode(record) for record in records])
        except CodecError as exc:
            self.fail(item, exc.at(item.where))
            return
        self.stats.written += len(records)

    def counted(self, item: Message | CodecError) -> Message | CodecError:
        """``item``, counted (and the progress shown every :data:`PROGRESS_EVERY`)."""
        self.stats.messages += 1
        if self.progress is not None and not self.stats.messages % PROGRESS_EVERY:
            self.progress(self.stats)
        return item

    def by_chunks(
        self, chunks: Iterable[list[Message | CodecError] | LineChunk], live: bool = False
    ) -> None:
        """Convert chunks of messages from Arrow columns (passing on each one of a ``live``
        stream at once, the way of each message when it holds fewer than :data:`FEW`); the
        ones the columns do not take go the per-message way, in their place."""
        from cdc_connectors.convert import columnar_stream

        columns = columnar_stream.ChunkWriter(self.decoder, self.encoder, self.writer)
        stats, progress = self.stats, self.progress
        stats.per_message = 0
        for chunk in chunks:
            if live and len(chunk) < FEW:  # a trickle: the same bytes, one by one
                for index in range(len(chunk)):
                    self.one(self.counted(chunk[index]))
                stats.per_message += len(chunk)
                self.writer.stream.flush()
                continue
            written = columns.convert(chunk)
            index = 0
            while index < len(chunk):
                end = written.run_end(index)
                if end == index:  # the per-message way
                    stats.per_message += 1
                    self.one(self.counted(chunk[index]))
                    index += 1
                    continue
                # A run of messages written from columns: passed on together.
                before = stats.messages
                stats.messages += end - index
                stats.records += end - index
                stats.written += end - index
                written.write_run(index, end)
                if progress is not None and before // PROGRESS_EVERY < (
                    stats.messages // PROGRESS_EVERY
                ):
                    progress(stats)
                index = end
            if live:  # what has arrived is passed on before the stream goes on
                self.writer.stream.flush()


def _live(source: ByteReader) -> bool:
    """Whether ``source`` may pause between messages: anything but a regular file (a
    pipe, a terminal, a socket)."""
    fileno = getattr(source, "fileno", None)
    try:
        return fileno is not None and not stat.S_ISREG(os.fstat(fileno()).st_mode)
    except (OSError, ValueError):
        return False  # an in-memory stream (io.BytesIO has fileno, and raises)


def _arriving(source: ByteReader) -> tuple[ByteReader, Callable[[], bool]]:
    """``source`` read as its bytes come (:class:`~cdc_connectors.convert.live_input.
    LiveInput`, its errors named as ``source`` names them), and what tells whether more is
    waiting."""
    from cdc_connectors.convert.files import Guarded
    from cdc_connectors.convert.live_input import LiveInput

    arriving = LiveInput(source)  # type: ignore[arg-type]  # _live() found its fileno
    if isinstance(source, Guarded):
        return Guarded(arriving, source.name), arriving.waiting  # type: ignore[arg-type]
    return arriving, arriving.waiting


def _lines_of_text(decoder: Format, kv: bool, source_name: str) -> bool:
    """Whether the input is read as lines straight into Arrow columns
    (:func:`~cdc_connectors.convert.line_chunks.line_chunks`): one message per line, or a
    ``--kv`` line of a text format, from a source whose name is text (it is in every place)."""
    layout = layout_of(type(decoder), kv)
    text = layout == "lines" or (layout == "kv" and not decoder.binary)
    return text and encodes(source_name)


def _columnar(decoder: Format, encoder: Format) -> bool:
    """Whether the columns write this conversion; the columnar machinery (numpy, Arrow,
    pyspark's types) is loaded only then."""
    if type(encoder).__name__ not in (
        "OpenCDCProtoFormat",
        "OpenCDCJsonFormat",
        "DebeziumJsonFormat",
        "AvroFormat",
        "DebeziumAvroFormat",
        "ProtobufFormat",
    ):
        return False
    from cdc_connectors.convert import columnar_stream

    return columnar_stream.serves(decoder, encoder)
