"""Settings of the Kafka connector, parsed and checked once on the driver.

Spark hands data source options over lower-cased; these functions accept any case and
report a setting by its documented name. Every error is a one-line
:class:`~cdc_connectors.connectors.messages.SettingError` naming the setting.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc_connectors.connectors.messages import SettingError, registry_setting
from cdc_connectors.options import parse_bool

CONNECTOR = "cdc-kafka"
RAW = "raw"
KAFKA_PREFIX = "kafka."
FORMAT_PREFIX = "format."
#: Spark's own notation for offsets inside the JSON form.
EARLIEST = -2
LATEST = -1

#: ``earliest``, ``latest``, or topic -> partition -> offset (``-2`` earliest, ``-1`` latest).
OffsetSpec = str | dict[str, dict[int, int]]

SOURCE = (
    "servers",
    "topics",
    "topicPattern",
    "format",
    "registry",
    "failFast",
    "typed",
    "collection",
    "startingOffsets",
    "endingOffsets",
    "maxRecordsPerPartition",
    "minPartitions",
    "maxOffsetsPerTrigger",
    "pollTimeoutMs",
    "requestTimeoutMs",
    "failOnDataLoss",
)
DESTINATION = ("servers", "topic", "format", "registry", "deliveryTimeoutMs")
#: An option Spark itself passes to streaming writers along with ours; not ours to check.
SPARK_OWN = frozenset({"checkpointlocation"})
#: Spark's own Kafka source and sink option names (lower case) -> ours, so that code written
#: for ``format("kafka")`` works as it is.
SPARK_ALIASES = {
    "kafka.bootstrap.servers": "servers",
    "subscribe": "topics",
    "subscribepattern": "topicPattern",
    "kafkaconsumer.polltimeoutms": "pollTimeoutMs",
    # the Java consumer's bound on its blocking calls; librdkafka has no such property
    "kafka.default.api.timeout.ms": "requestTimeoutMs",
}
#: Spark Kafka options with no counterpart here, and what to do instead.
SPARK_UNSUPPORTED = {
    "assign": "name the topics with 'topics' and bound partitions with startingOffsets JSON",
    "startingoffsetsbytimestamp": "give offsets in startingOffsets JSON",
    "endingoffsetsbytimestamp": "give offsets in endingOffsets JSON",
}

DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
DEFAULT_DELIVERY_TIMEOUT_MS = 30_000
DEFAULT_DESTINATION_FORMAT = "opencdc-proto"


@dataclass(frozen=True)
class SourceSettings:
    """What a Kafka source needs, on the driver and in every read task (picklable)."""

    servers: str
    topics: tuple[str, ...]
    topic_pattern: str | None
    format: str
    format_settings: dict[str, str]
    registry: str | None
    fail_fast: bool
    typed: bool
    starting: OffsetSpec | None
    ending: OffsetSpec | None
    #: Offsets a read task takes at most (a longer range is split), or None: one task per
    #: topic-partition range, which keeps each key's changes in order.
    max_records_per_partition: int | None
    #: At least about this many read tasks: the larger ranges are split in proportion
    #: (Spark's ``minPartitions``), or None: as many tasks as ranges.
    min_partitions: int | None
    max_offsets_per_trigger: int | None
    poll_timeout_ms: int
    kafka: dict[str, str] = field(default_factory=dict)
    #: typed reads: the collection read (``opencdc.collection``); None: the only one found
    collection: str | None = None
    #: Spark's ``failOnDataLoss``: whether messages no longer there (deleted, their topic
    #: made again) fail the read, or are skipped with a warning
    fail_on_data_loss: bool = True
    #: How long the driver waits for the cluster's answer to a request (topics, offsets)
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS

    @property
    def raw(self) -> bool:
        """Messages come out in Spark's Kafka layout, bytes unchanged."""
        return self.format == RAW


