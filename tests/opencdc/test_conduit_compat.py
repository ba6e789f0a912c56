"""What we write parses with an independent definition of Conduit's record, and back.

The definition in tests/fixtures/conduit_record.proto was written from the
published field numbers alone (another package, other names) and is compiled
here at test time into its own descriptor pool.
"""

from __future__ import annotations

import io

import orjson
import pytest

from cdc_connectors.convert import delimit, iter_delimited
from tests.conftest import run_cli
from tests.protoc import compile_proto, message_class

from .canonical import CANONICAL, SPEC_EXAMPLE_RECORD


@pytest.fixture(scope="module")
def conduit_rec():
    pool = compile_proto("conduit_record.proto")
    return message_class(pool, "conduitcheck.v1.Rec")


def _struct_to_dict(struct) -> dict:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(struct)


def test_convert_output_decodes_with_an_independent_definition(tmp_path, conduit_rec):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(CANONICAL) + b"\n")
    result = run_cli("convert", "--from", "opencdc-json", "--to", "opencdc-proto", str(src))
    assert result.returncode == 0, result.stderr
    messages = [m for _, m in iter_delimited(io.BytesIO(result.stdout))]
    assert len(messages) == 2

    spec = conduit_rec.FromString(messages[1])
    assert spec.position == b"standing"
    assert spec.operation == 2  # OP_UPDATE
    assert dict(spec.metadata) == {
        "file.path": "./example.in",
        "opencdc.readAt": "1663858188836816000",
        "opencdc.version": "v1",
    }
    assert spec.key.WhichOneof("data") == "raw_data"
    assert spec.key.raw_data == b"padlock-key"
    assert spec.payload.before.raw_data == b"yellow"
    after = _struct_to_dict(spec.payload.after.structured_data)
    assert after == {
        "bool": True,
        "float32": 1.2,
        "float64": 1.2,
        "int": 1.0,
        "int32": 1.0,
        "int64": 1.0,
        "string": "orange",
    }


def test_record_written_by_an_independent_definition_converts_back_to_the_same_json(
    conduit_rec,
):
    rec = conduit_rec(position=b"standing", operation=2)
    rec.metadata.update(
        {
            "file.path": "./example.in",
            "opencdc.readAt": "1663858188836816000",
            "opencdc.version": "v1",
        }
    )
    rec.key.raw_data = b"padlock-key"
    rec.payload.before.raw_data = b"yellow"
    rec.payload.after.structured_data.update(
        {
            "bool": True,
            "float32": 1.2,
            "float64": 1.2,
            "int": 1,
            "int32": 1,
            "int64": 1,
            "string": "orange",
        }
    )
    stream = delimit(rec.SerializeToString())
    result = run_cli("convert", "--from", "opencdc-proto", "--to", "opencdc-json", stdin=stream)
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout) == orjson.loads(SPEC_EXAMPLE_RECORD)
