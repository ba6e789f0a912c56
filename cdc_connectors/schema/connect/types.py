"""The semantic types: what a Connect schema ``name`` means, in one table.

Each entry gives the Connect type the name sits on, its Avro form, how its JSON values read
(:mod:`~cdc_connectors.schema.connect.readers`) and how structured values write back
(:mod:`~cdc_connectors.schema.connect.writers`), how the columnar path reads it, and the
Avro logical types that read back as it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc_connectors.schema.connect.avrodata import DEFAULT_DECIMAL_PRECISION
from cdc_connectors.schema.connect.readers import (
    TEXT_DECIMAL_SCALE,
    Params,
    int_param,
    read_connect_decimal,
    read_days,
    read_enum,
    read_plain_int,
    read_plain_text,
    read_since_epoch,
    read_text_decimal,
    read_text_timestamp,
    read_time_of_day,
    read_uuid,
    read_variable_scale_decimal,
    text_decimal_precision,
)
from cdc_connectors.schema.connect.writers import (
    Write,
    write_as_is,
    write_days,
    write_decimal,
    write_since_epoch,
    write_text_decimal,
    write_text_instant,
    write_time_of_day,
    write_variable_decimal,
)

__all__ = ["AVRO_LOGICAL_CONNECT", "SEMANTIC_TYPES", "Columnar", "SemanticType", "semantic_type"]


def _decimal_avro(params: Params) -> dict[str, Any]:
    scale = int_param(params)
    precision = int_param(params, "connect.decimal.precision", DEFAULT_DECIMAL_PRECISION)
    return {"type": "bytes", "scale": scale, "precision": precision, "logicalType": "decimal"}


def _text_decimal_avro(params: Params) -> dict[str, Any]:
    scale = int_param(params, "scale", TEXT_DECIMAL_SCALE)
    precision = text_decimal_precision(params)
    return {"type": "bytes", "scale": scale, "precision": precision, "logicalType": "decimal"}


def _avro(avro_type: str, logical: str | None = None) -> Callable[[Params], dict[str, Any]]:
    spelled = (
        {"type": avro_type} if logical is None else {"type": avro_type, "logicalType": logical}
    )
    return lambda params: dict(spelled)


@dataclass(frozen=True, slots=True)
class Columnar:
    """How the columnar Debezium JSON path reads a semantic type's JSON values.

    ``kind`` is ``count`` (the JSON number is the value, within ``bounds`` if given),
    ``time_of_day`` (a count of ``micros_per_unit`` microseconds past midnight, within
    ``bounds``), ``text`` (the JSON string is the value), ``timestamp`` (a count of
    ``micros_per_unit`` microseconds since the epoch), ``decimal`` (base64 two's
    complement), ``decimal_text`` (a decimal's plain text), ``iso_timestamp`` (ISO 8601
    date-time text, UTC without an offset), ``enum`` (one of the ``allowed`` parameter),
    ``uuid`` (canonical text) or ``by_value`` (an object the type's own ``convert`` reads,
    one value at a time).
    """

    kind: str
    bounds: tuple[int, int] | None = None
    micros_per_unit: int = 1


_COUNT, _TEXT = Columnar("count"), Columnar("text")
# Days of years 1-9999 (Python's and Spark's dates) and times of day.
_DAY_BOUNDS = (-719_162, 2_932_896)
_MILLIS_OF_DAY, _MICROS_OF_DAY = (0, 86_399_999), (0, 86_399_999_999)


@dataclass(frozen=True, slots=True)
class SemanticType:
    """What a Connect schema ``name`` means, in every direction: its Avro type, how its
    JSON values read and how structured values write back, and its columnar reading."""

    #: The Connect type the name sits on; another is a malformed schema.
    connect_type: str
    #: The Avro type (with its logical type), given the schema's parameters.
    avro: Callable[[Params], dict[str, Any]]
    #: A non-null JSON value -> the Python value fastavro writes for ``avro``.
    convert: Callable[[Any, Params], Any]
    #: What the consumer sees, for the documentation table.
    consumer: str
    #: A structured value (what a record holds) -> the Connect JSON value.
    write: Write = write_as_is
    #: How the columnar path reads the JSON values; None: it leaves them to the
    #: per-message path.
    columnar: Columnar | None = None
    #: Avro logical types read back as this Connect type when the Avro schema carries no
    #: ``connect.name`` (the reverse of ``avro``).
    from_avro: tuple[str, ...] = ()


_CDL = "com.*.cdc.data."
#: Connect name -> semantic type. ``com.*`` stands for CDL's vendor segment.
SEMANTIC_TYPES: Mapping[str, SemanticType] = {
    "org.apache.kafka.connect.data.Decimal": SemanticType(
        "bytes",
        _decimal_avro,
        read_connect_decimal,
        "decimal(precision, scale) as Decimal",
        write_decimal,
        Columnar("decimal"),
    ),
    "org.apache.kafka.connect.data.Date": SemanticType(
        "int32",
        _avro("int", "date"),
        read_days,
        "date",
        write_days,
        Columnar("count", _DAY_BOUNDS),
        ("date",),
    ),
    "org.apache.kafka.connect.data.Time": SemanticType(
        "int32",
        _avro("int", "time-millis"),
        read_time_of_day(1000, 32),
        "time (ms)",
        write_time_of_day(1000),
        Columnar("time_of_day", _MILLIS_OF_DAY, 1000),
        ("time-millis",),
    ),
    "org.apache.kafka.connect.data.Timestamp": SemanticType(
        "int64",
        _avro("long", "timestamp-millis"),
        read_since_epoch(1000),
        "UTC timestamp (ms)",
        write_since_epoch(1000),
        Columnar("timestamp", micros_per_unit=1000),
        ("timestamp-millis", "local-timestamp-millis"),
    ),
    "io.debezium.time.Date": SemanticType(
        "int32", _avro("int", "date"), read_days, "date", write_days, Columnar("count", _DAY_BOUNDS)
    ),
    "io.debezium.time.Time": SemanticType(
        "int32",
        _avro("int", "time-millis"),
        read_time_of_day(1000, 32),
        "time (ms)",
        write_time_of_day(1000),
        Columnar("time_of_day", _MILLIS_OF_DAY, 1000),
    ),
    "io.debezium.time.MicroTime": SemanticType(
        "int64",
        _avro("long", "time-micros"),
        read_time_of_day(1_000_000, 64),
        "time (us)",
        write_time_of_day(1_000_000),
        Columnar("time_of_day", _MICROS_OF_DAY),
        ("time-micros",),
    ),
    "io.debezium.time.NanoTime": SemanticType(
        "int64",
        _avro("long"),
        read_plain_int(64),
        "long: ns past midnight (Avro has no time-nanos)",
        columnar=_COUNT,
    ),
    "io.debezium.time.Timestamp": SemanticType(
        "int64",
        _avro("long", "timestamp-millis"),
        read_since_epoch(1000),
        "UTC timestamp (ms)",
        write_since_epoch(1000),
        Columnar("timestamp", micros_per_unit=1000),
    ),
    "io.debezium.time.MicroTimestamp": SemanticType(
        "int64",
        _avro("long", "timestamp-micros"),
        read_since_epoch(1_000_000),
        "UTC timestamp (us)",
        write_since_epoch(1_000_000),
        Columnar("timestamp"),
        ("timestamp-micros", "local-timestamp-micros"),
    ),
    "io.debezium.time.NanoTimestamp": SemanticType(
        "int64",
        _avro("long"),
        read_plain_int(64),
        "long: ns since epoch (datetime stops at us)",
        columnar=_COUNT,
    ),
    "io.debezium.time.ZonedTimestamp": SemanticType(
        "string", _avro("string"), read_plain_text, "ISO-8601 string, offset kept", columnar=_TEXT
    ),
    "io.debezium.time.ZonedTime": SemanticType(
        "string",
        _avro("string"),
        read_plain_text,
        "ISO-8601 time string, offset kept",
        columnar=_TEXT,
    ),
    "io.debezium.time.Year": SemanticType(
        "int32", _avro("int"), read_plain_int(32), "int year", columnar=_COUNT
    ),
    "io.debezium.data.VariableScaleDecimal": SemanticType(
        "struct",
        _avro("string"),
        read_variable_scale_decimal,
        "exact decimal text, scale kept",
        write_variable_decimal,
        Columnar("by_value"),
    ),
    "io.debezium.data.Json": SemanticType(
        "string", _avro("string"), read_plain_text, "JSON text", columnar=_TEXT
    ),
    "io.debezium.data.Enum": SemanticType(
        "string", _avro("string"), read_enum, "string, one of allowed", columnar=Columnar("enum")
    ),
    "io.debezium.data.EnumSet": SemanticType(
        "string", _avro("string"), read_plain_text, "string", columnar=_TEXT
    ),
    "io.debezium.data.Uuid": SemanticType(
        "string",
        _avro("string", "uuid"),
        read_uuid,
        "uuid string",
        columnar=Columnar("uuid"),
        from_avro=("uuid",),
    ),
    _CDL + "Decimal": SemanticType(
        "string",
        _text_decimal_avro,
        read_text_decimal,
        "decimal(38, 18) unless parameters say",
        write_text_decimal,
        columnar=Columnar("decimal_text"),
    ),
    _CDL + "timestamp": SemanticType(
        "string",
        _avro("long", "timestamp-micros"),
        read_text_timestamp,
        "UTC timestamp (us); no offset = UTC",
        write_text_instant,
        columnar=Columnar("iso_timestamp"),
    ),
}
#: Avro logical type -> (Connect type, Connect name) of what it reads back as.
AVRO_LOGICAL_CONNECT: Mapping[str, tuple[str, str]] = {
    logical: (semantic.connect_type, name)
    for name, semantic in SEMANTIC_TYPES.items()
    for logical in semantic.from_avro
}
_CDL_NAME = re.compile(r"com\.[A-Za-z0-9_]+\.cdc\.data\.(Decimal|timestamp)")
# AvroData compares the four Connect logical names ignoring case.
_CONNECT_LOGICAL = {
    name.lower(): name for name in SEMANTIC_TYPES if name.startswith("org.apache.kafka.")
}


def semantic_type(name: str | None) -> SemanticType | None:
    """The table entry for a Connect schema name, or None for a plain (or unknown) name."""
    if name is None:
        return None
    found = SEMANTIC_TYPES.get(name)
    if found is not None:
        return found
    cdl = _CDL_NAME.fullmatch(name)
    if cdl is not None:
        return SEMANTIC_TYPES[_CDL + cdl[1]]
    alias = _CONNECT_LOGICAL.get(name.lower())
    return None if alias is None else SEMANTIC_TYPES[alias]
