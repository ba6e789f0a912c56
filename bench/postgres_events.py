"""Debezium JSON change events as the PostgreSQL connector (2.7) writes them with
``schemas.enable=true``: the key and the value each carry their schema block; the source
block and envelope carry every member the connector writes (``sequence``, ``xmin``, the
``ts_us`` / ``ts_ns`` times, ``transaction`` null without transaction metadata).

A ``shop.public.orders`` table of 11 columns (a decimal, micro timestamps, a date, an enum, a
UUID, a double, nullable text): mostly updates (``REPLICA IDENTITY DEFAULT``, no before
image), some inserts and the odd delete; about 3.5 KB a message, the schema block most of it.
"""

from __future__ import annotations

import base64
import random
import uuid
from typing import Any

import orjson

_ROW_FIELDS: list[dict[str, Any]] = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "int64", "optional": False, "field": "customer_id"},
    {
        "type": "string",
        "optional": False,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "new,paid,shipped,cancelled"},
        "field": "status",
    },
    {
        "type": "bytes",
        "optional": False,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "12"},
        "field": "amount",
    },
    {"type": "double", "optional": True, "field": "discount"},
    {
        "type": "int64",
        "optional": False,
        "name": "io.debezium.time.MicroTimestamp",
        "version": 1,
        "field": "created_at",
    },
    {
        "type": "int64",
        "optional": True,
        "name": "io.debezium.time.MicroTimestamp",
        "version": 1,
        "field": "updated_at",
    },
    {
        "type": "int32",
        "optional": True,
        "name": "io.debezium.time.Date",
        "version": 1,
        "field": "ship_date",
    },
    {"type": "string", "optional": True, "field": "note"},
    {"type": "int32", "optional": False, "field": "qty"},
    {
        "type": "string",
        "optional": False,
        "name": "io.debezium.data.Uuid",
        "version": 1,
        "field": "tracking",
    },
]
_ROW_SCHEMA = {
    "type": "struct",
    "fields": _ROW_FIELDS,
    "optional": True,
    "name": "shop.public.orders.Value",
}
_SOURCE_FIELDS: list[dict[str, Any]] = [
    {"type": "string", "optional": False, "field": "version"},
    {"type": "string", "optional": False, "field": "connector"},
    {"type": "string", "optional": False, "field": "name"},
    {"type": "int64", "optional": False, "field": "ts_ms"},
    {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "true,last,false,incremental"},
        "default": "false",
        "field": "snapshot",
    },
    {"type": "string", "optional": False, "field": "db"},
    {"type": "string", "optional": True, "field": "sequence"},
    {"type": "int64", "optional": True, "field": "ts_us"},
    {"type": "int64", "optional": True, "field": "ts_ns"},
    {"type": "string", "optional": False, "field": "schema"},
    {"type": "string", "optional": False, "field": "table"},
    {"type": "int64", "optional": True, "field": "txId"},
    {"type": "int64", "optional": True, "field": "lsn"},
    {"type": "int64", "optional": True, "field": "xmin"},
]
_TRANSACTION: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": False, "field": "total_order"},
        {"type": "int64", "optional": False, "field": "data_collection_order"},
    ],
    "optional": True,
    "name": "event.block",
    "version": 1,
    "field": "transaction",
}
VALUE_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "optional": False,
    "name": "shop.public.orders.Envelope",
    "version": 1,
    "fields": [
        {**_ROW_SCHEMA, "field": "before"},
        {**_ROW_SCHEMA, "field": "after"},
        {
            "type": "struct",
            "fields": _SOURCE_FIELDS,
            "optional": False,
            "name": "io.debezium.connector.postgresql.Source",
            "field": "source",
        },
        _TRANSACTION,
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
        {"type": "int64", "optional": True, "field": "ts_us"},
        {"type": "int64", "optional": True, "field": "ts_ns"},
    ],
}
KEY_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "optional": False,
    "name": "shop.public.orders.Key",
    "fields": [{"type": "int64", "optional": False, "field": "id"}],
}


def _decimal(cents: int) -> str:
    return base64.b64encode(
        cents.to_bytes((cents.bit_length() + 8) // 8, "big", signed=True)
    ).decode()


def _row(rnd: random.Random, ident: int) -> dict[str, Any]:
    return {
        "id": ident,
        "customer_id": rnd.randrange(1, 10**7),
        "status": rnd.choice(["new", "paid", "shipped", "cancelled"]),
        "amount": _decimal(rnd.randrange(100, 10**9)),
        "discount": None if rnd.random() < 0.3 else round(rnd.random() / 4, 4),
        "created_at": 1_735_689_600_000_000 + rnd.randrange(10**13),
        "updated_at": None if rnd.random() < 0.2 else 1_763_769_600_000_000 + ident,
        "ship_date": None if rnd.random() < 0.3 else 20_000 + rnd.randrange(400),
        "note": None if rnd.random() < 0.6 else "leave at the door, ring twice",
        "qty": rnd.randrange(1, 20),
        "tracking": str(uuid.UUID(int=rnd.getrandbits(128), version=4)),
    }


def event(rnd: random.Random, i: int) -> tuple[bytes, bytes]:
    """The (key, value) of the ``i``-th change event."""
    ident = 1_000_000 + i
    after: dict[str, Any] | None = _row(rnd, ident)
    before: dict[str, Any] | None = None
    kind = rnd.random()
    if kind < 0.1:
        op, before = "c", None
    elif kind < 0.97:
        op, before = "u", None  # REPLICA IDENTITY DEFAULT: no before image
    else:
        op, before, after = "d", after, None
    payload = {
        "before": before,
        "after": after,
        "source": {
            "version": "2.7.3.Final",
            "connector": "postgresql",
            "name": "shop",
            "ts_ms": 1_763_769_600_000 + i,
            "snapshot": "false",
            "db": "shop",
            "sequence": f'["{24_000_000 + 64 * i}","{24_000_064 + 64 * i}"]',
            "ts_us": 1_763_769_600_000_000 + 1000 * i,
            "ts_ns": 1_763_769_600_000_000_000 + 1_000_000 * i,
            "schema": "public",
            "table": "orders",
            "txId": 780_000 + i // 3,
            "lsn": 24_000_064 + 64 * i,
            "xmin": None,
        },
        "transaction": None,
        "op": op,
        "ts_ms": 1_763_769_600_100 + i,
        "ts_us": 1_763_769_600_100_000 + 1000 * i,
        "ts_ns": 1_763_769_600_100_000_000 + 1_000_000 * i,
    }
    key = orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": ident}})
    value = orjson.dumps({"schema": VALUE_SCHEMA, "payload": payload})
    return key, value


def events(n: int, seed: int = 11) -> list[tuple[bytes, bytes]]:
    """``n`` (key, value) change events."""
    rnd = random.Random(seed)
    return [event(rnd, i) for i in range(n)]
