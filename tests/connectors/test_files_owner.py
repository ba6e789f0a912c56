"""An output directory of ``cdc-files`` belongs to one streaming query: another query, or a
batch write, gets one clear error and nothing of its batch lands there."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import BinaryType, StructField, StructType

from cdc_connectors.connectors.files import FilesDataSource, FilesWriteError
from cdc_connectors.connectors.files_owner import OWNER_FILE
from tests.connectors.test_files_destination import files_under


def visible(out: Path) -> list[str]:
    return [name for name in files_under(out) if not name.startswith("_")]


MESSAGES = StructType([StructField("value", BinaryType())])


def checkpoint(tmp_path: Path, name: str, query: str) -> str:
    """A checkpoint directory as Spark leaves it: ``metadata`` holds the query's id."""
    location = tmp_path / name
    location.mkdir()
    (location / "metadata").write_text(json.dumps({"id": query}) + "\n")
    return str(location)


def stream_writer(out: Path, location: str | None):  # type: ignore[no-untyped-def]
    options = {"path": str(out)}
    if location is not None:
        options["checkpointLocation"] = location
    return FilesDataSource(options).streamWriter(MESSAGES, False)


def commit(writer, values: list[bytes], batch_id: int) -> None:  # type: ignore[no-untyped-def]
    message = writer.write(iter([pa.RecordBatch.from_pydict({"value": values})]))
    writer.commit([message], batch_id)


def test_the_first_commit_names_the_query_and_another_query_is_refused(tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    first = stream_writer(out, checkpoint(tmp_path, "a", "query-a"))
    commit(first, [b"1"], 0)
    marker = json.loads((out / OWNER_FILE).read_text())
    assert marker == {"query": "query-a", "checkpoint": str(tmp_path / "a")}
    # the second query's batch 0 would have been taken for a replay and dropped
    second_location = checkpoint(tmp_path, "b", "query-b")
    with pytest.raises(FilesWriteError, match=r"belongs to the streaming query \(query query-a"):
        stream_writer(out, second_location)
    # a writer that slipped past the start (a race) is refused at its commit, and its files go
    racing = stream_writer(tmp_path / "elsewhere", second_location)
    racing.settings = FilesDataSource({"path": str(out)}).settings
    with pytest.raises(FilesWriteError, match="give each streaming query its own directory"):
        commit(racing, [b"lost?"], 0)
    assert visible(out) == ["batch-000000000000/part-00000.jsonl"]
    assert (out / "batch-000000000000" / "part-00000.jsonl").read_bytes() == b"1\n"


def test_the_same_query_restarted_from_its_checkpoint_goes_on(tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    location = checkpoint(tmp_path, "a", "query-a")
    commit(stream_writer(out, location), [b"1"], 0)
    commit(stream_writer(out, location), [b"2"], 1)
    assert visible(out) == [
        "batch-000000000000/part-00000.jsonl",
        "batch-000000000001/part-00000.jsonl",
    ]


def test_a_new_checkpoint_at_the_same_place_is_another_query(tmp_path):  # type: ignore[no-untyped-def]
    """Deleting a checkpoint starts the batch numbers again: its batch 0 must not vanish."""
    out = tmp_path / "out"
    location = checkpoint(tmp_path, "a", "query-a")
    commit(stream_writer(out, location), [b"1"], 0)
    (Path(location) / "metadata").write_text(json.dumps({"id": "query-new"}) + "\n")
    with pytest.raises(FilesWriteError, match="belongs to"):
        stream_writer(out, location)


def test_a_batch_write_into_a_query_s_directory_is_refused(tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    commit(stream_writer(out, checkpoint(tmp_path, "a", "query-a")), [b"1"], 0)
    with pytest.raises(FilesWriteError, match="a batch write there would mix"):
        FilesDataSource({"path": str(out)}).writer(MESSAGES, False)


def test_an_unreadable_marker_is_named(tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    out.mkdir()
    (out / OWNER_FILE).write_text("{not json")
    with pytest.raises(FilesWriteError, match=f"{OWNER_FILE} is not a readable owner marker"):
        stream_writer(out, checkpoint(tmp_path, "a", "query-a"))


def test_a_query_without_a_checkpoint_location_is_not_checked(tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    commit(stream_writer(out, None), [b"1"], 0)
    assert not (out / OWNER_FILE).exists()


@pytest.mark.spark
def test_two_streaming_queries_into_one_directory_lose_nothing(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Before, the second query's batches were taken for replays and half the records went."""
    from tests.connectors.test_files_source import opencdc_line, register, write_lines

    register(spark)
    out = tmp_path / "out"
    for name, first in (("a", 0), ("b", 100)):
        write_lines(
            tmp_path / f"in-{name}" / "f.jsonl", [opencdc_line(first + i) for i in range(5)]
        )

    def start(name: str):  # type: ignore[no-untyped-def]
        return (
            spark.readStream.format("cdc-files")
            .load(str(tmp_path / f"in-{name}"))
            .writeStream.format("cdc-files")
            .option("checkpointLocation", str(tmp_path / f"checkpoint-{name}"))
            .trigger(availableNow=True)
            .start(str(out))
        )

    first = start("a")
    first.awaitTermination(60)
    assert first.exception() is None
    second = start("b")
    with pytest.raises(Exception, match="belongs to the streaming query"):
        second.awaitTermination(60)
    error = str(second.exception())
    assert "belongs to the streaming query" in error and "checkpoint-a" in error
    lines = [
        json.loads(line) for name in visible(out) for line in (out / name).read_text().splitlines()
    ]
    assert sorted(record["key"]["id"] for record in lines) == [0, 1, 2, 3, 4]
    # the first query, restarted, goes on
    write_lines(tmp_path / "in-a" / "g.jsonl", [opencdc_line(5)])
    again = start("a")
    again.awaitTermination(60)
    assert again.exception() is None
    assert len(visible(out)) == 2
