"""Typed columns written as Protobuf messages (``columnar/protobuf_rows``) give the bytes
``from_dict(...).SerializeToString()`` gives for the values the per-message way holds, and
refuse exactly the rows it refuses; ``convert --from debezium-json --to protobuf`` and a
pipeline stage write from columns what the per-message way writes."""

from __future__ import annotations

import base64
import datetime
import decimal
import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_connectors.columnar import wire
from cdc_connectors.columnar.choose import columns_for, serves
from cdc_connectors.columnar.debezium_protobuf_rows import DebeziumToProtobufRows
from cdc_connectors.columnar.protobuf_rows import plan
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.protobuf import ProtobufFormat
from cdc_connectors.registry.embedded import EmbeddedRegistry
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.protobuf import from_dict, message_class
from tests.columnar.debezium_batches import COLUMNS, KEY_SCHEMA, change_event, envelope
from tests.columnar.test_avro_rows import (  # (the fixture: a fixed clock, small chunks)
    PerMessageDebezium,
    _convert,
    _fixed_clock_small_chunks,  # noqa: F401
    _good_stream,
    _kv,
    _stage,
)
from tests.hypothesis_profiles import examples

_REGISTRIES = itertools.count()
_HEAD = """syntax = "proto3";
package p;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
enum E { E_UNSET = 0; a = 1; b = 2; c = -3; }
"""
#: Messages that fields of the message under test (the file's first) may be.
_NESTED = """message Inner { int32 n = 1; string s = 2; }
message Point { double x = 2; optional double y = 1; bytes wkb = 3; }
"""
_INTEGER_FIELDS = [
    "int32", "int64", "uint32", "uint64", "sint32", "sint64",
    "fixed32", "fixed64", "sfixed32", "sfixed64",
    "google.protobuf.Int64Value", "google.protobuf.Int32Value",
    "google.protobuf.UInt32Value", "google.protobuf.UInt64Value",
]  # fmt: skip
_EDGES = [0, 1, -1, 127, 128, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32 - 1, 2**32]
_EDGES += [2**63 - 1, -(2**63), 2**53 + 1]
_MICROS = st.integers(-62_135_596_800_000_000, 253_402_300_799_999_999) | st.sampled_from(
    [0, -1, 1, -1_000_001, 999_999]
)
_TEXTS = st.text(max_size=5) | st.sampled_from(["", "a", "b", "c", "E_UNSET", "d"])


def _ints(type_: pa.DataType) -> st.SearchStrategy[int]:
    bits = type_.bit_width
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return st.integers(low, high) | st.sampled_from([n for n in _EDGES if low <= n <= high])


