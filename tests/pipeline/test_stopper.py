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
