"""``convert --registry URL`` misused: a bad path, a bad URL, a wrong or failing server.

Whatever the URL, the run ends as every misuse does: exit 2, one ``Error:`` line on
stderr, no traceback, no credential, and no ``-o`` file. The registry is opened and
asked one question before any output is touched; a registry that fails later (other
than "no such schema", which is one bad message) ends the run the same way.

Every server here is started by its test on a free loopback port and stopped by it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli, run_cli_process

OPENCDC = (
    b'{"position":"cA==","operation":"create","metadata":{},"key":null,'
    b'"payload":{"before":null,"after":{"id":1}}}\n'
)
AVRO_KV = b'{"key":null,"value":"AAAAAAECAg=="}\n'  # schema id 1
ERROR_LINE = re.compile(r"^\s*error\b", re.IGNORECASE)

# (arguments, input) of the two directions: writing registers schemas, reading looks them up
TO_AVRO = (("--from", "opencdc-json", "--to", "avro", "--opt", "topic=t"), OPENCDC)
FROM_AVRO = (("--from", "avro", "--to", "opencdc-json", "--kv"), AVRO_KV)
DIRECTIONS = {"to-avro": TO_AVRO, "from-avro": FROM_AVRO}


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def convert(
    tmp_path: Path, registry: str, direction: str = "to-avro", *extra: str
) -> tuple[subprocess.CompletedProcess[bytes], Path]:
    """Run ``convert`` with ``--registry registry`` on a one-message input; the result and
    the ``-o`` path."""
    args, data = DIRECTIONS[direction]
    source = tmp_path / f"in-{direction}.jsonl"
    source.write_bytes(data)
    out = tmp_path / f"out-{direction}.jsonl"
    result = run_cli("convert", *args, "--registry", registry, *extra, str(source), "-o", str(out))
    return result, out


def assert_misuse(
    result: subprocess.CompletedProcess[bytes], out: Path, secrets: tuple[str, ...] = ()
) -> str:
    """Exit 2, exactly one error line, no traceback, no secret, no output file; the line."""
    err = result.stderr.decode(errors="replace")
    stdout = result.stdout.decode(errors="replace")
    where = f"exit {result.returncode}, stderr:\n{err}"
    assert result.returncode == 2, where
    assert "Traceback" not in err and "Traceback" not in stdout, where
    errors = [line for line in err.splitlines() if ERROR_LINE.match(line)]
    assert len(errors) == 1, f"expected one error line; {where}"
    assert errors[0].startswith("Error: "), where
    for secret in secrets:
        assert secret not in err and secret not in stdout, f"{secret!r} shown; {where}"
    assert not out.exists(), f"{out.name} was created; {where}"
    return errors[0]


# --- embedded stores that are none ----------------------------------------------------------


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_a_directory_is_no_store(tmp_path: Path, direction: str):
    (tmp_path / "somedir").mkdir()
    result, out = convert(tmp_path, f"sqlite:///{tmp_path}/somedir", direction)
    line = assert_misuse(result, out)
    assert "is a directory" in line


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_a_file_that_is_not_sqlite_is_no_store(tmp_path: Path, direction: str):
    (tmp_path / "notdb.db").write_text("hello, not a database\n" * 10)
    result, out = convert(tmp_path, f"sqlite:///{tmp_path}/notdb.db", direction)
    line = assert_misuse(result, out)
    assert "not a SQLite database" in line
    assert (tmp_path / "notdb.db").read_text() == "hello, not a database\n" * 10


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_a_url_without_a_path_names_no_store(tmp_path: Path, direction: str):
    result, out = convert(tmp_path, "sqlite://", direction)
    line = assert_misuse(result, out)
    assert "names no file" in line


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_a_query_parameter_the_store_does_not_take(tmp_path: Path, direction: str):
    result, out = convert(tmp_path, f"sqlite:///{tmp_path}/x.db?mode=ro", direction)
    line = assert_misuse(result, out)
    assert "unknown query parameter mode" in line
    assert not (tmp_path / "x.db").exists()


def test_a_store_under_a_file_cannot_be_created(tmp_path: Path):
    (tmp_path / "plain").write_text("x")
    result, out = convert(tmp_path, f"sqlite:///{tmp_path}/plain/r.db")
    assert_misuse(result, out)


# --- HTTP URLs that are none ----------------------------------------------------------------


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_a_setting_the_client_does_not_know(tmp_path: Path, direction: str):
    result, out = convert(tmp_path, f"http://127.0.0.1:{closed_port()}?bogus=1", direction)
    line = assert_misuse(result, out)
    assert "bogus" in line


def _credential_urls() -> dict[str, tuple[str, tuple[str, ...]]]:
    """URL -> the texts of its password that must not be shown."""
    port = closed_port()
    return {
        "port-is-no-number": ("http://user:pw@host:port", (":pw", "pw@")),
        "slash-in-password": (f"http://u:abc123/xyz@127.0.0.1:{port}", ("abc123", "/xyz")),
        "hash-in-password": (f"http://ada:s3c#r3tpass@127.0.0.1:{port}", ("s3c", "r3tpass")),
        "question-mark-in-password": (
            f"http://ada:s3c?r3tpass@127.0.0.1:{port}",
            ("s3c", "r3tpass"),
        ),
        "hash-after-numeric-password": (
            f"http://ada:1234#r3tpass@127.0.0.1:{port}",
            ("ada:1234", "'1234'", "r3tpass"),
        ),
        "empty-password": (f"http://ada:@127.0.0.1:{port}", ()),
        "user-without-password": (f"http://tok3n-alone@127.0.0.1:{port}", ("tok3n-alone",)),
        "empty-basic-auth-setting": (f"http://127.0.0.1:{port}?basic.auth.user.info=", ()),
        "unclosed-ipv6-bracket": ("http://ada:s3cr3tpass@[::1", ("s3cr3tpass",)),
    }


CREDENTIAL_URLS = _credential_urls()


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("name", list(CREDENTIAL_URLS))
def test_a_malformed_url_is_refused_without_its_password(tmp_path: Path, name: str, direction: str):
    url, secrets = CREDENTIAL_URLS[name]
    result, out = convert(tmp_path, url, direction)
    line = assert_misuse(result, out, secrets)
    assert "--registry" in line


def test_a_ca_file_that_does_not_exist_is_named(tmp_path: Path):
    missing = tmp_path / "no-such-ca.pem"
    result, out = convert(tmp_path, f"http://127.0.0.1:{closed_port()}/?ssl.ca.location={missing}")
    line = assert_misuse(result, out)
    assert "ssl.ca.location" in line and str(missing) in line
    assert "output" not in line


def test_a_refused_connection_is_one_line(tmp_path: Path):
    url = f"http://ada:s3cr3tpass@127.0.0.1:{closed_port()}?max.retries=0"
    result, out = convert(tmp_path, url, "from-avro")
    line = assert_misuse(result, out, ("s3cr3tpass",))
    assert "did not answer" in line and "ada:***@" in line


# --- servers that are no schema registry ----------------------------------------------------

Answer = tuple[int, str, bytes]  # status, content type, body
Route = Callable[[str, str], Answer]  # (method, path) -> answer


@contextmanager
def http_server(route: Route) -> Iterator[str]:
    """A loopback HTTP server on a free port answering by ``route``; its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            status, content_type, body = route(self.command, self.path)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


