"""A replacement through delta-rs's ``MERGE``, for the Delta tables whose writers must keep
more than :mod:`.delta_rewrite` writes: a change data feed (``cdc`` files), ``CHECK``
constraints and column invariants (validated rows), generated or identity columns, column
mapping, deletion vectors. Tables this destination creates need none of it; a user may
turn it on later (``ALTER TABLE``, ``DeltaTable.alter``), and the batches go this way then.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.table.keys import among
from cdc_connectors.table.layout import IS_CURRENT

__all__ = ["merge", "needs_merge"]

_ACTION = "__cdc_action"
#: Writer features the rewrite keeps (nothing to write for them, or nothing in the rows).
_KEPT_FEATURES = frozenset({"appendOnly", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})


def needs_merge(table: Any) -> bool:
    """Whether ``table`` (a :class:`deltalake.DeltaTable`) asks of its writers what only
    delta-rs's own writer does."""
    protocol = table.protocol()
    configuration = table.metadata().configuration or {}
    if configuration.get("delta.enableChangeDataFeed", "").lower() == "true":
        return True
    if any(key.startswith("delta.constraints.") for key in configuration):
        return True
    if "delta.invariants" in table.schema().to_json():
        return True
    if protocol.min_writer_version > 2 and protocol.min_writer_version < 7:
        return True  # legacy protocols of constraints, feeds, generated columns, mapping
    features = set(protocol.writer_features or ())
    return not features <= _KEPT_FEATURES


def merge(
    table: Any,
    schema: pa.Schema,
    keys: pa.Table,
    rows: pa.Table,
    every: pa.Table,
    commit: Any,
    row_group: int,
    held: pa.Table | None = None,
) -> None:
    """One ``MERGE`` of ``table``: the current rows of ``keys`` (every row of ``every``'s
    keys) go, ``rows`` (of ``schema``) come; ``held``: the keys the table holds of those
    read (and whether current, in history), if known: a row to delete that matches nothing
    makes an empty row in a change data feed, which the table's NOT NULL keys refuse."""
    from deltalake import WriterProperties

    names = keys.column_names
    single = IS_CURRENT not in schema.names  # at most one row of a key
    gone = among(keys, rows.select(names), anti=True) if single else keys
    if held is not None:
        current = held
        if not single and IS_CURRENT in held.column_names:
            current = held.filter(pc.fill_null(held.column(IS_CURRENT), False))
        gone = among(gone, current.select(names))
        every = among(every, held.select(names))
    source = pa.concat_tables(
        [
            _doomed(gone, schema, "delete"),
            _doomed(every.select(names), schema, "delete all"),
            rows.append_column(_ACTION, pa.array(["write"] * rows.num_rows, pa.string())),
        ]
    )
    action = f"s.{_quoted(_ACTION)}"
    on = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in names)
    if not single:  # history: the current row goes (every one, rebuilt), new versions come
        on += f" AND (({action} = 'delete' AND t.{_quoted(IS_CURRENT)}) OR {action} = 'delete all')"
    columns = {n: f"s.{_quoted(n)}" for n in schema.names}
    merger = table.merge(
        source,
        on,
        source_alias="s",
        target_alias="t",
        commit_properties=commit,
        writer_properties=WriterProperties(max_row_group_size=row_group),
    )
    if single:  # a key's row is updated in place, or deleted
        merger = merger.when_matched_update(columns, predicate=f"{action} = 'write'")
    merger = merger.when_matched_delete(predicate=f"{action} IN ('delete', 'delete all')")
    merger = merger.when_not_matched_insert(columns, predicate=f"{action} = 'write'")
    merger.execute()


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _doomed(keys: pa.Table, schema: pa.Schema, action: str) -> pa.Table:
    """Rows of ``keys`` alone (nulls elsewhere) that a merge matches to delete."""
    names = keys.column_names
    count = keys.num_rows
    columns = {
        f.name: keys.column(f.name).cast(f.type) if f.name in names else pa.nulls(count, f.type)
        for f in schema
    }
    doomed = pa.table(columns, schema=schema)
    return doomed.append_column(_ACTION, pa.array([action] * doomed.num_rows, pa.string()))
