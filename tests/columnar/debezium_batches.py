"""Hypothesis strategies: batches of Debezium JSON messages (schema blocks included) with
columns of every Kafka Connect type the typed columns read, nulls, unicode, numbers a
double would change, values their schema refuses, other schemas, and junk."""

from __future__ import annotations

import base64
import json
from typing import Any

import orjson
from hypothesis import strategies as st

MIN_MICROS, MAX_MICROS = -62_135_596_800_000_000, 253_402_300_799_999_999
_TEXT = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
    # what JSON writers escape, or do not
    st.sampled_from(['a"b', "back\\slash", "line\nbreak", "\x01\x1f", "\x7f", "é✓😀", "\u2028"]),
)


def unscaled(number: int) -> str:
    return base64.b64encode(
        number.to_bytes((number.bit_length() + 8) // 8, "big", signed=True)
    ).decode()


def _mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` values, and one time in eight ``bad`` ones."""
    return st.integers(0, 7).flatmap(lambda n: bad if n == 0 else good)


def _long_texts(number: float) -> st.SearchStrategy[Any]:
    """Texts of 16 digits or more around ``number``: its 17 significant digits (the same
    double, the text most often changed), trailing zeros (the same number), and digits
    added (a number no double holds)."""
    shortest = repr(number)
    mantissa, _, exponent = shortest.partition("e")
    if "." not in mantissa:
        mantissa += "."
    tail = f"e{exponent}" if exponent else ""
    return st.sampled_from(
        [
            f"{number:.17g}",
            f"{number:.16e}",
            f"{mantissa}{'0' * 12}{tail}",
            f"{mantissa}{'0' * 9}1{tail}",
        ]
    ).map(lambda text: orjson.Fragment(text.encode()))


#: Doubles as a writer spells them: shortest texts (of up to 17 digits) and longer ones,
#: and 16 digits with an exponent and no point (a sign makes the run 17 long).
DOUBLE_TEXTS = st.floats(allow_nan=False, allow_infinity=False).flatmap(
    lambda number: st.just(number) | _long_texts(number)
) | st.sampled_from(["-9514242627359937e-2", "9514242627359937e-2", "-1000000000000000e-3"]).map(
    lambda text: orjson.Fragment(text.encode())
)


_MAP_KEYS = st.sampled_from(["a", "ab", "b", "", "é", 'q"uote', "k\n", "Z"]) | st.text(max_size=3)


def _ints(bits: int) -> st.SearchStrategy[int]:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    edges = (low, high, low - 1, high + 1, 2**53, 2**53 + 1, -(2**53) - 1)
    return _mostly(
        st.one_of(st.integers(-1000, 1000), st.integers(max(low, -(2**53)), min(high, 2**53))),
        st.sampled_from([n for n in edges if n >= -(2**63)]) | st.integers(low, high),
    )


def _decimal(scale: int, precision: int) -> st.SearchStrategy[Any]:
    """Unscaled values of every size up to the precision (a double keeps 15 digits, some of
    16 and 17), and a few that are no decimal of the column."""
    sizes = [k for k in (2, 9, 15, 16, 17, 18, 20) if k <= precision]
    fitting = st.sampled_from(sizes).flatmap(lambda k: st.integers(-(10**k) + 1, 10**k - 1))
    return _mostly(
        fitting.map(unscaled),
        st.one_of(
            st.integers(-(10**40), 10**40).map(unscaled),
            st.sampled_from(["", "AA==", "not base64", "////", "gAAAAAAAAAAA"]),
        ),
    )


#: (Connect field block without its name, the JSON values it may meet)
COLUMNS: list[tuple[dict[str, Any], st.SearchStrategy[Any]]] = [
    ({"type": "int8"}, _ints(8)),
    ({"type": "int16"}, _ints(16)),
    ({"type": "int32"}, _ints(32)),
    ({"type": "int64"}, _ints(64)),
    (
        {"type": "double"},
        _mostly(
            st.integers(-(10**6), 10**6).map(lambda n: n / 100)
            | st.integers(-5, 5)
            | st.floats(allow_nan=False, allow_infinity=False),
            DOUBLE_TEXTS,
        ),
    ),
    ({"type": "float"}, st.floats(width=32, allow_nan=False, allow_infinity=False)),
    ({"type": "boolean"}, st.booleans()),
    (
        {"type": "string"},
        _mostly(_TEXT, st.just("__debezium_unavailable_value") | st.integers(0, 3)),
    ),
    (
        {"type": "bytes"},
        _mostly(st.binary(max_size=9).map(lambda b: base64.b64encode(b).decode()), st.just("??")),
    ),
    (
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        },
        _decimal(2, 10),
    ),
    (
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "0", "connect.decimal.precision": "30"},
        },
        _decimal(0, 30),
    ),
    # Maps of string keys (PostgreSQL's hstore, hstore.handling.mode=map): keys that begin
    # one another (protobuf orders them otherwise than JSON), that need escapes, null
    # values; junk: values of another kind, out of range, a map that is no object.
    (
        {
            "type": "map",
            "keys": {"type": "string", "optional": False},
            "values": {"type": "string", "optional": True},
        },
        _mostly(
            st.dictionaries(_MAP_KEYS, st.none() | _TEXT, max_size=4),
            st.sampled_from([[], "text", {"k": 1}, {"k": True}, {"k": {"a": "b"}}]),
        ),
    ),
    (
        {
            "type": "map",
            "keys": {"type": "string", "optional": False},
            "values": {"type": "int32", "optional": False},
        },
        _mostly(
            st.dictionaries(_MAP_KEYS, st.integers(-(2**31), 2**31 - 1), max_size=3),
            st.sampled_from([{"k": None}, {"k": 2**31}, {"k": 1.5}, {"k": "1"}, {"k": False}]),
        ),
    ),
    # Decimals Spark has no type for, held as text: no precision (Connect's 64 digits), 65
    # digits (MySQL's DECIMAL(65,30)), a scale beyond six places (Python writes a value
    # below a millionth with an exponent), a negative scale (Oracle's NUMBER(5,-2)).
    (
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "3"},
        },
        _decimal(3, 64),
    ),
    (
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "30", "connect.decimal.precision": "65"},
        },
        _decimal(30, 65),
    ),
    (
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "9"},
        },
        _decimal(9, 64),
    ),
    (
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "-2", "connect.decimal.precision": "5"},
        },
        _decimal(-2, 5),
    ),
    (
        {"type": "int64", "name": "io.debezium.time.MicroTimestamp"},
        _mostly(
            st.integers(0, 2 * 10**15) | st.sampled_from([0, MIN_MICROS, MAX_MICROS, 1_000_000]),
            st.integers(MIN_MICROS - 2, MAX_MICROS + 2),
        ),
    ),
    (
        {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"},
        st.integers(MIN_MICROS // 1000 - 2, MAX_MICROS // 1000 + 2),
    ),
    ({"type": "int32", "name": "io.debezium.time.Date"}, st.integers(-719_164, 2_932_898)),
    ({"type": "int32", "name": "io.debezium.time.Time"}, st.integers(-2, 86_400_001)),
    ({"type": "int64", "name": "io.debezium.time.MicroTime"}, st.integers(-2, 86_400_000_001)),
    (
        {"type": "string", "name": "io.debezium.data.Enum", "parameters": {"allowed": "a,b,c"}},
        st.sampled_from(["a", "b", "c", "d"]),
    ),
    (
        {"type": "string", "name": "io.debezium.data.Uuid"},
        _mostly(st.uuids().map(str), st.uuids().map(lambda u: str(u).upper())),
    ),
    ({"type": "string", "name": "io.debezium.time.ZonedTimestamp"}, _TEXT),
    ({"type": "int64", "name": "io.debezium.time.NanoTimestamp"}, st.integers(0, 2**62)),
    (
        {
            "type": "struct",
            "name": "io.debezium.data.VariableScaleDecimal",
            "fields": [
                {"type": "int32", "optional": False, "field": "scale"},
                {"type": "bytes", "optional": False, "field": "value"},
            ],
        },
        _mostly(
            st.fixed_dictionaries(
                {
                    "scale": st.integers(-3, 20),
                    "value": st.integers(-(10**30), 10**30).map(unscaled),
                }
            ),
            st.sampled_from(
                [
                    {"scale": 2, "value": ""},
                    {"scale": 2, "value": "not base64"},
                    {"scale": 99_999, "value": "AQ=="},
                    {"scale": None, "value": "AQ=="},
                    {"value": "AQ=="},
                    {"scale": 1},
                    {},
                ]
            ),
        ),
    ),
    # Arrays (PostgreSQL's int[], text[], numeric(10,2)[]...), empty ones and null items too.
    (
        {"type": "array", "items": {"type": "int32", "optional": True}},
        st.lists(st.none() | _ints(32), max_size=4),
    ),
    (
        {"type": "array", "items": {"type": "int64", "optional": False}},
        st.lists(_ints(64), max_size=3),
    ),
    (
        {"type": "array", "items": {"type": "string", "optional": False}},
        _mostly(st.lists(_TEXT, max_size=4), st.just(["a", None]) | st.just("not a list")),
    ),
    (
        {"type": "array", "items": {"type": "float", "optional": True}},
        st.lists(
            st.none() | st.floats(width=32, allow_nan=False, allow_infinity=False), max_size=3
        ),
    ),
    (
        {"type": "array", "items": {"type": "double", "optional": True}},
        st.lists(
            st.none() | DOUBLE_TEXTS | st.integers(-3, 3),
            max_size=3,
        ),
    ),
    (
        {
            "type": "array",
            "items": {
                "type": "bytes",
                "optional": True,
                "name": "org.apache.kafka.connect.data.Decimal",
                "parameters": {"scale": "2", "connect.decimal.precision": "20"},
            },
        },
        st.lists(st.none() | _decimal(2, 20), max_size=3),
    ),
    (
        {
            "type": "array",
            "items": {"type": "array", "optional": True, "items": {"type": "boolean"}},
        },
        st.lists(st.none() | st.lists(st.booleans(), max_size=2), max_size=3),
    ),
    (
        {
            "type": "array",
            "items": {
                "type": "struct",
                "optional": True,
                "name": "item",
                "fields": [
                    {"type": "int64", "optional": True, "field": "n"},
                    {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "field": "t"},
                ],
            },
        },
        st.lists(
            st.none()
            | st.fixed_dictionaries(
                {"n": st.none() | st.integers(-5, 5), "t": st.integers(0, 2 * 10**15)}
            ),
            max_size=3,
        ),
    ),
    # Columns with a default, which a null (or no field) stands for.
    ({"type": "string", "default": "new"}, st.none() | st.none() | _TEXT),
    ({"type": "int32", "default": 7}, st.none() | st.none() | _ints(32)),
    ({"type": "int64", "default": -(2**40)}, st.none() | st.integers(-5, 5)),
    ({"type": "boolean", "default": False}, st.none() | st.booleans()),
    ({"type": "double", "default": 0.5}, st.none() | st.integers(-5, 5).map(lambda n: n / 4)),
    (
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
            "default": unscaled(150),
        },
        st.none() | _decimal(2, 10),
    ),
    (
        {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "default": 0},
        st.none() | st.integers(0, 2 * 10**15),
    ),
    (
        {"type": "int32", "name": "io.debezium.time.Date", "default": 19_000},
        st.none() | st.integers(-719_164, 2_932_898),
    ),
    (
        {
            "type": "string",
            "name": "io.debezium.data.Enum",
            "parameters": {"allowed": "a,b"},
            "default": "a",
        },
        st.none() | st.sampled_from(["a", "b"]),
    ),
    (
        {
            "type": "struct",
            "name": "inner",
            "fields": [
                {"type": "int32", "optional": True, "field": "n"},
                {"type": "string", "optional": True, "field": "s"},
            ],
        },
        st.fixed_dictionaries({"n": st.none() | st.integers(-5, 5), "s": st.none() | _TEXT}),
    ),
]

SOURCE = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.postgresql.Source",
    "fields": [
        {"type": "string", "optional": False, "field": "version"},
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {"type": "string", "optional": True, "field": "snapshot"},
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": True, "field": "schema"},
        {"type": "string", "optional": False, "field": "table"},
        {"type": "int64", "optional": True, "field": "txId"},
        {"type": "string", "optional": True, "field": "version_2"},
    ],
}
KEY_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "t.Key",
    "fields": [{"type": "int64", "optional": False, "field": "id"}],
}


@st.composite
def envelope(
    draw: st.DrawFn, name: str = "t", among: list[int] | None = None
) -> tuple[dict[str, Any], list[tuple[str, st.SearchStrategy[Any], bool]]]:
    """An envelope schema block and, per row column, (name, values, optional); ``among``:
    the indexes of :data:`COLUMNS` to pick from (all by default)."""
    indexes = st.sampled_from(among) if among else st.integers(0, len(COLUMNS) - 1)
    picked = draw(st.lists(indexes, min_size=1, max_size=6))
    fields = [{"type": "int64", "optional": False, "field": "id"}]
    columns: list[tuple[str, st.SearchStrategy[Any], bool]] = [("id", st.integers(0, 10**6), False)]
    for n, index in enumerate(picked):
        block, values = COLUMNS[index]
        optional = draw(st.booleans())
        # names of which some begin others ("id", "id_0"): protobuf orders such map keys
        # its own way
        column = ("z", "a", "M", "_", "b_c", "id_", "a", "")[n % 8] + str(n)
        fields.append({**block, "optional": optional, "field": column})
        columns.append((column, values, optional))
    row = {"type": "struct", "optional": True, "name": f"{name}.Value", "fields": fields}
    schema = {
        "type": "struct",
        "optional": False,
        "name": f"{name}.Envelope",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {**SOURCE, "field": "source"},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }
    return schema, columns


@st.composite
def _image(
    draw: st.DrawFn, columns: list[tuple[str, st.SearchStrategy[Any], bool]]
) -> dict[str, Any]:
    image = {}
    for name, values, optional in columns:
        # null now and then, also where the column is required
        image[name] = None if draw(st.integers(0, 4 if optional else 40)) == 0 else draw(values)
    if draw(st.integers(0, 40)) == 0:
        image["extra"] = 1  # a column the schema does not declare
    return image


# Strategies of the change events, built once: Hypothesis validates a strategy each time
# one is built, which cost more than the drawing.
_OPS = st.sampled_from(["c", "u", "d", "r", "c", "u", "d", "r", "c", "u", "t", "x"])
_CONNECTORS = st.sampled_from(["postgresql", "pg ✓", 'pg "q"\\'])
_SNAPSHOTS = st.sampled_from([None, "false", "true"])
_SCHEMAS = st.sampled_from(["public", None])
_TX_IDS = st.none() | st.integers(0, 10**9)
_VERSIONS = st.none() | st.just("2")


@st.composite
def change_event(
    draw: st.DrawFn, schema: dict[str, Any], columns: list[tuple[str, st.SearchStrategy[Any], bool]]
) -> bytes:
    op = draw(_OPS)
    before = draw(_image(columns)) if op in ("u", "d") and draw(st.booleans()) else None
    after = draw(_image(columns)) if op != "d" or not draw(st.booleans()) else None
    source = {
        "version": "2.5.0",
        "connector": draw(_CONNECTORS),
        "ts_ms": draw(st.integers(0, 2 * 10**12)),
        "snapshot": draw(_SNAPSHOTS),
        "db": "shop",
        "schema": draw(_SCHEMAS),
        "table": "t",
        "txId": draw(_TX_IDS),
        "version_2": draw(_VERSIONS),
    }
    payload = {
        "before": before,
        "after": after,
        "source": source,
        "op": op,
        "ts_ms": draw(st.integers(0, 2 * 10**12)),
    }
    return orjson.dumps({"schema": schema, "payload": payload})


_JUNK = st.sampled_from(
    [
        b"not json",
        b"[1, 2]",
        b'{"schema": null, "payload": {"op": "c"}}',
        b'{"payload": {"ts_ms": 5}}',
        b"",
        b'{"schema": {"type": "struct"}, "payload": null}',
    ]
)


OTHER_KEY_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "u.Key",
    "fields": [
        {"type": "string", "optional": False, "field": "code"},
        {"type": "int32", "optional": True, "field": "n"},
        {"type": "double", "optional": True, "field": "x"},
    ],
}


def _key(schema_key: bool) -> st.SearchStrategy[bytes | None]:
    with_schema = st.one_of(
        st.integers(-(2**60), 2**60).map(
            lambda n: orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": n}})
        ),
        st.fixed_dictionaries(
            {
                "code": _TEXT,
                "n": st.none() | st.integers(-(2**31), 2**31 - 1),
                "x": st.none() | st.floats(allow_nan=False, allow_infinity=False),
            }
        ).map(lambda p: orjson.dumps({"schema": OTHER_KEY_SCHEMA, "payload": p})),
        st.sampled_from(
            [
                orjson.dumps({"schema": KEY_SCHEMA, "payload": None}),
                orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": 1, "extra": 2}}),
                orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": "one"}}),
                orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": 1}, "more": 1}),
                orjson.dumps({"schema": {"type": "int64"}, "payload": 5}),
            ]
        ),
    )
    return st.one_of(
        st.none(),
        with_schema if schema_key else st.none(),
        st.integers(0, 9).map(lambda n: orjson.dumps({"id": n})),
        # keys without a schema (schemas.enable=false): flat objects, mostly alike
        st.fixed_dictionaries(
            {"code": _TEXT, "n": _ints(64), "ok": st.booleans()},
            optional={"extra": st.none() | st.integers(0, 3) | st.just(1.5)},
        ).map(orjson.dumps),
        st.sampled_from(
            [
                b'{"code":"a","n":1,"ok":true,"code":"b"}',
                b'{"code":"a","n":null,"ok":true}',
                b'{"n":1,"ok":false,"code":"z"}',
                b'{"code":"a","n":1,"ok":true,"inner":{"x":1}}',
                b'{"code":"\\ud800","n":1,"ok":true}',
                b'{"code":"2020-01-01T00:00:00","n":1,"ok":true}',
                b'{"code":"a","n":18446744073709551616,"ok":true}',
                b'{"code":"a","n":1,"ok":true}{"code":"b"}',
                b'{"code":"a",\n"n":1,"ok":true}',
                b'{"code":"a","n":1,"ok":true,"schema":1}',
                b"{}",
            ]
        ),
        st.binary(max_size=6),
        st.sampled_from(
            [
                b"raw key",
                b"[1]",
                b"5",
                b" 5",
                b"1.50",
                b'"text"',
                b"123456789012345678901234",
                b'{"payload": 3}',
                b' {"id": 2}',
                b'{"id": 1.5}',
                b"{not json",
            ]
        ),
    )


_KEYS = {schema_key: _key(schema_key) for schema_key in (False, True)}
_JUNK_OR_NONE = _JUNK | st.none()


def arcion(value: bytes) -> bytes:
    """A change event as Arcion writes it (``source`` with a query, no ``schema`` field)."""
    document = orjson.loads(value)
    source = document["payload"]["source"]
    source.update(connector="MYSQL", query="UPDATE ...")
    source.pop("schema", None)
    for block in document["schema"]["fields"]:
        if block["field"] == "source":
            fields = [f for f in block["fields"] if f["field"] != "schema"]
            block["fields"] = [*fields, {"type": "string", "optional": True, "field": "query"}]
    return orjson.dumps(document)


#: How a writer may spell JSON: JsonConverter's compact text, Python's ``json.dumps``
#: (spaces after ``:`` and ``,``, non-ASCII escaped or not), a pretty printer's lines.
SPELLINGS: dict[str, dict[str, Any]] = {
    "spaced": {},
    "spaced-utf8": {"ensure_ascii": False},
    "tight": {"separators": (",", ":"), "ensure_ascii": False},
    "pretty": {"indent": 2},
}


def respelt(text: bytes | None, spelling: str | None) -> bytes | None:
    """``text`` written again the ``spelling`` way (:data:`SPELLINGS`); as it is when
    ``None`` or not a JSON object orjson reads."""
    if text is None or spelling is None:
        return text
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    if not isinstance(document, dict):
        return text
    return json.dumps(document, **SPELLINGS[spelling]).encode()


@st.composite
def batches(
    draw: st.DrawFn, schema_key: bool = True, dialect: str = "debezium", lines: bool = False
) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of each message of a batch; ``dialect`` ``"arcion"``: Arcion's events.
    Most batches are spelt as JsonConverter writes, some as other writers do: every message
    one way, or each its own (:func:`respelt`); ``lines``: each on one line (JSON lines).
    """
    schemas = [draw(envelope("t")), draw(envelope("u"))]
    spellings = [None, *(s for s in SPELLINGS if not (lines and s == "pretty"))]
    batch_spelling = draw(st.sampled_from([None, None, None, *spellings[1:], "mixed"]))
    messages = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            value: bytes | None = draw(_JUNK_OR_NONE)
        else:
            schema, columns = schemas[kind % 5 == 0]
            value = draw(change_event(schema, columns))
            if dialect == "arcion":
                value = arcion(value)
        key = draw(_KEYS[schema_key])
        if batch_spelling is not None:
            spelling = (
                draw(st.sampled_from(spellings)) if batch_spelling == "mixed" else batch_spelling
            )
            key, value = respelt(key, spelling), respelt(value, spelling)
        messages.append((key, value))
    return messages


_TEXT_OR_NONE = st.none() | _TEXT
_PRICES = (
    st.sampled_from([1.5, 0.25, -3.75, 2.0])
    | DOUBLE_TEXTS
    | st.integers(-3, 3)  # an integer in a column of doubles
)
_BOOLEAN_OR_NONE = st.none() | st.booleans()
_AT = st.sampled_from(["2024-01-02T03:04:05Z", "2024-01-02", "x"])


# PostgreSQL's numeric without a precision, a geometry, arrays: as written without a schema
# block, now and then with a member more or less, or a number of another kind.
_NESTED_NUMERIC = st.fixed_dictionaries(
    {"scale": st.integers(0, 5), "value": st.sampled_from(["AQ==", "ANb0", "/w=="])}
)
_GEOMETRY = _mostly(
    st.fixed_dictionaries(
        {"wkb": st.sampled_from(["AQEAAAA=", "AQIAAAA="]), "srid": st.none() | st.just(4326)}
    ),
    st.sampled_from(
        [None, {"wkb": "AQEAAAA="}, {"wkb": "AQEAAAA=", "srid": 1, "x": 2}, {"wkb": 5, "srid": 1}]
    ),
)
_ARRAYS = _mostly(
    st.lists(st.none() | DOUBLE_TEXTS, max_size=3),
    st.sampled_from([None, [1, 2.5], [2**53 + 1, 0.5], ["a"], [[1]], [{"a": 1}], []]),
)


@st.composite
def _schemaless_image(draw: st.DrawFn, table: str = "t") -> dict[str, Any]:
    if table == "u":  # another table: other columns, objects and arrays among them
        return {
            "code": draw(st.integers(0, 99)),
            "label": draw(_TEXT_OR_NONE),
            "num": draw(st.none() | _NESTED_NUMERIC),
            "geo": draw(_GEOMETRY),
            "tags": draw(_ARRAYS),
        }
    image: dict[str, Any] = {
        "id": draw(st.integers(0, 10**6)),
        "id_2": draw(st.integers(0, 9)),
        "name": draw(_TEXT_OR_NONE),
        "price": draw(_PRICES),
        "live": draw(_BOOLEAN_OR_NONE),
        "note": None,
        "at": draw(_AT),
    }
    change = draw(st.integers(0, 30))
    if change == 0:
        del image["name"]  # a field not there: the per-message way keeps it out
    elif change == 1:
        image["extra"] = 1
    elif change == 2:
        image["id"] = "text"  # a field that changes type
    elif change == 3:
        image["id"] = orjson.Fragment(b"18446744073709551616")  # beyond 64 bits
    return image


_FLAT_OPS = st.sampled_from(["c", "u", "d", "r", "u"])
_TABLES = st.sampled_from(["t", "t", "u"])
_ID_KEYS = st.none() | st.integers(0, 99).map(lambda n: orjson.dumps({"id": n}))


@st.composite
def schemaless_event(draw: st.DrawFn) -> bytes:
    """A change event without a schema block (``schemas.enable=false``)."""
    op = draw(_FLAT_OPS)
    table = draw(_TABLES)
    image = _schemaless_image(table)
    before = draw(image) if op in ("u", "d") and draw(st.booleans()) else None
    after = draw(image) if op != "d" else None
    payload: dict[str, Any] = {
        "before": before,
        "after": after,
        "source": {
            "version": "2.5.0",
            "connector": "postgresql",
            "ts_ms": draw(st.integers(0, 2 * 10**12)),
            "db": "shop",
            "schema": draw(_SCHEMAS),
            "table": table,
            "txId": draw(_TX_IDS),
            # as Debezium writes them: members null in every event
            "sequence": draw(st.sampled_from([None, '["24023928","24023928"]'])),
            "xmin": None,
        },
        "op": op,
        "ts_ms": draw(st.integers(0, 2 * 10**12)),
    }
    transaction = draw(st.integers(0, 5))
    if transaction == 0:
        payload["transaction"] = {"id": "7:1", "total_order": 1, "data_collection_order": 1}
    elif transaction > 2:  # Debezium writes it null without transaction metadata
        payload["transaction"] = None
    return orjson.dumps(payload)


@st.composite
def schemaless_batches(
    draw: st.DrawFn, lines: bool = False
) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of messages without schema blocks, with junk and events with one."""
    spellings = [None, *(s for s in SPELLINGS if not (lines and s == "pretty"))]
    spelling = draw(st.sampled_from(spellings))
    messages = []
    schema, columns = draw(envelope("t"))
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.integers(0, 12))
        if kind == 0:
            value: bytes | None = draw(_JUNK_OR_NONE)
        elif kind == 1:
            value = draw(change_event(schema, columns))
        else:
            value = draw(schemaless_event())
        key = draw(_ID_KEYS)
        messages.append((respelt(key, spelling), respelt(value, spelling)))
    return messages


_YDB_ROWS = st.fixed_dictionaries(
    {
        "id": st.integers(0, 99),
        "name": _TEXT_OR_NONE,
        "intColumn": st.none() | st.integers(-(2**40), 2**40),
    }
)
_YDB_STEPS = st.integers(0, 2 * 10**12) | st.sampled_from([-1, 2**62, 0]) | st.just("17")
_YDB_KEYS = (
    st.integers(0, 99).map(lambda n: orjson.dumps({"payload": {"id": n}}))
    | st.none()
    | st.just(b'{"payload": 5}')
)


@st.composite
def ydb_event(draw: st.DrawFn) -> bytes:
    """A change of a YDB changefeed in its Debezium JSON (``{"payload": ...}``, no schema)."""
    row = _YDB_ROWS
    op = draw(_FLAT_OPS)
    payload: dict[str, Any] = {"op": op}
    if op in ("u", "d") and draw(st.booleans()):
        payload["before"] = draw(row)
    if op != "d" and draw(st.integers(0, 3)):
        payload["after"] = draw(row)
    source: dict[str, Any] = {
        "connector": "ydb",
        "version": "1.0.0",
        "step": draw(_YDB_STEPS),
        "txId": draw(st.integers(0, 2**62)),
        "snapshot": op == "r",
    }
    if draw(st.booleans()):
        source["ts_ms"] = draw(st.integers(0, 2 * 10**12))
    payload["source"] = source
    return orjson.dumps({"payload": payload})


@st.composite
def ydb_batches(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of a YDB changefeed's messages, with junk."""
    messages = []
    for _ in range(draw(st.integers(1, 20))):
        value = draw(_JUNK_OR_NONE) if draw(st.integers(0, 9)) == 0 else draw(ydb_event())
        key = draw(_YDB_KEYS)
        messages.append((key, value))
    return messages


_HBASE_ROWS = st.fixed_dictionaries(
    {
        "ROW": st.binary(min_size=1, max_size=4).map(lambda b: base64.b64encode(b).decode()),
        "f_name": st.none() | st.just("bHVja3k="),
    }
)
_SQL_ROWS = st.fixed_dictionaries(
    {"id": st.integers(0, 99).map(str), "name": _TEXT_OR_NONE, "n": _ints(32)}
)
_LINDORM_OPS = st.sampled_from(["c", "u", "u", "d", "r", "x"])
_NAMESPACES = st.sampled_from(["default", "ns"])
_LINDORM_KEYS = st.none() | st.integers(0, 99).map(lambda n: orjson.dumps({"id": str(n)}))
_LINDORM_SPELLINGS = st.sampled_from([None, None, "spaced"])


@st.composite
def lindorm_event(draw: st.DrawFn) -> bytes:
    """A Lindorm change: ``{"schema": {}, "payload": ...}``, SQL rows (some updates delete a
    column) or HBase rows (``ROW`` and ``<family>_<qualifier>`` columns, base64 values)."""
    row = _HBASE_ROWS if draw(st.integers(0, 4)) == 0 else _SQL_ROWS
    op = draw(_LINDORM_OPS)
    before = draw(row) if op in ("u", "d") else None
    after = draw(row) if op != "d" else None
    if op == "u" and after is not None and draw(st.integers(0, 3)) == 0:
        after.pop(sorted(after)[-1])  # a column deletion
    source = {
        "version": "v1.0",
        "db": "ld-xxxx",
        "namespace": draw(_NAMESPACES),
        "table": "customers",
        "ts_ms": draw(st.integers(0, 2 * 10**12)),
    }
    payload = {"op": op, "ts_ms": draw(st.integers(0, 2 * 10**12)), "before": before}
    payload.update(after=after, source=source)
    if draw(st.integers(0, 9)) == 0:  # the members beside the empty block, no payload
        return orjson.dumps({"schema": {}, **payload})
    return orjson.dumps({"schema": {}, "payload": payload})


@st.composite
def lindorm_batches(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of Lindorm's messages, with junk and events with a schema block."""
    schema, columns = draw(envelope("t"))
    messages = []
    for _ in range(draw(st.integers(1, 20))):
        kind = draw(st.integers(0, 12))
        if kind == 0:
            value: bytes | None = draw(_JUNK_OR_NONE)
        elif kind == 1:
            value = draw(change_event(schema, columns))
        else:
            value = draw(lindorm_event())
        key = draw(_LINDORM_KEYS)
        messages.append((key, respelt(value, draw(_LINDORM_SPELLINGS))))
    return messages


_ID_FIELD = {"type": "int64", "optional": False, "field": "id"}
_ID_IMAGE = {"type": "struct", "optional": True, "fields": [_ID_FIELD], "name": "t.Value"}
ID_BLOCK = {
    "type": "struct",
    "optional": False,
    "name": "t.Envelope",
    "fields": [
        {**_ID_IMAGE, "field": "before"},
        {**_ID_IMAGE, "field": "after"},
        {"type": "string", "optional": False, "field": "op"},
    ],
}


def id_event(n: int, block: bool = True) -> bytes:
    """A create of the row ``{"id": n}`` in Debezium JSON, with its schema block or without
    (``schemas.enable=false``)."""
    payload = {"before": None, "after": {"id": n}, "op": "c"}
    return orjson.dumps({"schema": ID_BLOCK, "payload": payload} if block else payload)
