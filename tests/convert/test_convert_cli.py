"""`cdc-connectors convert` as a user runs it: exit codes, counts, dead letters, stream layouts."""

from __future__ import annotations

import base64
import io

import orjson
import pytest

from cdc_connectors.convert import iter_delimited
from cdc_connectors.opencdc import keys, record_from_json
from tests.conftest import run_cli
from tests.opencdc.canonical import CANONICAL, CONDUIT_TEST_RECORD

BAD_OPERATION = b'{"position":"Zm9v","operation":"bogus"}'
BAD_METADATA = b'{"operation":"create","metadata":{"n":1}}'


def test_json_to_proto_and_back_through_stdin_and_stdout():
    data = b"\n".join(CANONICAL) + b"\n"
    to_proto = run_cli("convert", "--from", "opencdc-json", "--to", "opencdc-proto", stdin=data)
    assert to_proto.returncode == 0
    assert b"read 2 messages, wrote 2 records, skipped 0, errors 0" in to_proto.stderr
    back = run_cli(
        "convert", "--from", "opencdc-proto", "--to", "opencdc-json", stdin=to_proto.stdout
    )
    assert back.returncode == 0
    lines = back.stdout.splitlines()
    assert [orjson.loads(x) for x in lines] == [orjson.loads(x) for x in CANONICAL]


def test_bad_lines_go_to_errors_file_with_reason_place_and_original_bytes(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(CONDUIT_TEST_RECORD + b"\n" + BAD_OPERATION + b"\n" + BAD_METADATA + b"\n")
    errors = tmp_path / "dlq.jsonl"
    out = tmp_path / "out.pb"
    result = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "opencdc-proto",
        str(src),
        "-o",
        str(out),
        "--errors",
        str(errors),
    )
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert f"{src}:2: unknown operation 'bogus'" in stderr
    assert f"{src}:3: metadata 'n' must be a string" in stderr
    assert "read 3 messages, wrote 1 record, skipped 0, errors 2" in stderr
    # the good record still went through
    assert len(list(iter_delimited(io.BytesIO(out.read_bytes())))) == 1

    dead = [record_from_json(line) for line in errors.read_bytes().splitlines()]
    assert [d.payload.after for d in dead] == [BAD_OPERATION, BAD_METADATA]
    assert [d.position.decode() for d in dead] == [f"{src}:2", f"{src}:3"]
    assert dead[0].metadata[keys.CONDUIT_DLQ_NACK_ERROR] == "unknown operation 'bogus'"
    assert dead[0].metadata[keys.CONDUIT_DLQ_NACK_NODE_ID] == "convert:opencdc-json->opencdc-proto"
    assert dead[0].metadata.read_at is not None


def test_errors_without_errors_file_still_exit_1_and_are_reported():
    result = run_cli("convert", "--from", "opencdc-json", "--to", "opencdc-json", stdin=b"nope\n")
    assert result.returncode == 1
    assert b"<stdin>:1: invalid JSON" in result.stderr


def test_fail_fast_stops_at_the_first_bad_message_keeping_it_and_the_counts(tmp_path):
    data = CONDUIT_TEST_RECORD + b"\n" + BAD_OPERATION + b"\n" + CONDUIT_TEST_RECORD + b"\n"
    errors = tmp_path / "dlq.jsonl"
    result = run_cli(
        "convert", "--from", "opencdc-json", "--to", "opencdc-json", "--fail-fast",
        "--errors", str(errors), stdin=data,
    )  # fmt: skip
    assert result.returncode == 1
    assert len(result.stdout.splitlines()) == 1  # the record before the bad one
    assert b"error: <stdin>:2: unknown operation 'bogus'" in result.stderr
    assert b"read 2 messages, wrote 1 record, skipped 0, errors 1" in result.stderr
    dead = [record_from_json(line) for line in errors.read_bytes().splitlines()]
    assert [d.payload.after for d in dead] == [BAD_OPERATION]
    assert dead[0].position == b"<stdin>:2"


def test_truncated_protobuf_stream_is_an_error_with_its_offset(tmp_path):
    ok = run_cli(
        "convert", "--from", "opencdc-json", "--to", "opencdc-proto", stdin=CONDUIT_TEST_RECORD
    )
    broken = ok.stdout + ok.stdout[:-4]
    errors = tmp_path / "dlq.jsonl"
    result = run_cli(
        "convert",
        "--from",
        "opencdc-proto",
        "--to",
        "opencdc-json",
        "--errors",
        str(errors),
        stdin=broken,
    )
    assert result.returncode == 1
    assert len(result.stdout.splitlines()) == 1
    assert f"message 2, byte {len(ok.stdout)}: truncated message".encode() in result.stderr
    dead = record_from_json(errors.read_bytes().splitlines()[0])
    assert dead.position == f"<stdin>: message 2, byte {len(ok.stdout)}".encode()
    assert dead.payload.after == ok.stdout[:-4]  # every byte from the broken prefix on
    assert dead.metadata[keys.CONDUIT_DLQ_NACK_ERROR].startswith("truncated message")


