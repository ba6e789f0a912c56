"""Where a Kafka read starts and ends: partitions, earliest / latest offsets, ranges.

Offsets are ``{(topic, partition): offset}`` inside the connector and Spark's JSON shape
``{"topic": {"0": 5}}`` in a streaming checkpoint, keys sorted: Spark compares offsets as
JSON text, and a different key order reads as new data (endless empty micro-batches).

Reads use assigned partitions and explicit offsets, never a consumer-group join; the
``group.id`` librdkafka insists on is a fixed name nothing commits to.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka import Message as KafkaMessage
from pyspark.sql.datasource import InputPartition

from cdc_connectors.connectors.errors import ConnectorError
from cdc_connectors.connectors.kafka_settings import (
    CONNECTOR,
    EARLIEST,
    LATEST,
    OffsetSpec,
    SourceSettings,
    kafka_config,
)
from cdc_connectors.connectors.messages import SettingError

#: What the driver says of the cluster (a topic not there yet): its own lines, apart from
#: librdkafka's rate-limited ones (``cdc_connectors.kafka``), so that none is held back.
NOTICES = logging.getLogger("cdc_connectors.kafka.topics")

GROUP_ID = "cdc-connectors"
#: A wait for a fetch at the end of a partition is this long at most (milliseconds).
FETCH_WAIT_MS = 10

TP = tuple[str, int]
Offsets = dict[TP, int]
# Errors that librdkafka retries by itself: a read keeps waiting (bounded by its timeout).
#: librdkafka's ``queued.max.messages.kbytes`` unless a ``kafka.*`` setting says otherwise.
PREFETCH_KBYTES = 16 * 1024
#: librdkafka's ``fetch.queue.backoff.ms`` unless a ``kafka.*`` setting says otherwise.
FETCH_QUEUE_BACKOFF_MS = 10
TRANSIENT = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE})


@dataclass
class KafkaRange(InputPartition):
    """Offsets ``[start, end)`` of one topic-partition: one Spark task."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def where(self) -> str:
        return f"{self.topic}/{self.partition}"


def consumer_config(settings: SourceSettings) -> dict[str, Any]:
    """A consumer that reads assigned partitions: no commits, an event at partition end, an
    error (not a silent jump) when an offset is out of range, unless ``failOnDataLoss`` is
    false (then the earliest offset there, as Spark's source skips). ``kafka.*`` settings
    win, except ``enable.partition.eof``, which the reader needs."""
    config: dict[str, Any] = {
        "group.id": GROUP_ID,
        "enable.auto.commit": False,
        "auto.offset.reset": "error" if settings.fail_on_data_loss else "earliest",
        "fetch.wait.max.ms": 100,
        # What librdkafka fetches ahead of the reader: 64 MiB by default, which a long range
        # fills and a short one does not (a worker's memory then grows with the range).
        "queued.max.messages.kbytes": PREFETCH_KBYTES,
        # Once that queue is full, librdkafka waits this long before fetching again: a
        # second by default, which left a reader idle a third of the time (measured: a
        # one-process copy at 14,000 msg/s with it, 70,000 with 10 ms).
        "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
    }
    config.update(kafka_config(settings.servers, settings.kafka))
    config["enable.partition.eof"] = True
    return config


