"""Spark sessions started quiet: the pipeline runs' and the examples'.

A driver JVM started here logs through the package's ``log4j2.properties`` (errors only, on
stderr), shows no progress bars, and on a local master binds to ``127.0.0.1`` (Spark's
``SPARK_LOCAL_IP``, unless set) instead of warning that the host name resolves to a loopback
address. The one line the JVM itself prints when it starts, before any logging is configured
(``WARNING: Using incubator modules: jdk.incubator.vector``: Spark 4 adds that module to
every JVM it starts), is dropped from the JVM's stderr; every other line passes through.

The configuration reaches the JVM as ``spark.driver.extraJavaOptions``, which counts only
when it is set before the JVM starts: :func:`quiet_session` in a process that has no Spark
yet, ``spark-submit --driver-java-options``. A ``log4j2.configurationFile`` of one's own in
``spark.driver.extraJavaOptions`` stands.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

__all__ = [
    "LIGHT_JVM",
    "HeldLines",
    "SparkDidNotStart",
    "compiler_chosen",
    "java_options",
    "log_config",
    "quiet_environment",
    "quiet_from_now",
    "quiet_session",
    "relay_stderr",
    "session",
]

LOG4J2 = "log4j2.properties"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
#: The driver JVM of pipelines that all run in one pass per task: it only plans, so its
#: first compiler tier is enough (without the second, a run of 200,000 messages takes a
#: tenth less time on 2 cores: the second tier compiled Spark for a core-second a run).
LIGHT_JVM = "-XX:TieredStopAtLevel=1"
LOOPBACK = "127.0.0.1"
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
_LOG_CONFIG_KEYS = ("log4j2.configurationFile", "log4j.configurationFile")
#: What a JVM prints on its own stderr before logging is configured, and nothing else says.
_JVM_NOISE = re.compile(rb"^WARNING: Using incubator modules: ")
_copied: list[str] = []


def log_config() -> str:
    """The path of the package's quiet log4j2 configuration (a file of its own on disk)."""
    resource = resources.files(__package__ or "cdc_connectors.spark").joinpath(LOG4J2)
    if isinstance(resource, Path):
        return str(resource)
    if not _copied:  # the package is in a zip: a copy for the JVM, removed at exit
        fd, path = tempfile.mkstemp(prefix="cdc-log4j2-", suffix=".properties")
        with os.fdopen(fd, "wb") as stream:
            stream.write(resource.read_bytes())
        atexit.register(_remove, path)
        _copied.append(path)
    return _copied[0]


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


# Options that choose the JIT compilers: with any of them the user's choice stands (the
# first tier alone beside -XX:CompilationMode=high-only would leave no compiler at all).
_COMPILER_OPTIONS = ("Tiered", "CompilationMode", "JVMCI", "-Xint", "-Xcomp")
# Where else a driver JVM takes options from.
_JAVA_ENVIRONMENT = ("SPARK_SUBMIT_OPTS", "JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS")


def compiler_chosen(*options: str | None) -> bool:
    """Whether ``options`` (or the environment a driver JVM reads options from) choose the
    JIT compilers themselves."""
    texts = [*options, *(os.environ.get(name) for name in _JAVA_ENVIRONMENT)]
    return any(key in (text or "") for text in texts for key in _COMPILER_OPTIONS)


def java_options(existing: str | None = None, *, light: bool = False) -> str:
    """``spark.driver.extraJavaOptions``: ``existing`` and the quiet log4j2 configuration,
    unless ``existing`` names a configuration of its own; with ``light``,
    :data:`LIGHT_JVM` too, unless ``existing`` sets the compiler tiers itself."""
    existing = (existing or "").strip()
    ours = []
    if not any(key in existing for key in _LOG_CONFIG_KEYS):
        ours.append(f"-Dlog4j2.configurationFile={Path(log_config()).as_uri()}")
    if light and not compiler_chosen(existing):
        ours.append(LIGHT_JVM)
    return " ".join(part for part in (existing, *ours) if part)


def is_loopback(master: str | None) -> bool:
    """Whether ``master`` runs on this machine only: ``local``, ``local[N]``,
    ``local-cluster[...]``, or a cluster master on a loopback address (``None``: Spark's
    default, ``local[*]``)."""
    if master is None or master == "local" or master.startswith(("local[", "local-cluster[")):
        return True
    with contextlib.suppress(ValueError):
        return urlsplit(master).hostname in _LOOPBACK_HOSTS
    return False