HTML = b"<!DOCTYPE HTML>\n<html><body><h1>Error response</h1>\n<p>File not found</p></body></html>"


def html_404(method: str, path: str) -> Answer:
    return 404, "text/html", HTML


def json_200(method: str, path: str) -> Answer:
    return 200, "application/json", b'{"hello": "world"}'


def text_200(method: str, path: str) -> Answer:
    return 200, "text/plain", b"it works!\n"


def html_401(method: str, path: str) -> Answer:
    return 401, "text/html", b"<html>401 Authorization Required</html>"


def json_401(method: str, path: str) -> Answer:
    return 401, "application/json", b'{"error_code": 401, "message": "Unauthorized"}'


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize(
    "route",
    [html_404, json_200, text_200, html_401],
    ids=["html-404", "json-200", "text-200", "html-401"],
)
def test_a_server_that_is_no_registry_stops_the_run(tmp_path: Path, route: Route, direction: str):
    with http_server(route) as base:
        url = base.replace("//", "//ada:s3cr3tpass@")
        result, out = convert(tmp_path, url, direction, "--errors", str(tmp_path / "dead.jsonl"))
    line = assert_misuse(result, out, ("s3cr3tpass", "DOCTYPE", "hello", "it works"))
    assert "--registry" in line
    assert "ada:***@" in line
    # stopped before anything was read: not one message dead-lettered
    assert not (tmp_path / "dead.jsonl").exists() or not (tmp_path / "dead.jsonl").read_bytes()


def test_a_registry_refusing_the_credentials_is_one_line(tmp_path: Path):
    with http_server(json_401) as base:
        url = base.replace("//", "//ada:s3cr3tpass@")
        result, out = convert(tmp_path, url, "from-avro")
    line = assert_misuse(result, out, ("s3cr3tpass",))
    assert "HTTP 401" in line and "Unauthorized" in line


