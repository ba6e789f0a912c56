"""YDB changefeeds in their JSON format: ``ydb-json`` (decode only).

One message is one change record of a YDB changefeed (a topic), as YDB writes it::

    {"key": [1, "one"], "update": {"payload": "lorem"}, "ts": [1670792400890, 562949953607163]}

| YDB field | OpenCDC |
|---|---|
| ``erase`` | operation ``delete`` |
| ``update``, ``reset`` | ``update``; ``create`` in ``NEW_AND_OLD_IMAGES`` without ``oldImage`` |
| ``key`` (values in key order) | key ``{col: value}`` by ``key.columns``, else ``{"key": [...]}`` |
| ``oldImage`` | ``payload.before``, plus the key columns with ``key.columns`` |
| ``newImage`` | ``payload.after``, plus the key columns with ``key.columns`` |
| ``update`` columns (``UPDATES``) | ``payload.after``, partial: metadata ``ydb.partial`` ``true`` |
| ``reset`` columns (``UPDATES``) | ``payload.after``, a whole row (``REPLACE``: the rest is null) |
| ``ts`` ``[step, txId]`` | metadata ``ydb.step``, ``ydb.txId`` (strings) |
| ``ts`` step (coordinator ms) | ``opencdc.createdAt`` (ns) |
| (none) | ``opencdc.readAt``: when the message was decoded |
| (none) | ``opencdc.collection``: option ``collection`` (records do not name it) |
| the message's place | ``position``: ``file:line`` as UTF-8, as dead letters name it |
| ``{"resolved": [step, txId]}`` | none: a heartbeat, skipped as ``resolved timestamp`` |

| option | meaning |
|---|---|
| ``mode`` | ``UPDATES``, ``NEW_IMAGE``, ``OLD_IMAGE``, ``NEW_AND_OLD_IMAGES``, ``KEYS_ONLY`` |
| ``key.columns`` | primary-key column names in key order, comma-separated: ``tenant,id`` |
| ``collection`` | ``opencdc.collection`` of every record: the table or changefeed name |

``mode`` is the changefeed's ``MODE`` (any case). Unset, it is detected per record:
a record carrying ``oldImage`` or ``newImage`` is read as an image mode, any other as
``UPDATES`` (its ``update`` columns make a partial after image). One record cannot
tell a new row from an updated one (in ``NEW_AND_OLD_IMAGES`` a new row has no
``oldImage``, which ``NEW_IMAGE`` records never have), so only an explicit
``mode=NEW_AND_OLD_IMAGES`` yields ``create``, as YDB's own Debezium format does.
With ``mode`` set, a record that does not fit it (an image the mode does not carry,
``update`` columns in an image mode, an update without ``newImage`` in ``NEW_IMAGE``)
is an error: a wrong ``mode`` shows at once.

Rows of a changefeed's initial scan are plain ``update`` records in JSON: they come
out as updates. Members beyond those above are ignored; the message's Kafka key is
not used (``key`` carries the row's key).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

import orjson

from cdc_connectors.formats.base import Format, FormatOptionError, Message, SkipMessage
from cdc_connectors.opencdc import CodecError, Operation, Record

# The project's exact reading of JSON numbers: a number a double would change is kept
# exact (Decimal), an integer beyond 64 bits or a number beyond a double's range refused.
from cdc_connectors.opencdc.json_codec import json_error, load_exact
from cdc_connectors.opencdc.structured import MAX_INT
from cdc_connectors.text import printable

__all__ = ["IMAGE_MODES", "MODES", "OPERATIONS", "YdbJsonFormat"]

#: The changefeed modes ``mode`` takes (YDB's ``MODE`` setting).
MODES = ("UPDATES", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES", "KEYS_ONLY")
#: The modes whose records carry row images.
IMAGE_MODES = frozenset({"NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"})
#: A record's operation members. ``reset`` is what YDB writes for REPLACE: a whole new row
#: where ``update`` patches one.
OPERATIONS = ("update", "reset", "erase")
_IMAGES = ("oldImage", "newImage")
_NS_PER_MS = 1_000_000


def _kind(value: Any) -> str:
    """The JSON type of a parsed value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return "number"


