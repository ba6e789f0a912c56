"""Apply a batch of changes to a table: evolve its columns, plan, replace in one transaction.

:func:`apply_changes` is all a writer of any format needs: it creates the table on the first
batch (its columns from the changes, its keys and mode stored with it), adds and widens
columns, reads the current rows and tombstones of the keys the batch touches, plans the
merge (:mod:`.plan`) and replaces them. With a :class:`~.store.Txn`, a batch whose version
the table already holds changes nothing; the rows are committed before the tombstones, so a
batch killed between the two commits adds its tombstones when replayed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from cdc_connectors.errors import CodecError, ConfigError
from cdc_connectors.table.evolve import Evolution, SchemaChangeError, evolution, numeric, widens
from cdc_connectors.table.history import Rebuilt, after_a_delete, late_keys, rebuild
from cdc_connectors.table.keys import among
from cdc_connectors.table.layout import (
    CHANGE_COLUMNS,
    CLOSED_BY,
    CLOSED_BY_TYPE,
    DELETES_BEFORE,
    DELETES_BEFORE_TYPE,
    INHERITED,
    INHERITED_TYPE,
    IS_CURRENT,
    OFFSET,
    OP,
    STREAM,
    UNSET,
)
from cdc_connectors.table.order import AUTO, arrived, rebased
from cdc_connectors.table.plan import bookkeeping_fields, plan
from cdc_connectors.table.store import InterleavedWrite, TableSettings, TableStore, Txn

__all__ = ["Applied", "KeyColumnsError", "apply_changes", "row_schema"]


class KeyColumnsError(ConfigError):
    """The key columns named (or the records' keys) cannot key the table."""


@dataclass(frozen=True)
class Applied:
    """What a batch did: changes that took effect, stale ones, and whether the table
    already held the batch (a replay)."""

    applied: int
    stale: int
    replayed: bool = False


def row_schema(changes: pa.Schema) -> pa.Schema:
    """The row columns of a batch of changes."""
    return pa.schema([f for f in changes if f.name not in CHANGE_COLUMNS])


def apply_changes(
    store: TableStore,
    changes: pa.Table,
    settings: TableSettings,
    txn: Txn | None = None,
    *,
    repairing: bool = False,
) -> Applied:
    """Apply ``changes`` (:mod:`.layout`) to ``store``'s table (``repairing``: the deletes
    of a batch another writer came between, applied again)."""
    given = changes
    held = txn is not None and _holds(store, "rows", txn)
    if held and txn is not None and _holds(store, "tombstones", txn):
        return Applied(0, 0, replayed=True)
    settings, schema, changes = _evolved(store, changes, settings)
    keys = settings.keys
    _check_keys(changes, keys, store.where)
    changes = _cast(changes, schema)
    touched = changes.select(keys).group_by(keys, use_threads=False).aggregate([])
    changes, versions, current, graves = _held_of(store, changes, touched, settings, schema)
    held_graves = graves
    late = keys_of(changes, keys).slice(0, 0)
    rebuilt = None
    if settings.mode == "history":
        past = _late_history(store, changes, keys, versions, current, graves, schema)
        if past is None:  # the table gained the column the late changes need: again
            return apply_changes(store, given, settings, txn, repairing=repairing)
        changes, current, graves, late, rebuilt = past
    done = plan(
        changes, keys, current, graves, schema, mode=settings.mode, deletes=settings.deletes
    )
    applied, stale = done.applied, done.stale
    rows, tombs, replaced = done.rows, done.tombstones, done.keys
    if rebuilt is not None:
        applied, stale = applied + rebuilt.applied, stale + rebuilt.stale
        rows = pa.concat_tables([rows, rebuilt.rows.select(rows.schema.names).cast(rows.schema)])
        tombs = pa.concat_tables(
            [tombs, rebuilt.tombstones.select(tombs.schema.names).cast(tombs.schema)]
        )
        replaced = pa.concat_tables([replaced, late.cast(replaced.schema)])
    # (nothing applied, tombstones yet to add: a write killed between its two commits)
    graves_change = _differ(among(held_graves, replaced), tombs, [*keys, STREAM, OFFSET])
    if applied == 0 and not graves_change:
        return Applied(0, stale, replayed=held)
    written = _Written(done.keys, rows, tombs, replaced, late, graves.num_rows > 0, applied > 0)
    _commit(store, written, given, settings, txn, held=held, repairing=repairing)
    return Applied(0, stale, replayed=True) if held else Applied(applied, stale)


def _evolved(
    store: TableStore, changes: pa.Table, settings: TableSettings
) -> tuple[TableSettings, pa.Schema, pa.Table]:
    """The table's settings and schema once it exists and holds the batch's columns (made
    on the first batch, columns added and widened), and the changes fitted to it."""
    held_schema = store.schema()
    _check_names(row_schema(changes.schema), held_schema or pa.schema([]), store)
    noting = held_schema is None and _any_unset(changes, row_schema(changes.schema))
    settings = _settings(store, changes.schema, settings, noting)
    schema = store.schema()
    assert schema is not None
    changes = arrived(_numbers_fitted(changes, schema), time.time_ns())
    change = evolution(schema, row_schema(changes.schema), store.where)
    if INHERITED not in schema.names and _any_unset(changes, schema):
        # (kept from the first partial change on: a table of full images never pays for it)
        change = Evolution([*change.added, pa.field(INHERITED, INHERITED_TYPE)], change.widened)
    if settings.mode == "history" and CLOSED_BY not in schema.names:
        # a history table made before deletes noted their order: noted from now on (its
        # versions closed before keep none, and are told by their time alone, as before)
        change = Evolution([*change.added, pa.field(CLOSED_BY, CLOSED_BY_TYPE)], change.widened)
    if change:
        store.evolve(change)
        schema = store.schema()
        assert schema is not None
    return settings, schema, changes


def _late_history(
    store: TableStore,
    changes: pa.Table,
    keys: list[str],
    versions: pa.Table,
    current: pa.Table,
    graves: pa.Table,
    schema: pa.Schema,
) -> tuple[pa.Table, pa.Table, pa.Table, pa.Table, Rebuilt | None] | None:
    """A history table's late changes (older than a version it holds, or after a delete)
    rebuilt into the past versions they are: the changes, current rows and tombstones left
    to plan, the late keys, and what was rebuilt. ``None`` when the table first had to gain
    the column noting deletes' order (the batch is to be planned again on it)."""
    late = _unique(
        [
            late_keys(changes, keys, versions, graves),
            after_a_delete(changes, keys, graves, versions),
        ],
        keys,
    )
    if not late.num_rows:
        return changes, current, graves, late, None
    rebuilt = rebuild(
        among(versions, late), among(changes, late), among(graves, late), keys, _noting(schema)
    )
    noting = DELETES_BEFORE in schema.names
    if (noting and DELETES_BEFORE not in graves.column_names) or (
        not noting and (_notes(rebuilt.rows) or _notes(rebuilt.tombstones))
    ):
        # (kept from the first delete that closed nothing on; the tombstones' too, where
        # a write killed between the two left it out)
        store.evolve(Evolution([pa.field(DELETES_BEFORE, DELETES_BEFORE_TYPE)], []))
        return None
    if not noting:
        rebuilt = replace(
            rebuilt,
            rows=rebuilt.rows.drop_columns([DELETES_BEFORE]),
            tombstones=rebuilt.tombstones.drop_columns([DELETES_BEFORE]),
        )
    changes, current = among(changes, late, anti=True), among(current, late, anti=True)
    return changes, current, among(graves, late, anti=True), late, rebuilt


@dataclass(frozen=True)
class _Written:
    """What a batch replaces: the keys whose rows it rewrites and those rows, the keys
    whose tombstones it rewrites (``replaced``) and those tombstones, its late keys,
    whether the table held tombstones of the keys touched, and whether any change took
    effect (else only tombstones a killed write left out are added)."""

    keys: pa.Table
    rows: pa.Table
    tombstones: pa.Table
    replaced: pa.Table
    late: pa.Table
    had_graves: bool
    applied: bool


def _commit(
    store: TableStore,
    written: _Written,
    given: pa.Table,
    settings: TableSettings,
    txn: Txn | None,
    *,
    held: bool,
    repairing: bool,
) -> None:
    """Replace the rows, then the tombstones (each a transaction carrying ``txn``; a part
    the table holds already, from a killed write of the batch, is left)."""
    ours = None
    if not held and written.applied:
        store.replace("rows", written.keys, written.rows, txn, every_version=written.late)
        ours = store.version("rows")
    if (written.had_graves or written.tombstones.num_rows or written.late.num_rows) and (
        txn is None or not _holds(store, "tombstones", txn)
    ):
        store.replace("tombstones", written.replaced, written.tombstones, txn)
        if ours is not None and store.version("rows") != ours:
            # another writer's rows came between ours and our tombstones: planned without
            # them, they may bring back a row this batch deleted; its deletes, applied
            # again, remove such a row (a delete its tombstone holds removes an older row)
            deletes = given.filter(pc.equal(given.column(OP), "delete"))
            if deletes.num_rows and repairing:
                raise InterleavedWrite(store.where)
            if deletes.num_rows:
                apply_changes(store, deletes, settings, None, repairing=True)


def _held_of(
    store: TableStore,
    changes: pa.Table,
    touched: pa.Table,
    settings: TableSettings,
    schema: pa.Schema,
) -> tuple[pa.Table, pa.Table, pa.Table, pa.Table]:
    """What ``store`` holds of the ``touched`` keys: every version (history mode; else the
    current rows again), the current rows and the tombstones; with ``changes`` rebased on
    them where the table keeps its own order."""
    keys = settings.keys
    history = settings.mode == "history"
    # the order of the keys' rows is all a batch needs of them, but to keep values: a
    # column left unset, a soft delete, a version closed
    keeps = history or settings.deletes == "soft" or _any_unset(changes, schema)
    if history:  # every version, read once: the commit's base
        versions = store.versions(touched)
    else:
        noted = [INHERITED] if INHERITED in schema.names else []
        versions = store.current(touched, None if keeps else [*keys, STREAM, OFFSET, *noted])
        if not keeps and _inherits(versions):  # a late change may give such a row values
            versions = store.current(touched, None)
    graves = store.tombstones(touched)
    if settings.order == AUTO:  # a change and the key's order of one stream, one logged
        changes, (versions, graves) = rebased(changes, keys, [versions, graves])
    current = _current_only(versions) if history else versions
    return changes, versions, current, graves


def _unique(parts: list[pa.Table], keys: list[str]) -> pa.Table:
    """The keys of ``parts`` (tables of key columns), each once."""
    joined = pa.concat_tables([p.cast(parts[0].schema) for p in parts])
    return joined.group_by(keys, use_threads=False).aggregate([]).select(keys)


def _notes(table: pa.Table) -> bool:
    """Whether a row of ``table`` notes a delete before it (``_cdc_deleted_before``)."""
    return bool(table.column(DELETES_BEFORE).null_count < table.num_rows)


def _noting(schema: pa.Schema) -> pa.Schema:
    """``schema`` with ``_cdc_deleted_before``, for the versions history mode rebuilds."""
    if DELETES_BEFORE in schema.names:
        return schema
    return schema.append(pa.field(DELETES_BEFORE, DELETES_BEFORE_TYPE))


def _inherits(rows: pa.Table) -> bool:
    """Whether a row holds a column from before its own change (``_cdc_inherited``)."""
    if INHERITED not in rows.column_names or not rows.num_rows:
        return False
    lengths = pc.fill_null(pc.list_value_length(rows.column(INHERITED)), 0)
    return bool(pc.any(pc.greater(lengths, 0)).as_py())


def _current_only(versions: pa.Table) -> pa.Table:
    """The versions that are current (all of them in a table without versions)."""
    if versions.num_rows and IS_CURRENT in versions.column_names:
        return versions.filter(pc.fill_null(versions.column(IS_CURRENT), False))
    return versions


def _differ(held: pa.Table, wanted: pa.Table, columns: list[str]) -> bool:
    """Whether two tables hold other rows of ``columns`` (in any order)."""
    if held.num_rows != wanted.num_rows:
        return True
    if held.num_rows == 0:
        return False
    order = [(name, "ascending") for name in columns]
    a, b = held.select(columns), wanted.select(columns).cast(held.select(columns).schema)
    return not a.take(pc.sort_indices(a, order)).equals(b.take(pc.sort_indices(b, order)))


def keys_of(changes: pa.Table, keys: list[str]) -> pa.Table:
    """The key columns of ``changes``."""
    return changes.select(keys)


def _holds(store: TableStore, part: str, txn: Txn) -> bool:
    version = store.committed(part, txn.app_id)  # type: ignore[arg-type]
    return version is not None and version >= txn.version


def _settings(
    store: TableStore, changes: pa.Schema, wanted: TableSettings, noting: bool = False
) -> TableSettings:
    """The table's settings; a new table is created with ``wanted``'s (and, ``noting``,
    with ``_cdc_inherited``)."""
    held = store.settings()
    if held is None:
        rows = row_schema(changes)
        missing = [k for k in wanted.keys if k not in rows.names]
        if not wanted.keys or missing:
            raise KeyColumnsError(
                f"{store.where}: the table needs key columns: {missing or 'none'} "
                f"{'are not columns of the changes' if missing else 'were given'} "
                "(set keyColumns, or read records whose key names its fields)"
            )
        for key in wanted.keys:
            kind = rows.field(key).type
            if pa.types.is_floating(kind) or pa.types.is_nested(kind) or pa.types.is_null(kind):
                raise KeyColumnsError(
                    f"{store.where}: key column {key!r} is {kind}: a key is an integer, text, "
                    "a decimal, a time or bytes (set keyColumns)"
                )
        # a column of nulls alone has no type yet: it is added with its first value
        fields = [
            pa.field(f.name, f.type, f.name not in wanted.keys)
            for f in rows
            if not pa.types.is_null(f.type)
        ]
        kept = bookkeeping_fields(wanted.mode, wanted.deletes)
        if noting:
            kept.append(pa.field(INHERITED, INHERITED_TYPE))
        store.create(pa.schema([*fields, *kept]), wanted)
        held = store.settings()
        assert held is not None
    if held.keys != wanted.keys and wanted.keys:
        raise KeyColumnsError(
            f"{store.where}: the table's key columns are {held.keys}, not {wanted.keys}"
        )
    if (held.mode, held.deletes, held.order) != (wanted.mode, wanted.deletes, wanted.order):
        raise ConfigError(
            f"{store.where}: the table was made with mode {held.mode!r}, deletes "
            f"{held.deletes!r}, orderBy {held.order!r}; this writer asks for mode "
            f"{wanted.mode!r}, deletes {wanted.deletes!r}, orderBy {wanted.order!r}"
        )
    return held


def _check_names(rows: pa.Schema, schema: pa.Schema, store: TableStore) -> None:
    """Column names both formats keep apart: none differing from another by case only (Delta
    takes names so), none with a dot (a path in Delta's merge)."""
    seen = {n.lower(): n for n in schema.names}
    for name in rows.names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            raise SchemaChangeError(
                f"{store.where}: column {name!r} differs from column {other!r} by case alone; "
                "nothing of this batch was written"
            )
        if "." in name:
            raise SchemaChangeError(
                f"{store.where}: column {name!r}: a table column's name holds no dot; "
                "nothing of this batch was written"
            )


def _numbers_fitted(changes: pa.Table, schema: pa.Schema) -> pa.Table:
    """Numbers of another type than their column's (types read from the values: ``12`` in
    a column of doubles, ``10.5`` in one of ``decimal(4,2)``) cast to the column's type
    when every value survives the cast both ways; others are left to :func:`evolution`."""
    for index, field in enumerate(changes.schema):
        if field.name not in schema.names or field.name in CHANGE_COLUMNS:
            continue
        target = schema.field(field.name).type
        if field.type == target or not (numeric(field.type) and numeric(target)):
            continue
        if widens(field.type, target) or widens(target, field.type):
            continue  # cast up below, or the column widened
        column = changes.column(index)
        try:
            cast = _cast_values(column, target)
            back = pc.cast(cast, field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        same = pc.or_kleene(pc.equal(back, column), pc.and_(pc.is_null(back), pc.is_null(column)))
        if pc.all(pc.fill_null(same, False)).as_py():
            changes = changes.set_column(index, field.name, cast)
    return changes


def _cast_values(column: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """``column`` cast to ``target``, value by value (Arrow casts integers to a decimal of
    fewer digits than the integer type only through the widest decimal)."""
    if pa.types.is_integer(column.type) and pa.types.is_decimal(target):
        column = pc.cast(column, pa.decimal128(38, target.scale))
    return pc.cast(column, target)


def _any_unset(changes: pa.Table, schema: pa.Schema) -> bool:
    """Whether a change leaves a column of the table unset (one it names, or, for an
    update, one the changes lack)."""
    lengths = pc.list_value_length(changes.column(UNSET))
    if pc.any(pc.greater(pc.fill_null(lengths, 0), 0)).as_py():
        return True
    own = [n for n in schema.names if not n.startswith("_cdc_")]
    lacking = any(n not in changes.column_names for n in own)
    return lacking and bool(pc.any(pc.equal(changes.column(OP), "update")).as_py())


def _check_keys(changes: pa.Table, keys: list[str], where: str) -> None:
    for key in keys:
        if key not in changes.column_names:
            raise CodecError(f"the changes have no key column {key!r}", where=where)
        if changes.column(key).null_count:
            raise CodecError(f"a change has no value for key column {key!r}", where=where)


def _cast(changes: pa.Table, schema: pa.Schema) -> pa.Table:
    """The changes' row columns in the table's types (widened or cast up: safe here)."""
    for index, field in enumerate(changes.schema):
        if field.name in schema.names and field.name not in CHANGE_COLUMNS:
            target = schema.field(field.name).type
            if field.type != target:
                changes = changes.set_column(
                    index, field.name, pc.cast(changes.column(field.name), target)
                )
    return changes
