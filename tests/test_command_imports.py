"""What ``cdc-connectors convert`` imports, and the lazily imported names of the Spark package.

``convert`` runs without Spark: a conversion that names no registry imports neither the
registry client (confluent-kafka's ``schema_registry``, a third of a second with its HTTP
and OAuth stacks) nor the DataFrame half of ``cdc_connectors.spark`` (``expand`` and its
imports), which the columnar converters do not use. A registry failure is still one line
and exit 2 (``test_convert_registry_misuse``).
"""

from __future__ import annotations

import subprocess
import sys


def _run(probe: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_a_conversion_without_a_registry_imports_neither_its_client_nor_the_dataframe_side():
    probe = (
        "import sys, tempfile, os\n"
        "from click.testing import CliRunner\n"
        "from cdc_connectors.cli import main\n"
        "folder = tempfile.mkdtemp()\n"
        "source = os.path.join(folder, 'in.jsonl')\n"
        'open(source, \'w\').write(\'{"payload": {"op": "c", "after": {"id": 1}, '
        '"source": {"table": "t"}, "ts_ms": 1}}\\n\')\n'
        "done = CliRunner().invoke(main, ['convert', '--from', 'debezium-json', '--to', "
        "'opencdc-proto', source, '-o', os.path.join(folder, 'out.pb')])\n"
        "assert done.exit_code == 0, done.output\n"
        "heavy = ('confluent_kafka.schema_registry', 'cdc_connectors.spark.expand')\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    assert _run(probe) == ""


def test_the_spark_package_names_are_the_functions_before_and_after_their_modules():
    probe = (
        "import types\n"
        "import cdc_connectors.spark as spark\n"
        "import cdc_connectors.spark.expand, cdc_connectors.spark.typed_view\n"
        "from cdc_connectors.spark import expand, typed_view, encode, OPENCDC_SCHEMA\n"
        "from cdc_connectors.spark import avro_columnar\n"
        "from cdc_connectors.spark.expand import AvroColumnDecoder\n"
        "assert isinstance(avro_columnar, types.ModuleType)\n"
        "assert callable(expand) and callable(typed_view) and callable(encode)\n"
        "assert not isinstance(spark.expand, types.ModuleType)\n"
        "assert spark.expand is expand and spark.typed_view is typed_view\n"
        "assert OPENCDC_SCHEMA.fieldNames()[0] == 'position'\n"
        "try:\n"
        "    spark.nothing_of_that_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    assert "has no attribute 'nothing_of_that_name'" in _run(probe)
