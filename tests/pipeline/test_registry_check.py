"""``cdc-connectors run`` checks the registry URLs a pipeline file names before Spark starts,
without opening them: a URL that cannot be one, or a store path that cannot be a store, is
one line naming the file's line, exit 2, and nothing is started or written."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cdc_connectors.pipeline import load
from cdc_connectors.pipeline.registries import check_registries, registry_places
from tests.cli_runner import run_cli


def _pipeline_file(folder: Path, url: str, destination_registry: str | None = None) -> Path:
    (folder / "in").mkdir(exist_ok=True)
    own = f"registry: {destination_registry!r}, " if destination_registry else ""
    text = textwrap.dedent(
        f"""\
        version: "2.2"
        schema-registry:
          url: {url!r}
        pipelines:
          - id: p
            connectors:
              - id: in
                type: source
                plugin: files
                settings: {{path: in, format: debezium-json}}
              - id: out
                type: destination
                plugin: files
                settings: {{{own}path: out, format: opencdc-json}}
        """
    )
    path = folder / "p.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://u:@127.0.0.1:1", "registry URL http://u:***@127.0.0.1:1: its user info has"),
        ("sqlite:///r.db?x=1", "unknown query parameter x"),
        ("sqlite:///adir", "registry store adir is a directory"),
        ("http://ada:pw1,pw2@127.0.0.1:1", "registry URL http://ada:***@127.0.0.1:1: its host"),
        ("sqlite://host/r.db", "has a host"),
    ],
    ids=["empty-password", "query", "directory", "comma-in-password", "host"],
)
def test_a_registry_that_cannot_be_used_stops_the_run_in_one_line_at_its_line(
    tmp_path: Path, url: str, problem: str
) -> None:
    (tmp_path / "adir").mkdir()
    path = _pipeline_file(tmp_path, url)
    done = run_cli("run", str(path), cwd=tmp_path)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert stderr.startswith(f"Error: {path}:3: schema-registry.url: "), stderr
    assert problem in stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert "u:@" not in stderr and "pw1" not in stderr and "pw2" not in stderr
    assert not (tmp_path / ".cdc").exists()  # nothing started: no checkpoint, no letters
    assert not (tmp_path / "out").exists()


def test_submit_checks_them_too(tmp_path: Path) -> None:
    path = _pipeline_file(tmp_path, "http://u:@127.0.0.1:1")
    done = run_cli("submit", str(path), cwd=tmp_path)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert stderr.startswith(f"Error: {path}:3: schema-registry.url: "), stderr
    assert "empty password" in stderr and stderr.count("\n") == 1


def test_a_connector_registry_is_named_at_its_own_setting(tmp_path: Path) -> None:
    path = _pipeline_file(tmp_path, "sqlite:///r.db", destination_registry="sqlite:///r.db?y=2")
    done = run_cli("run", str(path), cwd=tmp_path)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert stderr.startswith(f"Error: {path}:14: pipelines[0].connectors[1].settings.registry: "), (
        stderr
    )
    assert "unknown query parameter y" in stderr


def test_registry_urls_are_checked_without_opening_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each URL where the file gives it first; no store is created, no registry asked (one
    that does not answer fails the pipeline that uses it, when it does)."""
    monkeypatch.chdir(tmp_path)
    down = "http://127.0.0.1:1"
    path = _pipeline_file(tmp_path, down, destination_registry="sqlite:///s.db")
    config = load(str(path))
    assert registry_places(config) == {
        down: f"{path}:3: schema-registry.url",
        "sqlite:///s.db": f"{path}:14: pipelines[0].connectors[1].settings.registry",
    }
    check_registries(config)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    ("raised", "line"),
    [
        (
            "cdc_connectors.registry.errors.RegistryUnavailableError: schema registry "
            "http://h:1 did not answer",
            "schema registry http://h:1 did not answer",
        ),
        ("pyspark.errors.SettingError: cdc-kafka setting 'x'", "cdc-kafka setting 'x'"),
        ("ValueError: not ours", "ValueError: not ours"),
        (
            "cdc_connectors.registry.store.UnknownSchema: schema id 7 is not in the registry",
            "schema id 7 is not in the registry",
        ),
        ("Caused by: something", "something"),  # the JVM's innermost cause
    ],
)
def test_a_failure_line_leaves_out_the_class_names_of_our_errors(raised: str, line: str) -> None:
    from cdc_connectors.pipeline.runner import one_line

    assert one_line(RuntimeError(f"Job aborted\n{raised}\n\tat org.apache.X")) == line
