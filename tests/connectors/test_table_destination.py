"""The ``cdc-table`` connector on a real Spark: change streams applied, and read back."""

from __future__ import annotations

import base64
import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from cdc_connectors.spark import register

SHOP = Path(__file__).resolve().parents[2] / "examples" / "debezium" / "shop"

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def session(spark: Any) -> Any:
    register(spark)
    return spark


def _changes(session: Any, tmp_path: Path, name: str = "orders.jsonl") -> Any:
    return (
        session.read.format("cdc-files")
        .option("format", "debezium-json")
        .option("registry", f"sqlite:///{tmp_path}/registry.db")
        .load(str(SHOP / name))
    )


def _expected_orders() -> dict[int, tuple[str, Decimal]]:
    """The shop's orders after its changes, from the per-message converter: id -> (status,
    amount)."""
    import orjson

    from cdc_connectors.formats.base import Message
    from cdc_connectors.formats.debezium import DebeziumJsonFormat

    fmt = DebeziumJsonFormat()
    rows: dict[int, tuple[str, Decimal]] = {}
    for line in (SHOP / "orders.jsonl").read_bytes().splitlines():
        try:
            records = fmt.decode(Message(line))
        except Exception:
            continue
        for record in records:
            op = record.operation.name.lower()
            if op == "delete":
                rows.pop(record.payload.before["id"], None)
            else:
                after = record.payload.after
                rows[after["id"]] = (after["status"], Decimal(str(after["amount"])))
    assert orjson  # the examples hold every operation
    return rows


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_change_stream_becomes_a_typed_table(session: Any, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / "orders"
    writer = _changes(session, tmp_path).write.format("cdc-table").option("format", fmt)
    writer = writer.option("keyColumns", "id").option(
        "registry", f"sqlite:///{tmp_path}/registry.db"
    )
    writer.mode("append").save(str(target))
    read = session.read.format("cdc-table").option("format", fmt).load(str(target))
    types = dict(read.dtypes)
    assert types["amount"] == "decimal(10,2)"
    assert types["created_at"] == "timestamp"
    assert types["ship_date"] == "date"
    found = {r["id"]: (r["status"], r["amount"]) for r in read.collect()}
    assert found == _expected_orders()
    letters = list((target / "_cdc_dead_letters").glob("*.jsonl"))
    assert letters, "the examples' bad lines went to the dead letters"
    # a second run of the same changes changes nothing
    writer.mode("append").save(str(target))
    again = session.read.format("cdc-table").option("format", fmt).load(str(target))
    assert {r["id"]: (r["status"], r["amount"]) for r in again.collect()} == found


def test_columns_are_typed_through_a_registry_served_over_http(
    session: Any, tmp_path: Path
) -> None:
    from tests.registry.conftest import serve

    server = serve(f"sqlite:///{tmp_path}/served.db")
    try:
        target = tmp_path / "orders"
        changes = session.read.format("cdc-files").option("format", "debezium-json")
        changes = changes.option("registry", server.url).load(str(SHOP / "orders.jsonl"))
        changes.write.format("cdc-table").option("keyColumns", "id").option(
            "registry", server.url
        ).mode("append").save(str(target))
    finally:
        server.stop()
    read = session.read.format("cdc-table").load(str(target))
    types = dict(read.dtypes)
    assert (types["amount"], types["created_at"], types["ship_date"]) == (
        "decimal(10,2)",
        "timestamp",
        "date",
    )
    assert {r["id"]: (r["status"], r["amount"]) for r in read.collect()} == _expected_orders()


def test_an_independent_reader_sees_the_mirror(session: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable, QueryBuilder

    target = tmp_path / "orders"
    _changes(session, tmp_path).write.format("cdc-table").option("keyColumns", "id").mode(
        "append"
    ).save(str(target))
    table = DeltaTable(str(target))
    found = pa.table(
        QueryBuilder().register("orders", table).execute("SELECT id, status FROM orders").read_all()
    )
    assert sorted(found.column("id").to_pylist()) == sorted(_expected_orders())


def _debezium(op: str, lsn: int, status: str | None) -> str:
    """A schemaless Debezium JSON change of order 1 at ``lsn``."""
    import orjson

    row = None if status is None else {"id": 1, "status": status}
    source = {"connector": "postgresql", "name": "shop", "lsn": lsn, "ts_ms": lsn}
    value = {"before": row if op == "d" else None, "after": None if op == "d" else row}
    value.update(source=source, op=op, ts_ms=lsn)
    if op == "d":
        value["before"] = {"id": 1, "status": None}
    return orjson.dumps(value).decode()


def _statuses(session: Any, target: Path) -> list[Any]:
    read = session.read.format("cdc-table").load(str(target))
    return [(r["id"], r["status"]) for r in read.orderBy("id").collect()]


def test_a_change_older_in_the_database_log_changes_nothing_when_it_arrives_late(
    session: Any, tmp_path: Path
) -> None:
    """The default order is the log's: a change read later (another file, a later Kafka
    offset) that the database made earlier does not undo a newer one."""
    target = tmp_path / "orders"
    batches = [
        [_debezium("c", 100, "new"), _debezium("u", 300, "shipped")],
        [_debezium("u", 200, "paid")],  # late: older in the log
        [_debezium("u", 400, "delivered")],
        [_debezium("d", 500, None), _debezium("c", 450, "revived?")],  # the create is older
    ]
    expected = [[(1, "shipped")], [(1, "shipped")], [(1, "delivered")], []]
    for number, (lines, wanted) in enumerate(zip(batches, expected, strict=True)):
        source = tmp_path / f"z{9 - number}.jsonl"  # later files sort first
        source.write_text("\n".join(lines) + "\n")
        changes = session.read.format("cdc-files").option("format", "debezium-json")
        changes.load(str(source)).write.format("cdc-table").option("keyColumns", "id").mode(
            "append"
        ).save(str(target))
        assert _statuses(session, target) == wanted, f"after batch {number}"


def test_records_whose_positions_carry_no_order_apply_as_they_arrive(
    session: Any, tmp_path: Path
) -> None:
    """OpenCDC records of another system (Conduit's positions are its own bytes): a write's
    changes apply in their order, after every earlier write's."""
    import base64

    import orjson

    def record(position: str, op: str, status: str) -> bytes:
        return orjson.dumps(
            {
                "position": base64.b64encode(position.encode()).decode(),
                "operation": op,
                "metadata": {"opencdc.version": "v1"},
                "key": {"id": 1},
                "payload": {"before": None, "after": {"id": 1, "status": status}},
            }
        )

    target = tmp_path / "orders"
    for number, lines in enumerate(
        [
            [record('{"lsn":"0/9"}', "create", "new"), record('{"lsn":"0/A"}', "update", "paid")],
            [record('{"lsn":"0/1"}', "update", "shipped")],
        ]
    ):
        source = tmp_path / f"records-{number}.jsonl"
        source.write_bytes(b"\n".join(lines) + b"\n")
        changes = session.read.format("cdc-files").option("format", "opencdc-json")
        changes.load(str(source)).write.format("cdc-table").mode("append").save(str(target))
    assert _statuses(session, target) == [(1, "shipped")]
    assert not (target / "_cdc_dead_letters").exists()


def test_a_writer_naming_no_keys_takes_the_tables(session: Any, tmp_path: Path) -> None:
    import orjson

    target = tmp_path / "orders"
    for number, status in enumerate(["new", "paid"]):
        source = tmp_path / f"plain-{number}.jsonl"
        record = {
            "position": "",
            "operation": "update",
            "metadata": {},
            "key": None,  # Debezium values alone: no key but keyColumns
            "payload": {"after": {"id": 1, "status": status}},
        }
        source.write_bytes(orjson.dumps(record) + b"\n")
        writer = session.read.format("cdc-files").option("format", "opencdc-json")
        writer = writer.load(str(source)).write.format("cdc-table").mode("append")
        if number == 0:
            writer = writer.option("keyColumns", "id")
        writer.save(str(target))
    assert _statuses(session, target) == [(1, "paid")]
    assert not (target / "_cdc_dead_letters").exists()


def test_streaming_micro_batches_commit_once_each(session: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(SHOP / "orders.jsonl", source / "a.jsonl")
    target, checkpoint = tmp_path / "orders", tmp_path / "checkpoint"

    def run() -> None:
        stream = (
            session.readStream.format("cdc-files")
            .option("format", "debezium-json")
            .load(str(source))
            .writeStream.format("cdc-table")
            .option("keyColumns", "id")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start(str(target))
        )
        stream.awaitTermination()

    run()
    from cdc_connectors.connectors.table import table_app_id

    app = table_app_id(str(checkpoint), "cdc-table")
    assert app != f"cdc-table:{checkpoint}"  # the query's id, from its checkpoint
    assert DeltaTable(str(target)).transaction_version(app) == 0
    shutil.copy(SHOP / "orders.jsonl", source / "b.jsonl")  # the same changes, later
    run()
    table = DeltaTable(str(target))
    assert table.transaction_version(app) == 1
    versions = table.version()
    # a micro-batch replayed after a crash (its commit run again) changes nothing
    from cdc_connectors.connectors.table import TableDataSource

    rows = _changes(session, tmp_path)._collect_as_arrow()
    options = {"path": str(target), "keyColumns": "id", "checkpointLocation": str(checkpoint)}
    writer = TableDataSource(options).streamWriter(_changes(session, tmp_path).schema, False)
    message = writer.write(iter(rows))
    writer.commit([message], 1)
    assert DeltaTable(str(target)).version() == versions


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({}, "setting 'path' is required"),
        ({"path": "x", "format": "hudi"}, "'format' must be one of delta, iceberg"),
        ({"path": "x", "catalog.uri": "y"}, "'catalog.*' are for format iceberg"),
        ({"path": "x", "nope": "1"}, "has no setting 'nope' \\(settings: "),
        ({"path": "x", "keyColumn": "id"}, "'keyColumn'; did you mean 'keyColumns'\\?"),
        ({"path": "x", "txnAppId": "a"}, "'txnAppId' and 'txnVersion' go together"),
        ({"path": "x", "mode": "scd"}, "'mode' must be one of upsert, history"),
        ({"path": "x", "keyColumns": "id,region,id"}, "'keyColumns' names 'id' twice"),
        ({"path": "x", "keyColumns": "id,ID"}, "'keyColumns' names 'ID', 'id' twice"),
    ],
)
def test_bad_settings_are_one_line(options: dict[str, str], said: str) -> None:
    from cdc_connectors.connectors.messages import SettingError
    from cdc_connectors.connectors.table import TableDataSource

    with pytest.raises(SettingError, match=said):
        TableDataSource(options)


def test_overwrite_is_refused(session: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="applies changes"):
        _changes(session, tmp_path).write.format("cdc-table").mode("overwrite").save(
            str(tmp_path / "t")
        )


def test_history_and_soft_deletes_through_spark(session: Any, tmp_path: Path) -> None:
    history = tmp_path / "history"
    _changes(session, tmp_path).write.format("cdc-table").option("keyColumns", "id").option(
        "mode", "history"
    ).mode("append").save(str(history))
    rows = session.read.format("cdc-table").load(str(history)).collect()
    versions = sorted((r["id"], r["status"], r["_cdc_is_current"]) for r in rows)
    assert versions == [
        (1, "paid", False),
        (2, "new", True),
        (3, "new", False),
        (3, "shipped", True),
    ]

    soft = tmp_path / "soft"
    _changes(session, tmp_path).write.format("cdc-table").option("keyColumns", "id").option(
        "deletes", "soft"
    ).mode("append").save(str(soft))
    rows = session.read.format("cdc-table").load(str(soft)).collect()
    assert sorted((r["id"], r["_cdc_deleted"]) for r in rows) == [(1, True), (2, False), (3, False)]


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_an_earlier_version_of_the_table_is_read_back(
    session: Any, tmp_path: Path, fmt: str
) -> None:
    import datetime as dt
    import time

    lines = (SHOP / "orders.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_text("".join(lines[:2]))  # the two snapshots alone
    (tmp_path / "b.jsonl").write_text("".join(lines))
    target = tmp_path / "orders"

    def write(name: str) -> None:
        changes = session.read.format("cdc-files").option("format", "debezium-json")
        changes.load(str(tmp_path / name)).write.format("cdc-table").option("format", fmt).option(
            "keyColumns", "id"
        ).mode("append").save(str(target))

    write("a.jsonl")
    time.sleep(0.05)
    between = dt.datetime.now(dt.UTC).isoformat()
    time.sleep(0.05)
    write("b.jsonl")

    def ids(**options: str) -> list[int]:
        reader = session.read.format("cdc-table").option("format", fmt)
        for name, value in options.items():
            reader = reader.option(name, value)
        return sorted(r["id"] for r in reader.load(str(target)).collect())

    assert ids() == [2, 3]
    assert ids(timestampAsOf=between) == [1, 2]
    with pytest.raises(Exception, match="'timestampAsOf'"):
        ids(timestampAsOf="2000-01-01T00:00:00+00:00")  # before the table was
    if fmt == "delta":
        assert ids(versionAsOf="1") == [1, 2]
    else:
        from cdc_connectors.table.iceberg import IcebergStore

        table = IcebergStore(str(target), "cdc.orders").table()
        first = table.snapshots()[0].snapshot_id
        assert ids(snapshotId=str(first)) == [1, 2]


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_read_is_a_task_per_data_file(session: Any, tmp_path: Path, fmt: str) -> None:
    import orjson

    target = tmp_path / "orders"
    for first in (1, 4):  # new keys only: a data file each
        source = tmp_path / f"from-{first}.jsonl"
        source.write_bytes(
            b"".join(
                orjson.dumps(
                    {
                        "position": "",
                        "operation": "create",
                        "metadata": {},
                        "key": {"id": n},
                        "payload": {"after": {"id": n, "status": "new"}},
                    }
                )
                + b"\n"
                for n in range(first, first + 3)
            )
        )
        changes = session.read.format("cdc-files").option("format", "opencdc-json")
        changes.load(str(source)).write.format("cdc-table").option("format", fmt).mode(
            "append"
        ).save(str(target))
    if fmt == "delta":
        from deltalake import DeltaTable

        files = len(DeltaTable(str(target)).file_uris())
    else:
        from cdc_connectors.table.iceberg import IcebergStore

        files = len(list(IcebergStore(str(target), "cdc.orders").table().scan().plan_files()))
    read = session.read.format("cdc-table").option("format", fmt).load(str(target))
    assert files == 2 and read.rdd.getNumPartitions() == files
    assert sorted(r["id"] for r in read.collect()) == [1, 2, 3, 4, 5, 6]


def test_places_that_cannot_be_a_table_are_one_line(tmp_path: Path) -> None:
    from cdc_connectors.connectors.messages import SettingError
    from cdc_connectors.connectors.table import TableDataSource

    a_file = tmp_path / "file"
    a_file.write_text("x")
    delta = tmp_path / "delta"
    (delta / "_delta_log").mkdir(parents=True)
    cases = [
        ({"path": str(a_file)}, "'path': .* is a file, not a directory"),
        ({"path": str(tmp_path / "t"), "deadLetters": str(a_file)}, "'deadLetters': .* is a file"),
        ({"path": str(delta), "format": "iceberg"}, "holds a Delta table"),
        ({"path": "x", "mode": "history", "deletes": "soft"}, "soft is for mode upsert"),
    ]
    for options, said in cases:
        with pytest.raises(SettingError, match=said):
            TableDataSource(options)


def test_tables_that_do_not_open_are_one_line_naming_the_setting(tmp_path: Path) -> None:
    from cdc_connectors.connectors.messages import SettingError
    from cdc_connectors.connectors.table import TableDataSource

    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("mine")
    iceberg = {"path": str(tmp_path / "w"), "format": "iceberg"}
    cases = [
        ({"path": str(junk)}, "'path': .* holds files and no Delta table \\(notes.txt\\)"),
        ({**iceberg, "catalog.type": "bogus"}, "'catalog': the Iceberg catalog does not open"),
        (
            {**iceberg, "catalog.uri": "postgresql+psycopg2://user:@127.0.0.1:1/db"},
            "'catalog.uri': the URI's password is empty",
        ),
        ({**iceberg, "catalog.token": " "}, "'catalog.token' is empty"),
        ({**iceberg, "table": "a.b.c.."}, "'table' must be namespace.name \\(no part empty\\)"),
        # another table's own: written to, it would break that table
        (
            {"path": str(tmp_path / "t" / "_cdc_tombstones")},
            "'path': .* is inside _cdc_tombstones, a folder of the table at .*/t'",
        ),
        ({"path": str(tmp_path / "t" / "_delta_log" / "x")}, "is inside _delta_log"),
        (
            {**iceberg, "table": "cdc.w_cdc_tombstones"},
            "'table': 'cdc.w_cdc_tombstones' is the tombstone table of 'cdc.w'",
        ),
    ]
    for options, said in cases:
        with pytest.raises(SettingError, match=said) as refused:
            TableDataSource(options).settings.check_table()
        assert "\n" not in str(refused.value)
    assert (junk / "notes.txt").read_text() == "mine" and len(list(junk.iterdir())) == 1


def test_rows_that_are_no_records_are_refused_in_one_line(session: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="cdc-table writes OpenCDC records") as refused:
        session.range(3).write.format("cdc-table").mode("append").save(str(tmp_path / "t"))
    assert "KeyError" not in str(refused.value)
    assert not (tmp_path / "t").exists()


def test_a_table_kept_otherwise_is_refused_before_anything_runs(
    session: Any, tmp_path: Path
) -> None:
    from cdc_connectors.connectors.messages import SettingError
    from cdc_connectors.connectors.table import TableDataSource

    target = str(tmp_path / "orders")
    _changes(session, tmp_path).write.format("cdc-table").option("keyColumns", "id").mode(
        "append"
    ).save(target)
    for options, said in [
        ({"keyColumns": "status"}, "'keyColumns': the table at .* has key columns id"),
        ({"mode": "history"}, "'mode': the table at .* was made with mode upsert"),
        ({"deletes": "soft"}, "'deletes': the table at .* was made with deletes hard"),
        ({"orderBy": "position"}, "'orderBy': the table at .* was made with orderBy auto"),
    ]:
        with pytest.raises(SettingError, match=said):
            TableDataSource({"path": target, **options}).settings.check_table()
    with pytest.raises(Exception, match="'versionAsOf': the table's latest version is 1, not 99"):
        session.read.format("cdc-table").option("versionAsOf", "99").load(target).collect()
    warehouse = tmp_path / "no-warehouse"
    with pytest.raises(Exception, match="no Iceberg warehouse at"):
        session.read.format("cdc-table").option("format", "iceberg").load(str(warehouse))
    assert not warehouse.exists()  # no catalog made by looking


def test_read_settings_of_the_other_format_or_out_of_range_are_refused() -> None:
    from cdc_connectors.connectors.messages import SettingError
    from cdc_connectors.connectors.table import TableDataSource

    for options, said in [
        ({"format": "iceberg", "versionAsOf": "1"}, "'versionAsOf' is a Delta version"),
        ({"versionAsOf": "-1"}, "'versionAsOf' is a Delta version"),
        ({"snapshotId": "5"}, "'snapshotId' is for format iceberg"),
        ({"timestampAsOf": "yesterday"}, "'timestampAsOf' must be an ISO 8601 time"),
        ({"versionAsOf": "0", "timestampAsOf": "2999-01-01"}, "give one of them"),
        ({"format": "iceberg", "table": "a.b.c."}, "'table' must be namespace.name"),
        ({"format": "iceberg", "table": "ns..t"}, "'table' must be namespace.name"),
        ({"registry": "http://user:@127.0.0.1:9/"}, "'registry': .* an empty password"),
    ]:
        with pytest.raises(SettingError, match=said):
            TableDataSource({"path": "nowhere", **options})


def test_a_replayed_batch_writes_its_dead_letters_again(tmp_path: Path) -> None:
    from cdc_connectors.connectors.table_settings import Settings
    from cdc_connectors.connectors.table_write import TableCommitMessage, commit_changes
    from cdc_connectors.table.store import Txn

    settings = Settings.parse({"path": str(tmp_path / "t"), "keyColumns": "id"})
    message = TableCommitMessage(b"", ["id"], [b'{"position":"","operation":"create"}'], 1)
    commit_changes(settings, [message], Txn("q", 0))
    (tmp_path / "t" / "_cdc_dead_letters" / "batch-000000000000.jsonl").unlink()
    commit_changes(settings, [message], Txn("q", 0))  # a replay: the file comes back whole
    assert (tmp_path / "t" / "_cdc_dead_letters" / "batch-000000000000.jsonl").read_bytes()


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_value_the_tables_column_cannot_take_is_a_dead_letter_alone(
    session: Any, tmp_path: Path, fmt: str
) -> None:
    import orjson

    target = tmp_path / "orders"

    def write(number: int, *rows: dict[str, Any]) -> None:
        source = tmp_path / f"plain-{number}.jsonl"
        lines = [
            orjson.dumps(
                {
                    "position": "",
                    "operation": "update",
                    "metadata": {},
                    "key": {"id": row["id"]},
                    "payload": {"after": row},
                }
            )
            for row in rows
        ]
        source.write_bytes(b"".join(line + b"\n" for line in lines))
        read = session.read.format("cdc-files").option("format", "opencdc-json")
        read.load(str(source)).write.format("cdc-table").option("format", fmt).mode("append").save(
            str(target)
        )

    write(0, {"id": 1, "status": "new", "qty": 1}, {"id": 2, "status": "new", "qty": 2})
    write(1, {"id": 1, "status": "paid", "qty": "many"}, {"id": 2, "status": "paid", "qty": 3})
    read = session.read.format("cdc-table").option("format", fmt).load(str(target))
    assert dict(read.dtypes)["qty"] == "bigint"
    found = sorted((r["id"], r["status"], r["qty"]) for r in read.collect())
    assert found == [(1, "new", 1), (2, "paid", 3)]
    (letter,) = [
        orjson.loads(line)
        for path in (target / "_cdc_dead_letters").glob("*.jsonl")
        for line in path.read_bytes().splitlines()
    ]
    assert (
        "column 'qty': value 'many' does not fit int64"
        in (letter["metadata"]["conduit.dlq.nack.error"])
    )
    assert b'"qty":"many"' in base64.b64decode(letter["payload"]["after"])


def test_keys_no_record_can_have_are_a_setting_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    import orjson

    from cdc_connectors.connectors.messages import SettingError
    from cdc_connectors.connectors.table_settings import Settings
    from cdc_connectors.connectors.table_write import TaskChanges, commit_changes

    def commit(options: dict[str, str], *afters: dict[str, Any]) -> None:
        settings = Settings.parse({"path": str(tmp_path / "t"), **options})
        values = [
            orjson.dumps(
                {"position": "", "operation": "create", "metadata": {}, "payload": {"after": a}}
            )
            for a in afters
        ]
        task = TaskChanges(settings, records_layout=False)
        task.add(pa.RecordBatch.from_pydict({"value": pa.array(values, pa.binary())}))
        commit_changes(settings, [task.close()], None)

    with pytest.raises(SettingError, match=r"'keyColumns': no record has column.s. nope"):
        commit({"keyColumns": "nope"}, {"id": 1}, {"id": 2})
    with pytest.raises(SettingError, match=r"'keyColumns': .* key column 'price' is double"):
        commit({"keyColumns": "price"}, {"id": 1, "price": 1.5})
    with pytest.raises(SettingError, match=r"'orderBy': no record carries metadata 'postion'"):
        commit({"keyColumns": "id", "orderBy": "postion"}, {"id": 1}, {"id": 2})
    assert not (tmp_path / "t").exists()
    commit({"keyColumns": "id"}, {"id": 1}, {"other": 2})  # one without: a dead letter
    assert len(list((tmp_path / "t" / "_cdc_dead_letters").glob("*.jsonl"))) == 1


def test_a_place_no_folder_can_be_made_in_is_one_line_even_for_root(tmp_path: Path) -> None:
    """Permissions do not tell (root passes them, ``/proc`` refuses anyway): the check makes
    the folder, or a file in it, and undoes it."""
    from cdc_connectors.connectors.messages import SettingError
    from cdc_connectors.connectors.table import TableDataSource

    for fmt in ("delta", "iceberg"):
        with pytest.raises(SettingError, match="'path': '/proc' cannot be written") as refused:
            TableDataSource({"path": "/proc/cdc-table", "format": fmt}).settings.check_table()
        assert "\n" not in str(refused.value)
    writable = tmp_path / "new" / "table"
    TableDataSource({"path": str(writable)}).settings.check_table()
    assert not (tmp_path / "new").exists()  # tried and undone
    (tmp_path / "held").mkdir()
    TableDataSource({"path": str(tmp_path / "held")}).settings.check_table()
    assert list((tmp_path / "held").iterdir()) == []


def test_a_batch_write_keeps_every_dead_letter_but_the_same_one_again(tmp_path: Path) -> None:
    from cdc_connectors.connectors.table_settings import Settings
    from cdc_connectors.connectors.table_write import TableCommitMessage, commit_changes

    settings = Settings.parse({"path": str(tmp_path / "t"), "keyColumns": "id"})

    def letter(payload: str, reason: str) -> bytes:
        return (
            b'{"position":"","operation":"create","metadata":{"conduit.dlq.nack.error":"'
            + reason.encode()
            + b'"},"key":null,"payload":{"before":null,"after":"'
            + payload.encode()
            + b'"}}'
        )

    # two runs of the same two messages at one place, the second with a third message there
    first, second = (
        ["eyJ4IjoxfQ==", "eyJ4IjoyfQ=="],
        ["eyJ4IjoxfQ==", "eyJ4IjoyfQ==", "eyJ4IjozfQ=="],
    )
    for reason, payloads in (("first", first), ("second", second)):
        letters = [letter(payload, reason) for payload in payloads]
        commit_changes(settings, [TableCommitMessage(b"", ["id"], letters, 2)], None)
    found = sorted(
        (line["payload"]["after"], line["metadata"]["conduit.dlq.nack.error"])
        for f in (tmp_path / "t" / "_cdc_dead_letters").iterdir()
        for line in map(json.loads, f.read_text().splitlines())
    )
    assert found == [
        ("eyJ4IjoxfQ==", "first"),
        ("eyJ4IjoyfQ==", "first"),
        ("eyJ4IjozfQ==", "second"),
    ]


def _typed_records(tmp_path: Path, kinds: list[str]) -> tuple[str, list[bytes]]:
    """A registry with one version of subject ``m.payload`` per kind of column ``v`` (an
    Avro type), and a record naming each version in turn."""
    import orjson
    from confluent_kafka.schema_registry import Schema

    from cdc_connectors.registry import open_registry

    url = f"sqlite:///{tmp_path}/r.db"
    registry = open_registry(url)
    registry.set_compatibility("m.payload", "NONE")  # (as a database's ALTER may need)
    for kind in kinds:
        schema = {
            "type": "record",
            "name": "Row",
            "fields": [{"name": "id", "type": "int"}, {"name": "v", "type": ["null", kind]}],
        }
        registry.register_schema("m.payload", Schema(json.dumps(schema), "AVRO"))
    values = {"string": "ann", "int": 5, "long": 2**40}
    records = [
        orjson.dumps(
            {
                "position": base64.b64encode(f"m/0/{n}".encode()).decode(),
                "operation": "create",
                "metadata": {
                    "opencdc.payload.schema.subject": "m.payload",
                    "opencdc.payload.schema.version": str(n + 1),
                },
                "key": {"id": n},
                "payload": {"before": None, "after": {"id": n, "v": values[kind]}},
            }
        )
        for n, kind in enumerate(kinds)
    ]
    return url, records


def _task_messages(settings: Any, records: list[bytes], split: bool) -> list[Any]:
    """The commit messages of tasks given ``records`` (the first alone in one task, when
    ``split``), as a write's tasks send them."""
    from cdc_connectors.connectors.table_write import TaskChanges

    messages = []
    for part in [records[:1], records[1:]] if split else [records]:
        task = TaskChanges(settings, records_layout=False)
        task.add(pa.RecordBatch.from_pydict({"value": pa.array(part, pa.binary())}))
        messages.append(task.close())
    return messages


@pytest.mark.parametrize("split", [False, True], ids=["one task", "two tasks"])
def test_two_schemas_of_one_batch_that_type_a_column_apart_refuse_the_batch(
    tmp_path: Path, split: bool
) -> None:
    """A batch that spans a change of a column's registered type other than a widening
    (string to int here, as across an ALTER) is refused whole, naming the column, whether
    one task or two saw the two schemas; before, the last schema typed the column and the
    other records were dead letters, or their values were silently converted."""
    from cdc_connectors.connectors.table_settings import Settings
    from cdc_connectors.connectors.table_write import commit_changes
    from cdc_connectors.table.evolve import SchemaChangeError

    for kinds in (["string", "int"], ["int", "string"]):
        folder = tmp_path / "-".join(kinds)
        folder.mkdir()
        url, records = _typed_records(folder, kinds)
        settings = Settings.parse({"path": str(folder / "t"), "registry": url})
        messages = _task_messages(settings, records, split)
        with pytest.raises(SchemaChangeError, match=r"column 'v' is .* of the same batch"):
            commit_changes(settings, messages, None)
        assert settings.store().schema() is None  # no table made, no row written
        assert not (folder / "t" / "_cdc_dead_letters").exists()


@pytest.mark.parametrize("kinds", [["int", "long"], ["long", "int"]], ids=["up", "down"])
@pytest.mark.parametrize("split", [False, True], ids=["one task", "two tasks"])
def test_two_schemas_of_one_batch_that_widen_a_column_give_it_the_wider_type(
    tmp_path: Path, split: bool, kinds: list[str]
) -> None:
    from deltalake import DeltaTable

    from cdc_connectors.connectors.table_settings import Settings
    from cdc_connectors.connectors.table_write import commit_changes

    url, records = _typed_records(tmp_path, kinds)
    settings = Settings.parse({"path": str(tmp_path / "t"), "registry": url})
    commit_changes(settings, _task_messages(settings, records, split), None)
    table = DeltaTable(str(tmp_path / "t")).to_pyarrow_table()
    assert table.schema.field("v").type == pa.int64()
    found = zip(table["id"].to_pylist(), table["v"].to_pylist(), strict=True)
    assert sorted(found) == ([(0, 5), (1, 2**40)] if kinds[0] == "int" else [(0, 2**40), (1, 5)])


def test_a_destination_given_a_setting_for_reading_is_refused_before_it_writes(
    tmp_path: Path,
) -> None:
    """A pipeline's destination checks (on the driver, before Spark starts) refuse
    ``versionAsOf`` and the other read settings, and make nothing at the table's path."""
    from cdc_connectors.pipeline import ConfigError, parse

    document = {
        "version": "2.2",
        "pipelines": [
            {
                "id": "p",
                "connectors": [
                    {
                        "id": "in",
                        "type": "source",
                        "plugin": "files",
                        "settings": {"path": str(tmp_path), "format": "debezium-json"},
                    },
                    {
                        "id": "out",
                        "type": "destination",
                        "plugin": "table",
                        "settings": {"path": str(tmp_path / "t"), "versionAsOf": "3"},
                    },
                ],
            }
        ],
    }
    import yaml

    with pytest.raises(ConfigError, match=r"versionAsOf.*'versionAsOf' is not for writing"):
        parse(yaml.safe_dump(document, sort_keys=False), "p.yaml")
    assert not (tmp_path / "t").exists()


def test_the_line_of_a_write_counts_in_words() -> None:
    from cdc_connectors.connectors.table_write import Committed
    from cdc_connectors.table.apply import Applied

    assert Committed(1, Applied(1, 0), 0).line("t", "d", None) == (
        "cdc-table: t: 1 record, 1 change applied"
    )
    assert Committed(3, Applied(0, 2), 1).line("t", "d", None) == (
        "cdc-table: t: 3 records, 0 changes applied, 2 older than the table (left), 1 refused (d)"
    )


def test_a_table_librarys_failure_is_one_line_without_terminal_colours() -> None:
    from cdc_connectors.connectors.table import _library_failure

    # (as delta-rs raises it: an OSError of one message, its causes coloured)
    failure = OSError("Generic LocalFileSystem error \x1b[31m↳\x1b[0m Unable to open file\n x")
    assert _library_failure(failure) == (
        "cannot write the table: Generic LocalFileSystem error ↳ Unable to open file x"
    )
