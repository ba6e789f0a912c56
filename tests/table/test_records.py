"""Records become changes: keys, order, unset columns, types, and what is refused."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa

from cdc_connectors.opencdc import Record
from cdc_connectors.table.records import PLACEHOLDER, ChangeBatch


def record(
    op: str, position: bytes, after: dict | None = None, key: object = None, **kw: object
) -> Record:
    return Record.new(op, position=position, after=after, key=key, **kw)  # type: ignore[arg-type]


def test_records_become_rows_with_their_keys_and_order() -> None:
    batch = ChangeBatch()
    batch.add(
        record(
            "snapshot",
            b"t/0/1",
            {"id": 1, "amount": Decimal("1.50")},
            {"id": 1},
            created_at=1_700_000_000_000_000_000,
        )
    )
    batch.add(Record.new("delete", position=b"t/0/2", key={"id": 2}))
    batch.add(record("update", b"t/0/3", {"id": 1, "amount": PLACEHOLDER, "note": "x"}, {"id": 1}))
    table = batch.table()
    assert batch.key_columns == ["id"] and not batch.refused
    assert table.column("id").to_pylist() == [1, 2, 1]
    assert table.column("amount").type == pa.decimal128(3, 2)
    assert table.column("amount").to_pylist() == [Decimal("1.50"), None, None]
    assert table.column("_cdc_op").to_pylist() == ["snapshot", "delete", "update"]
    assert table.column("_cdc_offset").to_pylist() == [1, 2, 3]
    assert table.column("_cdc_unset").to_pylist() == [None, None, ["amount"]]
    assert table.column("_cdc_at")[0].as_py() == dt.datetime(
        2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC
    )


def test_an_update_leaves_unset_the_columns_it_lacks() -> None:
    batch = ChangeBatch()
    batch.add(record("create", b"t/0/1", {"id": 1, "a": 1, "b": 2}, {"id": 1}))
    batch.add(record("update", b"t/0/2", {"id": 1, "b": 3}, {"id": 1}))
    assert batch.table().column("_cdc_unset").to_pylist() == [None, ["a"]]


def test_records_that_are_no_change_are_refused_with_their_reason() -> None:
    batch = ChangeBatch(order_by="position")
    batch.add(record("create", b"t/0/1", {"id": 1}))  # no key
    batch.add(record("create", b"nowhere", {"id": 1}, {"id": 1}))  # no order
    batch.add(record("create", b"t/0/2", {"id": None}, {"id": None}))
    batch.add(record("create", b"t/0/3", {"id": 3}, {"id": 3}))
    batch.add(record("create", b"t/0/4", {"other": 4}, {"other": 4}))
    batch.add(record("create", b"t/0/5", {"id": 5, "_cdc_offset": 1}, {"id": 5}))
    batch.add(record("create", b"t/0/6", {"id": {"x": 1}}, {"id": {"x": 1}}))
    batch.add(record("create", b"t/0/7", {"id": [7]}, {"id": [7]}))
    batch.add(record("create", b"t/0/8", {"id": 8, "a.b": 1}, {"id": 8}))
    batch.add(record("create", b"t/0/9", {"id": 9, " ": 1}, {"id": 9}))
    table = batch.table()
    assert table.column("id").to_pylist() == [3]
    assert table.column_names[:1] == ["id"] and "a.b" not in table.column_names
    reasons = [r.reason for r in batch.refused]
    assert "has no key" in reasons[0]
    assert "has no order" in reasons[1]
    assert "no value for key column(s) ['id']" in reasons[2]
    assert "are not those of the batch's first key ['id']" in reasons[3]
    assert "names starting with _cdc_ are the table's own" in reasons[4]
    assert "key column 'id' holds an object" in reasons[5]
    assert "key column 'id' holds an array" in reasons[6]
    assert reasons[7:] == [
        "column(s) ['a.b']: a table column's name is not blank and holds no dot",
        "column(s) [' ']: a table column's name is not blank and holds no dot",
    ]


def test_registered_types_are_kept_and_a_value_that_does_not_fit_is_refused() -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("amount", pa.decimal128(10, 2)),
            pa.field("at", pa.timestamp("us", tz="UTC")),
            pa.field("day", pa.date32()),
        ]
    )
    batch = ChangeBatch(types=lambda r: schema)
    good = {
        "id": 1,
        "amount": Decimal("19.99"),
        "at": "2025-11-21T23:50:01.000123+00:00",
        "day": "2025-11-21",
    }
    batch.add(record("create", b"t/0/1", good, {"id": 1}))
    batch.add(record("create", b"t/0/2", {**good, "id": 2, "amount": "12.5"}, {"id": 2}))
    batch.add(record("create", b"t/0/3", {**good, "id": 3, "amount": Decimal("1.999")}, {"id": 3}))
    table = batch.table()
    assert table.schema.field("amount").type == pa.decimal128(10, 2)
    assert table.column("id").to_pylist() == [1, 2]
    assert table.column("amount").to_pylist() == [Decimal("19.99"), Decimal("12.50")]
    assert table.column("at")[0].as_py() == dt.datetime(2025, 11, 21, 23, 50, 1, 123, tzinfo=dt.UTC)
    assert table.column("day")[0].as_py() == dt.date(2025, 11, 21)
    (refused,) = batch.refused
    assert (
        refused.reason == "column 'amount': value Decimal('1.999') does not fit decimal128(10, 2)"
    )


def test_without_types_numbers_stay_exact() -> None:
    batch = ChangeBatch()
    batch.add(record("create", b"t/0/1", {"id": 1, "n": 2**60}, {"id": 1}))
    batch.add(record("create", b"t/0/2", {"id": 2, "n": Decimal("1.5")}, {"id": 2}))
    batch.add(record("create", b"t/0/3", {"id": 3, "n": None, "x": None}, {"id": 3}))
    table = batch.table()
    assert table.column("n").to_pylist() == [Decimal(2**60), Decimal("1.5"), None]
    assert pa.types.is_null(table.column("x").type)


def test_what_no_column_type_holds_is_exact_text_or_refused() -> None:
    batch = ChangeBatch()
    big = Decimal("1.234567890123456789012345678901234567890")  # 40 digits
    batch.add(record("create", b"t/0/1", {"id": 1, "n": big}, {"id": 1}))
    batch.add(record("create", b"t/0/99999999999999999999", {"id": 2}, {"id": 2}))
    stamp = {"opencdc.createdAt": "9" * 30}
    batch.add(record("create", b"t/0/3", {"id": 3, "n": None}, {"id": 3}, metadata=stamp))
    table = batch.table()
    assert table.column("n").to_pylist() == [str(big), None]
    assert table.column("_cdc_at").to_pylist() == [None, None]
    (refused,) = batch.refused
    assert "past 64 bits" in refused.reason


def test_objects_and_arrays_without_a_schema_are_their_json_text() -> None:
    batch = ChangeBatch()
    batch.add(
        record(
            "create", b"t/0/1", {"id": 1, "meta": {"note": None, "x": Decimal("1.5")}}, {"id": 1}
        )
    )
    batch.add(record("create", b"t/0/2", {"id": 2, "meta": []}, {"id": 2}))
    batch.add(record("create", b"t/0/3", {"id": 3, "meta": {}}, {"id": 3}))
    assert batch.table().column("meta").to_pylist() == ['{"note":null,"x":1.5}', "[]", "{}"]


def test_the_tasks_changes_take_one_type_whatever_the_split() -> None:
    from cdc_connectors.connectors.table_write import concat_changes

    def task(*amounts: object) -> pa.Table:
        batch = ChangeBatch()
        for n, amount in enumerate(amounts):
            batch.add(record("create", b"t/0/%d" % n, {"id": n, "amount": amount}, {"id": n}))
        return batch.table()

    one = task(1, Decimal("0.1"), 0.25).column("amount")
    split = concat_changes([task(1, Decimal("0.1")), task(0.25)]).column("amount")
    assert split.type == one.type and split.to_pylist() == one.to_pylist()
    whole = concat_changes([task(10, 20), task(10, 10.5)]).column("amount")
    assert whole.to_pylist() == [Decimal(10), Decimal(20), Decimal(10), Decimal("10.5")]


def test_values_the_tables_column_cannot_take_are_refused_one_by_one() -> None:
    held = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("n", pa.int64()),
            pa.field("price", pa.float64()),
            pa.field("d", pa.decimal128(5, 2)),
            pa.field("note", pa.string()),
        ]
    )
    batch = ChangeBatch(held=held)
    rows = [
        {"id": 1, "n": 5, "price": 2, "d": Decimal("1.5"), "note": "a"},
        {"id": 2, "n": "n/a", "price": 2.5, "d": Decimal("1.25"), "note": "b"},
        {"id": 3, "n": True, "price": 3, "d": Decimal("2"), "note": "c"},
        {"id": 4, "n": 7, "price": 2**53 + 1, "d": Decimal("3"), "note": "d"},
        {"id": 5, "n": 8, "price": 4, "d": Decimal("1.255"), "note": "e"},
        {"id": 6, "n": 9, "price": 5, "d": Decimal("1"), "note": 6},
    ]
    for number, row in enumerate(rows, 1):
        batch.add(record("create", f"t/0/{number}".encode(), row, {"id": row["id"]}))
    table = batch.table()
    assert table.column("id").to_pylist() == [1, 6]
    assert table.schema.field("n").type == pa.int64()
    assert table.column("n").to_pylist() == [5, 9]
    assert table.schema.field("price").type == pa.float64()
    assert table.column("price").to_pylist() == [2.0, 5.0]
    assert table.column("d").to_pylist() == [Decimal("1.50"), Decimal("1.00")]
    assert table.column("note").to_pylist() == ["a", "6"]  # as text stays text beside text
    assert [r.position for r in batch.refused] == [b"t/0/2", b"t/0/3", b"t/0/4", b"t/0/5"]
    assert [r.reason for r in batch.refused] == [
        "column 'n': value 'n/a' does not fit int64",
        "column 'n': value True does not fit int64",
        f"column 'price': value {2**53 + 1} does not fit double",
        "column 'd': value Decimal('1.255') does not fit decimal128(5, 2) "
        "(nor more digits at scale 2)",
    ]


def test_values_of_a_type_the_table_widens_to_are_not_refused() -> None:
    held = pa.schema([pa.field("id", pa.int64()), pa.field("d", pa.decimal128(3, 2))])
    batch = ChangeBatch(held=held)
    batch.add(record("create", b"t/0/1", {"id": 1, "d": Decimal("123.45")}, {"id": 1}))
    table = batch.table()
    assert not batch.refused
    assert table.schema.field("d").type == pa.decimal128(5, 2)  # the table widens


def test_text_a_double_would_change_is_refused() -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("x", pa.float64())])
    batch = ChangeBatch(types=lambda r: schema)
    batch.add(record("create", b"t/0/1", {"id": 1, "x": "0.25"}, {"id": 1}))
    batch.add(record("create", b"t/0/2", {"id": 2, "x": "9007199254740993"}, {"id": 2}))
    batch.add(record("create", b"t/0/3", {"id": 3, "x": 2**53 + 1}, {"id": 3}))
    table = batch.table()
    assert table.column("x").to_pylist() == [0.25]
    assert [r.position for r in batch.refused] == [b"t/0/2", b"t/0/3"]


def test_numbers_for_a_decimal_column_widen_it_at_its_scale() -> None:
    held = pa.schema([pa.field("id", pa.int64()), pa.field("mix", pa.decimal128(2, 1))])
    batch = ChangeBatch(held=held)
    batch.add(record("create", b"t/0/1", {"id": 1, "mix": 12.5}, {"id": 1}))
    batch.add(record("create", b"t/0/2", {"id": 2, "mix": 3}, {"id": 2}))
    batch.add(record("create", b"t/0/3", {"id": 3, "mix": 1.25}, {"id": 3}))
    table = batch.table()
    assert table.schema.field("mix").type == pa.decimal128(3, 1)
    assert table.column("mix").to_pylist() == [Decimal("12.5"), Decimal("3.0")]
    assert [r.reason for r in batch.refused] == [
        "column 'mix': value 1.25 does not fit decimal128(2, 1) (nor more digits at scale 1)"
    ]


def test_a_value_of_another_kind_than_the_tables_column_is_never_made_one() -> None:
    held = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("flag", pa.bool_()),
            pa.field("at", pa.timestamp("us", tz="UTC")),
            pa.field("day", pa.date32()),
            pa.field("n", pa.int64()),
        ]
    )
    batch = ChangeBatch(held=held)
    for number, (column, value) in enumerate(
        [("flag", 2), ("at", 1_700_000_000), ("day", 19_000), ("n", "0x10"), ("n", "007")], 1
    ):
        batch.add(
            record(
                "create", f"t/0/{number}".encode(), {"id": number, column: value}, {"id": number}
            )
        )
    batch.add(record("create", b"t/0/9", {"id": 9, "flag": True, "n": 7}, {"id": 9}))
    table = batch.table()
    assert table.column("id").to_pylist() == [9]
    assert (table.column("flag")[0].as_py(), table.column("n")[0].as_py()) == (True, 7)
    assert [r.reason for r in batch.refused] == [
        "column 'flag': value 2 does not fit bool",
        "column 'at': value 1700000000 does not fit timestamp[us, tz=UTC]",
        "column 'day': value 19000 does not fit date32[day]",
        "column 'n': value '0x10' does not fit int64",
        "column 'n': value '007' does not fit int64",
    ]


def test_bytes_held_as_base64_text_are_their_bytes_in_a_column_of_bytes() -> None:
    """JSON holds bytes as base64 (Debezium's and OpenCDC's JSON alike): a registered bytes
    column takes what the text encodes, never the text's own characters."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("version", pa.binary())])
    batch = ChangeBatch(types=lambda r: schema)
    batch.add(record("create", b"t/0/1", {"id": 1, "version": "AAAAAAAAB9A="}, {"id": 1}))
    batch.add(record("create", b"t/0/2", {"id": 2, "version": b"\x00\x01"}, {"id": 2}))
    batch.add(record("create", b"t/0/3", {"id": 3, "version": "not base64!"}, {"id": 3}))
    table = batch.table()
    assert table.column("version").to_pylist() == [b"\x00" * 6 + b"\x07\xd0", b"\x00\x01"]
    (refused,) = batch.refused
    assert "column 'version'" in refused.reason and "base64" in refused.reason


