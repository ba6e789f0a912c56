"""Starting the driver: ``cdc-connectors run`` (a local process) and ``submit`` (spark-submit).

``run`` starts :mod:`~cdc_connectors.pipeline.driver` in a process group of its own and
forwards SIGINT and SIGTERM to it alone: a Ctrl-C in the terminal would otherwise also reach
the Spark JVM and its Python workers and kill the batch being written.

``submit`` runs pyspark's own ``bin/spark-submit`` with ``--master`` from the file (unless
the extra arguments give one), every ``spark.conf`` entry as ``--conf``, and the package as
a zip in ``--py-files`` (with its entry points, so executors find formats and connectors
without an installed copy); the executors still need the package's dependencies.
spark-submit hands the driver's output to its own stdout: there the progress lines and the
summary go to stdout, not stderr. Its stderr passes through
:func:`~cdc_connectors.spark.session.relay_stderr`, and its driver JVM logs with the
package's quiet log4j2 configuration.

Both tell the driver their process id (:data:`~cdc_connectors.pipeline.lifeline.LAUNCHER_ENV`):
killed, they take it with them. When the driver (or spark-submit) is killed instead, the
command says so in one line, waits a few seconds for what it started to end (the Spark JVM
ends with its driver), kills what is left of its process group, and exits 128 + the signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from types import FrameType

import cdc_connectors
from cdc_connectors.pipeline.config import Config
from cdc_connectors.pipeline.driver import PIDFILE_ENV
from cdc_connectors.pipeline.lifeline import LAUNCHER_ENV
from cdc_connectors.spark.session import (
    JAVA_OPTIONS,
    compiler_chosen,
    java_options,
    quiet_environment,
    relay_stderr,
)

__all__ = ["package_zip", "run_local", "spark_submit_command", "submit"]

DISTRIBUTION = "cdc-connectors"
_DRIVER = "from cdc_connectors.pipeline.driver import main\nimport sys\nsys.exit(main())\n"


#: How long what the driver started may take to end after it, before it is killed.
GRACE = 5.0


def _environment(master: str | None = None) -> dict[str, str]:
    """The driver's environment; with ``master``, ``SPARK_LOCAL_IP`` on loopback when it is
    on this machine (without, the driver sees to it once it has read its file)."""
    env = dict(os.environ)
    # Spark's Python workers must run this interpreter (it has the package and its deps)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master is not None:
        quiet_environment(master, env)
    env[LAUNCHER_ENV] = str(os.getpid())  # the driver ends with us
    return env


def _status(code: int) -> int:
    return 128 - code if code < 0 else code


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _ended(child: subprocess.Popen[bytes], code: int, what: str) -> int:
    """The exit status of ``child``, whose status was ``code``; when a signal ended it, one
    line saying so. However it ended, the end of its process group (what it started) is
    awaited: a driver stopped at once while its Spark JVM was starting leaves a JVM that
    would not know it had gone."""
    if code < 0:
        _killed(what, child.pid, _signal_name(-code))
    _end_group(child.pid)
    return _status(code)


def _killed(what: str, pid: int | None, name: str) -> None:
    process = f" (process {pid})" if pid is not None else ""
    print(
        f"Error: the {what}{process} was killed by {name}; "
        "a run from the same checkpoint replays its last batch",
        file=sys.stderr,
        flush=True,
    )


def _driver_pid(pidfile: str) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(Path(pidfile).read_text().strip())
    return None


def _end_group(pgid: int, grace: float = GRACE) -> None:
    """Wait up to ``grace`` seconds for process group ``pgid`` to end, then kill it."""
    deadline = time.monotonic() + grace
    while True:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(-pgid, os.WNOHANG)  # members left to us (we are PID 1 or a subreaper)
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@contextlib.contextmanager
def _forwarding(target: subprocess.Popen[bytes], pidfile: str | None = None) -> Iterator[None]:
    """Until the block ends, SIGINT, SIGTERM and SIGHUP (the terminal closed) go to the
    driver (its pid from ``pidfile`` once written, else ``target``), which stops cleanly
    instead of running on unseen; one ignored by what started the command (``nohup``'s
    SIGHUP) stays ignored."""

    def forward(signum: int, frame: FrameType | None) -> None:
        pid = None
        if pidfile:
            with contextlib.suppress(OSError, ValueError):
                pid = int(Path(pidfile).read_text().strip())
        try:
            if pid is not None:
                os.kill(pid, signum)
            else:
                target.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {
        s: signal.signal(s, forward)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        if signal.getsignal(s) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)


def run_local(pipeline_file: str, *, available_now: bool = False) -> int:
    """Run the pipelines of ``pipeline_file`` here; the driver's exit status."""
    command = [sys.executable, "-m", "cdc_connectors.pipeline.driver", pipeline_file]
    if available_now:
        command.append("--available-now")
    child = subprocess.Popen(command, env=_environment(), process_group=0)
    with _forwarding(child):
        code = child.wait()
    return _ended(child, code, "driver")