def _registry_until(after_probe: Answer) -> Route:
    """A server that answers the check as a registry, then ``after_probe`` to everything."""

    def route(method: str, path: str) -> Answer:
        if path.startswith("/schemas/types"):
            return 200, "application/vnd.schemaregistry.v1+json", b'["AVRO","PROTOBUF","JSON"]'
        return after_probe

    return route


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize(
    "answer",
    [
        (404, "text/html", HTML),
        (200, "text/html", HTML),
        (500, "application/json", b'{"error_code": 50001, "message": "Error in the backend"}'),
        (503, "text/html", b"<html>upstream s3cr3tpass down</html>"),
    ],
    ids=["html-404", "html-200", "json-500", "html-503"],
)
def test_a_registry_failing_midway_stops_the_run_and_leaves_no_output(
    tmp_path: Path, answer: Answer, direction: str
):
    with http_server(_registry_until(answer)) as base:
        url = base.replace("//", "//ada:s3cr3tpass@") + "?max.retries=0"
        result, out = convert(tmp_path, url, direction, "--errors", str(tmp_path / "dead.jsonl"))
    line = assert_misuse(result, out, ("s3cr3tpass", "DOCTYPE"))
    assert "ada:***@" in line
    assert not (tmp_path / "dead.jsonl").exists() or not (tmp_path / "dead.jsonl").read_bytes()


def test_a_schema_the_registry_does_not_have_is_one_bad_message_not_misuse(tmp_path: Path):
    not_found = (404, "application/json", b'{"error_code": 40403, "message": "Schema not found"}')
    with http_server(_registry_until(not_found)) as base:
        result, out = convert(tmp_path, base, "from-avro", "--errors", str(tmp_path / "dead.jsonl"))
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "Traceback" not in err and "not in the schema registry" in err
    assert out.exists() and out.read_bytes() == b""
    assert len((tmp_path / "dead.jsonl").read_bytes().splitlines()) == 1


# --- a read-only store ----------------------------------------------------------------------

NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


def _as_nobody(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*NOBODY, sys.executable, "-m", "cdc_connectors.cli", *args],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture
def nobody_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory user 65534 can reach (pytest's own are private to root)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run as another user")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv")
    if _as_nobody("--version").returncode != 0:
        pytest.skip("user 65534 cannot run this interpreter")
    base = Path("/tmp") / f"cdc-ro-{os.getpid()}-{threading.get_ident()}"
    base.mkdir(mode=0o755)
    try:
        yield base
    finally:
        for path in [base, *base.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)
        shutil.rmtree(base)


def test_a_read_only_store_is_read_and_refuses_changes_in_one_line(nobody_dir: Path):
    store = nobody_dir / "store"
    store.mkdir()
    registry = f"sqlite:///{store}/registry.db"
    source = nobody_dir / "in.jsonl"
    source.write_bytes(OPENCDC)
    written = nobody_dir / "avro.jsonl"
    # in a process of its own: the store is closed (no -wal, -shm files) when it ends
    made = run_cli_process(
        "convert", *TO_AVRO[0], "--registry", registry, str(source), "-o", str(written)
    )
    assert made.returncode == 0, made.stderr.decode()
    out_dir = nobody_dir / "out"
    out_dir.mkdir(mode=0o777)
    out_dir.chmod(0o777)
    (store / "registry.db").chmod(0o444)
    store.chmod(0o555)
    before = (store / "registry.db").read_bytes()

    # reading: works from the read-only store
    decoded = out_dir / "decoded.jsonl"
    result = _as_nobody(
        "convert", *FROM_AVRO[0], "--registry", registry, str(written), "-o", str(decoded)
    )
    assert result.returncode == 0, result.stderr.decode()
    record = json.loads(decoded.read_bytes().splitlines()[0])
    assert record["value"]["payload"]["after"] == {"id": 1}
    # writing a schema it holds already: nothing to change
    again = out_dir / "again.jsonl"
    result = _as_nobody(
        "convert", *TO_AVRO[0], "--registry", registry, str(source), "-o", str(again)
    )
    assert result.returncode == 0, result.stderr.decode()
    assert again.read_bytes() == written.read_bytes()
    # registering a new one: one line saying the store is read-only
    refused = out_dir / "refused.jsonl"
    result = _as_nobody(
        "convert",
        *("--from", "opencdc-json", "--to", "avro", "--opt", "topic=other"),
        *("--registry", registry, str(source), "-o", str(refused)),
    )
    line = assert_misuse(result, refused)
    assert "read-only" in line
    assert (store / "registry.db").read_bytes() == before
    assert sorted(p.name for p in store.iterdir()) == ["registry.db"]

    # a directory that cannot even be searched: one line
    store.chmod(0o444)
    never = out_dir / "never.jsonl"
    result = _as_nobody(
        "convert", *FROM_AVRO[0], "--registry", registry, str(written), "-o", str(never)
    )
    assert "cannot be reached" in assert_misuse(result, never)


def test_a_good_store_still_converts(tmp_path: Path):
    """The check up front costs a working registry nothing."""
    registry = f"sqlite:///{tmp_path}/registry.db"
    result, out = convert(tmp_path, registry, "to-avro")
    assert result.returncode == 0, result.stderr.decode()
    assert out.read_bytes().startswith(b'{"key":null,"value":"AAAAAAE')
