"""Record metadata: string keys to string values, with typed accessors for the standard keys."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

from cdc_connectors.opencdc import keys
from cdc_connectors.opencdc.errors import CodecError

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
        else:
            metadata[self.key] = str(value)


class Metadata(dict[str, str]):
    """A ``dict[str, str]`` with typed access to the standard OpenCDC keys.

    Times are Unix nanoseconds (ints); schema versions are ints. Reading a
    malformed value raises :class:`CodecError` naming the key.
    """

    version = StandardKey(keys.VERSION, str)
    collection = StandardKey(keys.COLLECTION, str)
    created_at = StandardKey(keys.CREATED_AT, int)
    read_at = StandardKey(keys.READ_AT, int)
    key_schema_subject = StandardKey(keys.KEY_SCHEMA_SUBJECT, str)
    key_schema_version = StandardKey(keys.KEY_SCHEMA_VERSION, int)
    payload_schema_subject = StandardKey(keys.PAYLOAD_SCHEMA_SUBJECT, str)
    payload_schema_version = StandardKey(keys.PAYLOAD_SCHEMA_VERSION, int)