_FLOAT_EDGES = [0.0, -0.0, 1e-50, -1e-50, 3.5e38, -3.5e38, 3.4028234e38, 1.1, float("inf")]
_MICRO_EDGES = [0, -1, 1, -1_000_001, 999_999, -62_135_596_800_000_000, 253_402_300_799_999_999]
#: Each Arrow type: values at the edges of what its fields hold, and the fields.
_EDGE_CASES: list[tuple[pa.DataType, list[Any], list[str]]] = [
    *(
        (
            t,
            [n for n in _EDGES if -(2 ** (t.bit_width - 1)) <= n < 2 ** (t.bit_width - 1)],
            _INTEGER_FIELDS,
        )
        for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64())
    ),
    (
        pa.float64(),
        _FLOAT_EDGES,
        ["double", "float", "google.protobuf.DoubleValue", "google.protobuf.FloatValue"],
    ),
    (pa.bool_(), [False, True], ["bool", "google.protobuf.BoolValue"]),
    (
        pa.string(),
        ["", "a", "c", "E_UNSET", "d", "é✓"],
        ["string", "google.protobuf.StringValue", "E"],
    ),
    (pa.binary(), [b"", b"\x00", b"ab"], ["bytes", "google.protobuf.BytesValue"]),
    (
        pa.decimal128(10, 2),
        [decimal.Decimal(n).scaleb(-2) for n in (0, -5, 150, -(10**10) + 1)],
        ["string"],
    ),
    (pa.timestamp("us", tz="UTC"), _MICRO_EDGES, ["google.protobuf.Timestamp"]),
    (
        pa.timestamp("ms", tz="UTC"),
        [n // 1000 for n in _MICRO_EDGES],
        ["google.protobuf.Timestamp"],
    ),
    (pa.date32(), [0, -1, 1, -719_162, 2_932_896], ["google.protobuf.Timestamp"]),
    (
        pa.list_(pa.int64()),
        [[], [0], [1, -1, 2**31, 2**63 - 1, -(2**63)], [None], [5, None], [0, 0]],
        ["repeated int64", "repeated sint32", "repeated fixed32", "repeated uint64"],
    ),
    (
        pa.list_(pa.float64()),
        [[], [0.0, -0.0], [1e39], [1.5, None]],
        ["repeated double", "repeated float", "repeated double [packed = false]"],
    ),
    (pa.list_(pa.bool_()), [[], [False], [True, False]], ["repeated bool"]),
    (pa.list_(pa.string()), [[], [""], ["a", "d", ""], [None]], ["repeated string", "repeated E"]),
    (pa.list_(pa.binary()), [[], [b""], [b"\x00", b"ab"]], ["repeated bytes"]),
    (
        pa.list_(pa.decimal128(10, 2)),
        [[], [decimal.Decimal("1.50"), decimal.Decimal("-0.05")]],
        ["repeated string"],
    ),
    (
        pa.struct([("n", pa.int64()), ("s", pa.string())]),
        [{"n": 0, "s": ""}, {"n": None, "s": None}, {"n": 2**31, "s": "a"}, {"n": -1, "s": "é"}],
        ["Inner"],
    ),
    (
        pa.struct([("x", pa.float64()), ("y", pa.float64()), ("wkb", pa.binary())]),
        [{"x": 0.0, "y": 0.0, "wkb": b""}, {"x": -0.0, "y": None, "wkb": b"\x01"}],
        ["Point"],
    ),
]


@pytest.mark.parametrize(("type_", "values", "kinds"), _EDGE_CASES, ids=lambda v: str(v)[:20])
def test_values_at_the_edges_are_written_as_from_dict_writes_them(
    type_: pa.DataType, values: list[Any], kinds: list[str]
) -> None:
    for kind in kinds:
        plain = "." not in kind and " " not in kind and kind != "E"
        for optional in ("", "optional ") if plain else ("",):
            field = kind.replace(" [", " f = 7 [") if "[" in kind else f"{kind} f = 7"
            cls = message_class(_HEAD + f"message M {{ {optional}{field}; }}\n" + _NESTED)
            found = plan(cls.DESCRIPTOR, pa.struct([("f", type_)]))
            assert found is not None
            column = pa.StructArray.from_arrays([pa.array([*values, None], type_)], names=["f"])
            bodies, bad = found.write(column)
            expected = [_per_message(cls, {"f": _held(v, type_)}) for v in [*values, None]]
            got = [None if b else body for body, b in zip(bodies.to_pylist(), bad, strict=True)]
            assert got == expected, (optional, kind)


