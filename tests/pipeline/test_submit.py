"""``cdc-connectors submit`` on a real standalone Spark cluster on loopback.

A master and one worker are started with pyspark's ``spark-class``; the pipeline file names
the master, and the executors run in the worker's own processes, so nothing here works only
in the driver. The cluster is torn down whatever happens.

A batch pipeline runs to its end, quiet; a streaming one is killed with the command that
submitted it (SIGKILL), and its driver, spark-submit's JVM and its executors end with it.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from tests.pipeline.support import (
    CLI,
    QUICK_JVM,
    Lines,
    cdc,
    environment,
    files_pipeline,
    noise_in,
    places,
    write_config,
    write_debezium,
)
from tests.pipeline.test_launcher_death import (
    GONE,
    command_line,
    descendants,
    kill_all,
    wait_gone,
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]
SPARK_HOME = Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{log.name} never said {text!r}:\n{log.read_text(errors='replace')}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A standalone master and worker on loopback: the master URL, the worker's directory."""
    root = tmp_path_factory.mktemp("cluster")
    env = {
        **environment(),
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_WORKER_DIR": str(root / "work"),
        "SPARK_LOG_DIR": str(root / "logs"),
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,  # the master and the worker
    }
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    processes: list[subprocess.Popen[bytes]] = []
    try:
        master_log = root / "master.log"
        with open(master_log, "wb") as log:
            master = subprocess.Popen(
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    *("--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"),
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        processes.append(master)
        _wait_for(master_log, "I have been elected leader", master, 180)
        worker_log = root / "worker.log"
        with open(worker_log, "wb") as log:
            worker = subprocess.Popen(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    url,
                    *("--host", "127.0.0.1", "--webui-port", "0"),
                    *("--cores", "2", "--memory", "1g", "--work-dir", str(root / "work")),
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        processes.append(worker)
        _wait_for(worker_log, "Successfully registered with master", worker, 180)
        yield url, root / "work"
    finally:
        for process in reversed(processes):
            _stop(process)


def test_submit_runs_a_pipeline_on_a_standalone_cluster(
    cluster: tuple[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "in").mkdir()
    expected = Lines()
    for seed in (21, 22):
        expected.add(write_debezium(tmp_path / "in" / f"changes-{seed}.jsonl", seed))
    write_config(
        tmp_path / "pipeline.yaml",
        files_pipeline(
            "cluster", tmp_path / "in", tmp_path / "out", tmp_path / "dead", mode="batch"
        ),
        master=cluster[0],
        conf={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.executor.memory": "512m",
            "spark.executor.extraJavaOptions": QUICK_JVM,
        },
    )
    result = cdc("submit", "pipeline.yaml", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # the junk lines went to the dead letters
    # spark-submit passes the driver's output on to its stdout
    output = result.stdout + result.stderr
    assert "cluster: 1 batch, " in output, output[-4000:]
    assert "Traceback" not in output
    assert not noise_in(output), output  # Spark started quiet: the run's lines only
    written, dead = places(tmp_path / "out"), places(tmp_path / "dead")
    assert sorted(written) == sorted(expected.written)
    assert sorted(dead) == sorted(expected.dead)
    # the executors ran in the worker: it keeps their logs under its work directory
    work = cluster[1]
    assert list(work.glob("app-*/*/stderr")), "no executor ran in the worker"


def _executors(app: str) -> set[int]:
    """The executor processes of application ``app`` on this machine."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            line = command_line(int(entry.name))
            if "CoarseGrainedExecutorBackend" in line and app in line:
                found.add(int(entry.name))
    return found


def test_killing_submit_ends_its_driver_and_executors(
    cluster: tuple[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "in").mkdir()
    write_debezium(tmp_path / "in" / "changes.jsonl", 23)
    write_config(
        tmp_path / "pipeline.yaml",
        files_pipeline("killed", tmp_path / "in", tmp_path / "out", tmp_path / "dead"),
        master=cluster[0],
        conf={
            "spark.ui.enabled": "false",
            "spark.executor.memory": "512m",
            "spark.executor.extraJavaOptions": QUICK_JVM,
        },
    )
    process = subprocess.Popen(
        [*CLI, "submit", "pipeline.yaml"],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,  # spark-submit passes the driver's lines on to stdout
        stderr=subprocess.DEVNULL,
        text=True,
    )
    tree: set[int] = set()
    executors: set[int] = set()
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("killed: batch 0:"):
                break
        else:
            raise AssertionError(f"no batch; exit {process.wait()}")
        tree = descendants(process.pid)
        apps = sorted(cluster[1].glob("app-*"), key=lambda path: path.stat().st_mtime)
        executors = _executors(apps[-1].name)
        assert executors, "no executor of the application runs in the worker"
        process.send_signal(signal.SIGKILL)
        process.wait()
        left = wait_gone(tree | executors, GONE + 15)  # the master ends the executors
        assert not left, f"still running after submit was killed: {left}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        kill_all(tree | executors)
