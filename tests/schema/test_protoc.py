"""The one protoc wrapper: errors say what is wrong and where, and nothing else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cdc_connectors.schema import protobuf
from cdc_connectors.schema.errors import SchemaError

MISSPELLED = 'syntax = "proto3";\nmessage A {\n    strin x = 1;\n}\n'
# No syntax line: protoc logs a warning about it (through absl) before the error.
NO_SYNTAX = "message A {\n  optional string x = 1;\n  optional strin y = 2;\n}\n"


def test_an_invalid_schema_names_the_error_and_its_line() -> None:
    with pytest.raises(SchemaError) as error:
        protobuf.compile_schema(MISSPELLED)
    assert str(error.value) == 'invalid Protobuf schema: schema.proto:3:5: "strin" is not defined.'


def test_the_first_error_of_a_fresh_process_carries_no_compiler_log() -> None:
    code = (
        "import sys\n"
        "from cdc_connectors.schema import protobuf\n"
        "try:\n"
        "    protobuf.compile_schema(sys.argv[1])\n"
        "except protobuf.SchemaError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, NO_SYNTAX], capture_output=True, text=True, check=True
    )
    assert result.stdout == 'invalid Protobuf schema: schema.proto:3:12: "strin" is not defined.\n'
    assert result.stderr == ""


def test_errors_of_an_imported_reference_name_its_file() -> None:
    main = 'syntax = "proto3";\nimport "shop/money.proto";\nmessage A {\n  int32 x = 1;\n}\n'
    money = 'syntax = "proto3";\nmessage Money {\n  strin units = 1;\n}\n'
    with pytest.raises(SchemaError) as error:
        protobuf.compile_schema(main, {"shop/money.proto": money})
    message = str(error.value)
    assert 'shop/money.proto:3:3: "strin" is not defined; ' in message  # one line
    assert "\n" not in message
    assert "cdc-proto" not in message and "/tmp" not in message


def test_repeated_errors_are_listed_once_and_capped() -> None:
    text = 'syntax = "proto3";\n' + "message M {\n" * 40 + "}\n" * 40
    with pytest.raises(SchemaError) as error:
        protobuf.compile_schema(text)
    lines = str(error.value).splitlines()
    assert len(lines) == len(set(lines)) <= 6


def test_a_reference_name_cannot_leave_the_compiler_directory(tmp_path: Path) -> None:
    target = tmp_path / "escaped.proto"
    for name in [str(target), "../escaped.proto", "a/../../escaped.proto", ""]:
        with pytest.raises(SchemaError, match="reference name"):
            protobuf.compile_schema('syntax = "proto3";\n', {name: 'syntax = "proto3";\n'})
    assert not target.exists()


def test_compile_files_compiles_a_file_with_its_imports(tmp_path: Path) -> None:
    (tmp_path / "a.proto").write_text(
        'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
        "message A {\n  google.protobuf.Timestamp at = 1;\n}\n"
    )
    files = protobuf.compile_files(["a.proto"], [tmp_path])
    assert [f.name for f in files.file] == ["google/protobuf/timestamp.proto", "a.proto"]


def test_run_protoc_reports_a_missing_file_without_its_directory(tmp_path: Path) -> None:
    with pytest.raises(SchemaError) as error:
        protobuf.run_protoc(["nope.proto"], [tmp_path], [f"--python_out={tmp_path}"])
    assert str(tmp_path) not in str(error.value)
    assert "nope.proto" in str(error.value)
