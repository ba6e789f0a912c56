"""The errors of cdc-connectors: one family, so a caller catches a kind of failure once.

```
CdcError                  any failure of ours; the message is one line saying what and where
  ConfigError             bad configuration: a setting, option, place (path, URL) or plugin
                          (FormatOptionError, SettingError, PlaceError, PluginError,
                          RegistryURLError, ServeError, SettingRefused; a pipeline file's
                          problems are ConfigErrors themselves)
  CodecError              bad data: a message or record that does not decode or encode
  FailFastError           a run stopped by its dead-letter policy (fail-fast, error ratio)
```

Each keeps the built-in base it had (``ValueError`` for configuration and data), so code
that caught those still does. This module imports nothing of the package: every layer
may raise these.
"""

from __future__ import annotations

__all__ = ["CdcError", "CodecError", "ConfigError", "FailFastError"]


class CdcError(Exception):
    """A failure of cdc-connectors; the message says what was wrong and where."""


class ConfigError(CdcError, ValueError):
    """Bad configuration: a setting, option, place or plugin that cannot be used as given;
    the message names it (the key, the file and line, the path or URL)."""


class CodecError(CdcError, ValueError):
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


class FailFastError(CdcError):
    """A run stopped by its dead-letter policy: at the first bad message when asked to
    (fail-fast), or past its error ratio. The message names where and why; ``error`` is
    the bad message's :class:`CodecError` when one message stopped it."""

    def __init__(self, message: str, *, error: CodecError | None = None):
        self.error = error
        super().__init__(message)
