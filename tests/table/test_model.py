"""The table after any interleaving of kills, replays and out-of-order batches equals the
source's final state: a property test against a dictionary model of the database."""

from __future__ import annotations

import contextlib
import datetime as dt
import tempfile
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_connectors.table import folding
from cdc_connectors.table.apply import apply_changes
from cdc_connectors.table.layout import AT, OFFSET, TIME
from cdc_connectors.table.store import TableSettings, Txn
from tests.hypothesis_profiles import examples
from tests.table.changes import EPOCH, batch
from tests.table.conftest import FORMATS, open_store, rows

Change = tuple[Any, ...]


@st.composite
def histories(draw: st.DrawFn, partial: bool) -> list[Change]:
    """Changes of a few keys, in the source's order (offsets 1, 2, ...)."""
    changes: list[Change] = []
    for offset in range(1, draw(st.integers(1, 24)) + 1):
        key = draw(st.integers(1, 4))
        op = draw(st.sampled_from(["create", "update", "snapshot", "delete"]))
        if op == "delete":
            changes.append((op, offset, {"id": key}))
            continue
        row = {
            "id": key,
            "status": draw(st.sampled_from(["new", "paid", "shipped", None])),
            "amount": draw(st.sampled_from([Decimal("1.00"), Decimal("2.50"), None])),
        }
        unset = ["amount"] if partial and op == "update" and draw(st.booleans()) else None
        changes.append((op, offset, row, unset))
    return changes


def model(changes: list[Change], deletes: str) -> dict[int, dict[str, Any]]:
    """The source database after ``changes``: key -> row (with ``deleted`` when soft)."""
    table: dict[int, dict[str, Any]] = {}
    for change in changes:
        op, _, row = change[0], change[1], change[2]
        key = row["id"]
        if op == "delete":
            if deletes == "hard":
                table.pop(key, None)
            elif key in table:
                table[key] = {**table[key], "deleted": True}
            else:
                table[key] = {"id": key, "status": None, "amount": None, "deleted": True}
            continue
        before = table.get(key)
        new = dict(row)
        if len(change) > 3 and change[3] and before is not None and not before.get("deleted"):
            new["amount"] = before["amount"]
        elif len(change) > 3 and change[3]:
            new["amount"] = None
        table[key] = {**new, **({"deleted": False} if deletes == "soft" else {})}
    return table


def history_model(changes: list[Change], shared: bool = False) -> list[tuple[Any, ...]]:
    """Every version the source's rows had: (id, status, amount, from, to, current), each
    valid from its change until the key's next change (the offsets are the times, or with
    ``shared`` each three offsets one time: :func:`_time`)."""
    versions: list[dict[str, Any]] = []
    open_now: dict[int, dict[str, Any]] = {}
    for change in changes:
        op, offset, row = change[0], _time(change[1], shared), change[2]
        before = open_now.pop(row["id"], None)
        if before is not None:
            before["to"], before["current"] = offset, False
        if op != "delete":
            amount = row["amount"]
            if len(change) > 3 and change[3]:  # left unset: the version before's, if any
                amount = before["amount"] if before is not None else None
            version = {"id": row["id"], "status": row["status"], "amount": amount}
            version.update({"from": offset, "to": None, "current": True})
            versions.append(version)
            open_now[row["id"]] = version
    return sorted(
        ((v["id"], v["status"], v["amount"], v["from"], v["to"], v["current"]) for v in versions),
        key=_by_key_and_time,
    )


def _time(offset: int, shared: bool) -> int:
    """When the change at ``offset`` happened, in seconds after EPOCH: its offset, or with
    ``shared`` the same time for each three offsets (changes of one transaction)."""
    return offset // 3 if shared else offset


def _timed(changes: pa.Table, shared: bool) -> pa.Table:
    """``changes`` at the times of :func:`_time`."""
    if not shared:
        return changes
    times = [
        EPOCH + dt.timedelta(seconds=_time(o, True)) for o in changes.column(OFFSET).to_pylist()
    ]
    return changes.set_column(changes.schema.get_field_index(AT), AT, pa.array(times, TIME))


def cut(changes: list[Change], cuts: list[int]) -> list[list[Change]]:
    """The changes in consecutive batches, cut at ``cuts``."""
    points = sorted({c % (len(changes) + 1) for c in cuts} | {0, len(changes)})
    return [changes[a:b] for a, b in pairwise(points) if b > a]


@st.composite
def deliveries(draw: st.DrawFn, count: int, late: bool) -> list[tuple[int, bool, str | None]]:
    """The order batches arrive in: the stream's, each at least once and replays of the one
    before; with ``late``, also any batch again out of order, outside the stream.
    Each: (batch, as part of the stream, a part whose commit is killed first)."""
    plan: list[tuple[int, bool, str | None]] = []
    for number in range(count):
        kill = draw(st.sampled_from([None, None, "rows", "tombstones"]))
        if kill:
            plan.append((number, True, kill))  # killed: the stream replays it
        plan.append((number, True, None))
        if draw(st.booleans()):
            plan.append((number, True, None))  # replayed after success
        if late and draw(st.booleans()):
            plan.append((draw(st.integers(0, count - 1)), False, None))
    return plan


class Killed(Exception):
    pass


