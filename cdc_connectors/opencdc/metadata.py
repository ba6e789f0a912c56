"""Record metadata: string keys to string values, with typed accessors for the standard keys."""

from __future__ import annotations

from cdc_connectors.opencdc import keys
from cdc_connectors.opencdc.errors import CodecError


class Metadata(dict[str, str]):
    """A ``dict[str, str]`` with typed access to the standard OpenCDC keys.

    Times are Unix nanoseconds (ints); schema versions are ints. Reading a
    malformed value raises :class:`CodecError` naming the key.
    """

    def _int(self, key: str) -> int | None:
        value = self.get(key)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise CodecError(f"metadata {key!r} is not an integer: {value!r}") from None

    def _set(self, key: str, value: object | None) -> None:
        if value is None:
            self.pop(key, None)
        else:
            self[key] = str(value)

    @property
    def version(self) -> str | None:
        """``opencdc.version``."""
        return self.get(keys.VERSION)

    @version.setter
    def version(self, value: str | None) -> None:
        self._set(keys.VERSION, value)

    @property
    def collection(self) -> str | None:
        """``opencdc.collection``: the table, topic or collection of the record."""
        return self.get(keys.COLLECTION)

    @collection.setter
    def collection(self, value: str | None) -> None:
        self._set(keys.COLLECTION, value)

    @property
    def created_at(self) -> int | None:
        """``opencdc.createdAt``: Unix nanoseconds of the change in the source."""
        return self._int(keys.CREATED_AT)

    @created_at.setter
    def created_at(self, value: int | None) -> None:
        self._set(keys.CREATED_AT, value)

    @property
    def read_at(self) -> int | None:
        """``opencdc.readAt``: Unix nanoseconds when the change was read."""
        return self._int(keys.READ_AT)

    @read_at.setter
    def read_at(self, value: int | None) -> None:
        self._set(keys.READ_AT, value)

    @property
    def key_schema_subject(self) -> str | None:
        """``opencdc.key.schema.subject``."""
        return self.get(keys.KEY_SCHEMA_SUBJECT)

    @key_schema_subject.setter
    def key_schema_subject(self, value: str | None) -> None:
        self._set(keys.KEY_SCHEMA_SUBJECT, value)

    @property
    def key_schema_version(self) -> int | None:
        """``opencdc.key.schema.version``."""
        return self._int(keys.KEY_SCHEMA_VERSION)

    @key_schema_version.setter
    def key_schema_version(self, value: int | None) -> None:
        self._set(keys.KEY_SCHEMA_VERSION, value)

    @property
    def payload_schema_subject(self) -> str | None:
        """``opencdc.payload.schema.subject``."""
        return self.get(keys.PAYLOAD_SCHEMA_SUBJECT)

    @payload_schema_subject.setter
    def payload_schema_subject(self, value: str | None) -> None:
        self._set(keys.PAYLOAD_SCHEMA_SUBJECT, value)

    @property
    def payload_schema_version(self) -> int | None:
        """``opencdc.payload.schema.version``."""
        return self._int(keys.PAYLOAD_SCHEMA_VERSION)

    @payload_schema_version.setter
    def payload_schema_version(self, value: int | None) -> None:
        self._set(keys.PAYLOAD_SCHEMA_VERSION, value)
