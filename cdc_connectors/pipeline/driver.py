"""The driver program of a pipeline run: ``python -m cdc_connectors.pipeline.driver FILE``.

``cdc-connectors run`` starts it in a process group of its own (so that a Ctrl-C in the
terminal reaches the Spark workers only through it), ``cdc-connectors submit`` through
``spark-submit``, whose master and conf then stand. Exit status as
:func:`cdc_connectors.pipeline.runner.run`; 2 for a file that cannot be run.
"""

from __future__ import annotations

import argparse
import os
import sys

from cdc_connectors.pipeline.config import ConfigError, load

#: When set, the driver writes its process id there (``submit`` forwards Ctrl-C to it).
PIDFILE_ENV = "CDC_CONNECTORS_DRIVER_PIDFILE"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cdc_connectors.pipeline.driver")
    parser.add_argument("pipeline_file")
    parser.add_argument("--available-now", action="store_true")
    args = parser.parse_args(argv)
    from cdc_connectors.pipeline.runner import EXIT_INTERRUPTED, Stopper, one_line, run
    from cdc_connectors.spark.session import session

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
        try:
            # spark-submit leaves the address of its JVM here: its master and conf stand
            spark = session(config, submitted="PYSPARK_GATEWAY_PORT" in os.environ)
        except Exception as exc:
            print(f"Error: Spark did not start: {one_line(exc)}", file=sys.stderr)
            return 1
        stopper.install()  # again: the SparkContext put its own SIGINT handler in place
        try:
            return run(config, spark, available_now=args.available_now, stopper=stopper)
        finally:
            spark.stop()
    except KeyboardInterrupt as exc:
        print(f"stopped at once by {exc or 'SIGINT'}", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
