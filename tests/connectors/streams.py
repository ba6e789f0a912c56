"""Helpers for streaming-query tests of the connectors."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any


def drain(stream: Any, checkpoint: Path) -> None:
    """Run ``stream`` into a memory sink until it has read what is there; the query's
    failure is raised as an exception carrying its message."""
    query = (
        stream.writeStream.format("memory")
        .queryName(f"q{uuid.uuid4().hex[:8]}")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(60)
    if query.exception() is not None:
        raise Exception(str(query.exception()))
