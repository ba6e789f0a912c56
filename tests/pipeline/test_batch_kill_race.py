"""A batch pipeline killed mid-run, run again, and raced by a second run: a plain reader of
its outputs finds every record once and every dead letter once, or a refusal of one line."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.pipeline.support import (
    CLI,
    Lines,
    environment,
    files_pipeline,
    places,
    run_here,
    write_config,
    write_debezium,
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def assert_once(expected: Lines, out: Path, dead: Path) -> None:
    written, letters = places(out), places(dead)
    assert [p for p, n in Counter(written).items() if n > 1] == [], "a record written twice"
    assert [p for p, n in Counter(letters).items() if n > 1] == [], "a dead letter twice"
    assert set(written) == expected.written
    assert set(letters) == expected.dead


def staging_appeared(root: Path) -> bool:
    return any(
        p.name.startswith((".out.cdc-staging-", ".dead.cdc-staging-")) for p in root.iterdir()
    )


def test_killed_rerun_and_raced_batch_runs_write_each_record_once(
    tmp_path: Path, spark: object
) -> None:
    (tmp_path / "in").mkdir()
    expected = Lines()
    for seed in (1, 2):
        expected.add(write_debezium(tmp_path / "in" / f"changes-{seed}.jsonl", seed))
    out, dead = tmp_path / "out", tmp_path / "dead"
    write_config(tmp_path / "p.yaml", files_pipeline("p", tmp_path / "in", out, dead, mode="batch"))

    # killed while it writes: the driver, its JVM and workers all at once (its process group)
    driver = subprocess.Popen(
        [*CLI[:1], "-m", "cdc_connectors.pipeline.driver", "p.yaml"],
        cwd=tmp_path,
        env=environment(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while not staging_appeared(tmp_path) and driver.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert places(out) == [] and places(dead) == []  # nothing published

    # run again, in the suite's Spark session: everything once (the killed run's staging is
    # cleared)
    again = run_here(spark, tmp_path / "p.yaml")
    assert again.returncode == 1, again.stderr  # 1: there were dead letters
    assert_once(expected, out, dead)
    assert not staging_appeared(tmp_path)

    # two runs racing on the written output: each is refused with one line (the output is
    # not empty, or the other run holds the pipeline)
    racing = [
        subprocess.Popen(
            [*CLI, "run", "p.yaml"],
            cwd=tmp_path,
            env=environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=420), p.stderr.read() if p.stderr else "") for p in racing]
    for status, stderr in results:
        assert status == 2, stderr
        errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1, stderr
        assert "is not empty; set mode: overwrite" in errors[0] or "already running" in errors[0]
        assert "Traceback" not in stderr
    assert_once(expected, out, dead)
