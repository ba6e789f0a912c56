"""Publishing the staged file outputs of a batch pipeline, as each save mode says."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cdc_connectors.pipeline import outputs


def staged(path: Path, mode: str, files: dict[str, str]) -> outputs.StagedOutput:
    output = outputs.stage(str(path), mode)
    os.makedirs(os.path.join(output.staging, "_staging"))  # the writer's, empty
    for name, text in files.items():
        Path(output.staging, name).write_text(text)
    return output


def content(path: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(path.iterdir())}


def test_error_mode_publishes_onto_nothing_and_a_racing_run_fails_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = staged(out, "errorifexists", {"part-0-a.jsonl": "1\n"})
    second = staged(out, "error", {"part-0-b.jsonl": "2\n"})
    outputs.publish(first)
    assert content(out) == {"part-0-a.jsonl": "1\n"}
    with pytest.raises(outputs.OutputChanged, match="filled by another run"):
        outputs.check_publishable(second)
    with pytest.raises(outputs.OutputChanged):
        outputs.publish(second)
    outputs.discard(second)
    assert content(out) == {"part-0-a.jsonl": "1\n"}
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_error_mode_accepts_an_output_holding_only_hidden_entries(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "_staging").mkdir(parents=True)
    assert outputs.is_empty(str(out))
    outputs.publish(staged(out, "error", {"part-0-a.jsonl": "1\n"}))
    assert sorted(os.listdir(out)) == ["_staging", "part-0-a.jsonl"]


def test_overwrite_replaces_the_whole_output_in_one_step(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-old.jsonl").write_text("old\n")
    (out / "batch-000000000001").mkdir()
    outputs.publish(staged(out, "overwrite", {"part-0-new.jsonl": "new\n"}))
    assert content(out) == {"part-0-new.jsonl": "new\n"}
    assert sorted(os.listdir(tmp_path)) == ["out"]  # the old content is gone


def test_overwrite_with_nothing_leaves_an_empty_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-old.jsonl").write_text("old\n")
    outputs.publish(outputs.stage(str(out), "overwrite"))
    assert os.listdir(out) == []


def test_append_adds_to_what_is_there(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-old.jsonl").write_text("old\n")
    outputs.publish(staged(out, "append", {"part-0-new.jsonl": "new\n"}))
    assert content(out) == {"part-0-new.jsonl": "new\n", "part-old.jsonl": "old\n"}


def test_a_killed_run_s_staging_is_removed_by_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    dead = tmp_path / ".out.cdc-staging-999999999-0123456789ab"  # no such process
    dead.mkdir()
    mine = tmp_path / f".out.cdc-staging-{os.getpid()}-0123456789ab"  # a live run's
    mine.mkdir()
    outputs.stage(str(out), "error")
    assert not dead.exists() and mine.exists()


def test_a_path_that_is_a_file_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("x")
    assert not outputs.is_empty(str(tmp_path / "out"))
    assert outputs.is_empty(str(tmp_path / "absent"))
