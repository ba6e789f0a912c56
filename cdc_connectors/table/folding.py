"""Small data files folded together as batches go, in the batches' own commits.

Each batch adds a file of its new rows, so a table a stream writes would gather a file a
micro-batch (thousands a day), which every reader and every later batch's planning lists.
Once the table holds :data:`FOLD_AT` small files (under :data:`SMALL_FILE` bytes) that the
batch does not rewrite anyway, the batch also rewrites up to :data:`FOLD_MOST` of them (in
the order the table lists them) as one, in the same transaction: readers see the same rows
at every version, and the extra work a batch does is bounded (at most ``FOLD_MOST *
SMALL_FILE`` bytes read).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["FOLD_AT", "FOLD_MOST", "SMALL_FILE", "to_fold"]

#: A data file smaller than this is small.
SMALL_FILE = 8 << 20
#: A batch folds small files once the table holds this many it does not rewrite anyway.
FOLD_AT = 32
#: The most small files one batch folds.
FOLD_MOST = 32


def to_fold(sizes: Sequence[int] | np.ndarray, rewritten: np.ndarray) -> np.ndarray:
    """Which files (indexes into ``sizes``, in the table's order) a batch folds into one: the
    first :data:`FOLD_MOST` small files not ``rewritten``, when there are at least
    :data:`FOLD_AT` of them; none otherwise."""
    small = np.flatnonzero((np.asarray(sizes, dtype=np.int64) < SMALL_FILE) & ~rewritten)
    if len(small) < max(FOLD_AT, 2):
        return np.zeros(0, dtype=np.int64)
    return small[:FOLD_MOST]
