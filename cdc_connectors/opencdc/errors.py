"""The one error type of the OpenCDC codecs."""

from __future__ import annotations


class CodecError(ValueError):
    """A record could not be decoded or encoded.

    ``where`` names the place (``line 3``, ``record 7``, ``byte 120``) when the
    input is a stream; ``data`` keeps the original bytes of the bad message so a
    caller can route them to a dead-letter output.
    """

    def __init__(self, reason: str, *, where: str | None = None, data: bytes | None = None):
        self.reason = reason
        self.where = where
        self.data = data
        super().__init__(f"{where}: {reason}" if where else reason)

    def at(self, where: str, data: bytes | None = None) -> CodecError:
        """The same error, located at ``where`` (keeps an inner location as context)."""
        inner = f"{self.where}: " if self.where else ""
        return CodecError(
            inner + self.reason, where=where, data=data if data is not None else self.data
        )
