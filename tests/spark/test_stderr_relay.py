"""The JVM's stderr is relayed line by line; once a run is stopping, its teardown is not."""

from __future__ import annotations

import os

import pytest

from cdc_connectors.spark import session


def test_the_relay_copies_lines_and_is_quiet_once_a_run_stops(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session, "_STOPPING", type(session._STOPPING)())
    read, write = os.pipe()
    with os.fdopen(read, "rb") as stream, os.fdopen(write, "wb") as writer:
        relay = session.relay_stderr(stream, quiet_when_stopping=True)
        writer.write(b"WARNING: Using incubator modules: jdk.incubator.vector\n")
        writer.write(b"a line of the JVM\n")
        writer.flush()
        for _ in range(200):  # (the relay reads in its own thread)
            if "a line of the JVM" in capfd.readouterr().err:
                break
            relay.join(0.01)
        else:
            raise AssertionError("the line was not relayed")
        session.quiet_from_now()
        writer.write(b"Traceback (most recent call last):\nConnectionResetError: reset\n")
        writer.close()
        relay.join(5)
    assert "Traceback" not in capfd.readouterr().err


def test_held_lines_say_why_a_jvm_did_not_start() -> None:
    def said(*lines: str) -> str | None:
        held = session.HeldLines()
        for line in lines:
            held.hold(line.encode() + b"\n")
        return held.refusal()

    assert said(
        "Picked up JAVA_TOOL_OPTIONS: -Xss4m",
        'Exception in thread "main" org.apache.spark.SparkException: Cores must be positive',
        "\tat org.apache.spark.deploy.SparkSubmit.main(SparkSubmit.scala)",
    ) == ("SparkException: Cores must be positive")
    assert said(
        "Picked up JAVA_TOOL_OPTIONS: -Xss4m",
        "Invalid maximum heap size: -Xmxlots",
        "Error: Could not create the Java Virtual Machine.",
        "Error: A fatal exception has occurred. Program will exit.",
    ) == ("Invalid maximum heap size: -Xmxlots (Could not create the Java Virtual Machine.)")
    assert said("Error: Master must start with yarn, spark, k8s or local") == (
        "Master must start with yarn, spark, k8s or local"
    )
    assert said("some log line") is None


def test_held_lines_are_shown_once_the_jvm_has_started(capfd: pytest.CaptureFixture[str]) -> None:
    held = session.HeldLines()
    assert held.hold(b"early\n")
    held.release()
    assert not held.hold(b"late\n")  # the relay writes it itself
    assert capfd.readouterr().err == "early\n"