def test_times_of_day_are_counts_past_midnight_in_a_registered_integer_column() -> None:
    """Debezium's MicroTime (Avro ``time-micros``) and Connect's Time (``time-millis``) are
    counts in a table, as ``expand`` types them; records hold them as ISO text."""
    schema = pa.schema(
        [pa.field("id", pa.int64()), pa.field("micros", pa.int64()), pa.field("ms", pa.int32())]
    )
    batch = ChangeBatch(types=lambda r: schema)
    batch.add(
        record(
            "create",
            b"t/0/1",
            {"id": 1, "micros": "09:30:00.000001", "ms": "00:00:01.5"},
            {"id": 1},
        )
    )
    batch.add(record("create", b"t/0/2", {"id": 2, "micros": "23:59:59", "ms": None}, {"id": 2}))
    batch.add(record("create", b"t/0/3", {"id": 3, "micros": 7, "ms": "00:00:00.0001"}, {"id": 3}))
    batch.add(record("create", b"t/0/4", {"id": 4, "micros": "00:00:00.123456789"}, {"id": 4}))
    table = batch.table()
    assert table.column("micros").to_pylist() == [34_200_000_001, 86_399_000_000]
    assert table.column("ms").to_pylist() == [1500, None]
    assert sorted(r.reason.split(":")[0] for r in batch.refused) == [
        "column 'micros'",
        "column 'ms'",
    ]


