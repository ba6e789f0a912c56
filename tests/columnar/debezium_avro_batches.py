"""Hypothesis strategies: batches of Debezium Avro messages as Confluent's AvroConverter
writes them (magic byte, schema id, body), with columns of every Avro type and logical type
a Debezium row schema holds, Connect's names on them, nulls, placeholders, numbers a double
would change, other schemas, keys of every kind, and junk."""

from __future__ import annotations

import datetime as dt
import io
import itertools
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import fastavro
import orjson
from confluent_kafka.schema_registry import Schema
from hypothesis import strategies as st

from cdc_connectors.registry.base import SchemaRegistry
from cdc_connectors.schema import framing

_TEXT = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=10),
    st.sampled_from(['a"b', "back\\slash", "line\nbreak", "\x00\x1f", "é✓😀", "\u2028"]),
)
_UTC = dt.UTC
_PLACEHOLDER = "__debezium_unavailable_value"
_BATCHES = itertools.count()


def _mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.integers(0, 7).flatmap(lambda n: bad if n == 0 else good)


def _ints(bits: int) -> st.SearchStrategy[int]:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    edges = [low, high, 2**53, 2**53 + 1, -(2**53) - 1, 0, -1]
    return _mostly(
        st.integers(-1000, 1000) | st.integers(max(low, -(2**53)), min(high, 2**53)),
        st.sampled_from([n for n in edges if low <= n <= high]) | st.integers(low, high),
    )


def _decimals(scale: int, digits: int) -> st.SearchStrategy[Decimal]:
    sizes = [k for k in (2, 9, 15, 16, 17, 20) if k <= digits]
    unscaled = st.sampled_from(sizes).flatmap(lambda k: st.integers(-(10**k) + 1, 10**k - 1))
    return unscaled.map(lambda n: Decimal(n).scaleb(-scale))


def _decimal(scale: int, precision: int) -> dict[str, Any]:
    return {
        "type": "bytes",
        "scale": scale,
        "precision": precision,
        "connect.version": 1,
        "connect.parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
        "connect.name": "org.apache.kafka.connect.data.Decimal",
        "logicalType": "decimal",
    }


def _named(avro: str, name: str, **more: Any) -> dict[str, Any]:
    return {"type": avro, "connect.version": 1, "connect.name": name, **more}


_TIMESTAMPS = st.datetimes(
    min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)
).map(lambda t: t.replace(tzinfo=_UTC))
_VARIABLE_DECIMAL = {
    "type": "record",
    "name": "VariableScaleDecimal",
    "namespace": "io.debezium.data",
    "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
    "connect.name": "io.debezium.data.VariableScaleDecimal",
}