def test_a_length_prefix_beyond_memory_is_one_error_with_the_rest_of_the_stream(tmp_path):
    ok = run_cli(
        "convert", "--from", "opencdc-json", "--to", "opencdc-proto", stdin=CONDUIT_TEST_RECORD
    )
    tail = b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f" + b"junk"  # 2**63 - 1 bytes, it says
    errors = tmp_path / "dlq.jsonl"
    result = run_cli(
        "convert", "--from", "opencdc-proto", "--to", "opencdc-json", "--errors", str(errors),
        stdin=ok.stdout + tail,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert b"Traceback" not in result.stderr
    assert len(result.stdout.splitlines()) == 1
    assert f"<stdin>: message 2, byte {len(ok.stdout)}: the length prefix says".encode() in (
        result.stderr
    )
    assert b"read 2 messages, wrote 1 record, skipped 0, errors 1" in result.stderr
    dead = record_from_json(errors.read_bytes())
    assert dead.payload.after == tail


def test_kv_lines_carry_base64_for_binary_formats():
    result = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "opencdc-proto",
        "--kv",
        stdin=orjson.dumps({"key": None, "value": orjson.loads(CONDUIT_TEST_RECORD)}) + b"\n",
    )
    assert result.returncode == 0, result.stderr
    line = orjson.loads(result.stdout)
    assert base64.b64decode(line["key"]) == b"bar"
    back = run_cli(
        "convert", "--from", "opencdc-proto", "--to", "opencdc-json", "--kv", stdin=result.stdout
    )
    assert back.returncode == 0, back.stderr
    assert orjson.loads(back.stdout)["value"] == orjson.loads(CONDUIT_TEST_RECORD)


def test_raw_as_string_option_reaches_the_format():
    result = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "opencdc-json",
        "--opt",
        "raw.as.string=true",
        stdin=CONDUIT_TEST_RECORD,
    )
    assert result.returncode == 0
    # read as plain strings: "YmFy" is taken literally, so written back the same
    assert orjson.loads(result.stdout)["key"] == "YmFy"


def test_usage_errors_exit_2_and_name_the_problem():
    unknown_format = run_cli("convert", "--from", "nope", "--to", "opencdc-json", stdin=b"")
    assert unknown_format.returncode == 2
    assert b"unknown format 'nope'" in unknown_format.stderr
    unknown_opt = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "opencdc-proto",
        "--opt",
        "colour=red",
        stdin=b"",
    )
    assert unknown_opt.returncode == 2
    assert b"option 'colour'" in unknown_opt.stderr
    bad_value = run_cli(
        "convert",
        "--from",
        "opencdc-json",
        "--to",
        "opencdc-json",
        "--opt",
        "raw.as.string=maybe",
        stdin=b"",
    )
    assert bad_value.returncode == 2
    assert b"'raw.as.string' must be true or false" in bad_value.stderr


def test_tombstones_are_skipped_and_counted():
    line = orjson.dumps({"key": "x", "value": None}) + b"\n"
    result = run_cli(
        "convert", "--from", "opencdc-json", "--to", "opencdc-json", "--kv", stdin=line
    )
    assert result.returncode == 0
    assert b"skipped 1 (1 tombstone)" in result.stderr


def test_plugins_lists_the_formats():
    result = run_cli("plugins")
    assert result.returncode == 0
    assert b"opencdc-json" in result.stdout and b"opencdc-proto" in result.stdout


