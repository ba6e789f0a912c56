"""Debezium change events as JSON Schema: ``debezium-json-schema``, what Confluent's
``JsonSchemaConverter`` writes (reading).

Key and value are Confluent-framed JSON (magic byte, schema id, the event as UTF-8 JSON, or
the id in a ``__key_schema_id`` / ``__value_schema_id`` header) whose registered JSON Schema
carries the Kafka Connect schema in annotations (``connect.type``, ``connect.index``,
``connect.parameters``, ``title``). Reading needs the registry: each message is validated
against its writer's schema (one that does not match is an error naming the places), its
schema turned back into the Connect ``schema`` block
(:mod:`cdc_connectors.schema.connect.from_json_schema`, once per schema id), and the event
mapped exactly as ``debezium-json`` maps an event with that block: decimals exact (Connect
decimals as JSON numbers or base64), dates and timestamps as ISO 8601 text, the same
options and table. A key that is not Confluent-framed stays raw bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from cdc_connectors.formats.base import FormatOptionError, Message
from cdc_connectors.formats.debezium.json_format import READING_OPTIONS, DebeziumJsonFormat
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.registry.serde import compiled_json
from cdc_connectors.registry.store import Resolved, SchemaStore
from cdc_connectors.schema import framing, json_values
from cdc_connectors.schema.connect.from_json_schema import connect_block
from cdc_connectors.schema.errors import SchemaError

__all__ = ["DebeziumJsonSchemaFormat"]


class DebeziumJsonSchemaFormat(DebeziumJsonFormat):
    """Debezium change events as Confluent-framed JSON Schema (module docstring)."""

    name = "debezium-json-schema"
    carries_schemas = False  # a schema id: the registry holds the schema
    binary = True
    writable = False
    options: ClassVar[Mapping[str, str]] = READING_OPTIONS

    def configure(self) -> None:
        if not self.registry_url:
            raise FormatOptionError(
                f"format {self.name!r} needs a schema registry (--registry; "
                "schema-registry.url in a pipeline file)"
            )
        super().configure()

    def _reset_caches(self) -> None:
        super()._reset_caches()
        self._store: SchemaStore | None = None
        self._blocks: dict[int, dict[str, Any] | str] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_store", None)
        state.pop("_blocks", None)
        return state

    @property
    def store(self) -> SchemaStore:
        """The registry's schemas, cached for this process."""
        if getattr(self, "_store", None) is None:
            self._store = SchemaStore(self.registry)
        assert self._store is not None
        return self._store

    def decode(self, message: Message) -> list[Record]:
        key: Any = None
        if message.key is not None:
            header = framing.schema_id_header(message.headers, "key")
            if header is None and message.key[:1] not in (b"\x00", b"\x01"):
                key = message.key  # a raw key: the converter for keys need not be JSON Schema
            else:
                key = self._part(message.key, header, "key")
        if message.value is None:
            return self._tombstone(key)
        header = framing.schema_id_header(message.headers, "value")
        envelope = self._part(message.value, header, "value")
        if envelope["payload"] is None:
            return self._tombstone(key)
        return self.records_from_envelope(envelope, key, message)

    def encode(self, record: Record) -> Message:
        raise CodecError(f"format {self.name!r} is read-only: write debezium-json or debezium-avro")

    def _part(self, data: bytes, header: bytes | None, where: str) -> dict[str, Any]:
        """A framed part as JsonConverter's wrapper: its Connect block and its value."""
        try:
            frame = framing.read_frame(data, header=header)
            writer = self.store.by_frame(frame)
            if writer.schema_type != "JSON":
                raise CodecError(f"{writer.label()} is {writer.schema_type}, not a JSON Schema")
            value = json_values.decode(memoryview(data)[frame.offset :], compiled_json(writer))
            block = self._block(writer)
        except CodecError as exc:
            raise type(exc)(f"{where}: {exc.reason}", data=data) from None
        return {"schema": block, "payload": value}

    def _block(self, writer: Resolved) -> dict[str, Any]:
        """The Connect block of a writer's schema, once per id; CodecError when it has none."""
        found = self._blocks.get(writer.schema_id)
        if found is None:
            try:
                found = connect_block(
                    json_values.validator(writer.text, writer.references, writer.label()).schema
                )
            except SchemaError as exc:
                found = f"{writer.label()} has no Kafka Connect form: {exc}"
            self._blocks[writer.schema_id] = found
        if isinstance(found, str):
            raise CodecError(found)
        return found