#: (Avro type of a row column, values fastavro writes for it)
COLUMNS: list[tuple[Any, st.SearchStrategy[Any]]] = [
    ({"type": "int", "connect.type": "int8"}, _ints(8)),
    ({"type": "int", "connect.type": "int16"}, _ints(16)),
    ("int", _ints(32)),
    ("long", _ints(64)),
    ("float", st.floats(width=32, allow_nan=False, allow_infinity=False)),
    (
        "double",
        st.integers(-(10**6), 10**6).map(lambda n: n / 100)
        | st.floats(allow_nan=False, allow_infinity=False),
    ),
    ("boolean", st.booleans()),
    ("string", _mostly(_TEXT, st.just(_PLACEHOLDER))),
    ("bytes", _mostly(st.binary(max_size=9), st.just(_PLACEHOLDER.encode()))),
    (_decimal(2, 10), _decimals(2, 10)),
    (_decimal(0, 30), _decimals(0, 30)),
    (_decimal(5, 40), _decimals(5, 40)),
    (
        _named("long", "io.debezium.time.MicroTimestamp"),
        st.integers(0, 2 * 10**15) | st.integers(-(2**62), 2**62),
    ),
    (_named("long", "io.debezium.time.MicroTime"), st.integers(-2, 86_400_000_001)),
    (_named("int", "io.debezium.time.Date"), st.integers(-719_164, 2_932_898)),
    (_named("long", "io.debezium.time.NanoTimestamp"), st.integers(0, 2**62)),
    (
        _named("long", "org.apache.kafka.connect.data.Timestamp", logicalType="timestamp-millis"),
        _TIMESTAMPS,
    ),
    (
        _named("int", "org.apache.kafka.connect.data.Date", logicalType="date"),
        st.dates(),
    ),
    (
        _named("int", "org.apache.kafka.connect.data.Time", logicalType="time-millis"),
        st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    ),
    ({"type": "long", "logicalType": "timestamp-micros"}, _TIMESTAMPS),
    ({"type": "long", "logicalType": "time-micros"}, st.times()),
    (
        {"type": "string", "logicalType": "uuid"},
        _mostly(
            st.uuids().map(str),
            st.uuids().map(lambda u: str(u).upper())
            | st.uuids().map(lambda u: u.hex)
            | st.sampled_from(["not a uuid", "", "{12345678-1234-5678-1234-567812345678}"]),
        ),
    ),
    (
        _named("string", "io.debezium.data.Enum", **{"connect.parameters": {"allowed": "a,b,c"}}),
        st.sampled_from(["a", "b", "c"]),
    ),
    (_named("string", "io.debezium.data.Uuid"), st.uuids().map(str)),
    (_named("string", "io.debezium.time.ZonedTimestamp"), _TEXT),
    (_named("string", "io.debezium.data.Json"), st.sampled_from(['{"a": 1}', "[]", "null"])),
    (
        {"type": "enum", "name": "Colour", "symbols": ["RED", "GREEN"]},
        st.sampled_from(["RED", "GREEN"]),
    ),
    ({"type": "fixed", "name": "Four", "size": 4}, st.binary(min_size=4, max_size=4)),
    (
        _VARIABLE_DECIMAL,
        st.fixed_dictionaries(
            {
                "scale": st.integers(-3, 20),
                "value": st.integers(-(10**20), 10**20).map(
                    lambda n: n.to_bytes((n.bit_length() + 8) // 8, "big", signed=True)
                ),
            }
        ),
    ),
    ({"type": "array", "items": ["null", "int"]}, st.lists(st.none() | _ints(32), max_size=3)),
    ({"type": "array", "items": "string"}, st.lists(_TEXT, max_size=3)),
    (
        {"type": "array", "items": ["null", "float"]},
        st.lists(
            st.none() | st.floats(width=32, allow_nan=False, allow_infinity=False), max_size=3
        ),
    ),
    (
        {"type": "array", "items": "double"},
        st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=3),
    ),
    (
        {"type": "array", "items": {"type": "array", "items": "boolean"}},
        st.lists(st.lists(st.booleans(), max_size=2), max_size=2),
    ),
    ({"type": "array", "items": _decimal(2, 20)}, st.lists(_decimals(2, 20), max_size=3)),
    ({"type": "map", "values": "long"}, st.dictionaries(_TEXT, _ints(64), max_size=2)),
    (
        {
            "type": "record",
            "name": "Inner",
            "fields": [
                {"name": "n", "type": ["null", "int"], "default": None},
                {"name": "s", "type": "string"},
            ],
        },
        st.fixed_dictionaries({"n": st.none() | _ints(32), "s": _TEXT}),
    ),
]

SOURCE = {
    "type": "record",
    "name": "Source",
    "namespace": "io.debezium.connector.postgresql",
    "fields": [
        {"name": "version", "type": "string"},
        {"name": "connector", "type": "string"},
        {"name": "name", "type": "string"},
        {"name": "ts_ms", "type": "long"},
        {
            "name": "snapshot",
            "type": [
                {
                    "type": "string",
                    "connect.version": 1,
                    "connect.parameters": {"allowed": "true,last,false,incremental"},
                    "connect.default": "false",
                    "connect.name": "io.debezium.data.Enum",
                },
                "null",
            ],
            "default": "false",
        },
        {"name": "db", "type": "string"},
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        {"name": "txId", "type": ["null", "long"], "default": None},
        {"name": "lsn", "type": ["null", "long"], "default": None},
        {"name": "xmin", "type": ["null", "int"], "default": None},
        {"name": "flag", "type": ["null", "boolean"], "default": None},
    ],
    "connect.name": "io.debezium.connector.postgresql.Source",
}
TRANSACTION = {
    "type": "record",
    "name": "block",
    "namespace": "event",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "total_order", "type": "long"},
        {"name": "data_collection_order", "type": "long"},
    ],
    "connect.version": 1,
    "connect.name": "event.block",
}
KEY_SCHEMA = {
    "type": "record",
    "name": "Key",
    "namespace": "shop.public.t",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "code", "type": ["null", "string"]},
        {"name": "ref", "type": ["null", {"type": "string", "logicalType": "uuid"}]},
    ],
    "connect.name": "shop.public.t.Key",
}
OTHER_KEY_SCHEMA = {
    "type": "record",
    "name": "Key",
    "namespace": "shop.public.u",
    "fields": [
        {"name": "x", "type": "double"},
        {"name": "when", "type": _named("long", "io.debezium.time.MicroTimestamp")},
    ],
}

