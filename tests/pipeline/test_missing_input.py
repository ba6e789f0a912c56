"""A files source that cannot be read at all is refused before Spark starts, naming the
file line and the setting: a path that does not exist, or a batch read's glob that matches
nothing (as Spark's own file sources refuse it); a stream's glob may match nothing yet."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_connectors.pipeline import parse
from cdc_connectors.pipeline.runner import refusal


def _config(tmp_path: Path, path: str, mode: str) -> str:
    return f"""\
version: "2.2"
pipelines:
  - id: p
    mode: {mode}
    connectors:
      - id: in
        type: source
        plugin: files
        settings: {{path: "{path}", format: debezium-json}}
      - id: out
        type: destination
        plugin: files
        settings: {{path: "{tmp_path / "out"}"}}
"""


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_a_glob_matching_nothing_is_refused_in_batch_alone(tmp_path: Path, mode: str) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text("")
    glob = str(tmp_path / "in" / "*.none")
    found = refusal(parse(_config(tmp_path, glob, mode), "p.yaml"))
    if mode == "batch":
        assert found == (
            "p.yaml:9: pipelines[0].connectors[0].settings.path: "
            f"cdc-files setting 'path': {glob!r} matches no file"
        )
    else:
        assert found is None
    matching = str(tmp_path / "in" / "*.jsonl")
    assert refusal(parse(_config(tmp_path, matching, mode), "p.yaml")) is None


def test_a_path_that_does_not_exist_is_refused_in_either_mode(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    for mode in ("batch", "streaming"):
        found = refusal(parse(_config(tmp_path, missing, mode), "p.yaml"))
        assert found is not None and found.endswith(f"{missing!r} does not exist")
