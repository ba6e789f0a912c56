"""`registry serve` secure by default: credentials, redaction, body limit, misuse, signals.

Everything runs the real command on loopback and talks to it over real HTTP.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from cdc_connectors.registry import guards, open_registry
from cdc_connectors.registry.redact import (
    MASK,
    redact_settings,
    redact_text,
    redact_url,
    url_secrets,
)
from cdc_connectors.registry.serve import ServeError, serve
from cdc_connectors.registry.server import create_app
from tests.cli_runner import run_cli

from .conftest import free_port, http, self_signed

SECRET = "Sup3r-s3cret:pw"  # holds a colon: only the first one separates user and password
CLI = [sys.executable, "-m", "cdc_connectors.cli"]
CT = "application/vnd.schemaregistry.v1+json"


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CDC_REGISTRY_BASIC_AUTH", "CDC_REGISTRY_TOKEN")
    }
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


def run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        env=env or _env(),
        cwd=cwd,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def assert_one_line_refusal(result: subprocess.CompletedProcess[str], *absent: str) -> str:
    """Exit 2, nothing on stdout, exactly one line on stderr, no traceback, no secret."""
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for text in absent:
        assert text not in result.stderr
    return lines[0]


class Server:
    """A `registry serve --port 0` process; its URL read from the line it prints."""

    def __init__(self, process: subprocess.Popen[bytes], first_line: str):
        self.process = process
        self.first_line = first_line
        self.url = first_line.split(" on ", 1)[1].split(" ", 1)[0]
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``sig``; the exit status and what it wrote to stderr after the first line."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            _, err = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return self.process.returncode, err.decode(errors="replace")


@contextmanager
def serving(store: str, *extra: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    process = subprocess.Popen(
        [*CLI, "registry", "serve", "--store", store, "--port", "0", *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env or _env(),
    )
    assert process.stderr is not None
    line = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + 30
        while not line.endswith(b"\n") and time.monotonic() < deadline:
            if selector.select(timeout=0.5):
                chunk = os.read(process.stderr.fileno(), 1)
                if not chunk:
                    break
                line += chunk
    if not line.startswith(b"schema registry on "):
        process.kill()
        _, rest = process.communicate()
        raise AssertionError(f"registry serve did not start: {(line + rest).decode()}")
    server = Server(process, line.decode().strip())
    try:
        yield server
    finally:
        if process.poll() is None:
            server.stop()


def basic(user_password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(user_password.encode()).decode()}


# --- credentials --------------------------------------------------------------------------


REFUSED_CREDENTIALS: list[tuple[list[str], dict[str, str], str]] = [
    (["--basic-auth", ""], {}, "--basic-auth is empty"),
    (["--basic-auth", "   "], {}, "--basic-auth is empty"),
    (["--basic-auth", "ada:"], {}, "--basic-auth has an empty password"),
    (["--basic-auth", "ada: "], {}, "--basic-auth has an empty password"),
    (["--basic-auth", ":pw"], {}, "--basic-auth has an empty user name"),
    (["--basic-auth", "ada"], {}, "--basic-auth is not USER:PASSWORD"),
    (["--token", ""], {}, "--token is empty"),
    (["--token", " \t"], {}, "--token is empty"),
    (["--token", "two words"], {}, "--token must be printable ASCII"),
    ([], {"CDC_REGISTRY_BASIC_AUTH": ""}, "CDC_REGISTRY_BASIC_AUTH is empty"),
    ([], {"CDC_REGISTRY_BASIC_AUTH": "ada:"}, "CDC_REGISTRY_BASIC_AUTH has an empty password"),
    ([], {"CDC_REGISTRY_BASIC_AUTH": " :x"}, "CDC_REGISTRY_BASIC_AUTH has an empty user"),
    ([], {"CDC_REGISTRY_TOKEN": ""}, "CDC_REGISTRY_TOKEN is empty"),
    ([], {"CDC_REGISTRY_TOKEN": "  "}, "CDC_REGISTRY_TOKEN is empty"),
    # a good token does not make an empty password acceptable, nor the other way round
    (["--token", "t0ken"], {"CDC_REGISTRY_BASIC_AUTH": "ada:"}, "has an empty password"),
    (["--basic-auth", "ada:pw"], {"CDC_REGISTRY_TOKEN": ""}, "CDC_REGISTRY_TOKEN is empty"),
]


def _serve_refused(
    args: list[str], env: dict[str, str], cwd: Path, *, in_process: bool
) -> subprocess.CompletedProcess[str]:
    """``registry serve ARGS``, which must refuse to start: in this process (click's runner,
    in a thread, so that a server that starts fails the test instead of hanging it), or
    as a process of its own."""
    command = ["registry", "serve", *args]
    if not in_process:
        process = subprocess.Popen(
            [*CLI, *command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(**env),
            cwd=cwd,
        )
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise AssertionError(f"{args} {env}: the server started") from None
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)
    done: list[subprocess.CompletedProcess[bytes]] = []
    unset: dict[str, str | None] = dict.fromkeys(("CDC_REGISTRY_BASIC_AUTH", "CDC_REGISTRY_TOKEN"))
    thread = threading.Thread(
        target=lambda: done.append(run_cli(*command, cwd=cwd, env={**unset, **env})),
        daemon=True,
    )
    thread.start()
    thread.join(30)
    if not done:
        raise AssertionError(f"{args} {env}: the server started")
    (result,) = done
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


@pytest.mark.slow
def test_empty_or_malformed_credential_refuses_to_start(tmp_path: Path):
    """Each case refuses in one line naming the option or variable, and never listens (in
    this process; the first case also as a process of its own)."""
    for number, (args, env, named) in enumerate(REFUSED_CREDENTIALS):
        port = free_port()
        store = ["--store", f"sqlite:///{tmp_path}/r.db", "--port", str(port)]
        for in_process in (True, False) if number == 0 else (True,):
            result = _serve_refused([*store, *args], env, tmp_path, in_process=in_process)
            line = assert_one_line_refusal(result, "ada: ", "two words")
            assert named in line, (args, env, line)
            with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
    assert not (tmp_path / "r.db").exists()  # refused before touching anything


@pytest.mark.parametrize(
    "kwargs",
    [
        {"basic_auth": ""},
        {"basic_auth": "ada:"},
        {"basic_auth": ":pw"},
        {"bearer_token": ""},
        {"bearer_token": " "},
        {"basic_auth": "ada:pw", "bearer_token": ""},
    ],
)
def test_create_app_refuses_an_empty_credential_instead_of_serving_open(kwargs: dict[str, str]):
    registry = open_registry("memory://")
    with pytest.raises(ValueError) as error:
        create_app(registry, **kwargs)
    assert "pw" not in str(error.value)
    registry.close()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"basic_auth": ""},
        {"bearer_token": " "},
        {"tls": ("cert.pem", None)},
        {"port": 70000},
        {"port": -1},
    ],
)
def test_serve_refuses_before_binding_or_opening_anything(tmp_path: Path, kwargs: dict[str, Any]):
    with pytest.raises(ServeError):
        serve(f"sqlite:///{tmp_path}/r.db", port=kwargs.pop("port", free_port()), **kwargs)
    assert not (tmp_path / "r.db").exists()


def test_auth_schemes_are_case_insensitive_and_passwords_may_hold_colons(tmp_path: Path):
    env = _env(CDC_REGISTRY_BASIC_AUTH=f"ada:{SECRET}", CDC_REGISTRY_TOKEN="t0k.en-_~+/=")
    with serving(f"sqlite:///{tmp_path}/r.db", env=env) as server:
        u = f"{server.url}/subjects"
        for scheme in ("Basic", "basic", "BASIC", "bAsIc"):
            token = base64.b64encode(f"ada:{SECRET}".encode()).decode()
            assert http("GET", u, headers={"Authorization": f"{scheme} {token}"})[0] == 200
        for scheme in ("Bearer", "bearer", "BEARER"):
            assert http("GET", u, headers={"Authorization": f"{scheme} t0k.en-_~+/="})[0] == 200
        # confluent-kafka's own client, with the password in its settings and in the URL
        conf = {"url": server.url, "basic.auth.user.info": f"ada:{SECRET}"}
        assert SchemaRegistryClient(conf).get_subjects() == []
        quoted = SECRET.replace(":", "%3A")
        assert open_registry(server.url.replace("//", f"//ada:{quoted}@")).get_subjects() == []

        refused = [
            {},
            basic(f"ada:{SECRET}x"),
            basic(f"ada:{SECRET[:-1]}"),
            basic(f"Ada:{SECRET}"),
            basic(f"ada{SECRET}"),
            basic(f":{SECRET}"),
            {"Authorization": "Basic"},
            {"Authorization": "Basic !!not base64!!"},
            {"Authorization": f"Basic {base64.b64encode(b'ada').decode()}"},
            {"Authorization": "Bearer"},
            {"Authorization": "Bearer t0k.en-_~+/"},
            {"Authorization": "Token t0k.en-_~+/="},
            {"Authorization": "t0k.en-_~+/="},
            {"Authorization": f"Digest ada:{SECRET}"},
        ]
        for headers in refused:
            status, head, body = http("GET", u, headers=headers)
            assert status == 401, headers
            assert body == {"error_code": 401, "message": "Unauthorized"}
            assert head["content-type"] == CT
            assert head["www-authenticate"].startswith("Basic realm=")
            assert SECRET not in json.dumps(body)
        # two Authorization headers, one of them right, are not taken
        conn = HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.putrequest("GET", "/subjects")
        conn.putheader("Authorization", basic(f"ada:{SECRET}")["Authorization"])
        conn.putheader("Authorization", "Basic eA==")
        conn.endheaders()
        assert conn.getresponse().status == 401
        conn.close()
        code, err = server.stop()
    assert code == 0 and "Traceback" not in err
    assert SECRET not in err and SECRET not in server.first_line


def test_unicode_password_travels_as_utf8(tmp_path: Path):
    env = _env(CDC_REGISTRY_BASIC_AUTH="zoë:pässwörd")
    with serving(f"sqlite:///{tmp_path}/r.db", env=env) as server:
        utf8 = base64.b64encode("zoë:pässwörd".encode()).decode()
        assert http("GET", server.url, headers={"Authorization": f"Basic {utf8}"})[0] == 200
        latin1 = base64.b64encode("zoë:pässwörd".encode("latin-1")).decode()
        assert http("GET", server.url, headers={"Authorization": f"Basic {latin1}"})[0] == 401


def test_bearer_only_server_challenges_with_bearer(tmp_path: Path):
    with serving(f"sqlite:///{tmp_path}/r.db", env=_env(CDC_REGISTRY_TOKEN="abc123")) as server:
        status, head, _ = http("GET", server.url, headers=basic("ada:abc123"))
        assert status == 401 and head["www-authenticate"].startswith("Bearer realm=")
        assert open_registry(server.url, bearer_token="abc123").get_subjects() == []


# --- no secret in any message -----------------------------------------------------------


def test_pickling_or_printing_an_http_registry_never_shows_its_password():
    registry = open_registry(f"http://ada:{SECRET}@127.0.0.1:{free_port()}", **{"max.retries": 0})
    with pytest.raises(TypeError) as error:
        pickle.dumps(registry)
    assert SECRET not in str(error.value) and "registry_for" in str(error.value)
    assert SECRET not in repr(registry) and SECRET not in str(registry)
    with pytest.raises(Exception) as failed:  # nothing listens there
        registry.get_subjects()
    assert SECRET not in str(failed.value) and SECRET not in repr(failed.value)


@pytest.mark.parametrize(
    "url",
    [
        f"htps://ada:{SECRET}@registry.example",
        f"http://ada:{SECRET}@registry.example?no.such.setting=1",
        f"ada:{SECRET}@registry.example",
        f"http://registry.example?bearer.auth.token={SECRET.replace(':', '')}&nope=1",
        f"http://ada:{SECRET.replace(':', ',')}@registry.example:1",
    ],
)
def test_bad_registry_urls_are_refused_without_their_secret(url: str):
    with pytest.raises(ValueError) as error:
        open_registry(url)
    for form in (SECRET, SECRET.replace(":", ""), *SECRET.split(":")):
        assert form not in str(error.value)


def test_a_refused_credential_raises_no_secret(tmp_path: Path):
    with serving(f"sqlite:///{tmp_path}/r.db", env=_env(CDC_REGISTRY_TOKEN="right-token")) as s:
        wrong = open_registry(s.url.replace("//", f"//ada:{SECRET.replace(':', '')}@"))
        with pytest.raises(SchemaRegistryError) as error:
            wrong.get_subjects()
        assert error.value.http_status_code == 401
        assert SECRET.replace(":", "") not in f"{error.value!s} {error.value!r}"


def test_serve_never_prints_a_credential(tmp_path: Path):
    hidden = "c0nfidential"
    env = _env(CDC_REGISTRY_BASIC_AUTH=f"ada:{hidden}")
    # a store URL with a secret in it is refused (the store takes no setting), masked
    result = run("registry", "serve", "--store", f"memory://shared?token={hidden}", env=env)
    line = assert_one_line_refusal(result, hidden)
    assert f"token={MASK}" in line
    with serving("memory://shared", env=env) as server:
        assert hidden not in server.first_line
        http("GET", f"{server.url}/subjects", headers=basic("ada:wrong"))
        http("POST", f"{server.url}/subjects/s/versions", b"{", headers=basic(f"ada:{hidden}"))
        code, err = server.stop()
    assert code == 0 and hidden not in err and "Traceback" not in err
    # and a store that cannot be opened: one line, the password masked
    result = run("registry", "serve", "--store", f"htps://ada:{hidden}@host", "--port", "0")
    assert_one_line_refusal(result, hidden)


def test_redact_url_masks_passwords_however_they_are_spelled():
    cases = {
        "http://ada:pw1@host:8081": "http://ada:***@host:8081",
        "https://ada:p@ss@host/x": "https://ada:***@host/x",
        "http://ada:pa/ss@host/p": "http://ada:***@host/p",
        "http://ada:pa?ss@host/": "http://ada:***@host/",
        "http://ada:pa%40ss@host": "http://ada:***@host",
        "http://token-only@host": "http://***@host",
        "http://a:s1@h1,http://b:s2@h2": "http://a:***@h1,http://b:***@h2",
        "http://ada:pw1,pw2@h1:1, https://h2": "http://ada:***@h1:1, https://h2",
        "ada:pw1@host": "ada:***@host",
        "https://h?basic.auth.user.info=a:b&timeout=5": "https://h?basic.auth.user.info=***&timeout=5",
        "https://h/?bearer.auth.token=t&ssl.key.password=k": (
            "https://h/?bearer.auth.token=***&ssl.key.password=***"
        ),
        "sqlite:///.cdc/registry.db": "sqlite:///.cdc/registry.db",
        "sqlite:////abs/r.db": "sqlite:////abs/r.db",
        "memory://": "memory://",
        "http://[::1]:8081/": "http://[::1]:8081/",
        # nothing secret: unchanged, slashes and all; something secret: only it masked
        "sqlite:////tmp/x.db?mode=ro": "sqlite:////tmp/x.db?mode=ro",
        "sqlite:///a.db?x=1": "sqlite:///a.db?x=1",
        "memory://name?a=1&&b#frag?token=x": "memory://name?a=1&&b#frag?token=x",
        "http://[::1:8081/?x": "http://[::1:8081/?x",
        "sqlite:////tmp/x.db?password=pw1&mode=ro": "sqlite:////tmp/x.db?password=***&mode=ro",
        "http://ada:pw1@host//p?token=t#f": "http://ada:***@host//p?token=***#f",
    }
    for url, expected in cases.items():
        assert redact_url(url) == expected, url


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("sqlite:///{tmp}/r.db?mode=ro", "parameter mode "),
        ("sqlite:////{tmp}/r.db?x=1&cache=shared", "parameters cache, x "),
        ("memory://shared?mode=ro", "parameter mode "),
        ("memory://?password=pw1", "parameter password "),
    ],
)
def test_the_embedded_store_refuses_query_parameters_it_does_not_take(
    tmp_path: Path, url: str, named: str
):
    url = url.format(tmp=str(tmp_path).lstrip("/"))
    with pytest.raises(ValueError) as e:
        open_registry(url)
    message = str(e.value)
    assert named in message and "\n" not in message and "pw1" not in message
    assert redact_url(url) in message
    assert not (tmp_path / "r.db").exists()


def test_redact_text_and_settings_hide_every_form_of_a_secret():
    url = "http://ada:s3%2Fcret@host"
    assert set(url_secrets(url)) == {"s3%2Fcret", "s3/cret"}
    text = f"GET {url}/subjects failed; password 's3/cret' and s3%2Fcret and tok-123"
    out = redact_text(text, urls=[url], secrets=["tok-123", None, ""])
    assert "s3" not in out and "tok-123" not in out and "http://ada:***@host/subjects" in out
    settings = {
        "url": "https://ada:pw9@h",
        "basic_auth": "ada:pw9",
        "bearer_token": "tk9",
        "nested": {"ssl.key.password": "kp9", "timeout": 5},
        "max.retries": 2,
    }
    masked = redact_settings(settings)
    assert "pw9" not in repr(masked) and "tk9" not in repr(masked) and "kp9" not in repr(masked)
    assert masked["max.retries"] == 2 and masked["nested"]["timeout"] == 5


# --- request body limit ------------------------------------------------------------------


def _avro_of_size(size: int) -> bytes:
    """A valid registration body of exactly ``size`` bytes."""
    shell = {"schema": json.dumps({"type": "record", "name": "R", "doc": "", "fields": []})}
    base = len(json.dumps(shell).encode())
    # each character of the doc costs 1 byte in the inner JSON and 1 in the outer
    shell["schema"] = json.dumps(
        {"type": "record", "name": "R", "doc": "x" * (size - base), "fields": []}
    )
    body = json.dumps(shell).encode()
    assert len(body) == size
    return body


def _raw_request(port: int, head: bytes, chunks: list[bytes]) -> tuple[int, dict[str, object]]:
    """Send a request by hand; the status and JSON body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(head)
        try:
            for chunk in chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and stopped reading: the answer is what counts
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
            part = sock.recv(65536)
            if not part:
                break
            data += part
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1])


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 1 << 30