def test_a_decimal_wider_than_a_table_keeps_its_digits_as_text() -> None:
    """A decimal of more than 38 digits is registered as text: numbers there are their
    exact digits, whatever JSON made of them."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("big", pa.string())])
    batch = ChangeBatch(types=lambda r: schema)
    batch.add(record("create", b"t/0/1", {"id": 1, "big": -1e-10}, {"id": 1}))
    batch.add(record("create", b"t/0/2", {"id": 2, "big": Decimal("19.990")}, {"id": 2}))
    batch.add(record("create", b"t/0/3", {"id": 3, "big": "1" * 40 + ".5"}, {"id": 3}))
    batch.add(record("create", b"t/0/4", {"id": 4, "big": 12}, {"id": 4}))
    table = batch.table()
    assert table.column("big").to_pylist() == ["-0.0000000001", "19.990", "1" * 40 + ".5", "12"]
    assert not batch.refused


def test_bytes_in_a_struct_as_base64_text_are_their_bytes() -> None:
    """Debezium's geometry is a struct of WKB bytes and an SRID: the bytes, not their text."""
    point = pa.struct([pa.field("wkb", pa.binary()), pa.field("srid", pa.int32())])
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("spot", point),
            pa.field("blobs", pa.list_(pa.binary())),
        ]
    )
    batch = ChangeBatch(types=lambda r: schema)
    batch.add(
        record(
            "create",
            b"t/0/1",
            {"id": 1, "spot": {"wkb": "AQE=", "srid": 4326}, "blobs": ["AA==", None]},
            {"id": 1},
        )
    )
    batch.add(record("create", b"t/0/2", {"id": 2, "spot": {"wkb": "%%", "srid": 0}}, {"id": 2}))
    table = batch.table()
    assert table.column("spot").to_pylist() == [{"wkb": b"\x01\x01", "srid": 4326}]
    assert table.column("blobs").to_pylist() == [[b"\x00", None]]
    (refused,) = batch.refused
    assert "column 'spot'" in refused.reason


