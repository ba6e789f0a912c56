"""Kafka Connect schemas as Avro: the ``schema`` block of a JSON envelope, and its values.

Debezium, CDL and Arcion write Kafka Connect's JSON envelope,
``{"schema": ..., "payload": ...}``. ``connect_to_avro`` turns the ``schema`` block into
the Avro schema Confluent's AvroConverter (``AvroData.fromConnectSchema``, default
settings) registers for it: the same records, names, unions, defaults and
``connect.*`` properties. ``connect_value`` turns a ``payload`` value into the Python
values fastavro writes for that schema.

Semantic types (a schema ``name`` such as ``io.debezium.time.MicroTimestamp``) live in
one table, ``SEMANTIC_TYPES``: the Avro type a consumer gets and the value converter.
Where AvroData leaves a Debezium or vendor type as its bare base type, the table adds
the Avro logical type that says what the number or string means, so Avro readers
(fastavro, Spark) get dates, timestamps and decimals.

Two deliberate departures from AvroData, both for readers that follow the Avro
specification (fastavro, confluent-kafka-python): a dotless record name that occurs
more than once inside a namespaced record inherits that namespace (AvroData writes a
bare reference that only Java's parser resolves), and ``VariableScaleDecimal`` is the
exact decimal text (an Avro decimal needs one scale for all values).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
import re
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from decimal import Context, Decimal, InvalidOperation
from typing import Any

import orjson

from cdc_connectors.schema import jsontext
from cdc_connectors.schema.errors import SchemaError

__all__ = [
    "AVRO_LOGICAL_CONNECT",
    "SEMANTIC_TYPES",
    "Columnar",
    "ConnectSchema",
    "SemanticType",
    "connect_to_avro",
    "connect_value",
    "parse_connect_schema",
    "semantic_type",
]

#: Namespace and record names AvroData gives what Connect leaves unnamed.
NAMESPACE = "io.confluent.connect.avro"
DEFAULT_RECORD_NAME = "ConnectDefault"
MAP_ENTRY_NAME = "MapEntry"
#: AvroData's precision when a Connect Decimal does not carry one.
DEFAULT_DECIMAL_PRECISION = 64
# PostgreSQL's numeric holds at most 16383 digits after the point: a scale beyond any
# database's would only make a huge text out of a small message.
_MAX_VARIABLE_SCALE = 16_383
_FRACTION = re.compile(r"[.,](\d{7,})")
#: CDL's decimal strings carry no precision or scale: Spark's default decimal(38, 18).
_TEXT_DECIMAL_PRECISION = 38
_TEXT_DECIMAL_SCALE = 18

Params = Mapping[str, str]

# JsonConverter spells float32/float64 "float"/"double"; the Connect names are accepted too.
_TYPE_ALIASES = {"float": "float32", "double": "float64"}
_PRIMITIVE_AVRO = {
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "long",
    "float32": "float",
    "float64": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}
_CONNECT_TYPES = frozenset(_PRIMITIVE_AVRO) | {"array", "map", "struct"}
_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_FLOAT32_MAX = 3.4028234663852886e38
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_IN_AVRO_NAME = re.compile(r"[^A-Za-z0-9_]")
# AvroData's parameters: these shape the Avro schema instead of being copied as data.
_FIELD_DOC_PREFIX = NAMESPACE + ".field.doc."
_RECORD_DOC = NAMESPACE + ".record.doc"
_FIELD_DEFAULT_FLAG = NAMESPACE + ".field.default"
_FIXED_SIZE = "connect.fixed.size"
_UNION = NAMESPACE + ".Union"
# Parameters that change a named type's Avro definition beyond its properties: a fixed size,
# AvroData's docs and default flag, ``avro*`` copied as they are. Others are data about the
# column (Debezium's ``__debezium.source.column.type``), which a shared definition need not
# agree on.
_SHAPING_PARAMETERS = (_FIXED_SIZE, NAMESPACE + ".", "avro")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
# Decimal arithmetic here must never round: a context wider than any value it meets.
_WIDE = Context(prec=100_000, Emax=999_999_999, Emin=-999_999_999)


class _Invalid(ValueError):
    """A value does not fit its schema; the caller adds where."""


# --- value converters: JSON (as orjson reads it) -> what fastavro writes -----------------


def _integer(value: Any, bits: int = 64) -> int:
    # bool is an int subclass in Python but never a JSON number.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"expected an integer, got {_kind(value)}")
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if not low <= value <= high:
        raise _Invalid(f"{value} is outside the {bits}-bit range [{low}, {high}]")
    return value


def _double(value: Any, kind: str) -> float:
    """A JSON number as a float, only when the float holds it exactly: an integer beyond
    2^53 or a number with more digits than a double keeps is refused, never rounded."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise _Invalid(f"expected a number, got {_kind(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    limit = _FLOAT32_MAX if kind == "float32" else sys.float_info.max
    if not abs(number) <= limit:
        raise _Invalid(f"{value} is outside the {kind} range")
    if not isinstance(value, float) and Decimal(number) != Decimal(value):
        raise _Invalid(f"{value} would change as a {kind} (it reads as {number!r})")
    return number


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"expected a string, got {_kind(value)}")
    return value


def _base64(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    try:
        return base64.b64decode(_text(value), validate=True)
    except (binascii.Error, ValueError) as exc:  # ValueError: text that is not ASCII
        raise _Invalid(f"not base64: {exc}") from None


def _int_param(params: Params, key: str = "scale", default: int | None = None) -> int:
    text = params.get(key)
    if text is None:
        if default is None:
            raise _Invalid(f"the schema has no {key!r} parameter")
        return default
    try:
        return int(text)
    except ValueError:
        raise _Invalid(f"parameter {key!r} is not an integer: {text!r}") from None


def _exact(number: Decimal, scale: int, precision: int) -> Decimal:
    """``number`` with exactly ``scale`` fraction digits, or why it has no such form."""
    if not number.is_finite():
        raise _Invalid(f"{number} is not a finite decimal")
    try:
        # Quantizing only pads zeros or drops them; a digit that would be lost is an error.
        exact = number.quantize(Decimal(1).scaleb(-scale), context=_WIDE)
    except InvalidOperation:
        raise _Invalid(f"{number} does not fit scale {scale}") from None
    if exact != number:
        raise _Invalid(f"{number} has more than {scale} fraction digits")
    if len(exact.as_tuple().digits) > precision:
        raise _Invalid(f"{number} has more than {precision} digits (precision)")
    return exact


def _unscaled(unscaled: int, scale: int) -> Decimal:
    # Built from its parts, so no context rounds it: exact for any size and scale.
    try:
        digits = tuple(int(d) for d in str(abs(unscaled)))
    except ValueError:  # past Python's int-to-text limit (4300 digits): no real decimal
        raise _Invalid("the unscaled value has thousands of digits") from None
    return Decimal((1 if unscaled < 0 else 0, digits, -scale))


def _from_twos_complement(raw: bytes) -> int:
    return int.from_bytes(raw, "big", signed=True) if raw else 0


def _number_decimal(value: Any) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    if isinstance(value, float):
        # JsonConverter's NUMERIC decimal format: orjson reads such numbers as floats;
        # repr is the shortest text that reads back as the same float, i.e. the JSON
        # text for up to 15 significant digits. _exact refuses digits beyond the scale.
        return Decimal(repr(value))
    raise _Invalid(f"expected base64 bytes or a number, got {_kind(value)}")


def _connect_decimal(value: Any, params: Params) -> Decimal:
    scale = _int_param(params)
    precision = _int_param(params, "connect.decimal.precision", DEFAULT_DECIMAL_PRECISION)
    if isinstance(value, str | bytes | bytearray):
        raw = _base64(value)
        if not raw:
            raise _Invalid("empty bytes are no decimal (Connect's Decimal has at least one byte)")
        number = _unscaled(_from_twos_complement(raw), scale)
    else:
        number = _number_decimal(value)
    return _exact(number, scale, precision)


def _text_decimal(value: Any, params: Params) -> Decimal:
    scale = _int_param(params, "scale", _TEXT_DECIMAL_SCALE)
    precision = _text_decimal_precision(params)
    if not isinstance(value, str):
        return _exact(_number_decimal(value), scale, precision)
    try:
        number = Decimal(value.strip())
    except InvalidOperation:
        raise _Invalid(f"not a decimal number: {value!r}") from None
    return _exact(number, scale, precision)


def _variable_scale_decimal(value: Any, params: Params) -> str:
    if not isinstance(value, Mapping):
        raise _Invalid(f"expected an object with scale and value, got {_kind(value)}")
    scale = _integer(value.get("scale"), 32)
    if abs(scale) > _MAX_VARIABLE_SCALE:
        raise _Invalid(
            f"scale {scale} is beyond {_MAX_VARIABLE_SCALE} (PostgreSQL's numeric limit)"
        )
    raw = _base64(value.get("value"))
    if not raw:
        raise _Invalid("empty bytes are no decimal")
    number = _unscaled(_from_twos_complement(raw), scale)
    # Plain notation keeps every digit and the scale ("1.50", never "1.5E+0").
    return f"{number:f}"


def _days(value: Any, params: Params) -> dt.date:
    days = _integer(value, 32)
    try:
        return dt.date.fromordinal(_EPOCH_DAY + days)
    except (ValueError, OverflowError):
        raise _Invalid(f"{days} days from 1970-01-01 is outside years 1-9999") from None


def _since_epoch(per_second: int) -> Callable[[Any, Params], dt.datetime]:
    def convert(value: Any, params: Params) -> dt.datetime:
        count = _integer(value)
        try:
            # Integer arithmetic: milliseconds and microseconds are exact in a timedelta.
            return _EPOCH + dt.timedelta(microseconds=count * (1_000_000 // per_second))
        except OverflowError:
            raise _Invalid(f"{count} is outside years 1-9999 as a timestamp") from None

    return convert


def _time_of_day(per_second: int, bits: int) -> Callable[[Any, Params], dt.time]:
    def convert(value: Any, params: Params) -> dt.time:
        count = _integer(value, bits)
        micros = count * (1_000_000 // per_second)
        if not 0 <= micros < 86_400_000_000:
            raise _Invalid(f"{count} is not a time of day (0 to 24h exclusive)")
        seconds, micro = divmod(micros, 1_000_000)
        return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, micro)

    return convert


def _plain_int(bits: int) -> Callable[[Any, Params], int]:
    return lambda value, params: _integer(value, bits)


def _plain_text(value: Any, params: Params) -> str:
    return _text(value)


def _enum(value: Any, params: Params) -> str:
    text = _text(value)
    allowed = params.get("allowed")
    # Debezium joins the labels with commas without escaping, so a label holding a comma
    # is checked as a comma-bounded run of the list.
    if allowed is not None and f",{text}," not in f",{allowed},":
        raise _Invalid(f"{text!r} is not one of the allowed values {allowed!r}")
    return text


def _uuid(value: Any, params: Params) -> uuid.UUID:
    text = _text(value)
    try:
        return uuid.UUID(text)
    except ValueError:
        raise _Invalid(f"not a UUID: {text!r}") from None


def _text_timestamp(value: Any, params: Params) -> dt.datetime:
    text = _text(value)
    fraction = _FRACTION.search(text)
    if fraction is not None and fraction[1][6:].strip("0"):
        raise _Invalid(f"{text!r} is finer than the microseconds a timestamp holds")
    try:
        parsed = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise _Invalid(f"not an ISO-8601 date-time: {text!r}") from None
    # A wall-clock value without an offset is read as UTC, as Debezium's Timestamp types are.
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=dt.UTC)
    try:
        return parsed.astimezone(dt.UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is in year 0 in UTC
        raise _Invalid(f"{text!r} is outside years 1..9999 in UTC") from None


# --- value writers: structured data (what records hold) -> Connect JSON ------------------
_Write = Callable[[Any, Mapping[str, str]], Any]


def _as_decimal(value: Any) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"not a decimal number: {value!r:.60}") from None


def _unscaled_base64(number: Decimal, scale: int) -> str:
    if not number.is_finite():
        raise ValueError(f"{number} is not a finite decimal")
    # From the digits, not arithmetic: a decimal context would round long numbers.
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    shift = exponent + scale
    if shift < 0 and any(digits[shift:]):
        raise ValueError(f"{number} has more than {scale} fraction digits")
    whole = int("".join(map(str, digits)) or "0")
    whole = whole * 10**shift if shift >= 0 else whole // 10**-shift
    whole = -whole if sign else whole
    raw = whole.to_bytes((whole.bit_length() + 8) // 8, "big", signed=True)
    return base64.b64encode(raw).decode("ascii")


def _write_decimal(value: Any, params: Mapping[str, str]) -> str:
    return _unscaled_base64(_as_decimal(value), int(params.get("scale", "0")))


def _write_variable_decimal(value: Any, params: Mapping[str, str]) -> dict[str, Any]:
    number = _as_decimal(value)
    scale = max(0, -int(number.as_tuple().exponent))
    return {"scale": scale, "value": _unscaled_base64(number, scale)}


def _as_instant(value: Any) -> dt.datetime:
    moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(moment, dt.datetime):
        raise ValueError(f"expected an ISO 8601 date-time, got {value!r:.60}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def _write_since_epoch(per_second: int) -> _Write:
    def write(value: Any, params: Mapping[str, str]) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        micros = (_as_instant(value) - _EPOCH) // dt.timedelta(microseconds=1)
        return micros * per_second // 1_000_000

    return write


def _write_time_of_day(per_second: int) -> _Write:
    def write(value: Any, params: Mapping[str, str]) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        moment = dt.time.fromisoformat(value) if isinstance(value, str) else value
        if not isinstance(moment, dt.time):
            raise ValueError(f"expected an ISO 8601 time, got {value!r:.60}")
        micros = ((moment.hour * 60 + moment.minute) * 60 + moment.second) * 1_000_000
        return (micros + moment.microsecond) * per_second // 1_000_000

    return write


def _write_days(value: Any, params: Mapping[str, str]) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    day = dt.date.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(day, dt.date):
        raise ValueError(f"expected an ISO 8601 date, got {value!r:.60}")
    return day.toordinal() - _EPOCH_DAY


def _write_as_is(value: Any, params: Mapping[str, str]) -> Any:
    return str(value) if isinstance(value, uuid.UUID) else value


def _write_text_instant(value: Any, params: Mapping[str, str]) -> str:
    return value if isinstance(value, str) else _as_instant(value).isoformat()


def _write_text_decimal(value: Any, params: Mapping[str, str]) -> str:
    return f"{_as_decimal(value):f}"


# --- the semantic type table ---------------------------------------------------------------


def _text_decimal_precision(params: Params) -> int:
    key = "connect.decimal.precision" if "connect.decimal.precision" in params else "precision"
    return _int_param(params, key, _TEXT_DECIMAL_PRECISION)


def _decimal_avro(params: Params) -> dict[str, Any]:
    scale = _int_param(params)
    precision = _int_param(params, "connect.decimal.precision", DEFAULT_DECIMAL_PRECISION)
    return {"type": "bytes", "scale": scale, "precision": precision, "logicalType": "decimal"}


def _text_decimal_avro(params: Params) -> dict[str, Any]:
    scale = _int_param(params, "scale", _TEXT_DECIMAL_SCALE)
    precision = _text_decimal_precision(params)
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
    write: _Write = _write_as_is
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
        _connect_decimal,
        "decimal(precision, scale) as Decimal",
        _write_decimal,
        Columnar("decimal"),
    ),
    "org.apache.kafka.connect.data.Date": SemanticType(
        "int32",
        _avro("int", "date"),
        _days,
        "date",
        _write_days,
        Columnar("count", _DAY_BOUNDS),
        ("date",),
    ),
    "org.apache.kafka.connect.data.Time": SemanticType(
        "int32",
        _avro("int", "time-millis"),
        _time_of_day(1000, 32),
        "time (ms)",
        _write_time_of_day(1000),
        Columnar("time_of_day", _MILLIS_OF_DAY, 1000),
        ("time-millis",),
    ),
    "org.apache.kafka.connect.data.Timestamp": SemanticType(
        "int64",
        _avro("long", "timestamp-millis"),
        _since_epoch(1000),
        "UTC timestamp (ms)",
        _write_since_epoch(1000),
        Columnar("timestamp", micros_per_unit=1000),
        ("timestamp-millis", "local-timestamp-millis"),
    ),
    "io.debezium.time.Date": SemanticType(
        "int32", _avro("int", "date"), _days, "date", _write_days, Columnar("count", _DAY_BOUNDS)
    ),
    "io.debezium.time.Time": SemanticType(
        "int32",
        _avro("int", "time-millis"),
        _time_of_day(1000, 32),
        "time (ms)",
        _write_time_of_day(1000),
        Columnar("time_of_day", _MILLIS_OF_DAY, 1000),
    ),
    "io.debezium.time.MicroTime": SemanticType(
        "int64",
        _avro("long", "time-micros"),
        _time_of_day(1_000_000, 64),
        "time (us)",
        _write_time_of_day(1_000_000),
        Columnar("time_of_day", _MICROS_OF_DAY),
        ("time-micros",),
    ),
    "io.debezium.time.NanoTime": SemanticType(
        "int64",
        _avro("long"),
        _plain_int(64),
        "long: ns past midnight (Avro has no time-nanos)",
        columnar=_COUNT,
    ),
    "io.debezium.time.Timestamp": SemanticType(
        "int64",
        _avro("long", "timestamp-millis"),
        _since_epoch(1000),
        "UTC timestamp (ms)",
        _write_since_epoch(1000),
        Columnar("timestamp", micros_per_unit=1000),
    ),
    "io.debezium.time.MicroTimestamp": SemanticType(
        "int64",
        _avro("long", "timestamp-micros"),
        _since_epoch(1_000_000),
        "UTC timestamp (us)",
        _write_since_epoch(1_000_000),
        Columnar("timestamp"),
        ("timestamp-micros", "local-timestamp-micros"),
    ),
    "io.debezium.time.NanoTimestamp": SemanticType(
        "int64",
        _avro("long"),
        _plain_int(64),
        "long: ns since epoch (datetime stops at us)",
        columnar=_COUNT,
    ),
    "io.debezium.time.ZonedTimestamp": SemanticType(
        "string", _avro("string"), _plain_text, "ISO-8601 string, offset kept", columnar=_TEXT
    ),
    "io.debezium.time.ZonedTime": SemanticType(
        "string",
        _avro("string"),
        _plain_text,
        "ISO-8601 time string, offset kept",
        columnar=_TEXT,
    ),
    "io.debezium.time.Year": SemanticType(
        "int32", _avro("int"), _plain_int(32), "int year", columnar=_COUNT
    ),
    "io.debezium.data.VariableScaleDecimal": SemanticType(
        "struct",
        _avro("string"),
        _variable_scale_decimal,
        "exact decimal text, scale kept",
        _write_variable_decimal,
        Columnar("by_value"),
    ),
    "io.debezium.data.Json": SemanticType(
        "string", _avro("string"), _plain_text, "JSON text", columnar=_TEXT
    ),
    "io.debezium.data.Enum": SemanticType(
        "string", _avro("string"), _enum, "string, one of allowed", columnar=Columnar("enum")
    ),
    "io.debezium.data.EnumSet": SemanticType(
        "string", _avro("string"), _plain_text, "string", columnar=_TEXT
    ),
    "io.debezium.data.Uuid": SemanticType(
        "string",
        _avro("string", "uuid"),
        _uuid,
        "uuid string",
        columnar=Columnar("uuid"),
        from_avro=("uuid",),
    ),
    _CDL + "Decimal": SemanticType(
        "string",
        _text_decimal_avro,
        _text_decimal,
        "decimal(38, 18) unless parameters say",
        _write_text_decimal,
        columnar=Columnar("decimal_text"),
    ),
    _CDL + "timestamp": SemanticType(
        "string",
        _avro("long", "timestamp-micros"),
        _text_timestamp,
        "UTC timestamp (us); no offset = UTC",
        _write_text_instant,
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


# --- the Connect schema, parsed once ------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class ConnectSchema:
    """One node of a checked Connect schema (``parse_connect_schema``)."""

    type: str
    optional: bool
    name: str | None
    version: int | None
    doc: str | None
    parameters: Mapping[str, str]
    semantic: SemanticType | None
    path: str
    fields: tuple[tuple[str, ConnectSchema], ...] = ()
    items: ConnectSchema | None = None
    keys: ConnectSchema | None = None
    values: ConnectSchema | None = None
    has_default: bool = False
    #: The default as ``connect_value`` returns it.
    default: Any = None
    #: Equal for schemas AvroData treats as one (its schema cache): all but ``optional``.
    identity: bytes = field(default=b"", repr=False)
    #: Equal for schemas whose values are alike: the identity without this node's own
    #: ``doc``, ``version`` and parameters that do not shape the Avro type (Debezium's
    #: ``__debezium.source.column.*``). A named type of one shape is defined once.
    shape: bytes = field(default=b"", repr=False)
    #: The names of ``fields``, for checking a struct value's keys.
    field_names: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "field_names", frozenset(name for name, _ in self.fields))


def parse_connect_schema(schema: Mapping[str, Any] | ConnectSchema) -> ConnectSchema:
    """Check a Connect ``schema`` block; errors name the place (``schema.fields[2].type``)."""
    if isinstance(schema, ConnectSchema):
        return schema
    if jsontext.nesting_depth(schema) > jsontext.MAX_DEPTH:
        raise SchemaError(f"schema: nests deeper than {jsontext.MAX_DEPTH} JSON levels")
    return _parse(schema, "schema")


def _parse(node: Any, path: str) -> ConnectSchema:
    if not isinstance(node, Mapping):
        raise SchemaError(f"{path}: a Connect schema is a JSON object, got {_kind(node)}")
    kind = node.get("type")
    kind = _TYPE_ALIASES.get(kind, kind) if isinstance(kind, str) else kind
    if not isinstance(kind, str) or kind not in _CONNECT_TYPES:
        known = ", ".join(sorted(_CONNECT_TYPES))
        raise SchemaError(f"{path}.type: unknown Connect type {kind!r:.60} (known: {known})")
    optional = _attr(node, "optional", bool, path, False)
    name = _attr(node, "name", str, path, None)
    version = _attr(node, "version", int, path, None)
    doc = _attr(node, "doc", str, path, None)
    params = _attr(node, "parameters", Mapping, path, {})
    for key, value in params.items():
        if not isinstance(value, str):
            raise SchemaError(f"{path}.parameters.{key}: parameter values are strings")
    if name == _UNION:
        raise SchemaError(f"{path}.name: AvroData's {_UNION} structs are not supported")
    semantic = semantic_type(name)
    if semantic is not None and kind != semantic.connect_type:
        raise SchemaError(f"{path}.type: {name} is a {semantic.connect_type}, not {kind}")
    parts: dict[str, Any] = {}
    if kind == "struct":
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise SchemaError(f"{path}.fields: a struct needs a list of fields")
        parsed: list[tuple[str, ConnectSchema]] = []
        seen: set[str] = set()
        for number, child in enumerate(fields):
            where = f"{path}.fields[{number}]"
            field_name = child.get("field") if isinstance(child, Mapping) else None
            if not isinstance(field_name, str):
                raise SchemaError(f"{where}.field: each field needs a string name")
            if field_name in seen:
                raise SchemaError(f"{where}.field: field {field_name!r} appears twice")
            seen.add(field_name)
            parsed.append((field_name, _parse(child, where)))
        parts["fields"] = tuple(parsed)
    elif kind == "array":
        parts["items"] = _parse(node.get("items"), f"{path}.items")
    elif kind == "map":
        parts["keys"] = _parse(node.get("keys"), f"{path}.keys")
        parts["values"] = _parse(node.get("values"), f"{path}.values")
    if semantic is not None:
        try:  # a parameter the semantic type needs (a Decimal's scale) is checked up front
            semantic.avro(params)
        except _Invalid as exc:
            raise SchemaError(f"{path}.parameters: {exc}") from None
    schema = ConnectSchema(
        kind, optional, name, version, doc, dict(params), semantic, path, **parts
    )
    if node.get("default") is not None:
        try:
            default = _convert(schema, node["default"], f"{path}.default")
        except SchemaError as exc:
            raise SchemaError(f"invalid default: {exc}") from None
        schema = replace(schema, has_default=True, default=default)
    elif "default" in node and not optional:
        raise SchemaError(f"{path}.default: null is no default for a required schema")
    # From checked parts only: the default as Avro spells it, the children's identities.
    common = [
        kind,
        name,
        _avro_json(schema, schema.default),
        [[n, c.optional, c.identity.decode()] for n, c in schema.fields],
        [
            [c.optional, c.identity.decode()] if c is not None else None
            for c in (schema.items, schema.keys, schema.values)
        ],
    ]
    shaping = sorted((k, v) for k, v in params.items() if k.startswith(_SHAPING_PARAMETERS))
    identity = orjson.dumps(
        [*common, version, doc, sorted(params.items())], option=orjson.OPT_SORT_KEYS
    )
    shape = orjson.dumps([*common, shaping], option=orjson.OPT_SORT_KEYS)
    return replace(schema, identity=identity, shape=shape)


def _attr(node: Mapping[str, Any], key: str, kind: type, path: str, missing: Any) -> Any:
    value = node.get(key)
    if value is None:
        return missing
    # bool is an int subclass: a version of true is as wrong as one of "1".
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SchemaError(f"{path}.{key}: expected {kind.__name__}, got {_kind(value)}")
    return value


# --- values --------------------------------------------------------------------------------


def connect_value(schema: Mapping[str, Any] | ConnectSchema, value: Any, *, path: str = "") -> Any:
    """A ``payload`` value -> what fastavro writes for ``connect_to_avro(schema)``.

    ``null`` (or a missing field) is the schema's default, else None when optional, as
    Kafka Connect's JsonConverter reads it. Errors name the value's place
    (``after.amount``), prefixed by ``path``.
    """
    return _convert(parse_connect_schema(schema), value, path)


def _convert(schema: ConnectSchema, value: Any, path: str) -> Any:
    where = path or "value"
    if value is None:
        if schema.has_default:
            return schema.default
        if schema.optional:
            return None
        raise SchemaError(f"{where}: null for a required {_described(schema)}")
    try:
        if schema.semantic is not None:
            return schema.semantic.convert(value, schema.parameters)
        kind = schema.type
        if kind in _INT_BITS:
            return _integer(value, _INT_BITS[kind])
        if kind in ("float32", "float64"):
            return _double(value, kind)
        if kind == "boolean":
            if not isinstance(value, bool):
                raise _Invalid(f"expected true or false, got {_kind(value)}")
            return value
        if kind == "string":
            return _text(value)
        if kind == "bytes":
            raw = _base64(value)
            size = _fixed_size(schema)
            if size is not None and len(raw) != size:
                raise _Invalid(f"expected {size} bytes, got {len(raw)}")
            return raw
    except _Invalid as exc:
        raise SchemaError(f"{where}: {exc}") from None
    if schema.type == "struct":
        if not isinstance(value, Mapping):
            raise SchemaError(f"{where}: expected an object, got {_kind(value)}")
        prefix = f"{path}." if path else ""
        if len(value) > len(schema.fields) or any(k not in schema.field_names for k in value):
            extra = next(k for k in value if k not in schema.field_names)
            raise SchemaError(
                f"{prefix}{extra}: not a field of the schema "
                f"(fields: {', '.join(sorted(schema.field_names)) or 'none'})"
            )
        return {
            name: _convert(child, value.get(name), prefix + name) for name, child in schema.fields
        }
    if schema.type == "array":
        if not isinstance(value, list):
            raise SchemaError(f"{where}: expected an array, got {_kind(value)}")
        assert schema.items is not None
        items = schema.items
        return [_convert(items, item, f"{where}[{n}]") for n, item in enumerate(value)]
    assert schema.keys is not None and schema.values is not None
    keys, values = schema.keys, schema.values
    if _string_keys(schema):
        if not isinstance(value, Mapping):
            raise SchemaError(f"{where}: a map with string keys is an object, got {_kind(value)}")
        return {key: _convert(values, item, f"{where}[{key}]") for key, item in value.items()}
    # Connect writes a map with other keys as [[key, value], ...]; Avro gets key/value records.
    if not isinstance(value, list):
        raise SchemaError(f"{where}: a map with non-string keys is an array of [key, value]")
    entries = []
    for n, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise SchemaError(f"{where}[{n}]: expected a [key, value] pair")
        entries.append(
            {
                "key": _convert(keys, pair[0], f"{where}[{n}].key"),
                "value": _convert(values, pair[1], f"{where}[{n}].value"),
            }
        )
    return entries


def _string_keys(schema: ConnectSchema) -> bool:
    # AvroData (allow.optional.map.keys off) writes an Avro map only for required string keys.
    return schema.keys is not None and schema.keys.type == "string" and not schema.keys.optional


def _fixed_size(schema: ConnectSchema) -> int | None:
    text = schema.parameters.get(_FIXED_SIZE)
    if text is None or schema.name is None or schema.type != "bytes":
        return None
    try:
        return int(text)
    except ValueError:
        raise SchemaError(f"{schema.path}.parameters.{_FIXED_SIZE}: not an integer") from None


def _described(schema: ConnectSchema) -> str:
    return f"{schema.type} ({schema.name})" if schema.name else schema.type


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


# --- schemas -------------------------------------------------------------------------------


def connect_to_avro(schema: Mapping[str, Any] | ConnectSchema) -> dict[str, Any] | list[Any]:
    """The Avro schema (JSON-ready) AvroConverter registers for a Connect ``schema`` block.

    A top-level optional schema is a union (a list); anything else a dict.
    """
    parsed = parse_connect_schema(schema)
    avro = _AvroBuilder(parsed).build(parsed)
    return {"type": avro} if isinstance(avro, str) else avro


@dataclass(frozen=True, slots=True)
class _Record:
    """A named type defined so far: how to refer to it, where it came from, its shape and
    the parameters its definition carries."""

    fullname: str
    namespace: str | None
    path: str
    shape: bytes = b""
    parameters: Mapping[str, str] = field(default_factory=dict)


def _scrubbed(part: str) -> str:
    """``part`` as an Avro name: other characters become ``_``, a leading digit gets one."""
    if _AVRO_NAME.fullmatch(part):
        return part
    scrubbed = _NOT_IN_AVRO_NAME.sub("_", part)
    return scrubbed if scrubbed[:1].isalpha() or scrubbed[:1] == "_" else "_" + scrubbed


class _AvroBuilder:
    """One conversion: AvroData's naming counter, its schema cache and the named types."""

    def __init__(self, root: ConnectSchema) -> None:
        self.defaults = 0
        self.by_identity: dict[bytes, _Record] = {}
        self.by_name: dict[str, _Record] = {}
        self.seen_names: set[str] = set()
        # Dotless names used more than once: see the module docstring.
        counts: dict[str, int] = {}
        for node in _walk(root):
            if node.name and "." not in node.name and _is_named(node):
                counts[node.name] = counts.get(node.name, 0) + 1
        self.repeated = {name for name, count in counts.items() if count > 1}

    def build(self, schema: ConnectSchema, space: str | None = None) -> Any:
        """The Avro type of ``schema``; ``space`` is the enclosing namespace."""
        if schema.optional and schema.type == "struct" and schema.semantic is None:
            # AvroData makes an optional struct ["null", record] even when it has a default.
            return ["null", self._base(schema, space)]
        base = self._base(schema, space)
        if not schema.optional:
            return base
        return [base, "null"] if schema.has_default else ["null", base]

    def _base(self, schema: ConnectSchema, space: str | None) -> Any:
        if schema.type != "map":  # a map reuses only its entry record
            known = self.by_identity.get(schema.identity) or self._same_shape(schema, space)
            if known is not None:
                return _reference(known, space)
        avro: dict[str, Any]
        semantic = schema.semantic
        if semantic is not None:
            spelled = semantic.avro(schema.parameters)
            avro = {k: v for k, v in spelled.items() if k != "logicalType"}
            avro.update(self._props(schema))
            if "logicalType" in spelled:
                avro["logicalType"] = spelled["logicalType"]
        elif schema.type == "struct":
            avro = self._record(schema, space)
        elif schema.type == "array":
            assert schema.items is not None
            avro = {"type": "array", "items": self.build(schema.items, space)}
            avro.update(self._props(schema))
        elif schema.type == "map":
            avro = self._map(schema, space)
        elif _fixed_size(schema) is not None:
            avro = self._fixed(schema, space)
        else:
            avro = {"type": _PRIMITIVE_AVRO[schema.type], **self._props(schema)}
            if schema.type in ("int8", "int16"):
                # Avro has no 8/16-bit ints; AvroData notes the Connect type to read it back.
                avro["connect.type"] = schema.type
        # AvroData copies parameters named avro* onto the Avro type as they are.
        avro.update((k, v) for k, v in schema.parameters.items() if k.startswith("avro"))
        return avro["type"] if len(avro) == 1 else avro

    def _props(self, schema: ConnectSchema) -> dict[str, Any]:
        props: dict[str, Any] = {}
        if schema.doc is not None:
            props["connect.doc"] = schema.doc
        if schema.version is not None:
            props["connect.version"] = schema.version
        params = {k: v for k, v in schema.parameters.items() if k != _FIELD_DEFAULT_FLAG}
        if params:
            props["connect.parameters"] = params
        if schema.has_default and _FIELD_DEFAULT_FLAG not in schema.parameters:
            props["connect.default"] = _avro_json(schema, schema.default)
        if schema.name is not None:
            props["connect.name"] = schema.name
        return props

    def _named(
        self, schema: ConnectSchema, space: str | None, default: str | None = None
    ) -> tuple[_Record, dict[str, Any]]:
        """Define a named type: its record, and the name keys its definition spells out.

        An unnamed schema gets ``default`` (a map entry's) or the next ``ConnectDefault``.
        """
        if schema.name is None:
            if default is None:
                self.defaults += 1
                default = DEFAULT_RECORD_NAME + (str(self.defaults) if self.defaults > 1 else "")
            namespace, short, fullname = _split(NAMESPACE, default)
        else:
            namespace, short, fullname = self._name_of(schema, space)
        clash = self.by_name.get(fullname)
        if clash is not None:
            raise SchemaError(
                f"{schema.path}: {fullname} is defined differently at {clash.path}; "
                "Avro allows one definition per name (name the schemas apart)"
            )
        record = _Record(fullname, namespace, schema.path, schema.shape, dict(schema.parameters))
        self.by_identity[schema.identity] = record
        self.by_name[fullname] = record
        spelled: dict[str, Any] = {"name": short}
        if namespace != space:
            # "" says "no namespace" inside a namespaced record, as Avro's Java writer does.
            spelled["namespace"] = namespace or ""
        return record, spelled

    def _name_of(self, schema: ConnectSchema, space: str | None) -> tuple[str | None, str, str]:
        """Namespace, short name and full name of a named schema's Avro type."""
        assert schema.name is not None
        if "." in schema.name:
            namespace, _, short = schema.name.rpartition(".")
            return _split(namespace, short)
        if schema.name in self.repeated:
            return _split(space, schema.name)
        return _split(None, schema.name)

    def _same_shape(self, schema: ConnectSchema, space: str | None) -> _Record | None:
        """The named type already defined under this schema's name with its shape, if any.

        Columns of one Connect type whose parameters differ (Debezium's
        ``column.propagate.source.type`` gives each ``Geometry`` column its own
        ``__debezium.source.column.*``) share the first definition, as Confluent's
        AvroConverter registers them; each field keeps its own parameters (``_field``).
        """
        if schema.name is None or not _is_named(schema):
            return None
        found = self.by_name.get(self._name_of(schema, space)[2])
        if found is None or found.shape != schema.shape:
            return None
        self.by_identity[schema.identity] = found
        return found

    def _record(self, schema: ConnectSchema, space: str | None) -> dict[str, Any]:
        record, spelled = self._named(schema, space)
        avro: dict[str, Any] = {"type": "record", **spelled}
        doc = schema.parameters.get(_RECORD_DOC)
        if doc is not None:
            avro["doc"] = doc
        fields = []
        for name, child in schema.fields:
            fields.append(
                self._field(
                    name, child, record.namespace, schema.parameters.get(_FIELD_DOC_PREFIX + name)
                )
            )
        avro["fields"] = fields
        avro.update(self._props(schema))
        return avro

    def _field(
        self, name: str, child: ConnectSchema, space: str | None, doc: str | None
    ) -> dict[str, Any]:
        if not _AVRO_NAME.fullmatch(name):
            raise SchemaError(f"{child.path}.field: {name!r} is no Avro field name")
        already_seen = child.name is not None and child.name in self.seen_names
        if child.name is not None:
            self.seen_names.add(child.name)
        avro: dict[str, Any] = {"name": name, "type": self.build(child, space)}
        if doc is not None:
            avro["doc"] = doc
        if child.has_default:
            default = _avro_json(child, child.default)
            # Avro refuses a default that is not a value of the type; AvroData then drops it.
            if _valid_default(child, child.default):
                avro["default"] = default
        elif child.optional:
            avro["default"] = None
        if already_seen and _is_named(child) and child.type != "map":
            # A reused named type cannot carry this use's parameters: the field keeps them
            # (an empty set too, where the definition's are not this use's).
            defined = self.by_identity.get(child.identity)
            theirs = dict(defined.parameters) if defined is not None else {}
            if child.parameters or theirs != dict(child.parameters):
                avro["connect.parameters"] = dict(child.parameters)
        return avro

    def _map(self, schema: ConnectSchema, space: str | None) -> dict[str, Any]:
        assert schema.keys is not None and schema.values is not None
        if _string_keys(schema):
            values = self.build(schema.values, space)
            return {"type": "map", "values": values, **self._props(schema)}
        # Other keys: an array of key/value records, named after the map or MapEntry.
        known = self.by_identity.get(schema.identity) or self._same_shape(schema, space)
        if known is not None:
            entries: Any = _reference(known, space)
        else:
            record, spelled = self._named(schema, space, default=MAP_ENTRY_NAME)
            entries = {
                "type": "record",
                **spelled,
                "fields": [
                    self._field("key", schema.keys, record.namespace, None),
                    self._field("value", schema.values, record.namespace, None),
                ],
            }
            if schema.name is not None:
                entries["connect.internal.type"] = MAP_ENTRY_NAME
        return {"type": "array", "items": entries, **self._props(schema)}

    def _fixed(self, schema: ConnectSchema, space: str | None) -> dict[str, Any]:
        _, spelled = self._named(schema, space)
        return {"type": "fixed", **spelled, "size": _fixed_size(schema), **self._props(schema)}


def _split(namespace: str | None, short: str) -> tuple[str | None, str, str]:
    """Namespace, short name and full name as Avro names. Connect names need not be Avro
    names (Debezium's ``server-1.db.orders.Value``): each dotted part is scrubbed into one,
    as Confluent's AvroData does with ``scrub.invalid.names``; the Connect name stays in the
    ``connect.name`` property."""
    if namespace:
        namespace = ".".join(_scrubbed(part) for part in namespace.split("."))
    short = _scrubbed(short)
    return namespace, short, f"{namespace}.{short}" if namespace else short


def _reference(record: _Record, space: str | None) -> str:
    short = record.fullname.rpartition(".")[2]
    return short if record.namespace == space or record.namespace is None else record.fullname


def _is_named(schema: ConnectSchema) -> bool:
    """Whether AvroData makes ``schema`` an Avro named type (record or fixed)."""
    if schema.semantic is not None:
        return False
    if schema.type == "map":
        return schema.name is not None and not _string_keys(schema)
    return schema.type == "struct" or _fixed_size(schema) is not None


def _walk(root: ConnectSchema) -> Iterator[ConnectSchema]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if node.semantic is not None:
            continue
        stack.extend(child for _, child in node.fields)
        stack.extend(c for c in (node.items, node.keys, node.values) if c is not None)


def _avro_json(schema: ConnectSchema, value: Any) -> Any:
    """A converted value as Avro's JSON defaults spell it (bytes as ISO-8859-1 text)."""
    if value is None:
        return None
    if schema.semantic is not None:
        return _leaf_json(schema.semantic.avro(schema.parameters), value)
    if schema.type == "struct":
        return {name: _avro_json(child, value.get(name)) for name, child in schema.fields}
    if schema.type == "array":
        assert schema.items is not None
        return [_avro_json(schema.items, item) for item in value]
    if schema.type == "map":
        assert schema.keys is not None and schema.values is not None
        if _string_keys(schema):
            return {key: _avro_json(schema.values, item) for key, item in value.items()}
        # AvroData writes these as [key, value] pairs, which Avro then refuses as a default.
        return [
            [_avro_json(schema.keys, e["key"]), _avro_json(schema.values, e["value"])]
            for e in value
        ]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


def _leaf_json(avro: Mapping[str, Any], value: Any) -> Any:
    logical = avro.get("logicalType")
    if isinstance(value, Decimal):
        unscaled = int(value.scaleb(avro.get("scale", 0), context=_WIDE))
        raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)
        return raw.decode("latin-1")
    if isinstance(value, dt.datetime):
        micros = (value - _EPOCH) // dt.timedelta(microseconds=1)
        return micros // 1000 if logical == "timestamp-millis" else micros
    if isinstance(value, dt.date):
        return value.toordinal() - _EPOCH_DAY
    if isinstance(value, dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000
        micros += value.microsecond
        return micros // 1000 if logical == "time-millis" else micros
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _valid_default(schema: ConnectSchema, value: Any) -> bool:
    if value is None or schema.semantic is not None:
        return True
    if schema.type == "struct":
        return all(_valid_default(child, value.get(name)) for name, child in schema.fields)
    if schema.type == "array":
        assert schema.items is not None
        return all(_valid_default(schema.items, item) for item in value)
    if schema.type == "map":
        assert schema.values is not None
        if _string_keys(schema):
            return all(_valid_default(schema.values, item) for item in value.values())
        return not value
    return True