@dataclass(frozen=True)
class DestinationSettings:
    """What a Kafka destination needs in every write task (picklable)."""

    servers: str
    topic: str | None
    format_settings: dict[str, str]
    registry: str | None
    delivery_timeout_ms: int
    kafka: dict[str, str] = field(default_factory=dict)


#: librdkafka properties whose secret cannot be empty: given so, a client fails only when it
#: first connects (``sasl.username and sasl.password must be set``). (An empty
#: ``ssl.key.password`` is a key without a password, which librdkafka takes.)
_SECRETS = frozenset({"sasl.password", "sasl.oauthbearer.client.secret"})


def _split(
    options: Mapping[str, str], known: tuple[str, ...], role: str
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Our settings by documented name, the ``kafka.*`` ones and the ``format.*`` ones."""
    names = {name.lower(): name for name in known}
    ours: dict[str, str] = {}
    kafka: dict[str, str] = {}
    fmt: dict[str, str] = {}
    given: dict[str, str] = {}  # our name -> the option that set it
    for key, value in options.items():
        lowered = key.lower()
        alias = SPARK_ALIASES.get(lowered)
        if alias is not None and alias.lower() in names:
            if alias in ours and ours[alias] != str(value):
                raise SettingError(
                    f"{CONNECTOR} settings {given[alias]!r} and {key!r} name one setting "
                    "with two values"
                )
            ours[alias], given[alias] = str(value), key
            continue
        if lowered in SPARK_UNSUPPORTED:
            raise SettingError(
                f"{CONNECTOR} {role}: Spark's option {key!r} is not supported: "
                f"{SPARK_UNSUPPORTED[lowered]}"
            )
        if lowered.startswith(KAFKA_PREFIX) and len(lowered) > len(KAFKA_PREFIX):
            if lowered[len(KAFKA_PREFIX) :] in _SECRETS and not str(value):
                raise SettingError(
                    f"{CONNECTOR} setting {key!r} is empty: give the secret, or leave the "
                    "setting out"
                )
            kafka[key[len(KAFKA_PREFIX) :]] = str(value)
        elif lowered.startswith(FORMAT_PREFIX) and len(lowered) > len(FORMAT_PREFIX):
            fmt[FORMAT_PREFIX + key[len(FORMAT_PREFIX) :]] = str(value)
        elif lowered in names:
            name = names[lowered]
            if name in ours and ours[name] != str(value):
                raise SettingError(
                    f"{CONNECTOR} settings {given[name]!r} and {key!r} name one setting "
                    "with two values"
                )
            ours[name], given[name] = str(value), key
        elif lowered not in SPARK_OWN:
            listed = ", ".join(known)
            close = difflib.get_close_matches(lowered, list(names), n=1)
            hint = f"; did you mean {names[close[0]]!r}?" if close else ""
            raise SettingError(
                f"{CONNECTOR} {role} has no setting {key!r}{hint} "
                f"(settings: {listed}, kafka.<librdkafka property>, format.<option>)"
            )
    return ours, kafka, fmt


#: A broker's address: a host (a name, an IPv4 address or a bracketed IPv6 one, with its
#: zone) and a port (librdkafka's 9092 where none is given).
#: (librdkafka also takes a security protocol before it: ``SSL://host:9093``.)
_SERVER = re.compile(
    r"^(?:(?:PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL)://)?"
    r"(?:\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?\]|[A-Za-z0-9_.-]+)(?::([0-9]{1,5}))?$",
    re.IGNORECASE,
)
#: The librdkafka property our producer reads as a boolean of its own (``options.FALSE``).
_IDEMPOTENCE = "enable.idempotence"
# librdkafka names a property it refuses in quotes
_PROPERTY = re.compile(r'property:? "([^"]+)"')
_CHECKED_WITHOUT = logging.getLogger(__name__ + ".checks")  # a client made to check settings
_CHECKED_WITHOUT.addHandler(logging.NullHandler())
_CHECKED_WITHOUT.propagate = False


def _servers(ours: Mapping[str, str]) -> str:
    servers = ours.get("servers", "").strip()
    if not servers:
        raise SettingError(f"{CONNECTOR} setting 'servers' is required (host:port[,host:port])")
    for server in servers.split(","):
        if not server.strip():
            continue  # (a trailing comma, as librdkafka takes it)
        found = _SERVER.match(server.strip())
        if found is None or not 0 < int(found.group(1) or 9092) < 65536:  # (9092: no port)
            raise SettingError(
                f"{CONNECTOR} setting 'servers': {server.strip()!r} is not host:port "
                "(a list: host:port,host:port)"
            )
    return servers


#: Properties a check leaves out: where to connect (a check connects nowhere), and files a
#: destination's producers open on the executors (shipped there with ``--files``, say).
_NOT_CHECKED = frozenset({"bootstrap.servers", "metadata.broker.list"})
_EXECUTOR_FILES = re.compile(r"^ssl\.[a-z.]*location$")
#: Mechanisms whose client fetches a token when it is made (OIDC): not made to check.
_FETCHES_WHEN_MADE = "oauthbearer"


def check_client(
    kafka: Mapping[str, str], role: str, extra: Mapping[str, Any] | None = None
) -> None:
    """The ``kafka.*`` settings as librdkafka takes them, checked by making a client that
    names no broker, so it connects nowhere: a property it does not know, a value it
    refuses, SASL without its credentials or mechanism, a certificate file that is not
    there (a source's: its driver connects; a destination's producers run on executors).
    ``extra``: what the connector itself sets for the client (a producer's guarantees)."""
    from confluent_kafka import Consumer, KafkaException, Producer

    config: dict[str, Any] = {}
    for key, value in kafka.items():
        name = key.lower()  # (librdkafka's names are lower case; Spark lowers options)
        if name in _NOT_CHECKED or name == _IDEMPOTENCE:
            continue
        if role != "source" and _EXECUTOR_FILES.match(name):
            continue
        config[name] = value
    if str(config.get("sasl.mechanism", config.get("sasl.mechanisms", ""))).lower() == (
        _FETCHES_WHEN_MADE
    ):
        return  # (its client would fetch a token from the identity provider)
    config.update(extra or {})
    config["logger"] = _CHECKED_WITHOUT
    try:
        if role == "source":
            Consumer({**config, "group.id": config.get("group.id", "cdc-connectors-check")}).close()
        else:
            Producer(config).flush(0)
    except (TypeError, ValueError) as exc:  # a callback property given as text
        raise SettingError(
            f"{CONNECTOR} settings kafka.*: librdkafka refuses them: {exc}"
        ) from None
    except KafkaException as exc:
        raise _refused(exc, kafka) from None


def _refused(exc: Exception, kafka: Mapping[str, str]) -> SettingError:
    """What librdkafka said of the settings, naming the setting it names (or the security
    protocol, for SASL or SSL without what it needs)."""
    error = exc.args[0] if exc.args else exc
    reason = str(error.str() if hasattr(error, "str") else error)
    reason = reason.removeprefix("Failed to create consumer: ")
    reason = reason.removeprefix("Failed to create producer: ")
    given = {k.lower(): k for k in kafka}
    names = [m.group(1) for m in _PROPERTY.finditer(reason)]
    names += re.findall(r"`([a-z.]+)`", reason)
    names += re.findall(r"^([a-z.]+)(?: and [a-z.]+)? must be set", reason)
    names += re.findall(r"^([a-z.]+) failed", reason)
    for name in names:
        if name.lower() in given:
            return SettingError(
                f"{CONNECTOR} setting {KAFKA_PREFIX + given[name.lower()]!r}: "
                f"librdkafka refuses it: {reason}"
            )
    if "security.protocol" in given:
        return SettingError(
            f"{CONNECTOR} setting {KAFKA_PREFIX + given['security.protocol']!r}: "
            f"librdkafka refuses the settings with it: {reason}"
        )
    return SettingError(f"{CONNECTOR} settings kafka.*: librdkafka refuses them: {reason}")


def _positive(ours: Mapping[str, str], name: str, default: int | None) -> int | None:
    text = ours.get(name)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise SettingError(f"{CONNECTOR} setting {name!r} must be a positive integer, not {text!r}")
    return value


def _required_positive(ours: Mapping[str, str], name: str, default: int) -> int:
    value = _positive(ours, name, default)
    assert value is not None
    return value


def parse_offsets(name: str, text: str) -> OffsetSpec:
    """``earliest``, ``latest`` or Spark's JSON ``{"topic": {"0": 5, "1": -2}}``."""
    lowered = text.strip().lower()
    if lowered in ("earliest", "latest"):
        return lowered
    usage = (
        f"{CONNECTOR} setting {name!r} must be earliest, latest or JSON like "
        '{"topic": {"0": 5, "1": -2}} (-2 earliest, -1 latest)'
    )
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SettingError(f"{usage}: {exc}") from None
    if not isinstance(found, dict) or not found:
        raise SettingError(f"{usage}: not a JSON object of topics")
    spec: dict[str, dict[int, int]] = {}
    for topic, partitions in found.items():
        if not isinstance(partitions, dict):
            raise SettingError(f"{usage}: topic {topic!r} maps to {partitions!r}, not an object")
        offsets: dict[int, int] = {}
        for partition, offset in partitions.items():
            try:
                number = int(partition)
            except ValueError:
                number = -1
            if number < 0:
                raise SettingError(f"{usage}: {topic!r} has partition {partition!r}")
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                shown = orjson.dumps(offset).decode() if offset is not None else "null"
                raise SettingError(
                    f"{usage}: {topic}/{partition} has offset {shown}, not an integer of -2 or more"
                )
            offsets[number] = offset
        spec[topic] = offsets
    return spec


def source_settings(options: Mapping[str, str]) -> SourceSettings:
    """The settings of a source; :class:`SettingError` naming the first bad one."""
    ours, kafka, fmt = _split(options, SOURCE, "source")
    servers = _servers(ours)
    topics = tuple(t.strip() for t in ours.get("topics", "").split(",") if t.strip())
    pattern = ours.get("topicPattern")
    if topics and pattern is not None:
        raise SettingError(f"{CONNECTOR} settings 'topics' and 'topicPattern' exclude each other")
    if not topics and not pattern:
        raise SettingError(
            f"{CONNECTOR} setting 'topics' (comma list) or 'topicPattern' (regex) is required"
        )
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SettingError(f"{CONNECTOR} setting 'topicPattern': {exc}") from None
    fail_fast_text = ours.get("failFast", "false")
    try:
        fail_fast = parse_bool(fail_fast_text, f"{CONNECTOR} setting 'failFast'")
    except ValueError as exc:
        raise SettingError(str(exc)) from None
    try:
        typed = parse_bool(ours.get("typed", "false"), f"{CONNECTOR} setting 'typed'")
        fail_on_data_loss = parse_bool(
            ours.get("failOnDataLoss", "true"), f"{CONNECTOR} setting 'failOnDataLoss'"
        )
    except ValueError as exc:
        raise SettingError(str(exc)) from None
    starting = ours.get("startingOffsets")
    ending = ours.get("endingOffsets")
    ending_spec = parse_offsets("endingOffsets", ending) if ending is not None else None
    if ending_spec == "earliest" or (
        isinstance(ending_spec, dict)
        and any(o == EARLIEST for offsets in ending_spec.values() for o in offsets.values())
    ):
        raise SettingError(f"{CONNECTOR} setting 'endingOffsets' cannot be earliest (-2)")
    name = ours.get("format", RAW).strip() or RAW
    if name == RAW and fmt:
        raise SettingError(f"{CONNECTOR} setting {sorted(fmt)[0]!r}: format raw has no options")
    if name == RAW and typed:
        raise SettingError(f"{CONNECTOR} setting 'typed': format raw has no typed columns")
    collection = ours.get("collection")
    if collection is not None and not (typed and collection.strip()):
        raise SettingError(
            f"{CONNECTOR} setting 'collection' chooses the collection of a typed read: "
            "name one, and set 'typed' to true as well"
        )
    check_client(kafka, "source")
    return SourceSettings(
        servers=servers,
        topics=topics,
        topic_pattern=pattern,
        format=name,
        format_settings={"format": name, **fmt},
        registry=registry_setting(CONNECTOR, ours.get("registry")),
        fail_fast=fail_fast,
        typed=typed,
        starting=parse_offsets("startingOffsets", starting) if starting is not None else None,
        ending=ending_spec,
        max_records_per_partition=_positive(ours, "maxRecordsPerPartition", None),
        min_partitions=_positive(ours, "minPartitions", None),
        max_offsets_per_trigger=_positive(ours, "maxOffsetsPerTrigger", None),
        poll_timeout_ms=_required_positive(ours, "pollTimeoutMs", DEFAULT_POLL_TIMEOUT_MS),
        request_timeout_ms=_required_positive(ours, "requestTimeoutMs", DEFAULT_REQUEST_TIMEOUT_MS),
        kafka=kafka,
        collection=collection,
        fail_on_data_loss=fail_on_data_loss,
    )


def destination_settings(options: Mapping[str, str]) -> DestinationSettings:
    """The settings of a destination; :class:`SettingError` naming the first bad one."""
    ours, kafka, fmt = _split(options, DESTINATION, "destination")
    servers = _servers(ours)
    if "message.timeout.ms" in {k.lower() for k in kafka}:
        raise SettingError(
            f"{CONNECTOR} setting 'kafka.message.timeout.ms': use 'deliveryTimeoutMs' instead"
        )
    name = ours.get("format", DEFAULT_DESTINATION_FORMAT).strip() or DEFAULT_DESTINATION_FORMAT
    topic = ours.get("topic")
    if topic is not None and not topic.strip():
        raise SettingError(f"{CONNECTOR} setting 'topic' is empty")
    if topic is not None:
        from cdc_connectors.connectors.kafka_write import TopicTemplate

        TopicTemplate(topic.strip())  # (a template it cannot read: refused here)
    idempotent = True
    for key, value in kafka.items():
        if key.lower() == _IDEMPOTENCE:
            try:
                idempotent = parse_bool(value, f"{CONNECTOR} setting {KAFKA_PREFIX + key!r}")
            except ValueError as exc:
                raise SettingError(str(exc)) from None
    timeout = _required_positive(ours, "deliveryTimeoutMs", DEFAULT_DELIVERY_TIMEOUT_MS)
    # checked with what the producer is given beside them (kafka_write.producer_config)
    guarantees: dict[str, Any] = {_IDEMPOTENCE: idempotent, "message.timeout.ms": timeout}
    if not idempotent:
        guarantees["max.in.flight.requests.per.connection"] = 1
    check_client(kafka, "destination", guarantees)
    return DestinationSettings(
        servers=servers,
        topic=topic.strip() if topic is not None else None,
        format_settings={"format": name, **fmt},
        registry=registry_setting(CONNECTOR, ours.get("registry")),
        delivery_timeout_ms=timeout,
        kafka=kafka,
    )


def kafka_config(servers: str, kafka: Mapping[str, str]) -> dict[str, Any]:
    """librdkafka properties: the servers, then every ``kafka.*`` setting (its name in
    lower case); its log lines go through Python logging, rate-limited (``kafka_logs``)."""
    from cdc_connectors.connectors.kafka_logs import LOGGER

    config: dict[str, Any] = {"bootstrap.servers": servers, "logger": LOGGER}
    # (librdkafka's names are lower case, and it takes no other: the checks take any case)
    config.update((str(name).lower(), value) for name, value in kafka.items())
    return config