def test_text_in_a_registered_struct_or_array_column_is_refused_not_split() -> None:
    point = pa.struct([pa.field("x", pa.int64())])
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("spot", point),
            pa.field("blobs", pa.list_(pa.binary())),
            pa.field("tiny", pa.int16()),
        ]
    )
    batch = ChangeBatch(types=lambda r: schema)
    batch.add(record("create", b"t/0/1", {"id": 1, "spot": "AQE="}, {"id": 1}))
    batch.add(record("create", b"t/0/2", {"id": 2, "blobs": "AQE="}, {"id": 2}))
    batch.add(record("create", b"t/0/3", {"id": 3, "tiny": "09:30:00"}, {"id": 3}))
    batch.add(record("create", b"t/0/4", {"id": 4, "blobs": ["AQE="]}, {"id": 4}))
    table = batch.table()
    assert table.column("id").to_pylist() == [4]
    assert table.column("blobs").to_pylist() == [[b"\x01\x01"]]
    assert sorted(r.reason.split(":")[0] for r in batch.refused) == [
        "column 'blobs'",
        "column 'spot'",
        "column 'tiny'",
    ]


def test_a_key_only_delete_takes_base64_text_for_a_bytes_key_the_table_holds() -> None:
    held = pa.schema([pa.field("id", pa.binary()), pa.field("_cdc_stream", pa.string())])
    batch = ChangeBatch(["id"], held=held)
    batch.add(Record.new("delete", position=b"t/0/1", key={"id": "AQE="}))
    batch.add(Record.new("delete", position=b"t/0/2", key={"id": "%%"}))
    assert batch.table().column("id").to_pylist() == [b"\x01\x01"]
    assert len(batch.refused) == 1


