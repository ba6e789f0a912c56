"""Typed Kafka reads over several topics read one collection each (the collection setting)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ROOT
from tests.connectors.test_kafka_source import new_topic, produce, source
from tests.kafka_broker import KafkaBroker


def test_typed_kafka_reads_of_two_topics(spark: Any, kafka_broker: KafkaBroker) -> None:
    orders = (ROOT / "examples/debezium/shop/orders.jsonl").read_bytes().splitlines()
    customers = (ROOT / "examples/debezium/shop/customers.jsonl").read_bytes().splitlines()
    t1, t2 = new_topic(kafka_broker, 1), new_topic(kafka_broker, 1)
    produce(kafka_broker, t1, [(0, None, line) for line in orders])
    produce(kafka_broker, t2, [(0, None, line) for line in customers])
    topics = f"{t1},{t2}"
    with pytest.raises(Exception, match="several collections"):
        _ = source(
            spark,
            kafka_broker,
            topics,
            format="debezium-json",
            typed="true",
            endingOffsets="latest",
        ).schema
    df = source(
        spark,
        kafka_broker,
        topics,
        format="debezium-json",
        typed="true",
        collection="shop.public.orders",
        endingOffsets="latest",
    )
    rows = df.collect()
    good = [r for r in rows if r.dead_letter is None]
    assert {dict(r.metadata)["opencdc.collection"] for r in good} == {"shop.public.orders"}
    assert len(good) == 5
