"""What a Spark Python worker imports to run a connector's task.

Spark forks a Python worker for each planning step, task and commit, and each imports the
connector's module anew. The registry client (confluent-kafka's ``schema_registry``, with
its HTTP and OAuth stacks) and pandas (which pyarrow imports on its first value made from a
Python object) took about as long as the rest together: they are imported where used, not
by the connectors' modules.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("confluent_kafka.schema_registry", "pandas", "httpx", "authlib")


@pytest.mark.parametrize("module", ["pyspark_cdc_files", "pyspark_cdc_kafka"])
def test_a_connector_module_imports_neither_the_registry_client_nor_pandas(module):
    probe = (
        f"import sys, {module}\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
        f"print({module}.DefaultSource.name())"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    imported, name = result.stdout.splitlines()
    assert imported == ""
    assert name in ("cdc-files", "cdc-kafka")


@pytest.mark.parametrize("module", ["pyspark_cdc_files", "pyspark_cdc_kafka"])
def test_the_look_up_of_a_session_imports_no_connector(module):
    """PySpark imports every ``pyspark_*`` module in each session's look-up, whatever it
    queries: ours import the connector (pyarrow, confluent-kafka, the formats) only when a
    query uses it, and name it as it names itself."""
    probe = (
        f"import sys, {module}\n"
        "heavy = ('pyarrow', 'numpy', 'confluent_kafka', 'cdc_connectors.formats')\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
        f"found = {module}.DefaultSource\n"
        "print(found.name(), found.connector_class().name())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    imported, names = result.stdout.splitlines()
    assert imported == ""
    name, connector_name = names.split()
    assert name == connector_name and name in ("cdc-files", "cdc-kafka")


def test_a_pipeline_task_imports_the_registry_client_only_for_a_registry():
    # (pandas it imports with the first Arrow column it makes of data: pyarrow's doing)
    probe = (
        "import sys\n"
        "from cdc_connectors.pipeline import in_task\n"
        "print('confluent_kafka.schema_registry' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_the_registry_names_are_there_when_asked_for():
    probe = (
        "import sys\n"
        "from cdc_connectors import registry, spark\n"
        "assert 'confluent_kafka.schema_registry' not in sys.modules\n"
        "from cdc_connectors.registry import Schema, SchemaRegistry, SchemaRegistryError\n"
        "from confluent_kafka.schema_registry import Schema as ConfluentSchema\n"
        "assert Schema is ConfluentSchema, Schema\n"
        "assert issubclass(registry.RegistryUnavailableError, SchemaRegistryError)\n"
        "assert callable(spark.expand) and callable(spark.typed_view)\n"
        "try:\n"
        "    registry.nothing_of_that_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert "has no attribute 'nothing_of_that_name'" in result.stdout