def test_a_payload_of_schema_encoded_bytes_is_refused_saying_so() -> None:
    batch = ChangeBatch()
    batch.add(record("create", b"t/0/1", b"\x00\x00\x00\x00\x01\x02", {"id": 1}))  # Avro
    batch.add(record("create", b"t/0/2", b'{"id": 2}', {"id": 2}))  # JSON text: a row
    (refused,) = batch.refused
    assert "payload.after is raw data that is no JSON object" in refused.reason
    assert batch.table().column("id").to_pylist() == [2]


def test_a_delete_needs_its_key_alone_whatever_its_before() -> None:
    batch = ChangeBatch()
    batch.add(Record.new("delete", position=b"t/0/1", key={"id": 1}, before=b"\x00\x01\x02"))
    assert not batch.refused and batch.table().column("id").to_pylist() == [1]


def test_an_integer_past_64_bits_for_an_integer_column_is_refused_not_a_failure() -> None:
    held = pa.schema([pa.field("id", pa.int64()), pa.field("q", pa.int64())])
    batch = ChangeBatch(held=held)
    for number, q in enumerate([2**63 + 1, 2**64 + 5, 6], 1):
        row = {"id": number, "q": q}
        batch.add(record("create", f"t/0/{number}".encode(), row, {"id": number}))
    table = batch.table()
    assert table.column("id").to_pylist() == [3]
    assert table.column("q").to_pylist() == [6]
    assert [r.reason for r in batch.refused] == [
        f"column 'q': value {2**63 + 1} does not fit int64",
        f"column 'q': value {2**64 + 5} does not fit int64",
    ]