def test_a_record_the_output_layout_cannot_hold_goes_to_dead_letters(tmp_path):
    # raw key bytes that are neither JSON nor UTF-8 cannot sit in a text --kv line
    record = b'{"operation":"create","key":"/w==","payload":{"after":{"a":1}}}'
    errors = tmp_path / "dlq.jsonl"
    result = run_cli(
        "convert", "--from", "opencdc-json", "--to", "opencdc-json", "--kv",
        "--errors", str(errors),
        stdin=orjson.dumps({"key": None, "value": orjson.loads(record)}) + b"\n",
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stdout == b""
    assert b"neither JSON nor UTF-8" in result.stderr
    dead = record_from_json(errors.read_bytes().splitlines()[0])
    assert orjson.loads(dead.payload.after) == orjson.loads(record)


def _nested_json(levels: int, opening: bytes = b"[", closing: bytes = b"]") -> bytes:
    inner = opening * levels + b"1" + closing * levels
    return b'{"operation":"create","payload":{"after":{"a":' + inner + b"}}}"


def test_records_nested_too_deeply_are_error_records_and_the_ones_around_them_written(tmp_path):
    good = CONDUIT_TEST_RECORD
    # 40 levels: fine as JSON, too deep for protobuf to parse back; 1000: beyond recursion
    lines = [good, _nested_json(40, b'{"a":', b"}"), good, _nested_json(1000), good]
    errors = tmp_path / "dlq.jsonl"
    result = run_cli(
        "convert", "--from", "opencdc-json", "--to", "opencdc-proto", "--errors", str(errors),
        stdin=b"\n".join(lines) + b"\n",
    )  # fmt: skip
    assert result.returncode == 1
    assert b"Traceback" not in result.stderr and b"RecursionError" not in result.stderr
    assert b"read 5 messages, wrote 3 records, skipped 0, errors 2" in result.stderr
    assert len(list(iter_delimited(io.BytesIO(result.stdout)))) == 3
    back = run_cli(
        "convert", "--from", "opencdc-proto", "--to", "opencdc-json", stdin=result.stdout
    )
    assert back.returncode == 0, back.stderr  # everything written reads back
    dead = [record_from_json(line) for line in errors.read_bytes().splitlines()]
    assert [d.position for d in dead] == [b"<stdin>:2", b"<stdin>:4"]
    assert [d.payload.after for d in dead] == [lines[1], lines[3]]
    assert all("nested too deeply" in d.metadata[keys.CONDUIT_DLQ_NACK_ERROR] for d in dead)


def test_integers_beyond_64_bits_are_error_records_not_doubles(tmp_path):
    big = b'{"operation":"create","payload":{"after":{"id":18446744073709551616}}}'
    for to in ("opencdc-json", "opencdc-proto"):
        result = run_cli("convert", "--from", "opencdc-json", "--to", to, stdin=big + b"\n")
        assert result.returncode == 1, to
        assert result.stdout == b""
        assert b"integer 18446744073709551616 does not fit in 64 bits" in result.stderr
        assert b"errors 1" in result.stderr


def test_integers_a_double_would_round_stay_exact_in_json_and_are_refused_by_protobuf():
    exact = b'{"operation":"create","payload":{"after":{"id":9007199254740993}}}\n'
    to_json = run_cli("convert", "--from", "opencdc-json", "--to", "opencdc-json", stdin=exact)
    assert to_json.returncode == 0
    assert b'"id":9007199254740993' in to_json.stdout
    to_proto = run_cli("convert", "--from", "opencdc-json", "--to", "opencdc-proto", stdin=exact)
    assert to_proto.returncode == 1
    assert to_proto.stdout == b""
    assert b"<stdin>:1: payload.after.id: integer 9007199254740993 is beyond" in to_proto.stderr


def test_nan_from_protobuf_is_an_error_record_not_null():
    from cdc_connectors.convert import delimit
    from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2

    msg = opencdc_pb2.Record(operation=1)
    msg.payload.after.structured_data.update({"x": float("nan"), "ok": 1})
    result = run_cli(
        "convert", "--from", "opencdc-proto", "--to", "opencdc-json",
        stdin=delimit(msg.SerializeToString()),
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stdout == b""
    assert b"payload.after.x: nan has no JSON form" in result.stderr


def test_protobuf_to_json_is_byte_stable_across_processes():
    from cdc_connectors.convert import delimit
    from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2

    msg = opencdc_pb2.Record(operation=2)
    names = ["zeta", "alpha", "mid", "b", "q", "c", "x1", "x2"]
    for name in names:
        msg.metadata[name] = "v"
        msg.payload.after.structured_data[name] = {name: 1, "a": 2}
    stream = delimit(msg.SerializeToString())
    args = ("convert", "--from", "opencdc-proto", "--to", "opencdc-json")
    outputs = {run_cli(*args, stdin=stream).stdout for _ in range(3)}
    assert len(outputs) == 1
    doc = orjson.loads(outputs.pop())
    assert list(doc["metadata"]) == sorted(names)
    assert list(doc["payload"]["after"]) == sorted(names)


def _usage_error(result, *parts: bytes) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == b""
    errors = [line for line in result.stderr.splitlines() if line.startswith(b"Error")]
    assert len(errors) == 1, result.stderr
    for part in parts:
        assert part in errors[0], result.stderr


def test_a_registry_url_no_registry_serves_is_a_usage_error():
    J2J = ("convert", "--from", "opencdc-json", "--to", "opencdc-json")
    _usage_error(run_cli(*J2J, "--registry", "bogus://x", stdin=b""), b"--registry", b"'bogus'")
    _usage_error(run_cli(*J2J, "--registry", "no-scheme", stdin=b""), b"has no scheme")
    secret = run_cli(*J2J, "--registry", "bogus://user:hunter2@host", stdin=b"")
    _usage_error(secret, b"'bogus'")
    assert b"hunter2" not in secret.stderr
    served = run_cli(*J2J, "--registry", "memory://", stdin=CONDUIT_TEST_RECORD + b"\n")
    assert served.returncode == 0, served.stderr


def test_an_option_given_twice_is_a_usage_error_naming_it():
    result = run_cli(
        "convert", "--from", "opencdc-json", "--to", "opencdc-json",
        "--opt", "raw.as.string=true", "--opt", " raw.as.string=false", stdin=b"",
    )  # fmt: skip
    _usage_error(result, b"'raw.as.string' is given twice")


def test_invalid_utf8_in_a_json_line_is_named_as_such_with_its_offset():
    line = b'{"position":"\xff\xfe","operation":"create"}\n'
    plain = run_cli("convert", "--from", "opencdc-json", "--to", "opencdc-json", stdin=line)
    assert plain.returncode == 1
    assert b"<stdin>:1: invalid JSON: invalid UTF-8 at byte 13" in plain.stderr
    assert b"surrogates" not in plain.stderr
    kv = run_cli(
        "convert", "--from", "opencdc-json", "--to", "opencdc-json", "--kv",
        stdin=b'{"value":' + line.rstrip() + b"}\n",
    )  # fmt: skip
    assert kv.returncode == 1
    assert b"<stdin>:1: invalid JSON in --kv line: invalid UTF-8 at byte 22" in kv.stderr


def test_a_decimal_a_double_would_round_stays_exact_in_json_and_is_refused_by_protobuf():
    line = b'{"operation":"create","payload":{"after":{"price":0.30000000000000000001}}}\n'
    to_json = run_cli("convert", "--from", "opencdc-json", "--to", "opencdc-json", stdin=line)
    assert to_json.returncode == 0
    assert b'"price":0.30000000000000000001' in to_json.stdout
    to_proto = run_cli("convert", "--from", "opencdc-json", "--to", "opencdc-proto", stdin=line)
    assert to_proto.returncode == 1
    assert b"payload.after.price: decimal 0.30000000000000000001 would change" in to_proto.stderr


def test_a_read_only_format_as_output_is_a_usage_error_before_reading():
    result = run_cli("convert", "--from", "opencdc-json", "--to", "arcion-json", stdin=b"junk\n")
    assert result.returncode == 2
    assert result.stderr.count(b"\n") == 1
    assert b"format 'arcion-json' is read-only" in result.stderr


def test_counts_read_in_the_singular_for_one():
    line = b'{"operation":"create","payload":{"after":{"a":1}}}\n'
    result = run_cli("convert", "--from", "opencdc-json", "--to", "opencdc-json", stdin=line)
    assert b"read 1 message, wrote 1 record, skipped 0, errors 0" in result.stderr


@pytest.mark.parametrize("fmt", ["opencdc-json", "debezium-json"])
def test_kv_lines_read_without_kv_say_so(fmt: str):
    line = b'{"key": null, "value": {"operation": "create", "payload": {"after": {"a": 1}}}}\n'
    result = run_cli("convert", "--from", fmt, "--to", "opencdc-json", stdin=line)
    assert result.returncode == 1
    assert b"<stdin>:1: this is a --kv line" in result.stderr
    assert b"read it with --kv" in result.stderr
    assert result.stdout == b""


@pytest.mark.parametrize("to_stdout", ["records", "dead letters"])
def test_a_reader_that_goes_away_ends_the_run_quietly_as_unix_tools_do(tmp_path, to_stdout):
    import subprocess
    import sys

    line = b'{"operation":"create","payload":{"after":{"a":1}}}\n'
    if to_stdout == "dead letters":
        line = b'{"operation":"create","payload":{"after":{"a":1\n'
    source = tmp_path / "many.jsonl"
    source.write_bytes(line * 50_000)
    output = tmp_path / "out.jsonl"
    where = ["--errors", "-", "-o", str(output)] if to_stdout == "dead letters" else []
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cdc_connectors.cli",
            "convert",
            "--from",
            "opencdc-json",
            "--to",
            "opencdc-json",
            str(source),
            *where,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if to_stdout == "dead letters" else subprocess.PIPE,
    ) as run:
        assert run.stdout is not None
        assert run.stdout.readline().startswith(b'{"position"')
        run.stdout.close()  # as `| head -1` does
        stderr = b"" if run.stderr is None else run.stderr.read()
        assert run.wait(60) == 141
    assert stderr == b""
    assert list(tmp_path.iterdir()) == [source]  # no output, no partial file