#: (Arrow type, values, the field types a column of it is written into)
_PAIRS: list[tuple[pa.DataType, st.SearchStrategy[Any], list[str]]] = [
    *((t, _ints(t), _INTEGER_FIELDS) for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64())),
    (
        pa.float64(),
        st.floats(allow_nan=False)
        | st.sampled_from([0.0, -0.0, 1e-50, -1e-50, 3.5e38, -3.5e38, 3.4028234e38, 1.1]),
        ["double", "float", "google.protobuf.DoubleValue", "google.protobuf.FloatValue"],
    ),
    (pa.bool_(), st.booleans(), ["bool", "google.protobuf.BoolValue"]),
    (pa.string(), _TEXTS, ["string", "google.protobuf.StringValue", "E"]),
    (pa.binary(), st.binary(max_size=4), ["bytes", "google.protobuf.BytesValue"]),
    (
        pa.decimal128(10, 2),
        st.integers(-(10**10) + 1, 10**10 - 1).map(lambda n: decimal.Decimal(n).scaleb(-2)),
        ["string"],
    ),
    (pa.decimal128(30, 0), st.integers(-(10**30) + 1, 10**30 - 1).map(decimal.Decimal), ["string"]),
    (pa.timestamp("us", tz="UTC"), _MICROS, ["google.protobuf.Timestamp"]),
    (pa.timestamp("ms", tz="UTC"), _MICROS.map(lambda n: n // 1000), ["google.protobuf.Timestamp"]),
    (pa.timestamp("s", tz="UTC"), _MICROS.map(lambda n: n // 10**6), ["google.protobuf.Timestamp"]),
    (pa.date32(), st.integers(-719_162, 2_932_896), ["google.protobuf.Timestamp"]),
    (
        pa.list_(pa.int64()),
        st.lists(st.none() | _ints(pa.int64()), max_size=4),
        ["repeated int64", "repeated sint64", "repeated int32", "repeated fixed64"],
    ),
    (pa.list_(pa.string()), st.lists(_TEXTS, max_size=3), ["repeated string", "repeated E"]),
    (pa.list_(pa.float64()), st.lists(st.floats(allow_nan=False), max_size=3), ["repeated float"]),
    (
        pa.struct([("n", pa.int64()), ("s", pa.string())]),
        st.fixed_dictionaries({"n": st.none() | _ints(pa.int64()), "s": st.none() | _TEXTS}),
        ["Inner"],
    ),
]


def _held(value: Any, type_: pa.DataType) -> Any:
    """A value as the per-message way holds it in a record: times as ISO 8601 text."""
    if value is None:
        return None
    if pa.types.is_list(type_):
        return [_held(item, type_.value_type) for item in value]
    if pa.types.is_struct(type_):
        return {f.name: _held(value[f.name], f.type) for f in type_}
    if pa.types.is_timestamp(type_):
        return pa.scalar(value, type_).as_py().isoformat()
    if pa.types.is_date32(type_):
        return (datetime.date(1970, 1, 1) + datetime.timedelta(days=value)).isoformat()
    return value


@st.composite
def _tables(draw: st.DrawFn) -> tuple[str, pa.StructArray, list[dict[str, Any]]]:
    """A proto3 message, a struct column for it and each row as the per-message way holds it."""
    count = draw(st.integers(1, 12))
    columns = draw(st.lists(st.sampled_from(_PAIRS), min_size=1, max_size=5))
    numbers = draw(st.permutations(range(1, 40)))[: len(columns)]
    fields, arrays, names = [], [], []
    for n, (_, values, choices) in enumerate(columns):
        kind = draw(st.sampled_from(choices))
        plain = "." not in kind and " " not in kind
        optional = "optional " if plain and draw(st.booleans()) else ""
        fields.append(f"  {optional}{kind} f{n} = {numbers[n]};")
        arrays.append(draw(st.lists(st.none() | values, min_size=count, max_size=count)))
        names.append(f"f{n}")
    text = _HEAD + "message M {\n" + "\n".join(fields) + "\n}\n" + _NESTED
    struct = pa.StructArray.from_arrays(
        [pa.array(values, type_) for values, (type_, _, _) in zip(arrays, columns, strict=True)],
        names=names,
    )
    rows = [
        {
            name: _held(values[i], type_)
            for name, values, (type_, _, _) in zip(names, arrays, columns, strict=True)
        }
        for i in range(count)
    ]
    return text, struct, rows


def _per_message(cls: Any, row: dict[str, Any]) -> bytes | None:
    try:
        return bytes(from_dict(row, cls).SerializeToString())
    except SchemaError:
        return None


@settings(max_examples=examples(150), deadline=None)
@given(case=_tables())
def test_columns_write_the_bytes_and_refuse_the_rows_of_from_dict(
    case: tuple[str, pa.StructArray, list[dict[str, Any]]],
) -> None:
    text, struct, rows = case
    cls = message_class(text)
    found = plan(cls.DESCRIPTOR, struct.type)
    assert found is not None, text
    bodies, bad = found.write(struct)
    expected = [_per_message(cls, row) for row in rows]
    assert bad.tolist() == [body is None for body in expected], (text, rows)
    assert [None if b else body for body, b in zip(bodies.to_pylist(), bad, strict=True)] == (
        expected
    ), (text, rows)


@pytest.mark.parametrize(
    ("fields", "type_"),
    [
        ("repeated int64 f0 = 1;", pa.int64()),
        ("oneof o { int64 f0 = 1; string g = 2; }", pa.int64()),
        ("message N { int32 n = 1; } N f0 = 1;", pa.struct([("m", pa.int32())])),
        ("message N { int32 n = 1; } repeated N f0 = 1;", pa.list_(pa.struct([("n", pa.int32())]))),
        ("int64 other = 1;", pa.int64()),
        ("string f0 = 1;", pa.int64()),
        ("google.protobuf.Timestamp f0 = 1;", pa.timestamp("ns", tz="UTC")),
        ("google.protobuf.Timestamp f0 = 1;", pa.time64("us")),
        ("double f0 = 1;", pa.int64()),
        ("string f0 = 1;", pa.decimal128(5, -2)),
        ("map<string, int32> f0 = 1;", pa.map_(pa.string(), pa.int32())),
    ],
)
def test_what_the_columns_leave_to_the_per_message_way(fields: str, type_: pa.DataType) -> None:
    cls = message_class(_HEAD + f"message M {{ {fields} }}\n")
    assert plan(cls.DESCRIPTOR, pa.struct([("f0", type_)])) is None


def test_a_proto2_message_is_left_to_the_per_message_way() -> None:
    cls = message_class('syntax = "proto2";\npackage q;\nmessage M { optional int64 f0 = 1; }\n')
    assert plan(cls.DESCRIPTOR, pa.struct([("f0", pa.int64())])) is None


def test_varint64_writes_what_protobuf_writes() -> None:
    numbers = np.array([0, 1, 127, 128, 300, 2**35, 2**63 - 1, -1, -(2**63)], dtype=np.int64)
    matrix, sizes = wire.varint64(numbers)
    cls = message_class('syntax = "proto3";\npackage v;\nmessage M { int64 n = 1; }\n')
    for row, (number, size) in enumerate(zip(numbers.tolist(), sizes.tolist(), strict=True)):
        expected = cls(n=number).SerializeToString()[1:] if number else b"\x00"
        assert bytes(matrix[row, :size]) == expected


def test_from_dict_refuses_a_double_beyond_a_float_and_writes_a_decimal_as_its_text() -> None:
    cls = message_class(_HEAD + "message M { float f = 1; string s = 2; }\n")
    with pytest.raises(SchemaError, match="beyond the range of a float"):
        from_dict({"f": 1e39}, cls)
    for changed in (16777217, 0.123456789, 0.10000000000000002):
        with pytest.raises(SchemaError, match=f"{changed} would change as a float"):
            from_dict({"f": changed}, cls)
    assert [from_dict({"f": held}, cls).f for held in (16777216, 0.5)] == [16777216.0, 0.5]
    assert from_dict({"f": float("inf")}, cls).f == float("inf")
    assert from_dict({"s": decimal.Decimal("-0.50")}, cls).s == "-0.50"
    assert from_dict({"s": decimal.Decimal("1E+2")}, cls).s == "100"


# --- convert and pipeline stages -------------------------------------------------------------

#: The field types a Connect column of debezium_batches is written into from columns, and
#: (after the bar) others, which the columns leave to the per-message way: it writes some
#: (an int into a double), refuses others.
_FIELDS_OF = {
    "int8": ["int32", "sint64", "sfixed32", "|", "double"],
    "int16": ["int32", "fixed32", "google.protobuf.Int32Value", "|", "string"],
    "int32": ["int32", "uint32", "sint32", "google.protobuf.Int64Value", "fixed64", "|", "bool"],
    "int64": ["int64", "sint64", "sfixed64", "uint64", "int32", "|", "double"],
    "double": ["double", "float", "google.protobuf.DoubleValue", "|", "string"],
    "float": ["double", "float", "google.protobuf.FloatValue", "|", "int32"],
    "boolean": ["bool", "google.protobuf.BoolValue", "|", "int32"],
    "string": ["string", "google.protobuf.StringValue", "E", "|", "bytes"],
    "bytes": ["bytes", "google.protobuf.BytesValue", "|", "string"],
    "org.apache.kafka.connect.data.Decimal": ["string", "|", "double"],
    "io.debezium.time.MicroTimestamp": ["google.protobuf.Timestamp", "|", "string"],
    "org.apache.kafka.connect.data.Timestamp": ["google.protobuf.Timestamp", "|", "int64"],
    "io.debezium.time.Date": ["google.protobuf.Timestamp", "|", "int32"],
    "io.debezium.data.Enum": ["E", "string", "|", "int32"],
    "io.debezium.data.Uuid": ["string", "|", "bytes"],
    "io.debezium.time.ZonedTimestamp": ["string", "|", "google.protobuf.Timestamp"],
    "io.debezium.time.Time": ["|", "google.protobuf.Timestamp", "int32"],
    "io.debezium.time.MicroTime": ["|", "google.protobuf.Timestamp", "int64"],
    "io.debezium.time.NanoTimestamp": ["|", "google.protobuf.Timestamp", "int64"],
    "io.debezium.data.VariableScaleDecimal": ["string", "|", "double"],
    "array": ["|", "repeated int64", "repeated string"],
    "array int32": ["repeated int64", "repeated sint32", "|", "repeated string"],
    "array int64": ["repeated int64", "repeated fixed64", "|", "repeated int32"],
    "array string": ["repeated string", "|", "repeated bytes"],
    "array float": ["repeated double", "repeated float", "|", "repeated int64"],
    "array double": ["repeated double", "|", "repeated string"],
    "array org.apache.kafka.connect.data.Decimal": ["repeated string", "|", "repeated double"],
    "struct": ["Inner", "|", "google.protobuf.StringValue"],
    "map": ["|", "map<string, string>", "string"],
}


def _kinds(block: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(field types written from columns, others) for a Connect field block."""
    if block["type"] == "array":
        items = block["items"]
        block = {"type": f"array {items.get('name', items['type'])}"}
    found = _FIELDS_OF.get(block.get("name", ""), _FIELDS_OF.get(block["type"]))
    if found is None and block["type"].startswith("array "):
        found = _FIELDS_OF["array"]
    assert found is not None, block
    bar = found.index("|")
    return found[:bar], found[bar + 1 :]


#: The columns of debezium_batches the columns write into some field.
_WRITABLE = [n for n, (block, _) in enumerate(COLUMNS) if _kinds(block)[0]]
_KEY_FIELDS = ["int64", "sint64", "sfixed64", "fixed64", "int32", "uint64", "string"]
_KEYS = (
    st.integers(0, 9)
    .flatmap(
        lambda n: (
            st.sampled_from(["one", None])
            if n == 0
            else st.integers(-(2**40), 2**40) | st.sampled_from([0, -1, 2**31, -(2**31) - 1])
        )
    )
    .map(
        lambda n: orjson.dumps({"schema": KEY_SCHEMA, "payload": None if n is None else {"id": n}})
    )
)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[tuple[bytes | None, bytes | None]], str, str]:
    """Change events of one table with keys of a schema block (or none), a message for
    their rows (the field numbers shuffled) and one for their keys. Most tables have only
    columns the columns write, and most fields a type they write them into."""
    among = _WRITABLE if draw(st.integers(0, 3)) else None
    schema, columns = draw(envelope("t", among))
    row = schema["fields"][1]["fields"]
    numbers = draw(st.permutations(range(1, 30)))
    fields = []
    for n, block in enumerate(row):
        good, other = ([], ["string"]) if n == 0 else _kinds(block)
        if n == 0:
            good = ["int64", "sint64"]
        elif draw(st.integers(0, 40)) == 0:
            continue  # a column the message lacks: every row goes the per-message way
        kind = draw(st.sampled_from(good if good and draw(st.integers(0, 12)) else other))
        optional = (
            "optional " if "." not in kind and " " not in kind and draw(st.booleans()) else ""
        )
        fields.append(f"  {optional}{kind} {block['field']} = {numbers[n]};")
    value = _HEAD + "message Row {\n" + "\n".join(fields) + "\n}\n" + _NESTED
    key = _HEAD + f"message Key {{ {draw(st.sampled_from(_KEY_FIELDS))} id = 3; }}\n"
    messages = []
    for _ in range(draw(st.integers(1, 20))):
        event = draw(change_event(schema, columns)) if draw(st.integers(0, 9)) else b"not json"
        messages.append((draw(st.none() | _KEYS), event))
    return messages, value, key


def _files(tmp: Path, value: str, key: str) -> dict[str, str]:
    (tmp / "row.proto").write_text(value)
    (tmp / "key.proto").write_text(key)
    return {"value.schema": str(tmp / "row.proto"), "key.schema": str(tmp / "key.proto")}


def _both(data: bytes, options: dict[str, str], fail_fast: bool = False) -> Any:
    ours, theirs = f"memory://pb-rows-{next(_REGISTRIES)}", f"memory://pb-rows-{next(_REGISTRIES)}"
    columns = _convert(
        DebeziumJsonFormat({}, registry=ours), ours, data, fail_fast, options, ProtobufFormat
    )
    per_message = _convert(
        PerMessageDebezium({}, registry=theirs), theirs, data, fail_fast, options, ProtobufFormat
    )
    assert _without_ids(columns[1:4]) == _without_ids(per_message[1:4])
    if not fail_fast:
        assert columns[4] == per_message[4]
    return columns


def _without_ids(found: Any) -> str:
    """``found`` as text, the schema ids in its errors left out: a registry numbers schemas
    in the order they come, which differs where a chunk's rows go both ways (README)."""
    return re.sub(r"\(id [0-9]+\)", "(id)", repr(found))


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=_cases(), fail_fast=st.sampled_from([False, False, True]))
def test_convert_writes_the_rows_dead_letters_and_schemas_of_the_per_message_way(
    case: tuple[list[tuple[bytes | None, bytes | None]], str, str], fail_fast: bool, tmp_path: Path
) -> None:
    messages, value, key = case
    options = _files(tmp_path, value, key)
    _both(_kv(messages), options, fail_fast)
    ours, theirs = (
        f"memory://pb-stage-{next(_REGISTRIES)}",
        f"memory://pb-stage-{next(_REGISTRIES)}",
    )
    columns = _stage(DebeziumJsonFormat({}, registry=ours), ours, messages, ProtobufFormat, options)
    per_message = _stage(
        PerMessageDebezium({}, registry=theirs), theirs, messages, ProtobufFormat, options
    )
    assert _without_ids(columns[0]) == _without_ids(per_message[0])


_ORDERS = (
    _HEAD
    + """message Order {
  int64 id = 1; sint64 customer_id = 2; string status = 3; string amount = 4;
  optional double discount = 5; google.protobuf.Timestamp created_at = 6;
  google.protobuf.Timestamp updated_at = 7; google.protobuf.Timestamp ship_date = 8;
  google.protobuf.StringValue note = 9; int32 qty = 10; string tracking = 11;
}
"""
)


def test_good_messages_are_written_from_columns_and_confluent_reads_them(tmp_path: Path) -> None:
    options = _files(tmp_path, _ORDERS, _HEAD + "message Key { int64 id = 1; }\n")
    data = _good_stream(30)
    _both(data, options)
    url = f"memory://pb-rows-{next(_REGISTRIES)}"
    fmt = DebeziumJsonFormat({}, registry=url)
    decoded: list[object] = []
    fmt.decode = decoded.append  # type: ignore[assignment,method-assign]
    out, _, letters, summary, registered = _convert(fmt, url, data, False, options, ProtobufFormat)
    assert not decoded and not letters, summary
    assert {subject for subject, _, _ in registered} >= {
        "shop.public.orders-value",
        "shop.public.orders-key",
    }
    registry = EmbeddedRegistry(url)
    rows = ProtobufDeserializer(message_class(_ORDERS), {"use.deprecated.format": False}, registry)
    first = orjson.loads(out.splitlines()[0])
    value = rows(base64.b64decode(first["value"]), SerializationContext("t", MessageField.VALUE))
    assert value.amount and value.created_at.seconds > 0


def test_only_a_registry_shared_with_the_source_and_no_raw_keys_are_served(tmp_path: Path) -> None:
    options = _files(tmp_path, _ORDERS, _HEAD + "message Key { int64 id = 1; }\n")
    source = DebeziumJsonFormat({}, registry="memory://pb-served")
    assert serves(source, ProtobufFormat(options, registry="memory://pb-served"))
    assert not serves(source, ProtobufFormat(options, registry="memory://pb-other"))
    raw = {**options, "raw.keys": "true"}
    assert not serves(source, ProtobufFormat(raw, registry="memory://pb-served"))
    assert isinstance(
        columns_for(source, ProtobufFormat(options, registry="memory://pb-served")),
        DebeziumToProtobufRows,
    )


def test_without_schema_files_the_subjects_latest_versions_are_written(tmp_path: Path) -> None:
    """No ``value.schema``: the subject's latest version; a subject without one sends its
    rows the per-message way, which says so."""
    from confluent_kafka.schema_registry import Schema

    data = _good_stream(12)
    first = _both(data, {})  # no schemas: every row a dead letter
    assert b"has no schema" in first[2]
    url = f"memory://pb-latest-{next(_REGISTRIES)}"
    registry = EmbeddedRegistry(url)
    registry.register_schema("shop.public.orders-value", Schema(_ORDERS, "PROTOBUF"))
    key = _HEAD + "message Key { int64 id = 1; }\n"
    registry.register_schema("shop.public.orders-key", Schema(key, "PROTOBUF"))
    out, _, letters, summary, _ = _convert(
        DebeziumJsonFormat({}, registry=url), url, data, False, {}, ProtobufFormat
    )
    assert not letters and len(out.splitlines()) == 12, summary


def _one_table(fields: list[dict[str, Any]], rows: list[dict[str, Any]]) -> bytes:
    """Change events (creates) of table ``t`` with the row ``fields``, ``rows`` as after."""
    row = {"type": "struct", "optional": True, "name": "t.Value", "fields": fields}
    schema = {
        "type": "struct",
        "name": "t.Envelope",
        "fields": [{**row, "field": "before"}, {**row, "field": "after"}],
    }
    schema["fields"].append({"type": "string", "optional": False, "field": "op"})
    return _kv(
        [
            (
                None,
                orjson.dumps(
                    {"schema": schema, "payload": {"before": None, "after": r, "op": "c"}}
                ),
            )
            for r in rows
        ]
    )


@pytest.mark.parametrize("kind", ["int32", "int64", "string", "repeated int32"])
def test_a_time_of_day_the_columns_hold_as_a_count_goes_the_per_message_way(
    kind: str, tmp_path: Path
) -> None:
    """The typed columns hold ``io.debezium.time.Time`` as milliseconds, the per-message way
    as text (``00:00:01``): a message of such a column goes its way, written or refused."""
    time = {"type": "int32", "name": "io.debezium.time.Time", "optional": True, "field": "t"}
    if kind.startswith("repeated"):
        time = {
            "type": "array",
            "items": {**time, "optional": False},
            "optional": True,
            "field": "t",
        }
    fields = [{"type": "int64", "optional": False, "field": "id"}, time]
    value = 1000 if not kind.startswith("repeated") else [1000, 2000]
    data = _one_table(fields, [{"id": n, "t": value} for n in range(12)])
    row = _HEAD + f"message Row {{ int64 id = 1; {kind} t = 2; }}\n"
    options = _files(tmp_path, row, _HEAD + "message Key { int64 id = 1; }\n")
    out = _both(data, {**options, "topic": "t"})
    assert len(out[1]) + out[2].count(b"\n") == 12