def test_a_text_column_takes_any_value_as_its_text_whatever_its_batch() -> None:
    """A number for a text column is its text alone and among text alike (a batch of
    several kinds makes a text column so): never a dead letter in one batch and text in
    another."""
    held = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    values = [123, 1.5, True, Decimal("10.50"), {"a": [1]}, 2**70, 1e16, 1e-7]
    expected = ["123", "1.5", "true", "10.50", '{"a":[1]}', str(2**70)]
    expected += ["10000000000000000", "0.0000001"]  # a number's digits, as a registry's

    def texts(*batch_values: object) -> list[str]:
        batch = ChangeBatch(held=held)
        for number, value in enumerate(batch_values, 1):
            row = {"id": number, "name": value}
            batch.add(record("create", b"t/0/%d" % number, row, {"id": number}))
        table = batch.table()
        assert not batch.refused
        return table.column("name").to_pylist()  # type: ignore[no-any-return]

    assert [texts(value)[0] for value in values] == expected  # each alone in its batch
    assert texts("ann", *values) == ["ann", *expected]  # all in one, among text


def test_an_integer_past_64_bits_for_a_registered_integer_is_refused_not_a_failure() -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("q", pa.int64())])
    batch = ChangeBatch(types=lambda metadata: schema)
    batch.add(record("create", b"t/0/1", {"id": 1, "q": 2**70}, {"id": 1}))
    batch.add(record("create", b"t/0/2", {"id": 2, "q": 3}, {"id": 2}))
    table = batch.table()
    assert table.column("q").to_pylist() == [3]
    assert [r.position for r in batch.refused] == [b"t/0/1"]
    assert "column 'q'" in batch.refused[0].reason


def test_numbers_for_a_registered_text_column_are_their_digits_as_without_one() -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("t", pa.string())])
    registered = ChangeBatch(types=lambda metadata: schema)
    held = ChangeBatch(held=schema)
    for batch in (registered, held):
        for number, value in enumerate([1e16, 1e-7, 12, Decimal("1.50")], 1):
            batch.add(record("create", b"t/0/%d" % number, {"id": number, "t": value}, {"id": 1}))
    texts = ["10000000000000000", "0.0000001", "12", "1.50"]
    assert registered.table().column("t").to_pylist() == texts
    assert held.table().column("t").to_pylist() == texts
