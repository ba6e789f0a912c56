"""The suite's Spark settings: the drivers started in processes of their own run interpreted
(tests/conftest.py), the suite's own session runs Spark's defaults, so both ways are tested."""

from __future__ import annotations

import os

from tests.conftest import INTERPRETED


def test_drivers_of_their_own_get_the_interpreted_settings() -> None:
    options = os.environ["SPARK_SUBMIT_OPTS"].split()
    for key, (lean, _) in INTERPRETED.items():
        assert f"-D{key}={lean}" in options


def test_the_suites_session_runs_sparks_defaults(spark) -> None:  # type: ignore[no-untyped-def]
    for key, (_, default) in INTERPRETED.items():
        assert spark.conf.get(key) == default, key
