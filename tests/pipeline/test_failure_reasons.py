"""A pipeline that fails says why in one line, whatever Spark wrapped the reason in."""

from __future__ import annotations

from cdc_connectors.pipeline.runner import one_line


def test_a_jvm_error_names_its_innermost_cause() -> None:
    text = (
        "An error occurred while calling o154.collectToPython.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed\n"
        "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages\n"
        "Caused by: java.io.IOException: No space left on device\n"
        "\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)\n"
    )
    assert one_line(RuntimeError(text)) == "java.io.IOException: No space left on device"
    plain = "An error occurred while calling o9.save.\n: java.lang.IllegalStateException: stop\n"
    assert one_line(RuntimeError(plain)) == "java.lang.IllegalStateException: stop"


def test_a_python_error_inside_a_jvm_error_wins() -> None:
    text = (
        "An error occurred while calling o1.x.\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "ValueError: the real reason\n"
        "Caused by: org.apache.spark.api.python.PythonException: wrapped\n"
    )
    assert one_line(RuntimeError(text)) == "ValueError: the real reason"


def test_a_python_traceback_ending_in_a_jvm_call_gives_the_jvm_s_reason() -> None:
    """A streaming batch's Python code failed in a call to the JVM: the last traceback's
    line is py4j's, which says nothing; the reason is in the JVM error after it."""
    text = (
        "An error occurred while calling o50.awaitTermination.\n"
        ": org.apache.spark.sql.streaming.StreamingQueryException: batch function failed\n"
        "Caused by: py4j.Py4JException: An exception was raised by the Python Proxy. "
        "Return Message: Traceback (most recent call last):\n"
        '  File "runner.py", line 1, in batch\n'
        "py4j.protocol.Py4JJavaError: An error occurred while calling o179.collectToPython.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure\n"
        "Caused by: java.io.IOException: No space left on device\n"
    )
    assert one_line(RuntimeError(text)) == "java.io.IOException: No space left on device"
    ours = text.replace(
        "Caused by: java.io.IOException: No space left on device\n",
        "cdc_connectors.table.evolve.SchemaChangeError: t: column 'qty' is int64 in the table\n",
    )
    assert one_line(RuntimeError(ours)) == "t: column 'qty' is int64 in the table"