def test_bodies_over_max_body_get_413_and_never_reach_the_store(tmp_path: Path):
    with serving(f"sqlite:///{tmp_path}/r.db", "--max-body", "2k") as server:
        u = f"{server.url}/subjects/s/versions"
        status, head, body = http("POST", u, _avro_of_size(2049))
        assert status == 413 and head["content-type"] == CT
        assert body["error_code"] == 413 and "2048 bytes" in body["message"]
        # chunked, with no Content-Length
        conn = HTTPConnection("127.0.0.1", server.port, timeout=10)
        big = _avro_of_size(5000)
        conn.request(
            "POST",
            "/subjects/s/versions",
            body=iter([big[i : i + 1000] for i in range(0, len(big), 1000)]),
            headers={"Content-Type": CT},
            encode_chunked=True,
        )
        answer = conn.getresponse()
        assert answer.status == 413
        assert json.loads(answer.read())["error_code"] == 413
        conn.close()
        assert http("GET", f"{server.url}/subjects")[2] == []
        # at the limit, the same request goes through
        status, _, body = http("POST", u, _avro_of_size(2048))
        assert (status, body["version"]) == (200, 1)
        assert http("GET", f"{server.url}/subjects")[2] == ["s"]


def test_default_limit_answers_an_announced_huge_body_without_reading_it(tmp_path: Path):
    with serving(f"sqlite:///{tmp_path}/r.db") as server:
        size = guards.DEFAULT_MAX_BODY + 1
        head = (
            f"POST /subjects/s/versions HTTP/1.1\r\nHost: x\r\nContent-Type: {CT}\r\n"
            f"Content-Length: {size}\r\n\r\n"
        ).encode()
        status, body = _raw_request(server.port, head, [])
        assert status == 413 and body["error_code"] == 413
        assert str(guards.DEFAULT_MAX_BODY) in str(body["message"])
        # streamed in chunks past the limit
        head = (
            "POST /subjects/s/versions HTTP/1.1\r\nHost: x\r\n"
            f"Content-Type: {CT}\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
        chunk = b"x" * (1 << 20)
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        status, body = _raw_request(server.port, head, [frame] * 17 + [b"0\r\n\r\n"])
        assert status == 413 and body["error_code"] == 413
        assert http("GET", f"{server.url}/subjects")[2] == []


def test_max_body_can_be_raised_above_the_default(tmp_path: Path):
    with serving(f"sqlite:///{tmp_path}/r.db", "--max-body", "20M") as server:
        size = guards.DEFAULT_MAX_BODY + 1024
        status, _, body = http("POST", f"{server.url}/subjects/s/versions", _avro_of_size(size))
        assert status == 200 and body["id"] == 1


def test_parse_size_reads_units_and_refuses_junk():
    assert guards.parse_size("1") == 1
    assert guards.parse_size("512k") == 512 * 1024
    assert guards.parse_size("16MiB") == guards.DEFAULT_MAX_BODY
    assert guards.parse_size(" 2 G ") == 2 * 1024**3
    for junk in ("", "0", "-1", "1.5M", "12x", "M", "1 TB"):
        with pytest.raises(ValueError):
            guards.parse_size(junk)


# --- registry serve misuse, --port 0, signals ---------------------------------------------


def _misuse_cases(tmp_path: Path) -> dict[str, list[str]]:
    (tmp_path / "dir").mkdir()
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    (tmp_path / "file").write_text("x")
    (tmp_path / "garbage.pem").write_text("-----BEGIN CERTIFICATE-----\nnope\n")
    store = f"sqlite:///{tmp_path}/ok.db"
    return {
        "unknown scheme": ["--store", "postgres://db/registry"],
        "no scheme": ["--store", "registry.db"],
        "store is a directory": ["--store", f"sqlite:///{tmp_path}/dir"],
        "store is not a database": ["--store", f"sqlite:///{tmp_path}/junk.db"],
        "store directory cannot be created": ["--store", f"sqlite:///{tmp_path}/file/r.db"],
        "store with a host": ["--store", "sqlite://host/r.db"],
        "port above range": ["--store", store, "--port", "65536"],
        "port below range": ["--store", store, "--port", "-1"],
        "cert without key": ["--store", store, "--tls-cert", str(tmp_path / "garbage.pem")],
        "key without cert": ["--store", store, "--tls-key", str(tmp_path / "garbage.pem")],
        "missing TLS files": [
            "--store",
            store,
            "--tls-cert",
            str(tmp_path / "no.pem"),
            "--tls-key",
            str(tmp_path / "no.key"),
        ],
        "TLS file is a directory": [
            "--store",
            store,
            "--tls-cert",
            str(tmp_path / "dir"),
            "--tls-key",
            str(tmp_path / "dir"),
        ],
        "TLS files are not PEM": [
            "--store",
            store,
            "--tls-cert",
            str(tmp_path / "garbage.pem"),
            "--tls-key",
            str(tmp_path / "garbage.pem"),
        ],
        "unknown host": ["--store", store, "--host", "no-such-host.invalid"],
        "bad max body": ["--store", store, "--max-body", "lots"],
    }


@pytest.mark.slow
def test_serve_misuse_is_one_line_and_exit_2(tmp_path: Path):
    """Each case in this process; the first also as a process of its own."""
    for number, (name, args) in enumerate(_misuse_cases(tmp_path).items()):
        for in_process in (True, False) if number == 0 else (True,):
            result = _serve_refused(["--port", "0", *args], {}, tmp_path, in_process=in_process)
            try:
                assert_one_line_refusal(result)
            except AssertionError as failure:
                raise AssertionError(f"{name} (in process: {in_process}): {failure}") from None
    assert not (tmp_path / "ok.db").exists()


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("registry", "serve", "--store", "memory://", "--port", str(port))
    line = assert_one_line_refusal(result)
    assert str(port) in line and "in use" in line


def test_port_0_announces_the_port_it_bound_and_serves_there(tmp_path: Path):
    with serving(f"sqlite:///{tmp_path}/r.db") as server:
        assert server.first_line == (
            f"schema registry on http://127.0.0.1:{server.port} serving sqlite:///{tmp_path}/r.db"
        )
        assert server.port > 0
        assert http("GET", f"{server.url}/subjects")[0] == 200


def test_serving_beyond_loopback_without_credentials_warns_and_serves(tmp_path: Path):
    with serving("memory://", "--host", "0.0.0.0") as server:
        assert server.first_line.startswith("schema registry on http://0.0.0.0:")
        local = f"http://127.0.0.1:{server.port}"
        assert http("GET", f"{local}/subjects")[0] == 200
        status, rest = server.stop()
    assert status == 0
    warnings = [line for line in rest.splitlines() if line.startswith("Warning: ")]
    assert len(warnings) == 1, rest
    for hint in ("0.0.0.0", "anyone", "CDC_REGISTRY_BASIC_AUTH", "CDC_REGISTRY_TOKEN"):
        assert hint in warnings[0]
    assert "--tls-cert" in warnings[0] and "--tls-key" in warnings[0]


@pytest.mark.parametrize(
    ("host", "env"),
    [("127.0.0.1", {}), ("0.0.0.0", {"CDC_REGISTRY_TOKEN": "long-random-token"})],
)
def test_no_warning_on_loopback_or_with_a_credential(host: str, env: dict[str, str]):
    with serving("memory://", "--host", host, env=_env(**env)) as server:
        assert http("GET", f"http://127.0.0.1:{server.port}/", headers=_auth(env))[0] == 200
        status, rest = server.stop()
    assert status == 0 and "Warning: " not in rest, rest


def _auth(env: dict[str, str]) -> dict[str, str]:
    token = env.get("CDC_REGISTRY_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def test_exposure_warning_reads_the_bound_address():
    from cdc_connectors.registry.serve import exposure_warning

    assert exposure_warning("127.0.0.1", None, False) is None
    assert exposure_warning("::1", None, False) is None
    assert exposure_warning("10.0.0.5", "user:pw", False) is None
    open_tls = exposure_warning("::", None, True)
    assert open_tls is not None and "CDC_REGISTRY_TOKEN" in open_tls
    assert "--tls-cert" not in open_tls  # TLS is on; credentials are what is missing
    assert "--tls-cert" in (exposure_warning("192.168.1.2", None, False) or "")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_cleanly(tmp_path: Path, sig: int):
    with serving(f"sqlite:///{tmp_path}/r.db") as server:
        assert http("GET", f"{server.url}/subjects")[0] == 200
        # an idle keep-alive client must not hold the shutdown up
        idle = HTTPConnection("127.0.0.1", server.port, timeout=10)
        idle.request("GET", "/subjects")
        idle.getresponse().read()
        started = time.monotonic()
        code, err = server.stop(sig)
        idle.close()
    assert code == 0, err
    assert err.strip() == "" and time.monotonic() - started < 10


def test_tls_with_auth_on_a_free_port(tmp_path: Path):
    cert, key = self_signed(tmp_path)
    env = _env(CDC_REGISTRY_TOKEN="tls-t0ken")
    store = f"sqlite:///{tmp_path}/r.db"
    with serving(store, "--tls-cert", str(cert), "--tls-key", str(key), env=env) as server:
        assert server.url.startswith("https://127.0.0.1:")
        trusted = open_registry(
            server.url, bearer_token="tls-t0ken", **{"ssl.ca.location": str(cert)}
        )
        assert trusted.get_subjects() == []
        anonymous = open_registry(server.url, **{"ssl.ca.location": str(cert), "max.retries": 0})
        with pytest.raises(SchemaRegistryError) as error:
            anonymous.get_subjects()
        assert error.value.http_status_code == 401
    # a certificate with someone else's key
    other = tmp_path / "other"
    other.mkdir()
    _, other_key = self_signed(other)
    result = run(
        "registry",
        "serve",
        "--store",
        store,
        "--port",
        "0",
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(other_key),
    )
    assert "TLS" in assert_one_line_refusal(result)