Column = tuple[str, st.SearchStrategy[Any], bool]


@st.composite
def envelope(draw: st.DrawFn, table: str = "t") -> tuple[dict[str, Any], list[Column]]:
    """An envelope schema as AvroConverter writes it, and per row column (name, values,
    optional)."""
    picked = draw(st.lists(st.integers(0, len(COLUMNS) - 1), min_size=1, max_size=6))
    fields: list[dict[str, Any]] = [{"name": "id", "type": "long"}]
    columns: list[Column] = [("id", st.integers(0, 10**6), False)]
    for n, index in enumerate(picked):
        avro, values = COLUMNS[index]
        optional = draw(st.booleans())
        # names of which some begin others: protobuf orders such map keys its own way
        name = ("z", "a", "M", "_", "b_c", "id_", "a", "n")[n % 8] + str(n)
        if isinstance(avro, dict) and "name" in avro:
            avro = {**avro, "name": f"{avro['name']}{n}"}  # one definition per named type
        fields.append(
            {"name": name, "type": ["null", avro], "default": None}
            if optional
            else {"name": name, "type": avro}
        )
        columns.append((name, values, optional))
    namespace = f"shop.public.{table}"
    row = {
        "type": "record",
        "name": "Value",
        "namespace": namespace,
        "fields": fields,
        "connect.name": f"{namespace}.Value",
    }
    schema: dict[str, Any] = {
        "type": "record",
        "name": "Envelope",
        "namespace": namespace,
        "fields": [
            {"name": "before", "type": ["null", row], "default": None},
            {"name": "after", "type": ["null", "Value"], "default": None},
            {"name": "source", "type": SOURCE},
            {"name": "op", "type": "string"},
            {"name": "ts_ms", "type": ["null", "long"], "default": None},
        ],
        "connect.name": f"{namespace}.Envelope",
    }
    if draw(st.booleans()):
        schema["fields"].append(
            {"name": "transaction", "type": ["null", TRANSACTION], "default": None}
        )
    return schema, columns


@st.composite
def _image(draw: st.DrawFn, columns: list[Column]) -> dict[str, Any]:
    return {
        name: None if optional and draw(st.integers(0, 4)) == 0 else draw(values)
        for name, values, optional in columns
    }


@st.composite
def change_event(draw: st.DrawFn, schema: dict[str, Any], columns: list[Column]) -> dict[str, Any]:
    op = draw(st.sampled_from(["c", "u", "d", "r", "c", "u", "d", "r", "t", "m", "x"]))
    before = draw(_image(columns)) if op in ("u", "d") and draw(st.booleans()) else None
    after = draw(_image(columns)) if op != "d" or not draw(st.booleans()) else None
    table = schema["namespace"].rsplit(".", 1)[1]
    event: dict[str, Any] = {
        "before": before,
        "after": after,
        "source": {
            "version": "2.5.0.Final",
            "connector": draw(st.sampled_from(["postgresql", "pg ✓"])),
            "name": "shop",
            "ts_ms": draw(_mostly(st.integers(0, 2 * 10**12), st.sampled_from([2**62, -1]))),
            "snapshot": draw(st.sampled_from([None, "false", "true"])),
            "db": "shop",
            "schema": draw(st.sampled_from(["public", ""])),
            "table": table,
            "txId": draw(st.none() | st.integers(0, 10**9)),
            "lsn": draw(st.none() | st.integers(0, 2**62)),
            "xmin": draw(st.none() | st.integers(-5, 5)),
            "flag": draw(st.none() | st.booleans()),
        },
        "op": op,
        "ts_ms": draw(st.none() | st.integers(0, 2 * 10**12)),
    }
    if any(f["name"] == "transaction" for f in schema["fields"]):
        event["transaction"] = draw(
            st.none()
            | st.fixed_dictionaries(
                {
                    "id": _TEXT,
                    "total_order": st.integers(0, 9),
                    "data_collection_order": st.integers(0, 9),
                }
            )
        )
    return event


