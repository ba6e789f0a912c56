"""Which collection and schema a typed read takes, from sample messages (no Spark job)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from cdc_connectors.connectors import typed_read
from cdc_connectors.connectors.messages import SettingError
from cdc_connectors.connectors.typed_read import bounded_samples, typed_read_decoder
from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.formats.opencdc import OpenCDCJsonFormat

SHOP = Path("examples/debezium/shop")
ORDERS = [
    Message(line, where=f"orders.jsonl:{n}")
    for n, line in enumerate((SHOP / "orders.jsonl").read_bytes().splitlines(), 1)
]
CUSTOMERS = [
    Message(line, where=f"customers.jsonl:{n}")
    for n, line in enumerate((SHOP / "customers.jsonl").read_bytes().splitlines(), 1)
]


def choose(samples: list[Message], **options: object) -> object:
    return typed_read_decoder(DebeziumJsonFormat(), samples, connector="cdc-x", **options)  # type: ignore[arg-type]


def test_samples_of_two_collections_refuse_the_read_listing_both() -> None:
    with pytest.raises(SettingError) as caught:
        choose([*CUSTOMERS[:2], *ORDERS[:2]])
    assert str(caught.value) == (
        "cdc-x setting 'typed': the messages hold several collections "
        "(shop.public.customers, shop.public.orders); typed columns are one collection's: "
        "set 'collection' to one of them, one read per collection"
    )


def test_the_chosen_collection_is_found_past_the_samples() -> None:
    pulled: list[str] = []

    def more() -> Iterator[Message]:
        for message in [*CUSTOMERS, *ORDERS]:
            pulled.append(message.where)
            yield message

    decoder = choose(CUSTOMERS[:1], collection="shop.public.orders", more=more())
    assert decoder.collection == "shop.public.orders"  # type: ignore[attr-defined]
    assert decoder.others == "skip"  # type: ignore[attr-defined]
    assert pulled[-1] == "orders.jsonl:1"  # read no further than needed


def test_junk_and_a_schema_without_typed_columns_are_passed_over() -> None:
    junk = Message(b"not json at all", where="orders.jsonl:0")
    no_schema = orjson.loads(ORDERS[0].value or b"")
    del no_schema["schema"]
    plain = Message(orjson.dumps(no_schema), where="orders.jsonl:00")
    decoder = choose([junk, plain, ORDERS[4], ORDERS[0]])  # line 5: schema with no row
    assert decoder.collection == "shop.public.orders"  # type: ignore[attr-defined]
    assert decoder.others == "error"  # type: ignore[attr-defined]


def test_messages_without_schema_blocks_have_their_columns_inferred() -> None:
    no_schema = orjson.loads(ORDERS[0].value or b"")
    del no_schema["schema"]
    decoder = choose([Message(orjson.dumps(no_schema), where="orders.jsonl:1")])
    assert decoder.inferred and decoder.collection == "shop.public.orders"


def test_no_message_or_no_message_of_the_collection() -> None:
    with pytest.raises(SettingError, match=r"no message to read the schema from \(yet\)"):
        choose([])
    with pytest.raises(SettingError) as caught:
        choose(ORDERS, collection="shop.public.invoices")
    assert str(caught.value) == (
        "cdc-x setting 'collection': no message of collection 'shop.public.invoices' "
        "(collections found: shop.public.orders)"
    )


def test_a_format_without_schema_blocks_has_no_typed_read() -> None:
    with pytest.raises(SettingError, match="format 'opencdc-json' has none"):
        typed_read_decoder(OpenCDCJsonFormat(), ORDERS, connector="cdc-x")


def test_samples_are_bounded_per_source_and_in_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(typed_read, "SAMPLES_PER_SOURCE", 2)
    monkeypatch.setattr(typed_read, "SAMPLES_TOTAL", 3)
    tombstone = Message(None, b"{}", where="t")
    taken = list(bounded_samples([[tombstone, *ORDERS], CUSTOMERS, ORDERS[3:]]))
    assert [m.where for m in taken] == [
        "orders.jsonl:1",
        "orders.jsonl:2",
        "customers.jsonl:1",  # the budget is spent: the first of each source from here
        "orders.jsonl:4",
    ]