def _load(text: bytes) -> Any:
    """The JSON document ``text``, numbers read exactly as OpenCDC JSON reads them."""
    try:
        return load_exact(text)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"invalid JSON: {json_error(exc, text)}") from None


def _timestamp(value: Any, what: str) -> tuple[int, int]:
    """``[step, txId]``: two unsigned 64-bit integers."""
    if not isinstance(value, list) or len(value) != 2:
        shape = f"an array of {len(value)}" if isinstance(value, list) else _kind(value)
        raise CodecError(f"{what} must be an array [step, txId], not {shape}")
    for index, part in enumerate(value):
        if not isinstance(part, int) or isinstance(part, bool) or not 0 <= part <= MAX_INT:
            shown = part if isinstance(part, int) and not isinstance(part, bool) else _kind(part)
            raise CodecError(f"{what}[{index}] must be an unsigned 64-bit integer, not {shown}")
    return value[0], value[1]


def _columns(obj: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Member ``name`` of the record, an object of columns, or ``None`` when absent."""
    if name not in obj:
        return None
    value = obj[name]
    if not isinstance(value, dict):
        raise CodecError(f"{name} must be an object, not {_kind(value)}")
    return value


class YdbJsonFormat(Format):
    """YDB changefeed records (JSON format) to OpenCDC records; see the module docstring."""

    name = "ydb-json"
    writable = False
    options: ClassVar[Mapping[str, str]] = {
        "mode": "the changefeed's mode: " + ", ".join(MODES) + " (default: detected per record)",
        "key.columns": "primary-key column names in key order, comma-separated",
        "collection": "opencdc.collection of every record (the table or changefeed name)",
    }

    def configure(self) -> None:
        self.mode: str | None = None
        mode = self.settings.get("mode")
        if mode is not None:
            self.mode = mode.strip().upper()
            if self.mode not in MODES:
                raise FormatOptionError(
                    f"format {self.name!r} option 'mode' must be one of "
                    f"{', '.join(MODES)}, not {mode!r}"
                )
        self.key_columns: tuple[str, ...] | None = None
        columns = self.settings.get("key.columns")
        if columns is not None:
            names = tuple(part.strip() for part in columns.split(","))
            if not all(names):
                raise FormatOptionError(
                    f"format {self.name!r} option 'key.columns' must name every column "
                    f"(comma-separated, none empty), not {columns!r}"
                )
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise FormatOptionError(
                    f"format {self.name!r} option 'key.columns' names {twice[0]!r} twice"
                )
            self.key_columns = names
        self.collection = self.settings.get("collection")
        if self.collection is not None and not self.collection.strip():
            raise FormatOptionError(f"format {self.name!r} option 'collection' is empty")

    def decode(self, message: Message) -> list[Record]:
        if message.value is None:
            raise SkipMessage("tombstone")
        obj = _load(message.value)
        if not isinstance(obj, dict):
            raise CodecError(f"a YDB change record must be a JSON object, not {_kind(obj)}")
        if "resolved" in obj:
            return self._resolved(obj)

        key = self._key(obj)
        present = [name for name in OPERATIONS if name in obj]
        if not present:
            raise CodecError("no operation: the record has neither 'update' nor 'erase'")
        if len(present) > 1:
            raise CodecError(f"both {present[0]!r} and {present[1]!r}: a record has one operation")
        op = present[0]
        changed = obj[op]
        if not isinstance(changed, dict):
            raise CodecError(f"{op} must be an object, not {_kind(changed)}")
        old, new = (_columns(obj, name) for name in _IMAGES)
        self.check_shape(op, changed, old, new)

        metadata: dict[str, str] = {}
        created_at = None
        if "ts" in obj:
            step, tx_id = _timestamp(obj["ts"], "ts")
            metadata["ydb.step"], metadata["ydb.txId"] = str(step), str(tx_id)
            created_at = step * _NS_PER_MS
            if created_at >= 2**63:
                raise CodecError(f"ts[0]: step {step} is beyond the nanoseconds 64 bits hold")

        images = old is not None or new is not None or self.mode in IMAGE_MODES
        before, after = old, new
        if op == "erase":
            operation = Operation.DELETE
        elif images:
            # Only NEW_AND_OLD_IMAGES leaves oldImage out for a row that did not exist.
            new_row = self.mode == "NEW_AND_OLD_IMAGES" and old is None
            operation = Operation.CREATE if new_row else Operation.UPDATE
        else:
            operation = Operation.UPDATE
            if self.mode != "KEYS_ONLY":
                after = changed
                if op == "update":  # changed columns only: the rest of the row stands
                    metadata["ydb.partial"] = "true"

        return [
            Record.new(
                operation,
                position=printable(message.where).encode("utf-8"),
                key=self._structured_key(key),
                before=self._with_key(before, key, "oldImage"),
                after=self._with_key(after, key, op if after is changed else "newImage"),
                metadata=metadata,
                collection=self.collection,
                created_at=created_at,
                read_at=time.time_ns(),
            )
        ]

    def encode(self, record: Record) -> Message:
        raise CodecError(f"format {self.name!r} is read-only: it has no encoder")

    def _resolved(self, obj: dict[str, Any]) -> list[Record]:
        """A resolved timestamp: no change, a heartbeat of the changefeed; checked, skipped."""
        others = sorted(set(obj) - {"resolved"})
        if others:
            raise CodecError(f"a resolved timestamp has no other members, found {others[0]!r}")
        _timestamp(obj["resolved"], "resolved")
        raise SkipMessage("resolved timestamp")

    def _key(self, obj: dict[str, Any]) -> list[Any]:
        if "key" not in obj:
            raise CodecError("no 'key': a change record names its row's primary key")
        key = obj["key"]
        if not isinstance(key, list):
            raise CodecError(f"key must be an array of key column values, not {_kind(key)}")
        if not key:
            raise CodecError("key is an empty array: a primary key has at least one column")
        if self.key_columns is not None and len(key) != len(self.key_columns):
            raise CodecError(
                f"key has {len(key)} components but option key.columns names "
                f"{len(self.key_columns)} ({','.join(self.key_columns)})"
            )
        return key

    def check_shape(
        self,
        op: str,
        changed: dict[str, Any],
        old: dict[str, Any] | None,
        new: dict[str, Any] | None,
    ) -> None:
        """:class:`CodecError` for a record that does not fit YDB's format or ``mode``."""
        mode = self.mode
        if op == "erase" and changed:
            raise CodecError("erase must be an empty object")
        if op == "erase" and new is not None:
            raise CodecError("erase with a newImage: an erased row has no new image")
        images = [
            name for name, image in zip(_IMAGES, (old, new), strict=True) if image is not None
        ]
        if images and mode in {"UPDATES", "KEYS_ONLY"}:
            raise CodecError(f"{images[0]} in {mode} mode, which carries no row images")
        if changed and (images or mode in IMAGE_MODES or mode == "KEYS_ONLY"):
            # YDB lists the changed columns only when it sends no image.
            raise CodecError(
                f"{op} holds columns in {mode or 'an image'} mode, where it is an empty flag"
            )
        if mode == "NEW_IMAGE" and old is not None:
            raise CodecError("oldImage in NEW_IMAGE mode, which carries only newImage")
        if mode == "OLD_IMAGE" and new is not None:
            raise CodecError("newImage in OLD_IMAGE mode, which carries only oldImage")
        if op != "erase" and new is None and mode in {"NEW_IMAGE", "NEW_AND_OLD_IMAGES"}:
            raise CodecError(f"{op} without newImage in {mode} mode")

    def _structured_key(self, key: list[Any]) -> dict[str, Any]:
        if self.key_columns is None:
            return {"key": key}
        return dict(zip(self.key_columns, key, strict=True))

    def _with_key(
        self, image: dict[str, Any] | None, key: list[Any], what: str
    ) -> dict[str, Any] | None:
        """``image`` with the key columns added back (YDB leaves them out of images)."""
        if image is None or self.key_columns is None:
            return image
        row = dict(zip(self.key_columns, key, strict=True))
        for name, value in image.items():
            if name in row and row[name] != value:
                # A key column in the image with another value: key.columns names the
                # wrong columns, or the record is corrupt; either way the row is unknown.
                raise CodecError(
                    f"{what}.{name} is {value!r} but key.columns makes it the key "
                    f"component {row[name]!r}"
                )
        row.update(image)
        return row
