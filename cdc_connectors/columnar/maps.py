"""The entries of a map column of string keys (OpenCDC metadata, a row's Connect map) in key
order, as the OpenCDC writers put them.

JSON's sorted keys are in UTF-8 byte order (code point order: ``a``, ``ab``, ``b``).
Protobuf's deterministic serialization (upb, the ``protobuf`` package's runtime) orders keys
by their bytes too, but puts the longer of two keys that share all the bytes of the shorter
one first: ``ab``, ``a``, ``b`` (:func:`proto_key`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SortedEntries", "entry_columns", "proto_key", "sorted_entries", "with_entries"]


def proto_key(name: bytes) -> tuple[int, ...]:
    """The sort key of a map key in protobuf's deterministic order: its bytes, then one
    past any byte, so that a key sorts after every longer key it begins."""
    return (*name, 256)


@dataclass
class SortedEntries:
    """Either ``uniform``: every row has the same keys, as (key, column of the rows' values)
    in key order; or ``names`` and ``items``: every entry, row by row and in key order
    within a row, with ``offsets`` (row ``n``'s entries are ``offsets[n]:offsets[n + 1]``)."""

    count: int
    uniform: list[tuple[bytes, pa.Array]] | None = None
    names: pa.Array | None = None
    items: pa.Array | None = None
    offsets: np.ndarray | None = None


def entry_columns(metadata: pa.MapArray) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """The keys and items of every entry of ``metadata``'s rows, and the offsets of each
    row's entries in them (row ``n``'s are ``offsets[n]:offsets[n + 1]``)."""
    offsets = np.asarray(metadata.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    start, end = int(offsets[0]), int(offsets[-1])
    names, items = metadata.keys, metadata.items
    if len(names) != end - start:  # not yet sliced to this array's rows
        names, items = names.slice(start, end - start), items.slice(start, end - start)
    return names, items, offsets - start


def sorted_entries(
    metadata: pa.MapArray, proto: bool = False, uniform: bool = True
) -> SortedEntries:
    """The entries of each row of ``metadata`` in key order (:class:`SortedEntries`):
    protobuf's (:func:`proto_key`) when ``proto``, else JSON's; as ``names`` and
    ``items`` always unless ``uniform``."""
    order_of = proto_key if proto else bytes
    count = len(metadata)
    names, items, offsets = entry_columns(metadata)
    if not count or not len(names):
        if uniform:
            return SortedEntries(count, uniform=[])
        return SortedEntries(count, names=names, items=items, offsets=offsets)
    encoded = pc.dictionary_encode(names)
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    distinct = [name.encode("utf-8") for name in encoded.dictionary.to_pylist()]
    width = int(offsets[1])
    if uniform and len(codes) == count * width:
        table = codes.reshape(count, width)
        if (table == table[0]).all():
            order = sorted(range(width), key=lambda j: order_of(distinct[table[0][j]]))
            taken = items.take(
                pa.array((np.arange(count)[None, :] * width + np.array(order)[:, None]).ravel())
            )
            return SortedEntries(
                count,
                uniform=[
                    (distinct[table[0][j]], taken.slice(n * count, count))
                    for n, j in enumerate(order)
                ],
            )
    ranks = sorted(range(len(distinct)), key=lambda j: order_of(distinct[j]))
    rank = np.argsort(np.array(ranks, dtype=np.int64))[codes]
    owner = np.repeat(np.arange(count), np.diff(offsets))
    order = pa.array(np.lexsort((rank, owner)))
    return SortedEntries(count, names=names.take(order), items=items.take(order), offsets=offsets)


def with_entries(metadata: pa.MapArray, entries: list[tuple[str, pa.Array]]) -> pa.MapArray:
    """``metadata`` with more entries: (key, each row's value or null for none), after the
    row's own (the writers sort them)."""
    names, items, offsets = entry_columns(metadata)
    count = len(metadata)
    owners = [np.repeat(np.arange(count), np.diff(offsets))]
    all_names, all_items = [names], [items.cast(pa.string())]
    for name, values in entries:
        present = np.flatnonzero(np.asarray(values.is_valid().to_numpy(zero_copy_only=False)))
        owners.append(present)
        all_names.append(pa.array([name] * len(present), pa.string()))
        all_items.append(values.cast(pa.string()).take(pa.array(present)))
    owner = np.concatenate(owners)
    order = pa.array(np.argsort(owner, kind="stable"))
    counts = np.bincount(owner, minlength=count)
    new_offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(counts, out=new_offsets[1:])
    return pa.MapArray.from_arrays(
        pa.array(new_offsets),
        pa.concat_arrays([n.cast(pa.string()) for n in all_names]).take(order),
        pa.concat_arrays(all_items).take(order),
        type=metadata.type,
    )