def to_json(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    """Spark's JSON shape, topics and partitions sorted as text (``sort_keys`` order)."""
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in offsets.items():
        nested.setdefault(topic, {})[str(partition)] = offset
    return {t: dict(sorted(nested[t].items())) for t in sorted(nested)}


def from_json(nested: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {(t, int(p)): int(o) for t, parts in nested.items() for p, o in parts.items()}


class Broker:
    """Driver-side questions to the cluster, over one consumer that is never subscribed."""

    def __init__(self, settings: SourceSettings):
        self.settings = settings
        #: How long a request (metadata, offsets, a first fetch) may take, in seconds.
        self.timeout = settings.request_timeout_ms / 1000
        config = consumer_config(settings)
        if "fetch.wait.max.ms" not in settings.kafka:
            config["fetch.wait.max.ms"] = FETCH_WAIT_MS
        self.consumer = Consumer(config)
        self._missing: set[str] = set()  # named topics said to be missing (once each)

    def close(self) -> None:
        self.consumer.close()

    def partitions(self, *, require_topics: bool) -> list[TP]:
        """Every partition of the subscribed topics (or of those matching the pattern).

        With ``require_topics``, a named topic the cluster does not have is a
        :class:`SettingError`; otherwise it has no partitions yet.
        """
        settings = self.settings
        try:
            metadata = self.consumer.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise ConnectorError(
                f"{CONNECTOR}: cannot list topics on {settings.servers}: {_said(exc, self.timeout)}"
            ) from None
        found: list[TP] = []
        if settings.topic_pattern is not None:
            pattern = re.compile(settings.topic_pattern)
            names = [t for t in metadata.topics if not t.startswith("__") and pattern.fullmatch(t)]
        else:
            names = list(settings.topics)
        for name in sorted(names):
            topic = metadata.topics.get(name)
            if topic is None or topic.error is not None or not topic.partitions:
                if require_topics and settings.topic_pattern is None:
                    raise SettingError(
                        f"{CONNECTOR} setting 'topics': topic {name!r} does not exist "
                        f"on {settings.servers}"
                    )
                if settings.topic_pattern is None and name not in self._missing:
                    # a stream waits for it, as Spark's Kafka source does: said once
                    self._missing.add(name)
                    NOTICES.warning(
                        "%s: topic %r does not exist on %s (yet): the stream reads it once "
                        "it is created",
                        CONNECTOR,
                        name,
                        settings.servers,
                    )
                continue
            found.extend((name, p) for p in sorted(topic.partitions))
        return found

    def _listed(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        listed: dict[TP, tuple[int, int]] = {}
        for topic, partition in tps:
            try:
                low, high = self.consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=self.timeout, cached=False
                )
            except KafkaException as exc:
                raise ConnectorError(
                    f"{CONNECTOR}: cannot list offsets of {topic}/{partition}: "
                    f"{_said(exc, self.timeout)}"
                ) from None
            listed[(topic, partition)] = (int(low), int(high))
        return listed

    def earliest(self, tps: Iterable[TP]) -> Offsets:
        return {tp: low for tp, (low, _) in self._listed(tps).items()}

    def latest(self, tps: Iterable[TP]) -> Offsets:
        """The end offset of each partition, as a fetch sees it.

        Kafka's ListOffsets answer is not enough on every broker: Tansu 0.6 reports the base
        offset of the last produced batch + 1 (513 messages sent with linger.ms=50 to one
        partition listed as 1; a later batch listed as 258 while 757 were there), while the
        high watermark in its fetch responses is right. So each partition is fetched from the
        listed offset: the first message or end-of-partition event after that fetch carries
        the fetch's high watermark, which librdkafka keeps (``cached=True``). On Kafka that
        fetch finds the end at once (an end-of-partition event within ``fetch.wait.max.ms``).
        """
        tps = list(tps)
        if not tps:
            return {}
        listed = self._listed(tps)
        self.consumer.assign([TopicPartition(t, p, max(listed[(t, p)])) for t, p in tps])
        pending = set(tps)
        deadline = time.monotonic() + self.timeout
        try:
            while pending:
                if time.monotonic() > deadline:
                    waiting = ", ".join(f"{t}/{p}" for t, p in sorted(pending))
                    raise ConnectorError(
                        f"{CONNECTOR}: no fetch answer within {self.timeout:g}s from "
                        f"{self.settings.servers} for {waiting}"
                    )
                message = self.consumer.poll(0.05)
                if message is None:
                    continue
                tp = (message.topic(), message.partition())
                error = message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    if error.code() in TRANSIENT:
                        continue
                    raise ConnectorError(f"{CONNECTOR}: fetching {tp[0]}/{tp[1]}: {error.str()}")
                pending.discard(tp)
            found: Offsets = {}
            for t, p in tps:
                _, high = self.consumer.get_watermark_offsets(TopicPartition(t, p), cached=True)
                found[(t, p)] = max(int(high), listed[(t, p)][1])
            return found
        finally:
            self.consumer.unassign()

    def first_messages(self, tp: TP, count: int) -> Iterator[KafkaMessage]:
        """The first ``count`` messages kept in ``tp``, in order: what a typed read samples
        (:func:`cdc_connectors.connectors.typed_read.bounded_samples`)."""
        ((low, high),) = self._listed([tp]).values()
        if high <= low:
            return
        self.consumer.assign([TopicPartition(tp[0], tp[1], low)])
        deadline = time.monotonic() + self.timeout
        taken = 0
        try:
            while taken < count and time.monotonic() < deadline:
                message = self.consumer.poll(0.05)
                if message is None:
                    continue
                error = message.error()
                if error is None:
                    yield message
                    taken += 1
                    if (message.offset() or 0) + 1 >= high:
                        return
                    continue
                if error.code() == KafkaError._PARTITION_EOF:
                    return
                if error.code() not in TRANSIENT:
                    raise ConnectorError(f"{CONNECTOR}: reading {tp[0]}/{tp[1]}: {error.str()}")
        finally:
            self.consumer.unassign()

    def sample(self, tps: Iterable[TP]) -> KafkaMessage | None:
        """The first message kept in any of ``tps`` (in their order), or None: what a typed
        read takes its schema from."""
        for (topic, partition), (low, high) in self._listed(tps).items():
            if high <= low:
                continue
            self.consumer.assign([TopicPartition(topic, partition, low)])
            deadline = time.monotonic() + self.timeout
            try:
                while time.monotonic() < deadline:
                    message = self.consumer.poll(0.05)
                    if message is None:
                        continue
                    error = message.error()
                    if error is None:
                        return message
                    if error.code() == KafkaError._PARTITION_EOF:
                        break
                    if error.code() not in TRANSIENT:
                        raise ConnectorError(
                            f"{CONNECTOR}: reading {topic}/{partition}: {error.str()}"
                        )
            finally:
                self.consumer.unassign()
        return None

    def resolve(self, spec: OffsetSpec, tps: list[TP], name: str) -> Offsets:
        """Offsets of ``tps`` as ``spec`` says; a partition the JSON does not name gets
        earliest (``startingOffsets``) or latest (``endingOffsets``)."""
        fallback = EARLIEST if name == "startingOffsets" else LATEST
        if spec == "earliest":
            wanted = dict.fromkeys(tps, EARLIEST)
        elif spec == "latest":
            wanted = dict.fromkeys(tps, LATEST)
        else:
            assert isinstance(spec, dict)
            known = {t for t, _ in tps}
            unknown = sorted(set(spec) - known)
            if unknown:
                raise SettingError(
                    f"{CONNECTOR} setting {name!r} names topic {unknown[0]!r}, which is not "
                    f"read (topics: {', '.join(sorted(known)) or 'none'})"
                )
            present = set(tps)
            for topic, partitions in spec.items():
                for partition in partitions:
                    if (topic, partition) not in present:
                        raise SettingError(
                            f"{CONNECTOR} setting {name!r} names partition {topic}/{partition}, "
                            "which does not exist"
                        )
            wanted = {tp: spec.get(tp[0], {}).get(tp[1], fallback) for tp in tps}
        early = [tp for tp, o in wanted.items() if o == EARLIEST]
        late = [tp for tp, o in wanted.items() if o == LATEST]
        resolved = {tp: o for tp, o in wanted.items() if o >= 0}
        resolved.update(self.earliest(early))
        resolved.update(self.latest(late))
        return resolved


def check_range(
    start: Offsets,
    end: Offsets,
    low: Offsets,
    high: Offsets | None = None,
    fail_on_data_loss: bool = True,
) -> None:
    """A planned batch read that cannot be served is a :class:`SettingError` (``high``: the
    partitions' latest offsets, where ``endingOffsets`` names offsets). Without
    ``fail_on_data_loss``, a start before the earliest offset there is moved to it (in
    ``start``), with a warning."""
    for tp, first in list(start.items()):
        if not fail_on_data_loss and first < low[tp] < end[tp]:
            data_lost(
                f"{tp[0]}/{tp[1]}", f"starts at {first}, but its earliest offset is {low[tp]}"
            )
            start[tp] = first = low[tp]
        last = end[tp]
        where = f"{tp[0]}/{tp[1]}"
        if high is not None and last > high[tp]:
            raise SettingError(
                f"{CONNECTOR} setting 'endingOffsets': {where} ends at {last}, after its "
                f"latest offset {high[tp]} (a batch read ends at what is there)"
            )
        if first > last:
            raise SettingError(
                f"{CONNECTOR} setting 'startingOffsets': {where} starts at {first}, after its "
                f"end {last}"
            )
        if first < low[tp] and first < last:
            raise SettingError(
                f"{CONNECTOR} setting 'startingOffsets': {where} starts at {first}, but its "
                f"earliest offset is {low[tp]} (older messages were deleted)"
            )


def check_not_behind(
    start: Mapping[TP, int], latest: Mapping[TP, int], fail_on_data_loss: bool = True
) -> None:
    """A stream whose partition now ends before where its checkpoint left it (the topic
    deleted and made again, its messages deleted) would skip what the partition holds up to
    there: a :class:`ConnectorError` naming it, as Spark's Kafka source fails on data loss;
    without ``fail_on_data_loss``, a warning, and the stream goes on from that end, as
    Spark's does."""
    for (topic, partition), end in sorted(latest.items()):
        left = start.get((topic, partition))
        if left is not None and end < left and not fail_on_data_loss:
            data_lost(f"{topic}/{partition}", f"ends at offset {end}, before {left}")
        elif left is not None and end < left:
            raise ConnectorError(
                f"{CONNECTOR}: {topic}/{partition} ends at offset {end}, before {left} where "
                "this query's checkpoint left it (the topic was deleted and made again, or "
                "the broker lost messages): reading on would skip its messages; start the "
                "query on a new checkpoint (startingOffsets) to read it anew"
            )


def data_lost(where: str, what: str) -> None:
    """Say that messages of a partition are skipped (``failOnDataLoss`` false)."""
    NOTICES.warning(
        "%s: %s %s: some messages may have been missed (setting failOnDataLoss is false)",
        CONNECTOR,
        where,
        what,
    )


def plan(
    start: Mapping[TP, int],
    end: Mapping[TP, int],
    max_records: int | None = None,
    min_partitions: int | None = None,
) -> list[KafkaRange]:
    """One range per partition with messages to read; split in equal parts of at most
    ``max_records`` offsets when given; then, when that makes fewer than ``min_partitions``
    ranges, the larger ones split again in proportion to their size, as Spark's Kafka
    source divides them (:func:`_spread`). Split parts are read at once: a key's changes in two of
    them may reach a destination out of order. Ranges meet exactly: no offset is read twice
    or skipped."""
    ranges = [
        (tp, first, last)
        for tp, last in sorted(end.items())
        if (first := start.get(tp, last)) < last
    ]
    parts = [1 if max_records is None else math.ceil((b - a) / max_records) for _, a, b in ranges]
    ranges = [piece for r, n in zip(ranges, parts, strict=True) for piece in _divided(r, n)]
    if min_partitions is not None and len(ranges) < min_partitions:
        ranges = [
            piece
            for r, n in zip(
                ranges, _spread([b - a for _, a, b in ranges], min_partitions), strict=True
            )
            for piece in _divided(r, n)
        ]
    return [KafkaRange(topic, partition, a, b) for (topic, partition), a, b in ranges]


def _divided(found: tuple[TP, int, int], parts: int) -> list[tuple[TP, int, int]]:
    """``found`` in ``parts`` ranges of equal size (to one offset), in order."""
    tp, first, last = found
    size = last - first
    bounds = [first + size * i // parts for i in range(parts + 1)]
    return [(tp, a, b) for a, b in itertools.pairwise(bounds) if a < b]


def _spread(sizes: list[int], wanted: int) -> list[int]:
    """How many parts each range of ``sizes`` is split into so that there are about
    ``wanted`` in all, as Spark's ``KafkaOffsetRangeCalculator`` counts them: a range whose
    share of ``wanted`` rounds to one or less stays whole, and the others share what is left
    of ``wanted`` in proportion to their size (rounded half up; at least one each)."""
    total = sum(sizes)

    def share(size: int, of: int, count: int) -> int:
        return max(math.floor(size / of * count + 0.5), 1)

    whole = [share(size, total, wanted) == 1 for size in sizes]
    split_total = total - sum(size for size, w in zip(sizes, whole, strict=True) if w)
    split_wanted = max(wanted - sum(whole), 1)
    return [
        1 if w else share(size, split_total, split_wanted)
        for size, w in zip(sizes, whole, strict=True)
    ]


def limit(start: Mapping[TP, int], latest: Mapping[TP, int], max_rows: int) -> Offsets:
    """End offsets at most ``max_rows`` past ``start`` in total, shared in proportion to what
    each partition has waiting (largest remainders get the rounding), never past latest."""
    waiting = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(waiting.values())
    end = {tp: start.get(tp, latest[tp]) for tp in latest}
    if total <= max_rows:
        return {tp: end[tp] + n for tp, n in waiting.items()}
    shares = {tp: n * max_rows / total for tp, n in waiting.items()}
    granted = {tp: int(share) for tp, share in shares.items()}
    left = max_rows - sum(granted.values())
    by_remainder = sorted(waiting, key=lambda tp: (granted[tp] - shares[tp], tp))
    for tp in by_remainder[:left]:
        granted[tp] += 1
    return {tp: end[tp] + granted[tp] for tp in latest}


def _said(exc: KafkaException, timeout: float) -> str:
    """What a client error says, without its ``KafkaError{code=...}`` wrapping; where no
    broker answered, that it waited ``timeout`` seconds for one."""
    error = exc.args[0] if exc.args else None
    if not isinstance(error, KafkaError):
        return str(exc)
    said = str(error.str())
    if error.code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN):
        said += f" (no broker answered within {timeout:g} s: requestTimeoutMs)"
    return said
