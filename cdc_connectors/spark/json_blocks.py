"""Arrow's JSON reader over a text read as one block.

Read in blocks, Arrow types a member the explicit schema does not name block by block: a
string in one block and a number in a later one becomes text, a string then a boolean
ends the process (Arrow 26), and a member null throughout the first block and an object
in a later one is refused. Read as one block, every member has one type from all the
documents, and a member of two kinds is an :class:`pyarrow.ArrowInvalid`. One block costs
about 3% more than blocks of a mebibyte.

Arrow's reader recurses once a level: a document nested some ten thousand levels deep
ends the process (a stack overflow), and a table nested hundreds of levels deep is more
than the walks over its types take. :func:`too_deep` finds the messages to keep from the
reader, and :func:`read_lines` refuses what nests deeper than a record may
(:data:`~cdc_connectors.opencdc.json_codec.MAX_DEPTH`): the per-message way says why.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from cdc_connectors.opencdc.json_codec import MAX_DEPTH

__all__ = ["SAFE_LEVELS", "one_block", "read_lines", "too_deep", "type_depth"]

#: Levels Arrow's reader reads without fear for its stack (12,000 read here, 20,000 end
#: the process): a message longer than this many bytes holding more ``{`` and ``[`` is
#: not given to it (a shorter one cannot nest deeper).
SAFE_LEVELS = 4096
_OPEN_OBJECT, _OPEN_ARRAY = ord("{"), ord("[")

_SMALLEST = 1 << 20
#: The largest block Arrow takes (a 32-bit size): a longer text is read in blocks.
_LARGEST = 2**31 - 1


def one_block(text: pa.Buffer | bytes) -> pajson.ReadOptions:
    """Reader options that read ``text`` as one block (up to 2 GiB), on one thread (a
    Spark Python worker has one core)."""
    size = min(max(len(text) + 1, _SMALLEST), _LARGEST)
    return pajson.ReadOptions(block_size=size, use_threads=False)


def too_deep(values: pa.Array) -> np.ndarray:
    """Which messages (binary or string) may nest more than :data:`SAFE_LEVELS` levels:
    those holding more than that many ``{`` and ``[`` (only a message longer than that
    many bytes can; the others are not looked through)."""
    found = np.zeros(len(values), dtype=bool)
    if not len(values):
        return found
    long = np.flatnonzero(np.asarray(pc.binary_length(values).fill_null(0)) > SAFE_LEVELS)
    if len(long):  # their brackets counted over their bytes at once (a regex is 6x slower)
        taken = values.take(pa.array(long))
        if not pa.types.is_binary(taken.type):
            taken = taken.cast(pa.binary())
        offsets = np.frombuffer(taken.buffers()[1], dtype=np.int32)[taken.offset :]
        offsets = offsets[: len(taken) + 1].astype(np.int64)
        data = np.frombuffer(taken.buffers()[2], dtype=np.uint8)
        where = np.flatnonzero((data == _OPEN_OBJECT) | (data == _OPEN_ARRAY))
        rows = np.searchsorted(offsets, where, side="right") - 1
        counts = np.bincount(rows[rows < len(taken)], minlength=len(taken))
        found[long] = counts > SAFE_LEVELS
    return found


def read_lines(
    text: pa.Buffer | bytes,
    parse_options: pajson.ParseOptions | None = None,
    read_options: pajson.ReadOptions | None = None,
) -> pa.Table:
    """Arrow's reading of ``text`` (one document a line; as one block unless
    ``read_options`` say otherwise); :class:`pyarrow.ArrowInvalid` for documents nested
    deeper than a record may be (:data:`~cdc_connectors.opencdc.json_codec.MAX_DEPTH`).
    Its lines must not be :func:`too_deep`."""
    if isinstance(text, bytes):
        text = pa.py_buffer(text)
    table = pajson.read_json(
        text, read_options=read_options or one_block(text), parse_options=parse_options
    )
    if type_depth(table.schema) > MAX_DEPTH:
        raise pa.ArrowInvalid(f"documents nested deeper than {MAX_DEPTH} levels")
    return table


def type_depth(schema: pa.Schema) -> int:
    """How many levels of structs, lists and maps the deepest column of ``schema`` has
    (1 for a scalar), found without recursion."""
    deepest = 0
    pending: list[tuple[pa.DataType, int]] = [(field.type, 1) for field in schema]
    while pending:
        type_, level = pending.pop()
        deepest = max(deepest, level)
        if isinstance(type_, pa.StructType):
            pending.extend((field.type, level + 1) for field in type_)
        elif isinstance(type_, pa.MapType):
            pending.extend(((type_.key_type, level + 1), (type_.item_type, level + 1)))
        elif isinstance(type_, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
            pending.append((type_.value_type, level + 1))
    return deepest
