"""The format converter interface: one message in, OpenCDC records out, and back.

A message is what a connector reads: Kafka key and value bytes with headers,
or one line / one length-delimited message of a file, plus where it came from.
A converter turns it into zero or more records (``decode``), or a record into
a message (``encode``). It raises :class:`CodecError` for input it cannot map,
and :class:`SkipMessage` for input that carries no change by policy
(tombstones, heartbeats), so callers can count both and lose nothing.
"""

from __future__ import annotations

import difflib
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from cdc_connectors.errors import ConfigError
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.options import parse_bool
from cdc_connectors.registry import registry_for

if TYPE_CHECKING:
    from cdc_connectors.registry.base import SchemaRegistry

__all__ = ["CodecError", "Format", "FormatOptionError", "Message", "SkipMessage"]


@dataclass(slots=True)
class Message:
    """One message of a stream: Kafka-shaped, with its place for error reports."""

    value: bytes | None
    key: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    where: str = ""


class SkipMessage(Exception):
    """The message carries no change by policy (tombstone, heartbeat); ``reason`` says which."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class FormatOptionError(ConfigError):
    """A format option is unknown or has a bad value; the message names the option."""


def _refusing_deep(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def guarded(self: Format, item: Any) -> Any:
        try:
            return method(self, item)
        except RecursionError:
            raise CodecError(
                "nests too deeply to convert (more than a few hundred levels)"
            ) from None

    guarded._refuses_deep = True  # type: ignore[attr-defined]
    return guarded


class Format(ABC):
    """A CDC format: decode messages to OpenCDC records, encode records to messages.

    Subclasses set ``name``, ``binary`` (values are bytes, not text: ``convert
    --kv`` lines carry them as base64), ``delimited`` (a file holds
    length-delimited messages instead of lines), ``writable`` (False for formats
    that only read) and ``options`` (name -> help text). They are found through
    the ``cdc_connectors.formats`` entry points. ``carries_schemas``: its messages hold
    their own schema (a Debezium ``schema`` block), which, given a registry, is registered
    and named in the records' metadata (where a table's column types come from).
    ``whole_records``: a message's value is a whole OpenCDC record, its key among its
    fields (a file of values alone loses no key).
    """

    name: ClassVar[str]
    writable: ClassVar[bool] = True
    carries_schemas: ClassVar[bool] = False
    whole_records: ClassVar[bool] = False
    binary: ClassVar[bool] = False
    delimited: ClassVar[bool] = False
    options: ClassVar[Mapping[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Data nested deep enough to exhaust Python's stack in any step of a conversion is
        # bad input like any other: a CodecError for that message, never a crash of the run.
        for name in ("decode", "encode"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_refuses_deep", False):
                setattr(cls, name, _refusing_deep(method))

    def __init__(self, options: Mapping[str, str] | None = None, registry: str | None = None):
        options = dict(options or {})
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            nearest = difflib.get_close_matches(unknown[0], sorted(self.options), n=1)
            hint = f"; did you mean {nearest[0]!r}?" if nearest else ""
            raise FormatOptionError(
                f"format {self.name!r} has no option {unknown[0]!r}{hint} (options: {known})"
            )
        self.settings = options
        self.registry_url = registry
        self.configure()

    def configure(self) -> None:  # noqa: B027 - an optional hook
        """Read ``self.settings`` into attributes; called once by ``__init__``."""

    @property
    def registry(self) -> SchemaRegistry:
        """The schema registry of ``registry_url``, opened once per process (picklable format)."""
        if not self.registry_url:
            raise FormatOptionError(
                f"format {self.name!r} needs a schema registry URL (--registry; "
                "schema-registry.url in a pipeline file)"
            )
        return registry_for(self.registry_url)

    def flag(self, option: str, default: bool = False) -> bool:
        """A boolean option, read by :func:`cdc_connectors.options.parse_bool`.

        :class:`FormatOptionError` naming the format and the option for anything else.
        """
        value = self.settings.get(option)
        if value is None:
            return default
        try:
            return parse_bool(value, f"format {self.name!r} option {option!r}")
        except ValueError as exc:
            raise FormatOptionError(str(exc)) from None

    @abstractmethod
    def decode(self, message: Message) -> list[Record]:
        """The records of one message; :class:`CodecError` or :class:`SkipMessage` otherwise."""

    def decode_many(
        self, messages: Sequence[Message]
    ) -> Iterator[tuple[int, list[Record] | CodecError | SkipMessage]]:
        """Each message's index and its records, or the :class:`CodecError` or
        :class:`SkipMessage` :meth:`decode` raises for it. Formats override it where a
        batch decodes faster than its messages one by one."""
        for index, message in enumerate(messages):
            try:
                yield index, self.decode(message)
            except (CodecError, SkipMessage) as exc:
                yield index, exc

    @abstractmethod
    def encode(self, record: Record) -> Message:
        """One message for a record; :class:`CodecError` if it cannot be written."""
