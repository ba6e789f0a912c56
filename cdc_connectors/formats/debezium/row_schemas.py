"""The row schemas of Debezium envelopes' ``schema`` blocks: parsed once per distinct block,
each with its Avro form, and registered under the format's subject strategy."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium.reading import is_json_text
from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc.json_codec import json_default
from cdc_connectors.opencdc.jsonkinds import json_kind
from cdc_connectors.registry.store import RegistryReadOnly
from cdc_connectors.schema import framing
from cdc_connectors.schema.connect import ConnectSchema, connect_to_avro, parse_connect_schema
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.subjects import Part, SubjectContext

if TYPE_CHECKING:
    from cdc_connectors.registry.store import SchemaStore

__all__ = ["RowSchema", "RowSchemas"]

_SORTED = orjson.OPT_SORT_KEYS
_MAX_CACHED = 1024  # distinct schema blocks kept parsed


@dataclass(frozen=True, slots=True)
class RowSchema:
    """One row struct of a ``schema`` block, parsed once, with its Avro form for the registry."""

    connect: ConnectSchema
    avro_text: str | None
    record_name: str | None
    problem: str | None  # why it has no Avro form (an unusable name), for the registry path


class RowSchemas(Format):
    """The row schemas of a Debezium-shaped format, cached per process, and the registry
    they are named in; the format sets the caches and the subject strategy."""

    _store: SchemaStore | None
    # canonical JSON text of a schema block -> the parsed block
    _rows: dict[bytes, RowSchema]
    _envelopes: dict[bytes, tuple[RowSchema | None, RowSchema | None]]
    strategy_name: str
    subject_of: Callable[[SubjectContext], str]

    @property
    def store(self) -> SchemaStore:
        """The registry's schemas, cached for this process."""
        if self._store is None:
            # imported here: the registry client's import is the slowest of ours, and a
            # Spark task of a format without a registry never needs it
            from cdc_connectors.registry.store import SchemaStore

            self._store = SchemaStore(self.registry)
        return self._store

    def envelope_rows(self, schema: Any) -> tuple[RowSchema | None, RowSchema | None]:
        """The row schemas of the before and after images of an envelope's schema block
        (``None`` for an image without one), cached by the block's text."""
        if schema is None:
            return None, None
        text = _sorted_text(schema, "value schema")
        found = self._envelopes.get(text)
        if found is not None:
            return found
        if not isinstance(schema, Mapping) or schema.get("type") != "struct":
            raise CodecError(
                f"value schema: a change event's schema is a struct, not {schema!r:.60}"
            )
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise CodecError("value schema: the envelope struct has no list of fields")
        blocks = {
            f.get("field"): f
            for f in fields
            if isinstance(f, Mapping) and isinstance(f.get("field"), str)
        }
        rows = tuple(
            self.row_schema(blocks[name], f"value schema {name}")
            if name in blocks and not is_json_text(blocks[name])
            else None
            for name in ("before", "after")
        )
        pair = (rows[0], rows[1])
        if len(self._envelopes) >= _MAX_CACHED:
            self._envelopes.clear()  # schemas that change with every message: bounded memory
        self._envelopes[text] = pair
        return pair

    def row_schema(self, block: Any, what: str) -> RowSchema:
        """A row struct's schema, parsed once per distinct block text."""
        if not isinstance(block, Mapping):
            raise CodecError(f"{what}: expected an object, got {json_kind(block)}")
        # A row is never null once present: the image itself is the optional part.
        required = {k: v for k, v in block.items() if k not in ("field", "optional", "default")}
        text = _sorted_text(required, what)
        found = self._rows.get(text)
        if found is not None:
            return found
        if required.get("type") != "struct":
            raise CodecError(f"{what}: a row's schema is a struct, not {required.get('type')!r}")
        try:
            connect = parse_connect_schema(required)
        except SchemaError as exc:
            raise CodecError(f"{what}: {exc}") from None
        avro_text = record_name = problem = None
        try:
            avro = connect_to_avro(connect)
        except SchemaError as exc:
            problem = f"{what} has no Avro form: {exc}"
        else:
            avro_text = orjson.dumps(avro).decode()
            if isinstance(avro, dict) and isinstance(avro.get("name"), str):
                space = avro.get("namespace")
                record_name = f"{space}.{avro['name']}" if space else str(avro["name"])
        found = RowSchema(connect, avro_text, record_name, problem)
        if len(self._rows) >= _MAX_CACHED:
            self._rows.clear()
        self._rows[text] = found
        return found

    def _subject(self, part: Part, collection: str | None, record_name: str | None) -> str:
        context = SubjectContext(
            part, topic=collection, collection=collection, record_name=record_name
        )
        try:
            return self.subject_of(context)
        except ValueError as exc:
            raise CodecError(f"no {part} subject ({self.strategy_name} strategy): {exc}") from None

    def name_schema(
        self, metadata: MutableMapping[str, str], part: Part, row: RowSchema, collection: str | None
    ) -> None:
        """Register ``row``'s Avro form and name it in ``metadata`` as the ``part``'s schema
        (not against a registry in read-only mode: the record is read all the same)."""
        if row.avro_text is None:
            raise CodecError(row.problem or f"the {part} schema has no Avro form")
        subject = self._subject(part, collection, row.record_name)
        try:
            registered = self.store.register(subject, row.avro_text)
        except RegistryReadOnly:
            return  # a registry read, not written: the record goes on, its schema unnamed
        framing.set_conduit_schema(metadata, part, subject, registered.version or 0)


def _sorted_text(block: Any, what: str) -> bytes:
    """A schema block as sorted JSON, the key of what is parsed from it once (a number of
    more digits than a double holds is read as a ``Decimal``: written as it was)."""
    try:
        return orjson.dumps(block, option=_SORTED, default=json_default)
    except TypeError as exc:
        raise CodecError(f"{what}: {exc}") from None
