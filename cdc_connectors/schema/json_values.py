"""Values of JSON Schemas: the body of Confluent's JSON Schema wire format, read and written.

A message is the magic byte, the schema id and the value as UTF-8 JSON, what
confluent-kafka's ``JSONSerializer`` writes and its ``JSONDeserializer`` reads. Values are
validated against their schema both ways, as those do, with a validator compiled once per
schema (``jsonschema-rs``): the draft its ``$schema`` names, draft-07 when it names none
(as Confluent reads it). ``$ref`` to another schema resolves through the registered
schema's references, by their names; nothing is fetched from the network. Numbers are read
exactly (:func:`~cdc_connectors.opencdc.json_codec.load_exact`).
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema_rs
import orjson

from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc.json_codec import json_default, json_error, load_exact
from cdc_connectors.schema import jsontext
from cdc_connectors.schema.errors import SchemaError

__all__ = ["Validated", "decode", "encode", "validator"]

_DRAFTS = {
    "http://json-schema.org/draft-04/schema": jsonschema_rs.Draft4Validator,
    "http://json-schema.org/draft-06/schema": jsonschema_rs.Draft6Validator,
    "http://json-schema.org/draft-07/schema": jsonschema_rs.Draft7Validator,
    "https://json-schema.org/draft/2019-09/schema": jsonschema_rs.Draft201909Validator,
    "https://json-schema.org/draft/2020-12/schema": jsonschema_rs.Draft202012Validator,
}
#: How many problems a refusal names.
_SHOWN = 3


class Validated:
    """A JSON Schema compiled for validation: its parsed form and its validator."""

    def __init__(self, text: str, references: tuple[tuple[str, str], ...], label: str):
        self.label = label
        try:
            self.schema = jsontext.load(text, "JSON schema")
        except SchemaError as exc:
            raise CodecError(f"{label}: {exc}") from None
        named = {name: jsontext.load(body, "JSON schema") for name, body in references}

        def retrieve(uri: str) -> Any:
            for name, schema in named.items():
                if uri == name or uri.endswith("/" + name):
                    return schema
            raise ValueError(f"no reference named {uri!r}")

        draft = _draft(self.schema)
        try:
            self.check = draft(self.schema, retriever=retrieve)
        except (ValueError, jsonschema_rs.ReferencingError) as exc:
            raise CodecError(f"{label} cannot validate: {_first_line(exc)}") from None

    def problems(self, value: Any) -> str | None:
        """Where ``value`` does not match the schema (the first few places), or ``None``."""
        if self.check.is_valid(value):
            return None
        found = []
        for error in self.check.iter_errors(value):
            place = "/" + "/".join(str(p) for p in error.instance_path)
            found.append(f"at {place}: {' '.join(error.message.split())[:200]}")
            if len(found) == _SHOWN:
                break
        return "; ".join(found)


def _first_line(exc: BaseException) -> str:
    """A validator's refusal, without what it adds about the instance it never saw."""
    text = " ".join(str(exc).split())
    for cut in (" Failed validating", ": ValueError:"):
        text = text.split(cut, 1)[0]
    return text


def _draft(schema: Any) -> Any:
    """The validator class of the draft ``schema`` names (draft-07 by default)."""
    named = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(named, str):
        found = _DRAFTS.get(named.rstrip("#"))
        if found is not None:
            return found
    return jsonschema_rs.Draft7Validator


@functools.lru_cache(maxsize=256)
def validator(text: str, references: tuple[tuple[str, str], ...], label: str) -> Validated:
    """The compiled form of a schema (cached: a schema id's text never changes)."""
    return Validated(text, references, label)


def decode(body: bytes | memoryview, schema: Validated) -> Any:
    """The value a body holds, checked against ``schema``; :class:`CodecError` naming the
    first places that do not match."""
    data = bytes(body)
    try:
        value = load_exact(data)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"is not JSON: {json_error(exc, data)}") from None
    problem = schema.problems(value)
    if problem is not None:
        raise CodecError(f"does not match {schema.label}: {problem}")
    return value


def encode(value: Any, schema: Validated) -> bytes:
    """``value`` as the JSON body of ``schema``, checked against it first (a refusal says
    where it does not match; the caller names the schema)."""
    try:
        body = orjson.dumps(value, default=json_default)
    except TypeError as exc:
        raise CodecError(f"cannot be written as JSON: {exc}") from None
    problem = schema.problems(load_exact(body))  # what a reader will see: bytes as base64
    if problem is not None:
        raise CodecError(f"does not match its JSON Schema: {problem}")
    return body
