"""``cdc-files`` writes messages one per line from the value column as it is: the bytes, and
the refusals, of the per-message way (``_messages_of`` then ``MessageWriter.write_all``)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc_connectors.connectors.files import FilesWriteError, Settings
from cdc_connectors.connectors.files_write import TaskFile, _lines_of, _messages_of
from cdc_connectors.convert.streams import MessageWriter

_BYTES = st.binary(max_size=12) | st.sampled_from([b"\n", b"a\rb", b"{}\r\n", b"", b"x\n"])
_VALUES = st.lists(st.none() | _BYTES, max_size=8)


def _per_message(values: list[bytes | None], first_row: int, fmt: object) -> bytes | str:
    batch = pa.RecordBatch.from_pydict({"value": pa.array(values, pa.binary())})
    try:
        messages = _messages_of(batch, fmt, True, True, first_row)  # type: ignore[arg-type]
    except FilesWriteError as exc:
        return str(exc)
    out = io.BytesIO()
    MessageWriter(out, type(fmt), kv=False).write_all(messages)  # type: ignore[arg-type]
    return out.getvalue()


def _columns(values: pa.Array, first_row: int, fmt: object) -> bytes | str:
    try:
        return _lines_of(values, fmt, first_row).to_pybytes()  # type: ignore[arg-type]
    except FilesWriteError as exc:
        return str(exc)


@pytest.fixture(scope="module")
def fmt() -> object:
    return Settings.parse({"path": "x", "format": "opencdc-json"}).open_format()


@given(values=_VALUES, first_row=st.integers(0, 10**6), offset=st.integers(0, 2))
def test_lines_from_the_value_column_are_the_per_message_ways(
    fmt: object, values: list[bytes | None], first_row: int, offset: int
) -> None:
    padded = pa.array([b"\n"] * offset + values, pa.binary()).slice(offset)
    assert _columns(padded, first_row, fmt) == _per_message(values, first_row, fmt)


def test_a_text_value_column_is_written_as_its_utf8_bytes(fmt: object) -> None:
    values = pa.array(['{"a":"é"}', "{}"], pa.string())
    assert _columns(values, 0, fmt) == '{"a":"é"}\n{}\n'.encode()


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_task_file_holds_each_batch_a_line_a_message(tmp_path: Path, compression: str) -> None:
    settings = Settings.parse(
        {"path": str(tmp_path), "format": "opencdc-json", "compression": compression}
    )
    task = TaskFile(settings, messages_layout=True)
    task.add(pa.RecordBatch.from_pydict({"value": pa.array([b"{}", b'{"a":1}'])}))
    task.add(pa.RecordBatch.from_pydict({"value": pa.array([], pa.binary())}))
    with pytest.raises(FilesWriteError, match="row 3 of the task has a line break"):
        task.add(pa.RecordBatch.from_pydict({"value": pa.array([b"[]", b"1\n2"])}))
    task.add(pa.RecordBatch.from_pydict({"value": pa.array([b"[]"])}))
    committed = task.close()
    assert committed.records == 3
    assert committed.staged is not None
    data = Path(committed.staged).read_bytes()
    if compression == "gzip":
        data = gzip.decompress(data)
    assert data == b'{}\n{"a":1}\n[]\n'
