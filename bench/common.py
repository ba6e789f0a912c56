"""Timing helpers and sample data shared by the benchmarks."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from cdc_connectors.opencdc import Record


def rate(fn: Callable[[], Any], items: int, *, repeat: int = 5) -> float:
    """Items per second of ``fn`` (which handles ``items`` items), best of ``repeat`` runs."""
    fn()  # warm up
    best = min(_timed(fn) for _ in range(repeat))
    return items / best


def rates(fns: dict[str, Callable[[], Any]], items: int, *, rounds: int = 7) -> dict[str, float]:
    """Items per second of each of ``fns``, best of ``rounds`` rounds taken in turn.

    Interleaving keeps a burst of load on a shared machine from landing on one side only.
    """
    for fn in fns.values():
        fn()  # warm up
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], _timed(fn))
    return {name: items / seconds for name, seconds in best.items()}


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def entry(
    value: float, unit: str, anchor: str, anchor_value: float, digits: int = 1
) -> dict[str, Any]:
    """One row of bench/results.json (values to ``digits`` decimals); ratio above 1 means
    ours is faster."""
    return {
        "value": round(value, digits),
        "unit": unit,
        "anchor": anchor,
        "anchor_value": round(anchor_value, digits),
        "ratio": round(value / anchor_value, 3),
    }


def order_records(n: int, seed: int = 7) -> list[Record]:
    """``n`` update records of an orders table, about 20 columns each."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        row = {
            "id": i,
            "customer_id": rnd.randrange(1, 10**6),
            "status": rnd.choice(["new", "paid", "shipped", "cancelled"]),
            "amount": f"{rnd.randrange(100, 10**6) / 100:.2f}",
            "currency": "EUR",
            "discount": rnd.random(),
            "created_at": 1_763_769_600_000_000 + i,
            "updated_at": 1_763_769_600_000_000 + 2 * i,
            "notes": "x" * rnd.randrange(0, 40),
            "vip": rnd.random() < 0.1,
            "shipping": {"street": "Main St 1", "city": "Springfield", "zip": "12345"},
            "tags": ["a", "b"][: rnd.randrange(0, 3)],
            "weight_g": rnd.randrange(10, 5000),
            "warehouse": rnd.randrange(1, 20),
            "channel": rnd.choice(["web", "app", "store"]),
            "coupon": None,
            "items": rnd.randrange(1, 9),
            "version": rnd.randrange(1, 5),
        }
        before = dict(row, status="new")
        out.append(
            Record.new(
                "update",
                position=f"orders/0/{i}".encode(),
                key={"id": i},
                before=before,
                after=row,
                collection="shop.public.orders",
                created_at=1_763_769_600_000_000_000 + i,
                read_at=1_763_769_600_000_000_000 + i + 1000,
            )
        )
    return out
