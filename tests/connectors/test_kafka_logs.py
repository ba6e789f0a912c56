"""librdkafka's lines go through Python logging, a few a minute, not hundreds."""

from __future__ import annotations

import logging
import subprocess
import sys

from cdc_connectors.connectors.kafka_logs import RateLimit
from tests.conftest import ROOT
from tests.kafka_broker import free_port

POLL_A_DEAD_BROKER = """
import time
from confluent_kafka import Consumer
from cdc_connectors.connectors.kafka_offsets import consumer_config
from cdc_connectors.connectors.kafka_settings import source_settings
consumer = Consumer(consumer_config(source_settings({"servers": "127.0.0.1:%d", "topics": "t"})))
end = time.monotonic() + 4
while time.monotonic() < end:
    consumer.poll(0.2)
consumer.close()
"""


def test_a_broker_that_is_not_there_logs_a_few_lines_not_hundreds():
    # librdkafka alone prints a FAIL line per retry: over a hundred in these four seconds.
    done = subprocess.run(
        [sys.executable, "-c", POLL_A_DEAD_BROKER % free_port()],
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.decode().splitlines()
    assert 1 <= len(lines) <= 3
    assert all("Connection refused" in line for line in lines)


def _record(msg: str) -> logging.LogRecord:
    return logging.LogRecord("librdkafka", logging.ERROR, __file__, 1, msg, None, None)


def test_the_rate_limit_says_how_many_lines_it_held_back():
    limit = RateLimit(lines=1, window=3600.0)
    assert limit.filter(_record("FAIL 1"))
    assert not limit.filter(_record("FAIL 2"))
    assert not limit.filter(_record("FAIL 3"))
    limit._start = -3600.0  # the window has passed
    later = _record("FAIL 4")
    assert limit.filter(later)
    assert later.msg == "FAIL 4 (2 more librdkafka lines held back)"
