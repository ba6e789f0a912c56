"""The driver program of a pipeline run: ``python -m cdc_connectors.pipeline.driver FILE``.

``cdc-connectors run`` starts it in a process group of its own (so that a Ctrl-C in the
terminal reaches the Spark workers only through it), ``cdc-connectors submit`` through
``spark-submit``, whose master and conf then stand. Exit status as
:func:`cdc_connectors.pipeline.runner.run`; 2 for a file that cannot be run, or whose
pipelines another driver runs (:mod:`~cdc_connectors.pipeline.lock`).

Started by ``cdc-connectors``, the driver ends when that process does, however it ends
(:mod:`~cdc_connectors.pipeline.lifeline`): stopped at once, its Spark JVM with it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from cdc_connectors.pipeline.config import ConfigError, load
from cdc_connectors.pipeline.lifeline import end_process, say, watch_launcher
from cdc_connectors.pipeline.lock import CheckpointBusy, lock_checkpoints

T = TypeVar("T")

#: When set, the driver writes its process id there (``submit`` forwards Ctrl-C to it).
PIDFILE_ENV = "CDC_CONNECTORS_DRIVER_PIDFILE"
#: The exit status of a driver whose launcher ended (nobody reads it but a log).
EXIT_ORPHANED = 130


def _spark_process() -> int | None:
    """The process id of this driver's Spark JVM: the one pyspark started, else (under
    spark-submit) the parent."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None) if gateway is not None else None
    if process is not None:
        return int(process.pid)
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return os.getppid()
    return None


def _orphaned(launcher: int) -> None:
    """The launcher ended without a word (SIGKILL): stop now, the JVM first."""
    say(f"cdc-connectors (process {launcher}) ended: the driver stops at once")
    with contextlib.suppress(OSError):  # what breaks in the other threads now is no news
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
    try:
        jvm = _spark_process()
        if jvm is not None and jvm > 1:
            end_process(jvm)
    finally:
        os._exit(EXIT_ORPHANED)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cdc_connectors.pipeline.driver")
    parser.add_argument("pipeline_file")
    parser.add_argument("--available-now", action="store_true")
    args = parser.parse_args(argv)
    watch_launcher(_orphaned)
    from cdc_connectors.pipeline.runner import (
        EXIT_INTERRUPTED,
        Stopper,
        light_driver,
        one_line,
        refusal,
        run,
    )
    from cdc_connectors.spark.session import quiet_from_now, session

    stopper = Stopper()
    stopper.install()
    pidfile = os.environ.get(PIDFILE_ENV)
    if pidfile:
        with open(pidfile, "w") as stream:
            stream.write(f"{os.getpid()}\n")
    try:
        try:
            config = load(args.pipeline_file)
        except ConfigError as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return 2
        problem = refusal(config)  # before a checkpoint is locked: nothing made for it
        if problem is not None:
            print(f"Error: {problem}", file=sys.stderr)
            return 2
        try:
            locks = lock_checkpoints(config.pipelines)  # held until Spark has stopped
        except CheckpointBusy as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return 2
        problem = refusal(config)  # again, locked: said before Spark starts (and in run())
        if problem is not None:
            locks.release()
            print(f"Error: {problem}", file=sys.stderr)
            return 2
        try:
            # spark-submit leaves the address of its JVM here: its master and conf stand
            spark = started_apart(
                lambda: session(
                    config.master,
                    "cdc-connectors " + ",".join(p.id for p in config.pipelines),
                    config.spark_conf,
                    submitted="PYSPARK_GATEWAY_PORT" in os.environ,
                    light=light_driver(config),
                )
            )
        except Exception as exc:
            print(f"Error: Spark did not start: {one_line(exc)}", file=sys.stderr)
            return 1
        stopper.install()  # again, should a SparkContext have put its own SIGINT handler in place
        try:
            return run(config, spark, available_now=args.available_now, stopper=stopper)
        finally:
            quiet_from_now()  # the run has said how it ended: Spark's teardown is no news
            with warnings.catch_warnings():  # (nor that a run stopped at once broke py4j's
                warnings.simplefilter("ignore")  # connection: "Unable to cleanly shutdown")
                spark.stop()
            locks.release()  # nothing of this run writes any more
    except KeyboardInterrupt as exc:
        print(f"stopped at once by {str(exc) or 'SIGINT'}", file=sys.stderr)
        return EXIT_INTERRUPTED


def started_apart(start: Callable[[], T]) -> T:
    """What ``start()`` gives, run in a thread of its own while this one waits for it.

    A SparkContext made in the main thread puts its own SIGINT handler in place, one that
    stops at the first Ctrl-C (after py4j has logged the calls it interrupted, tracebacks
    and all); made apart, it leaves the run's :class:`~cdc_connectors.pipeline.runner.
    Stopper` the signals from the start. A second signal during the start stops the driver
    at once; the JVM being started ends with the driver's process group
    (:mod:`~cdc_connectors.pipeline.launch`)."""
    done: dict[str, Any] = {}

    def target() -> None:
        try:
            done["value"] = start()
        except BaseException as exc:  # raised again in the waiting thread
            done["error"] = exc

    thread = threading.Thread(target=target, name="spark-start", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)  # (a signal's handler runs between two waits)
    if "error" in done:
        raise done["error"]
    value: T = done["value"]
    return value


if __name__ == "__main__":
    sys.exit(main())
