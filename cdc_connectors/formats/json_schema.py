"""Rows in Confluent's JSON Schema wire format: ``json-schema``, what Kafka's JSON Schema
serializers write.

As ``avro`` (see :mod:`cdc_connectors.formats.avro`): one message per row, key and value
each Confluent-framed (magic byte, schema id, the value as UTF-8 JSON), a delete as a
tombstone; confluent-kafka's ``JSONSerializer`` / ``JSONDeserializer`` (and Kafka Connect's
``JsonSchemaConverter``) read and write the same bytes. Every value is checked against its
schema both ways: one that does not match is an error naming the places that do not (a
dead letter in a pipeline).

Writing, a part's schema is the ``key.schema`` / ``value.schema`` file (registered under
the strategy's subject), else the subject's latest JSON Schema when the value matches it,
else one inferred from the value (an open object whose properties take their value's type
or null) and registered. Reading, the schema id finds the writer's schema; a key or value
that is not a JSON object is kept as its raw JSON bytes.

| option | meaning |
|---|---|
| ``topic`` | the topic the subjects are named after (default: the record's collection) |
| ``subject.strategy`` | ``topic`` (default), ``record`` or ``topic-record`` |
| ``key.schema`` / ``value.schema`` | a JSON Schema file (draft-07 unless ``$schema`` says) |
| ``raw.keys`` | keys are raw bytes, never schema-framed (``true``/``false``) |
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, ClassVar

import orjson

from cdc_connectors.formats.avro import OPTIONS_WITHOUT_READER, SchemaRowFormat
from cdc_connectors.formats.base import FormatOptionError
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.json_codec import json_default
from cdc_connectors.registry.serde import compiled_json as _compiled
from cdc_connectors.registry.serde import read_json
from cdc_connectors.registry.store import Resolved
from cdc_connectors.schema import avro_values, framing, json_values
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.json_schema import parse as parse_json_schema
from cdc_connectors.schema.subjects import Part

__all__ = ["JsonSchemaFormat", "infer_json_schema"]

# no reader schema: a JSON value is read as written: no reader schema resolves it
_OPTIONS = OPTIONS_WITHOUT_READER


class JsonSchemaFormat(SchemaRowFormat):
    """Rows as Confluent-framed JSON validated by their JSON Schemas (module docstring)."""

    name = "json-schema"
    schema_type = "JSON"
    options: ClassVar[Mapping[str, str]] = {
        **_OPTIONS,
        "key.schema": "a JSON Schema file for keys (else the subject's latest, else inferred)",
        "value.schema": "a JSON Schema file for rows (else the subject's latest, else inferred)",
    }

    def check_schema_files(self) -> None:
        for option, part in (("key.schema", "key"), ("value.schema", "payload")):
            text = self.schema_files[part]
            if text is None:
                continue
            try:
                parse_json_schema(text)
                json_values.Validated(text, (), "the schema").problems(None)
            except SchemaError as exc:
                raise FormatOptionError(
                    f"format {self.name!r} option {option!r}: not a JSON Schema: {exc}"
                ) from None
            except CodecError as exc:  # a $ref to nothing: no value could be checked
                raise FormatOptionError(
                    f"format {self.name!r} option {option!r}: {exc.reason}"
                ) from None

    def _schema_for(self, record: Record, part: Part, data: dict[str, Any]) -> Resolved:
        text = self.schema_files[part]
        subject = self._subject(record, part, _title(text) if text else None)
        if text is not None:
            return self.store.register(subject, text, "JSON")
        current = self._current_schema(subject)
        if current is not None and _compiled(current).problems(_plain(data)) is None:
            return current
        inferred = orjson.dumps(infer_json_schema(data)).decode()
        found = self.store.register(subject, inferred, "JSON")
        self._current[subject] = found
        return found

    def encode_row(
        self,
        schema: Resolved,
        data: dict[str, Any],
        part: Part,
        branches: avro_values.Branches | None = None,
    ) -> bytes:
        self._check_type(schema, "key" if part == "key" else "payload.after")
        return framing.frame(schema.schema_id, json_values.encode(data, _compiled(schema)))

    def reframe(self, schema: Resolved, body: bytes, where: str, part: Part) -> bytes:
        try:
            json_values.decode(body, _compiled(schema))  # nothing is written that does not read
        except CodecError as exc:
            raise CodecError(f"{where} {exc.reason}") from None
        return framing.frame(schema.schema_id, body)

    def decode_row(
        self, data: bytes, part: Part, header: bytes | None, branches: avro_values.Branches
    ) -> Any:
        frame = framing.read_frame(data, header=header)
        writer = self.store.by_frame(frame)
        if writer.schema_type != "JSON":
            raise CodecError(f"{writer.label()} is {writer.schema_type}, not a JSON Schema")
        return read_json(data, frame.offset, writer)


def _plain(data: Any) -> Any:
    """``data`` as a reader of its JSON sees it (bytes as base64 text)."""
    return orjson.loads(orjson.dumps(data, default=json_default))


def _title(text: str) -> str | None:
    """A schema's ``title``: the record name of the ``record`` subject strategies."""
    try:
        schema = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    title = schema.get("title") if isinstance(schema, dict) else None
    return title if isinstance(title, str) and title else None


def infer_json_schema(value: Any) -> dict[str, Any]:
    """A JSON Schema (draft-07) that ``value`` matches: objects open to more properties,
    each property its value's type or null (a null alone: any type)."""
    schema = _infer(value)
    return {"$schema": "http://json-schema.org/draft-07/schema#", **schema}


def _infer(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {name: _nullable(_infer(item)) for name, item in value.items()},
        }
    if isinstance(value, list):
        kinds = {orjson.dumps(_infer(item)) for item in value if item is not None}
        items = orjson.loads(kinds.pop()) if len(kinds) == 1 else {}
        return {"type": "array", "items": _nullable(items) if items else items}
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float | Decimal):
        return {"type": "number"}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"type": "string", "contentEncoding": "base64"}
    return {"type": "string"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    return schema