def run(
    fmt: str,
    deletes: str,
    history: list[Change],
    cuts: list[int],
    data: st.DataObject,
    late: bool,
    shuffled: bool = False,
    shared: bool = False,
) -> None:
    """``shuffled``: the batches arrive once each in any order (files named newest first,
    partitions read unevenly), none of them as part of a stream."""
    batches = cut(history, cuts)
    if shuffled:
        order = data.draw(st.permutations(range(len(batches))), label="arrival")
        schedule: list[tuple[int, bool, str | None]] = [(n, False, None) for n in order]
    else:
        schedule = data.draw(deliveries(len(batches), late))
    mode = "history" if deletes == "history" else "upsert"
    deletes = "hard" if deletes == "history" else deletes
    wanted = TableSettings(["id"], mode=mode, deletes=deletes)  # type: ignore[arg-type]
    # small files folded as the batches go: never, or after each few batches
    fold_at = data.draw(st.sampled_from([32, 2, 3]), label="fold_at")
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.object(folding, "FOLD_AT", fold_at),
        mock.patch.object(folding, "FOLD_MOST", 2),
    ):
        for number, streamed, kill in schedule:
            store = open_store(fmt, Path(tmp))
            if kill:
                real = store.replace

                def dies(
                    part: str, *args: Any, _real: Any = real, _kill: str = kill, **kw: Any
                ) -> None:
                    if part == _kill:
                        raise Killed(part)
                    _real(part, *args, **kw)

                store.replace = dies
            txn = Txn("stream", number) if streamed else None
            with contextlib.suppress(Killed):
                apply_changes(store, _timed(batch(batches[number]), shared), wanted, txn)
        found_rows = rows(open_store(fmt, Path(tmp)))
        found = {r["id"]: r for r in found_rows}
    if mode == "history":
        assert _seconds(found_rows) == history_model(history, shared)
        return
    expected = model(history, deletes)
    assert sorted(found) == sorted(expected)
    for key, row in expected.items():
        if late and row.get("deleted"):
            # a soft delete applied before the changes it follows (out of order) keeps its
            # own image: the values of a deleted row are the table's when it was applied
            assert found[key]["_cdc_deleted"], key
            continue
        assert found[key]["status"] == row["status"], key
        assert found[key]["amount"] == row["amount"], key
        if deletes == "soft":
            assert found[key]["_cdc_deleted"] == row["deleted"], key


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("deletes", ["hard", "soft"])
@settings(max_examples=examples(15), deadline=None)
@given(
    history=histories(partial=False), cuts=st.lists(st.integers(0, 30), max_size=5), data=st.data()
)
def test_out_of_order_batches_replays_and_kills_end_in_the_sources_state(
    fmt: str, deletes: str, history: list[Change], cuts: list[int], data: st.DataObject
) -> None:
    run(fmt, deletes, history, cuts, data, late=True)


def _seconds(found: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    def second(at: Any) -> int | None:
        return None if at is None else int(at.timestamp()) - 1704067200

    return sorted(
        (
            (
                r["id"],
                r["status"],
                r["amount"],
                second(r["_cdc_valid_from"]),
                second(r["_cdc_valid_to"]),
                r["_cdc_is_current"],
            )
            for r in found
        ),
        key=_by_key_and_time,
    )


def _by_key_and_time(version: tuple[Any, ...]) -> tuple[Any, ...]:
    """Versions by key and time; those of one time (changes of one transaction) by when
    they end, then by their values: the same order on both sides."""
    ends = version[4]
    return version[0], version[3], ends is None, ends or 0, repr(version)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shuffled", [False, True], ids=["replayed", "any-order"])
@settings(max_examples=examples(15), deadline=None)
@given(
    history=histories(partial=False), cuts=st.lists(st.integers(0, 30), max_size=5), data=st.data()
)
def test_history_after_out_of_order_batches_replays_and_kills_is_every_version(
    fmt: str, shuffled: bool, history: list[Change], cuts: list[int], data: st.DataObject
) -> None:
    """``any-order``: a batch that deletes a key (closing nothing then) and brings it back,
    applied before the older batches, still closes the version an older batch gives.
    Each three offsets share a time (changes of one transaction; the times of others
    differ): a delete is told from another of its time by its order (``_cdc_closed_by``)."""
    run(fmt, "history", history, cuts, data, late=True, shuffled=shuffled, shared=True)


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=examples(15), deadline=None)
@given(
    history=histories(partial=True), cuts=st.lists(st.integers(0, 30), max_size=5), data=st.data()
)
def test_partial_images_replays_and_kills_end_in_the_sources_state(
    fmt: str, history: list[Change], cuts: list[int], data: st.DataObject
) -> None:
    run(fmt, "hard", history, cuts, data, late=False)


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=examples(15), deadline=None)
@given(
    history=histories(partial=True), cuts=st.lists(st.integers(0, 30), max_size=5), data=st.data()
)
def test_partial_images_out_of_order_end_in_the_sources_state(
    fmt: str, history: list[Change], cuts: list[int], data: st.DataObject
) -> None:
    """Batches holding updates that leave a column unset, arriving in any order: the unset
    column ends with the value the source's last change of it gave."""
    run(fmt, "hard", history, cuts, data, late=True, shuffled=True)
