"""The README's blocks that talk to Kafka, run as tests/test_readme.py runs the others, with
the test broker's address for ``127.0.0.1:9092``. A module of its own, so that it runs on
one worker while another runs the rest of the README."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kafka_broker import KafkaBroker
from tests.test_readme import (
    WITH_KAFKA,
    Shell,
    root_unchanged,  # noqa: F401  (a fixture)
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]


@pytest.mark.usefixtures("root_unchanged")
def test_readme_kafka_blocks_run_as_written(tmp_path: Path, kafka_broker: KafkaBroker) -> None:
    shell = Shell(tmp_path, kafka=kafka_broker.bootstrap)
    for block in WITH_KAFKA:
        assert block.lang == "sh", block.name
        shell.run(block)
