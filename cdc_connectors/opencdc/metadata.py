"""Record metadata: string keys to string values, with typed accessors for the standard keys."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

from cdc_connectors.errors import CodecError
from cdc_connectors.opencdc import keys
from cdc_connectors.text import encodes

T = TypeVar("T", str, int)


class StandardKey(Generic[T]):
    """A typed view of one standard metadata key; ``None`` when absent, deletes on ``None``."""

    def __init__(self, key: str, kind: type[T]):
        self.key = key
        self.kind: type[T] = kind
        self.__doc__ = f"``{key}`` ({kind.__name__})"

    @overload
    def __get__(self, metadata: None, owner: type[Any]) -> StandardKey[T]: ...
    @overload
    def __get__(self, metadata: Metadata, owner: type[Any]) -> T | None: ...
    def __get__(self, metadata: Metadata | None, owner: type[Any]) -> StandardKey[T] | T | None:
        if metadata is None:
            return self
        value = metadata.get(self.key)
        if value is None or self.kind is str:
            return value  # type: ignore[return-value]
        try:
            return self.kind(value)
        except ValueError:
            raise CodecError(f"metadata {self.key!r} is not an integer: {value!r}") from None

    def __set__(self, metadata: Metadata, value: T | None) -> None:
        if value is None:
            metadata.pop(self.key, None)
        elif not isinstance(value, self.kind) or isinstance(value, bool):
            raise TypeError(
                f"metadata {self.key!r} takes {self.kind.__name__}, not "
                f"{type(value).__name__} ({value!r})"
            )
        else:
            metadata[self.key] = str(value)


def _check(pairs: dict[Any, Any]) -> None:
    """:class:`TypeError` naming the first key or value of ``pairs`` that is not a string,
    or not valid Unicode text (a lone surrogate, which no writer can encode as UTF-8)."""
    try:  # str.join type-checks in C, encode checks the text: all-valid costs next to nothing
        "".join(pairs).encode("utf-8")
        "".join(pairs.values()).encode("utf-8")
    except (TypeError, UnicodeEncodeError):
        for key, value in pairs.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"metadata key {key!r} must be a string, not {type(key).__name__}"
                ) from None
            if not encodes(key):
                raise TypeError(
                    f"metadata key {key!r} holds a lone surrogate, which UTF-8 cannot encode"
                ) from None
            if not isinstance(value, str):
                raise TypeError(
                    f"metadata {key!r} must be a string, not {type(value).__name__} ({value!r})"
                ) from None
            if not encodes(value):
                raise TypeError(
                    f"metadata {key!r} holds a lone surrogate, which UTF-8 cannot encode "
                    f"({value!r})"
                ) from None
        raise


class Metadata(dict[str, str]):
    """A ``dict[str, str]`` with typed access to the standard OpenCDC keys.

    Times are Unix nanoseconds (ints); schema versions are ints. Reading a
    malformed value raises :class:`CodecError` naming the key. Keys and values
    are strings: putting anything else in (constructor, ``[]=``, ``update``,
    ``setdefault``, ``|=``) raises :class:`TypeError` naming the key, there
    and then.
    """

    def __init__(self, source: Any = (), /, **kwargs: Any):
        super().__init__(source, **kwargs)
        _check(self)

    def __setitem__(self, key: str, value: str) -> None:
        _check({key: value})
        super().__setitem__(key, value)

    def update(self, source: Any = (), /, **kwargs: Any) -> None:
        pairs = dict(source, **kwargs)
        _check(pairs)
        super().update(pairs)

    def setdefault(self, key: str, default: str = "", /) -> str:
        if key in self:
            return self[key]
        self[key] = default
        return default

    def __ior__(self, other: Any) -> Metadata:  # type: ignore[override,misc]
        self.update(other)
        return self

    def copy(self) -> Metadata:
        return Metadata(self)

    version = StandardKey(keys.VERSION, str)
    collection = StandardKey(keys.COLLECTION, str)
    created_at = StandardKey(keys.CREATED_AT, int)
    read_at = StandardKey(keys.READ_AT, int)
    key_schema_subject = StandardKey(keys.KEY_SCHEMA_SUBJECT, str)
    key_schema_version = StandardKey(keys.KEY_SCHEMA_VERSION, int)
    payload_schema_subject = StandardKey(keys.PAYLOAD_SCHEMA_SUBJECT, str)
    payload_schema_version = StandardKey(keys.PAYLOAD_SCHEMA_VERSION, int)


def checked_metadata(metadata: Any) -> Metadata:
    """``metadata`` as :class:`Metadata` for a writer: :class:`CodecError` naming the key when
    something that is not a string was put into a record's metadata behind its back."""
    if type(metadata) is Metadata:
        return metadata
    try:
        return Metadata(metadata or {})
    except (TypeError, ValueError) as exc:
        raise CodecError(str(exc)) from None