def body(schema: dict[str, Any], value: Any) -> bytes:
    """``value`` written as Avro of ``schema`` (fastavro, as AvroConverter writes it)."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


_JUNK = st.sampled_from(
    [
        b"",
        b"\x00",
        b"\x00\x00\x00",
        b"\x00\x00\x00\x7f\xff\x02",  # an id the registry does not know
        b"\x01\x00\x00\x00\x01",
        b"not avro",
        b'{"schema": {}, "payload": {}}',
    ]
)


@st.composite
def batches(
    draw: st.DrawFn, registry: SchemaRegistry
) -> list[tuple[bytes | None, bytes | None, bool]]:
    """(key, value, whether the value's schema id travels in a header) of each message of
    a batch, its schemas registered in ``registry``."""
    batch = next(_BATCHES)  # tables of their own: no compatibility between examples
    tables = [draw(envelope(f"t{batch}")), draw(envelope(f"u{batch}"))]
    ids = [
        registry.register_schema(f"{table}{batch}-value", _schema(schema))
        for table, (schema, _) in zip(("t", "u"), tables, strict=True)
    ]
    return draw(
        _messages(registry, tables, ids, lambda schema, columns: change_event(schema, columns))
    )


def _key(ids: list[int]) -> st.SearchStrategy[bytes | None]:
    return st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {
                "id": st.integers(-(2**62), 2**62),
                "code": st.none() | _TEXT,
                "ref": st.none() | st.uuids().map(str) | st.uuids().map(lambda u: u.hex),
            }
        ).map(lambda k: framing.frame(ids[0], body(KEY_SCHEMA, k))),
        st.fixed_dictionaries(
            {
                "x": st.floats(allow_nan=False, allow_infinity=False),
                "when": st.integers(0, 2**60),
            }
        ).map(lambda k: framing.frame(ids[1], body(OTHER_KEY_SCHEMA, k))),
        st.binary(max_size=6),
        st.sampled_from([b"raw key", b"\x00\x00\x00\x00", b"\x00\x00\x00\x7f\xff\x02", b"\x01"]),
    )


def _schema(avro: dict[str, Any]) -> Schema:
    return Schema(orjson.dumps(avro).decode(), "AVRO")


@st.composite
def row_batches(
    draw: st.DrawFn, registry: SchemaRegistry
) -> list[tuple[bytes | None, bytes | None, bool]]:
    """(key, value, whether the value's schema id travels in a header) of each message of
    a batch of rows as Kafka's Avro serializers write them (``avro``): two row schemas of
    the columns above, tombstones, and junk."""
    batch = next(_BATCHES)
    tables = []
    for name in ("t", "u"):
        schema, columns = draw(envelope(f"{name}{batch}"))
        row = schema["fields"][0]["type"][1]  # the before/after record
        tables.append((row, columns))
    ids = [
        registry.register_schema(f"rows-{name}{batch}-value", _schema(row))
        for name, (row, _) in zip(("t", "u"), tables, strict=True)
    ]
    return draw(_messages(registry, tables, ids, lambda _, columns: _image(columns)))


@st.composite
def _messages(
    draw: st.DrawFn,
    registry: SchemaRegistry,
    tables: list[tuple[dict[str, Any], list[Column]]],
    ids: list[int],
    values: Callable[[dict[str, Any], list[Column]], st.SearchStrategy[Any]],
) -> list[tuple[bytes | None, bytes | None, bool]]:
    """Messages of the two ``tables`` (schema, columns), registered as ``ids``, with
    ``values`` of theirs: framed, truncated, with a byte left over, with the schema id in
    a header; junk; keys of every kind."""
    key_ids = [
        registry.register_schema("t-key", _schema(KEY_SCHEMA)),
        registry.register_schema("u-key", _schema(OTHER_KEY_SCHEMA)),
    ]
    messages: list[tuple[bytes | None, bytes | None, bool]] = []
    for _ in range(draw(st.integers(1, 20))):
        kind = draw(st.integers(0, 11))
        in_header = False
        if kind == 0:
            value: bytes | None = draw(_JUNK | st.none())
        else:
            which = int(kind % 5 == 0)
            schema, columns = tables[which]
            data = body(schema, draw(values(schema, columns)))
            shape = draw(st.integers(0, 19))
            if shape == 0:
                data = data[: draw(st.integers(0, 2**16)) % len(data)]  # truncated
            elif shape == 1:
                data += b"\x00"  # a byte left over
            in_header = shape == 2
            value = data if in_header else framing.frame(ids[which], data)
        messages.append((draw(_key(key_ids)), value, in_header))
    return messages
