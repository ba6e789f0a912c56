"""Ctrl-C during ``cdc-connectors run``: the first asks for a stop after the batch, the
second stops at once, in one line (the process-level behaviour is tested in test_run.py).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator

import pytest

from cdc_connectors.pipeline import runner
from cdc_connectors.pipeline.runner import Stopper


@pytest.fixture
def logs_restored() -> Iterator[None]:
    yield
    runner._logs_back()


@pytest.mark.usefixtures("logs_restored")
def test_the_second_stop_is_said_once_without_py4js_tracebacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second Ctrl-C interrupts the JVM call the driver waits in: py4j logs that call and
    the connection it closes with their tracebacks (at ERROR, through ``logging``). The run
    says ``stopped at once by SIGINT`` itself, so those logs are off from then on."""
    said: list[str] = []
    monkeypatch.setattr(runner, "_say", said.append)
    monkeypatch.setattr(runner, "quiet_from_now", lambda: None)
    stopper = Stopper()
    stopper._handle(signal.SIGINT, None)
    assert stopper.requested == "SIGINT" and len(said) == 1
    assert logging.getLogger("py4j.clientserver").isEnabledFor(logging.ERROR)  # not yet
    with pytest.raises(KeyboardInterrupt, match="SIGINT"):
        stopper._handle(signal.SIGINT, None)
    assert not logging.getLogger("py4j.clientserver").isEnabledFor(logging.ERROR)
    assert not logging.getLogger().isEnabledFor(logging.ERROR)
    runner._logs_back()  # what run() does once it has stopped what ran
    assert logging.getLogger("py4j.clientserver").isEnabledFor(logging.ERROR)


@pytest.fixture
def signals_restored() -> Iterator[None]:
    kept = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for each, handler in kept.items():
        signal.signal(each, handler)


@pytest.mark.usefixtures("signals_restored")
def test_sighup_stops_after_the_batch_and_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """The terminal closed (the launcher passes SIGHUP on as it is): the run stops once its
    batch is written and says SIGHUP, not another signal's name."""
    said: list[str] = []
    monkeypatch.setattr(runner, "_say", said.append)
    monkeypatch.setattr(runner, "quiet_from_now", lambda: None)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    stopper = Stopper()
    stopper.install()
    assert signal.getsignal(signal.SIGHUP) == stopper._handle
    signal.raise_signal(signal.SIGHUP)
    assert stopper.requested == "SIGHUP"
    assert said == ["SIGHUP: stopping once the current batch is written (again to stop now)"]


@pytest.mark.usefixtures("signals_restored")
def test_a_signal_ignored_by_who_started_the_driver_stays_ignored() -> None:
    """``nohup cdc-connectors run``: the driver inherits SIGHUP ignored, and keeps it so."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    Stopper().install()
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
