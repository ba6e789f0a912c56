"""Arrow's JSON reader over a text read as one block.

Read in blocks, Arrow types a member the explicit schema does not name block by block: a
string in one block and a number in a later one becomes text, a string then a boolean
ends the process (Arrow 26), and a member null throughout the first block and an object
in a later one is refused. Read as one block, every member has one type from all the
documents, and a member of two kinds is an :class:`pyarrow.ArrowInvalid`. One block costs
about 3% more than blocks of a mebibyte.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.json as pajson

__all__ = ["one_block"]

_SMALLEST = 1 << 20
#: The largest block Arrow takes (a 32-bit size): a longer text is read in blocks.
_LARGEST = 2**31 - 1


def one_block(text: pa.Buffer | bytes) -> pajson.ReadOptions:
    """Reader options that read ``text`` as one block (up to 2 GiB), on one thread (a
    Spark Python worker has one core)."""
    size = min(max(len(text) + 1, _SMALLEST), _LARGEST)
    return pajson.ReadOptions(block_size=size, use_threads=False)
