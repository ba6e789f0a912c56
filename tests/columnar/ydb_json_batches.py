"""Hypothesis strategies: batches of YDB changefeed records in YDB's JSON (``ydb-json``).

Records of every mode's shape (``update`` with columns, ``reset``, ``erase``, images old
and new, keys of one or two components), timestamps, resolved timestamps, and what the
format refuses: values of every JSON kind written as text (numbers a double would change,
integers beyond 64 bits, nested values), wrong shapes, junk and tombstones. A batch draws
its columns' kinds once, so that most of its records share a row shape, as a table's do.
"""

from __future__ import annotations

import orjson
from hypothesis import strategies as st

_NAMES = ["id", "name", "amount", "note", "flag", "é k"]
# Each kind of column value, as JSON text.
KIND_VALUES = {
    "int": st.one_of(
        st.integers(-(2**40), 2**40),
        st.sampled_from([0, -1, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64]),
    ).map(str),
    "double": st.one_of(
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.sampled_from(["1.0", "-0.0", "1e-7", "2.5E3", "0.1000000000000000000001", "1e400"]),
    ),
    "string": st.text(max_size=6).map(lambda s: orjson.dumps(s).decode()),
    "bool": st.sampled_from(["true", "false"]),
    "ints": st.lists(st.one_of(st.integers(-5, 5), st.none()), max_size=3).map(
        lambda items: orjson.dumps(items).decode()
    ),
}
ODD_VALUES = st.sampled_from(
    ["null", '{"a": 1}', "[1, 2]", '[1, "a"]', "[[1]]", "-0", "1", "1.5", '"x"', "true"]
)
_OPERATIONS = ("update", "reset", "erase")


@st.composite
def _row(draw: st.DrawFn, kinds: dict[str, str], keyed: bool) -> str:
    names = list(kinds)
    if draw(st.booleans()):
        names = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    if keyed and draw(st.integers(0, 9)) == 0:
        names.append("id")  # an image that holds a key column
    parts = []
    for name in names:
        kind = kinds.get(name, "int")
        value = draw(
            st.one_of(
                KIND_VALUES[kind],
                st.just("null"),
                ODD_VALUES if draw(st.integers(0, 7)) == 0 else KIND_VALUES[kind],
            )
        )
        parts.append(f'"{name}":{value}')
    return "{" + ",".join(parts) + "}"


@st.composite
def _record(draw: st.DrawFn, kinds: dict[str, str], key_kinds: list[str]) -> bytes | None:
    shape = draw(st.integers(0, 19))
    if shape == 0:
        return None  # a tombstone
    if shape == 1:
        return draw(st.sampled_from([b"not json", b"[1]", b'"text"', b"{", b"{}", b" {}"]))
    if shape == 2:
        return draw(
            st.sampled_from(
                [
                    b'{"resolved":[1670792400900,0]}',
                    b'{"resolved":[1]}',
                    b'{"resolved":[1,2],"x":1}',
                ]
            )
        )
    members = []
    size = draw(st.sampled_from([len(key_kinds), len(key_kinds), 1, 3]))
    key = [draw(KIND_VALUES[key_kinds[n % len(key_kinds)]]) for n in range(size)]
    if draw(st.integers(0, 15)) == 0:
        key = draw(st.sampled_from([[], ["null"], ['{"a":1}'], ["1.0", '"x"']]))
    if draw(st.integers(0, 25)) != 0:
        members.append(f'"key":[{",".join(key)}]')
    op = draw(st.sampled_from(_OPERATIONS))
    image_mode = draw(st.booleans())
    keyed = "id" not in kinds
    if op == "erase":
        members.append('"erase":{}')
    elif image_mode:
        members.append(f'"{op}":{{}}')
    else:
        members.append(f'"{op}":{draw(_row(kinds, keyed))}')
    if image_mode:
        if draw(st.booleans()) or op == "erase":
            members.append(f'"oldImage":{draw(_row(kinds, keyed))}')
        if op != "erase" and draw(st.integers(0, 5)) != 0:
            members.append(f'"newImage":{draw(_row(kinds, keyed))}')
    if draw(st.integers(0, 30)) == 0:
        members.append(f'"{draw(st.sampled_from(_OPERATIONS))}":{{}}')  # two operations
    ts = draw(
        st.one_of(
            st.tuples(st.integers(0, 2**42), st.integers(0, 2**50)).map(
                lambda t: f"[{t[0]},{t[1]}]"
            ),
            st.sampled_from(
                [None, "[1,2,3]", "[-1,2]", "[1.5,2]", '"x"', f"[{2**64 - 1},1]", f"[1,{2**63}]"]
            ),
        )
    )
    if ts is not None:
        members.append(f'"ts":{ts}')
    if draw(st.integers(0, 10)) == 0:
        members.append('"other":[1,{"a":null}]')
    members = draw(st.permutations(members))
    separator = draw(st.sampled_from([",", ", ", ",\n  "]))
    return ("{" + separator.join(members) + "}").encode()


@st.composite
def ydb_json_batches(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """A batch of (Kafka key, value) messages of YDB records (module docstring)."""
    names = draw(st.lists(st.sampled_from(_NAMES[1:]), unique=True, min_size=1, max_size=4))
    kinds = {name: draw(st.sampled_from(list(KIND_VALUES))) for name in names}
    key_kinds = draw(st.lists(st.sampled_from(["int", "string", "int"]), min_size=1, max_size=2))
    records = draw(st.lists(_record(kinds, key_kinds), min_size=1, max_size=24))
    return [(None, value) for value in records]


#: The settings a batch is read with: a mode (or detected), key columns, a collection.
YDB_SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.sampled_from(
            ["UPDATES", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES", "KEYS_ONLY"]
        ),
        "key.columns": st.sampled_from(["id", "id,name2"]),
        "collection": st.just("shop.orders"),
    },
)