def spark_submit() -> Path:
    """pyspark's own ``bin/spark-submit``."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"


def package_zip(directory: str) -> Path:
    """A zip of the package with its entry points, for ``--py-files``."""
    package = Path(cdc_connectors.__file__).resolve().parent
    target = Path(directory) / "cdc_connectors.zip"
    dist = metadata.distribution(DISTRIBUTION)
    info = f"cdc_connectors-{dist.version}.dist-info"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*")):
            if "__pycache__" in path.parts or path.suffix == ".pyc" or not path.is_file():
                continue
            archive.write(path, Path("cdc_connectors") / path.relative_to(package))
        for name in ("METADATA", "entry_points.txt"):
            text = dist.read_text(name)
            if text is not None:
                archive.writestr(f"{info}/{name}", text)
    return target


def _light(config: Config) -> bool:
    from cdc_connectors.pipeline.runner import light_driver  # Spark's modules: only here

    return light_driver(config)


def spark_submit_command(
    config: Config,
    pipeline_file: str,
    driver: str,
    py_files: str,
    extra: Sequence[str],
    *,
    available_now: bool = False,
    quiet: bool = True,
) -> list[str]:
    """The spark-submit command line of a pipeline file; ``quiet``: the driver JVM logs with
    the package's log4j2 configuration (unless the file or ``extra`` give Java options of
    their own to the driver)."""
    command = [str(spark_submit())]
    if not any(arg == "--master" or arg.startswith("--master=") for arg in extra):
        command += ["--master", config.master]
    if not any(arg == "--name" or arg.startswith("--name=") for arg in extra):
        command += ["--name", "cdc-connectors " + ",".join(p.id for p in config.pipelines)]
    given = any(arg.startswith("--driver-java-options") or JAVA_OPTIONS in arg for arg in extra)
    light = quiet and not given and not compiler_chosen(*extra) and _light(config)
    for key, value in config.spark_conf.items():
        if key == JAVA_OPTIONS and quiet and not given:
            # with the quiet log4j2 configuration, unless it has one
            value = java_options(value, light=light)
        command += ["--conf", f"{key}={value}"]
    if quiet and not given and JAVA_OPTIONS not in config.spark_conf:
        command += ["--driver-java-options", java_options(light=light)]
    command += ["--py-files", py_files, *extra, driver, os.path.abspath(pipeline_file)]
    if available_now:
        command.append("--available-now")
    return command


def submit(
    config: Config, pipeline_file: str, extra: Sequence[str], *, available_now: bool = False
) -> int:
    """Run ``pipeline_file`` through spark-submit; its exit status (the driver's)."""
    executable = spark_submit()
    if not os.access(executable, os.X_OK):
        print(f"Error: {executable} is missing or not executable", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cdc-submit-") as work:
        driver = Path(work) / "cdc_pipeline_driver.py"
        driver.write_text(_DRIVER)
        zipped = package_zip(work)
        pidfile = str(Path(work) / "driver.pid")
        env = _environment(_master(config, extra))
        env[PIDFILE_ENV] = pidfile
        env.setdefault("SPARK_HOME", str(executable.parent.parent))
        command = spark_submit_command(
            config, pipeline_file, str(driver), str(zipped), extra, available_now=available_now
        )
        child = subprocess.Popen(command, env=env, process_group=0, stderr=subprocess.PIPE)
        assert child.stderr is not None
        relay = relay_stderr(child.stderr)
        with _forwarding(child, pidfile):
            code = child.wait()
        relay.join(GRACE)  # its last lines
        if code > 128 and code - 128 != signal.SIGINT:  # 130: the driver said why itself
            # spark-submit exits with its Python driver's status: 128 + the signal that
            # killed it
            _killed("driver", _driver_pid(pidfile), _signal_name(code - 128))
            _end_group(child.pid)
        return _ended(child, code, "spark-submit")


def _master(config: Config, extra: Sequence[str]) -> str:
    """The master spark-submit runs on: ``--master`` of ``extra``, else the file's."""
    for index, arg in enumerate(extra):
        if arg.startswith("--master="):
            return arg.split("=", 1)[1]
        if arg == "--master" and index + 1 < len(extra):
            return extra[index + 1]
    return config.master