def quiet_environment(master: str | None, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (else ``os.environ``, changed in place) with what a quiet local driver needs
    when not set: Spark's Python workers on this interpreter, and ``SPARK_LOCAL_IP`` on
    loopback when ``master`` is on this machine (a cluster's executors must reach the
    driver, so then Spark picks the address)."""
    target: Any = os.environ if env is None else env
    target.setdefault("PYSPARK_PYTHON", sys.executable)
    target.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if is_loopback(master):
        target.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    return target  # type: ignore[no-any-return]


#: Set once a run is stopping (:func:`quiet_from_now`).
_STOPPING = threading.Event()


def quiet_from_now() -> None:
    """A run is stopping: what its JVM's processes print from now on is their teardown (a
    Spark Python runner's traceback as its socket closes under it), not the run's to show;
    the run says itself how it ended."""
    _STOPPING.set()


class HeldLines:
    """A JVM's stderr lines held back while it starts: shown once it has started
    (:meth:`release`), or read for why it did not (:meth:`refusal`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: list[bytes] = []
        self._released = False

    def hold(self, line: bytes) -> bool:
        """Keep ``line`` if the JVM has not started yet; ``False`` once it has."""
        with self._lock:
            if not self._released:
                self._lines.append(line)
            return not self._released

    def release(self) -> None:
        """The JVM has started: the lines held are shown, and the next ones as they come."""
        with self._lock:
            self._released = True
            lines, self._lines = self._lines, []
            with contextlib.suppress(OSError):
                for line in lines:
                    _write(line)

    def refusal(self) -> str | None:
        """Why the JVM ended before it started, in its own words: its main thread's
        exception (the class's simple name and message), or spark-submit's ``Error:`` line."""
        with self._lock:
            lines = [line.decode("utf-8", "replace").strip() for line in self._lines]
        for line in lines:
            found = _MAIN_EXCEPTION.match(line)
            if found:
                return f"{found.group(1).rsplit('.', 1)[-1]}: {found.group(2)}"
        for at, line in enumerate(lines):
            if line.startswith("Error: "):
                # (the JVM's "Could not create the Java Virtual Machine." follows its reason)
                before = [earlier for earlier in lines[:at] if earlier]
                said = line.removeprefix("Error: ")
                return f"{before[-1]} ({said})" if before else said
        return None


#: The line a JVM prints when its main thread ends in an exception with a message.
_MAIN_EXCEPTION = re.compile(r'^Exception in thread "main" ([\w.$]+): (.+)$')


def relay_stderr(
    stream: IO[bytes], quiet_when_stopping: bool = False, held: HeldLines | None = None
) -> threading.Thread:
    """Copy ``stream`` (a JVM's stderr) to this process's stderr, line by line, without the
    JVM's start-up warning (and, ``quiet_when_stopping``, without anything once
    :func:`quiet_from_now` was called; with ``held``, not before it is released); the
    thread doing it (it ends at the end of ``stream``)."""

    def relay() -> None:
        broken = False
        with stream:
            for line in stream:
                if broken or _JVM_NOISE.match(line) or (quiet_when_stopping and _STOPPING.is_set()):
                    continue  # keep reading: a JVM whose stderr fills up stops
                if held is not None and held.hold(line):
                    continue
                try:
                    _write(line)
                except OSError:
                    broken = True

    thread = threading.Thread(target=relay, name="spark-stderr", daemon=True)
    thread.start()
    return thread


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(2, view) :]


def _running() -> bool:
    """Whether this process has a Spark JVM already (its options can no longer change)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ or SparkContext._gateway is not None


def quiet_session(
    master: str | None = "local[*]",
    app_name: str = "cdc-connectors",
    conf: Mapping[str, str] | None = None,
    *,
    light: bool = False,
) -> SparkSession:
    """A Spark session on ``master`` with ``conf``, its driver quiet (module docstring),
    and light (:data:`LIGHT_JVM`) with ``light``.

    Under spark-submit (or with Spark already running in this process) its master and conf
    stand, and the session is the one there is or a new one on its JVM.
    """
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit started us: its master, its conf
        spark = SparkSession.builder.appName(app_name).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        return spark
    quiet_environment(master)
    settings = {"spark.ui.showConsoleProgress": "false", **(conf or {})}
    settings[JAVA_OPTIONS] = java_options(settings.get(JAVA_OPTIONS), light=light)
    if master is not None:
        settings["spark.master"] = master
    settings["spark.app.name"] = app_name
    if _running():
        builder: Any = SparkSession.builder
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    else:
        from pyspark.java_gateway import launch_gateway

        spark_conf = SparkConf()
        for key, value in settings.items():
            spark_conf.set(key, value)
        gateway = _launched(launch_gateway, spark_conf)
        SparkContext(conf=spark_conf, gateway=gateway)
        spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _launched(launch: Callable[..., Any], spark_conf: SparkConf) -> Any:
    """pyspark's own start of the JVM (``launch``), its stderr through :func:`relay_stderr`
    (the JVM's alone): held until it has started, so that a JVM refusing its conf says why
    in one line (:class:`SparkDidNotStart`) instead of a stack trace and pyspark's "exited
    before sending its port number"."""
    read_end, write_end = os.pipe()
    held = HeldLines()
    relay = relay_stderr(os.fdopen(read_end, "rb"), quiet_when_stopping=True, held=held)
    try:
        gateway = launch(spark_conf, popen_kwargs={"stderr": write_end})
    except Exception as exc:
        os.close(write_end)
        relay.join(5)  # the JVM has ended: its last lines come at once
        reason = held.refusal()
        if reason is None:
            raise
        raise SparkDidNotStart(reason) from exc
    os.close(write_end)  # (the JVM holds its own copy)
    held.release()
    return gateway


class SparkDidNotStart(RuntimeError):
    """Spark's JVM ended before it started, saying why (a conf value it refuses)."""


def session(
    master: str | None, name: str, conf: Mapping[str, str], *, submitted: bool, light: bool
) -> SparkSession:
    """The Spark session of a pipeline file: its master and conf, unless spark-submit set
    them (``submitted``); ``light``: every pipeline runs in one pass per task."""
    if submitted:
        spark = SparkSession.builder.appName(name).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        return spark
    return quiet_session(master, name, conf, light=light)
