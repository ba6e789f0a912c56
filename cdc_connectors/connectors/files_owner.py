"""Which streaming query an output directory of ``cdc-files`` belongs to.

Micro-batch ``N`` of a query commits as ``batch-<N>/`` once; a second query writing the
same directory would have its batch ``N`` taken for a replay and dropped. So the first
commit of a query writes ``_cdc_owner.json`` (hidden from readers) naming the query's id
(from its checkpoint's ``metadata``, as Spark keeps it across restarts) and checkpoint
path; any other query, and any batch write, is refused with one line naming the owner.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from dataclasses import dataclass

from cdc_connectors.connectors.files import NAME, FilesWriteError

__all__ = ["OWNER_FILE", "Owner", "check", "claim", "owner_of", "refuse_owned"]

OWNER_FILE = "_cdc_owner.json"


@dataclass(frozen=True)
class Owner:
    """A streaming query: its id (``None`` when its checkpoint has no metadata yet) and
    its checkpoint's absolute path."""

    query: str | None
    checkpoint: str

    def same(self, other: Owner) -> bool:
        if self.query is not None and other.query is not None:
            return self.query == other.query
        return self.checkpoint == other.checkpoint

    def describe(self) -> str:
        query = f"query {self.query}, " if self.query else ""
        return f"the streaming query ({query}checkpoint {self.checkpoint})"


def owner_of(checkpoint: str | None) -> Owner | None:
    """The query writing with checkpoint location ``checkpoint``; ``None`` when unknown."""
    if not checkpoint:
        return None
    location = os.path.abspath(checkpoint.removeprefix("file:"))
    query = None
    with (
        contextlib.suppress(OSError, ValueError, KeyError, TypeError),
        open(os.path.join(location, "metadata"), encoding="utf-8") as stream,
    ):
        query = str(json.loads(stream.readline())["id"])
    return Owner(query, location)


def _read(path: str) -> Owner | None:
    marker = os.path.join(path, OWNER_FILE)
    try:
        with open(marker, encoding="utf-8") as stream:
            data = json.load(stream)
        return Owner(data.get("query"), str(data["checkpoint"]))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise FilesWriteError(
            f"{NAME}: {marker} is not a readable owner marker; remove it if no query writes {path}"
        ) from None


def check(path: str, owner: Owner) -> None:
    """:class:`FilesWriteError` when ``path`` belongs to another query than ``owner``."""
    found = _read(path)
    if found is not None and not found.same(owner):
        raise FilesWriteError(
            f"{NAME}: {path} belongs to {found.describe()}; give each streaming query its own "
            f"directory (this one has checkpoint {owner.checkpoint})"
        )


def claim(path: str, owner: Owner) -> None:
    """Make ``path`` ``owner``'s, unless another query's (then :class:`FilesWriteError`)."""
    os.makedirs(path, exist_ok=True)
    marker = os.path.join(path, OWNER_FILE)
    if not os.path.exists(marker):
        temporary = os.path.join(path, f"_{OWNER_FILE}.{uuid.uuid4().hex}")
        with open(temporary, "w", encoding="utf-8") as stream:
            json.dump({"query": owner.query, "checkpoint": owner.checkpoint}, stream)
            stream.write("\n")
            stream.flush()
            os.fsync(stream.fileno())
        try:
            os.link(temporary, marker)  # fails when another query claimed it meanwhile
        except FileExistsError:
            pass
        finally:
            os.remove(temporary)
    check(path, owner)


def refuse_owned(path: str, what: str = "a batch write") -> None:
    """:class:`FilesWriteError` when a streaming query owns ``path``."""
    found = _read(path)
    if found is not None:
        raise FilesWriteError(
            f"{NAME}: {path} belongs to {found.describe()}; {what} there would mix with its "
            f"micro-batches (write elsewhere, or remove {OWNER_FILE} with the query's output)"
        )
