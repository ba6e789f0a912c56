"""Which source a streaming pipeline's checkpoint holds the offsets of.

Spark keeps a query's offsets in its checkpoint in the source's own shape: a checkpoint of a
Kafka source given to a files source (an edited pipeline, a copied ``spark.checkpoint``)
fails deep inside the source on its first batch. The pipeline marks its checkpoint with
its source's plugin when its query starts (:func:`mark`), and a run whose source is
another is refused before Spark starts (:func:`mismatch`). A checkpoint made before marks
were kept is taken as it is, and marked.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["MARK", "mark", "mismatch"]

#: The file in a checkpoint naming its source's plugin.
MARK = "cdc-source"


def mismatch(checkpoint: str, plugin: str) -> str | None:
    """The plugin whose offsets ``checkpoint`` holds when it is not ``plugin``; else None."""
    try:
        with open(os.path.join(checkpoint, MARK), encoding="utf-8") as held:
            found = held.read().strip()
    except (OSError, UnicodeDecodeError):
        return None  # no mark (a new checkpoint, or one from before marks): nothing to say
    return found if found and found != plugin else None


def mark(checkpoint: str, plugin: str) -> None:
    """Mark ``checkpoint`` as holding the offsets of a ``plugin`` source (written whole)."""
    os.makedirs(checkpoint, exist_ok=True)
    target = os.path.join(checkpoint, MARK)
    hidden = f"{target}.{os.getpid()}"
    try:
        with open(hidden, "w", encoding="utf-8") as out:
            out.write(plugin + "\n")
        os.replace(hidden, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(hidden)
