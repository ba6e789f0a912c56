"""Rows in Confluent's Avro wire format: ``avro``, what Kafka's Avro serializers write.

A message is one row, as a Kafka topic of a table holds it: the key (the record's key)
and the value (the row after the change), each Confluent-framed Avro (magic byte, schema
id, body); a delete is a tombstone, a ``null`` value. Schemas come from the registry:

- writing, the key and row schemas are read from the ``key.schema`` / ``value.schema``
  files, else taken from the Avro record schema the record's metadata names (Conduit's
  ``opencdc.payload.schema.*``, as a Debezium schema block gives) when the data fits it,
  else inferred by Conduit's rules, and registered under the subjects the
  ``subject.strategy`` gives (``topic``: ``<topic>-key`` / ``<topic>-value``); raw data
  that the record's metadata names a schema for (Conduit's framing) is re-framed as is;
- reading, the schema id of each message finds its writer schema; ``reader=latest`` (or
  a version number) decodes every writer version into one reader schema.

Only the row travels: operation (create, or delete for a tombstone), position, metadata
and the before image do not. Reading sets ``opencdc.collection`` to the topic.

| option | meaning |
|---|---|
| ``topic`` | the topic the subjects are named after (default: the record's collection) |
| ``subject.strategy`` | ``topic`` (default), ``record`` or ``topic-record`` |
| ``key.schema`` / ``value.schema`` | an ``.avsc`` file to use instead of inference |
| ``reader`` | ``writer`` (default), ``latest`` or a version: the reader schema |
| ``raw.keys`` | keys are raw bytes, never schema-framed (``true``/``false``) |
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import orjson

from cdc_connectors.formats.base import Format, FormatOptionError, Message, SkipMessage
from cdc_connectors.opencdc import CodecError, Record
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.registry.serde import ReaderChoice, RecordDecoder, prepared
from cdc_connectors.registry.store import Resolved, SchemaStore, UnknownSchema
from cdc_connectors.schema import avro_values, framing, jsontext
from cdc_connectors.schema.avro import named_once
from cdc_connectors.schema.avro import parse as parse_avro
from cdc_connectors.schema.errors import SchemaError
from cdc_connectors.schema.subjects import Part, SubjectContext, strategy

_STRATEGIES = ("topic", "record", "topic-record")
# Registering a schema costs time growing with the square of its size: a bound for files.
_MAX_SCHEMA_FILE = 1024 * 1024


class SchemaRowFormat(Format):
    """What ``avro`` and ``protobuf`` share: options, subjects, rows in and out."""

    binary = True
    schema_type: ClassVar[str]
    options: ClassVar[Mapping[str, str]] = {
        "topic": "topic the subjects are named after (default: the record's collection)",
        "subject.strategy": "topic (default), record or topic-record",
        "key.schema": "schema file for keys, instead of inferring one",
        "value.schema": "schema file for rows, instead of inferring one",
        "reader": "reading: writer (default), latest, or a version number of the subject",
        "raw.keys": "keys are raw bytes, written and read as they are (default: false)",
    }

    def configure(self) -> None:
        if not self.registry_url:
            raise FormatOptionError(
                f"format {self.name!r} needs a schema registry (--registry; "
                "schema-registry.url in a pipeline file)"
            )
        self.topic = self.settings.get("topic") or None
        name = self.settings.get("subject.strategy", "topic")
        if name not in _STRATEGIES:
            raise FormatOptionError(
                f"format {self.name!r} option 'subject.strategy': {name!r} is not one of "
                f"{', '.join(_STRATEGIES)}"
            )
        self.strategy_name = name
        self.subject_of = strategy(name)
        self.schema_files = {
            part: self._schema_file(option)
            for part, option in (("key", "key.schema"), ("payload", "value.schema"))
        }
        self.reader_choice = self._reader_choice(self.settings.get("reader", "writer"))
        self.raw_keys = self.flag("raw.keys")
        if self.reader_choice != "writer" and name == "topic" and not self.topic:
            raise FormatOptionError(
                f"format {self.name!r} option 'reader': a reader schema is found by subject, "
                "and the topic strategy needs --opt topic=NAME"
            )
        self.check_schema_files()
        self._store: SchemaStore | None = None
        self._decoder: RecordDecoder | None = None
        self._inferred: set[int] = set()
        self._current: dict[str, Resolved | None] = {}
        self._named: dict[tuple[str, int], tuple[Resolved, str, str] | None] = {}

    def check_schema_files(self) -> None:
        """Refuse, before the run, schema files the format cannot use."""

    def _schema_file(self, option: str) -> str | None:
        path = self.settings.get(option)
        if path is None:
            return None
        if not path.strip():
            raise FormatOptionError(
                f"format {self.name!r} option {option!r}: an empty path (the schema file's)"
            )
        try:
            if Path(path).stat().st_size > _MAX_SCHEMA_FILE:
                raise FormatOptionError(
                    f"format {self.name!r} option {option!r}: {path} is larger than "
                    f"{_MAX_SCHEMA_FILE // 1024} KiB, more than a schema needs"
                )
            return Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise FormatOptionError(
                f"format {self.name!r} option {option!r}: cannot read {path}: {reason}"
            ) from None

    def _reader_choice(self, value: str) -> ReaderChoice:
        if value in ("writer", "latest"):
            return value  # type: ignore[return-value]
        if value.isascii() and value.isdigit() and 0 < int(value) < 2**31:
            return int(value)
        raise FormatOptionError(
            f"format {self.name!r} option 'reader': {value!r} is not writer, latest or a version"
        )

    @property
    def store(self) -> SchemaStore:
        """The registry's schemas, cached for this process."""
        if self._store is None:
            self._store = SchemaStore(self.registry)
        return self._store

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_store"] = state["_decoder"] = None  # registries are opened where used
        return state

    def _current_schema(self, subject: str) -> Resolved | None:
        """The subject's latest version of this format's schema type, asked once per run;
        ``None`` for a new subject (or one of another type)."""
        if subject not in self._current:
            try:
                latest: Resolved | None = self.store.latest(subject)
            except UnknownSchema:
                latest = None
            if latest is not None and latest.schema_type != self.schema_type:
                latest = None
            self._current[subject] = latest
        return self._current[subject]

    # --- writing ---------------------------------------------------------------------------

    def encode(self, record: Record) -> Message:
        after = None if record.operation is Operation.DELETE else record.payload.after
        return Message(
            value=self._encode_part(record, "payload", after),
            key=self._encode_part(record, "key", record.key),
        )

    def _encode_part(self, record: Record, part: Part, data: Any) -> bytes | None:
        where = "key" if part == "key" else "payload.after"
        if data is None:
            return None
        if part == "key" and self.raw_keys:
            if not isinstance(data, bytes):
                raise CodecError("key is structured data, and raw.keys=true writes raw keys only")
            return data
        if isinstance(data, bytes):
            named = framing.conduit_schema(record.metadata, part)
            if named is None:
                if part == "key":
                    return data  # a raw key is the Kafka key as it is
                raise CodecError(
                    f"{where} is raw data and the metadata names no schema for it, "
                    f"so it cannot be written as {self.name}"
                )
            schema = self.store.by_version(*named)
            self._check_type(schema, where)
            return self.reframe(schema, data, where, part)
        branches = avro_values.branches_in(record.metadata, where)
        written = self._with_named_schema(record, part, data, branches)
        if written is not None:
            return written
        schema = self._schema_for(record, part, data)
        try:
            return self.encode_row(schema, data, part, branches)
        except CodecError as exc:
            raise CodecError(f"{where} {exc.reason} ({schema.label()})") from None

    def _subject(self, record: Record, part: Part, record_name: str | None) -> str:
        return self.subject_for(record.metadata.collection, part, record_name)

    def subject_for(self, collection: str | None, part: Part, record_name: str | None) -> str:
        """The strategy's subject of ``part`` for a record of ``collection`` (the ``topic``
        option, when set, in its place)."""
        topic = self.topic or collection
        try:
            return self.subject_of(SubjectContext(part, topic=topic, record_name=record_name))
        except ValueError as exc:
            raise CodecError(f"{exc}: set --opt topic=NAME") from None

    def _check_type(self, schema: Resolved, where: str) -> None:
        if schema.schema_type != self.schema_type:
            raise CodecError(f"{where}: {schema.label()} is {schema.schema_type}, not {self.name}")

    def _with_named_schema(
        self, record: Record, part: Part, data: Any, branches: avro_values.Branches | None
    ) -> bytes | None:
        """Structured ``part`` data framed with the schema the record's metadata names, when
        the format writes with it and the data fits it; ``None``: the format's own way."""
        return None

    def _schema_for(self, record: Record, part: Part, data: dict[str, Any]) -> Resolved:
        raise NotImplementedError

    def encode_row(
        self,
        schema: Resolved,
        data: dict[str, Any],
        part: Part,
        branches: avro_values.Branches | None = None,
    ) -> bytes:
        """``data`` framed in Confluent's wire format with ``schema``; ``branches`` names
        union branches by path (``avro_values.union_branches``)."""
        raise NotImplementedError

    def reframe(self, schema: Resolved, body: bytes, where: str, part: Part) -> bytes:
        """A bare body of ``schema`` (Conduit's framing) in Confluent's."""
        raise NotImplementedError

    # --- reading ---------------------------------------------------------------------------

    def decode(self, message: Message) -> list[Record]:
        if message.value is None and message.key is None:
            raise SkipMessage("tombstone")
        branches: dict[str, avro_values.Branches] = {}
        key = self._decode_part(message, "key", message.key, branches)
        after = self._decode_part(message, "payload", message.value, branches)
        operation = "delete" if message.value is None else "create"
        record = Record.new(operation, key=key, after=after, collection=self.topic)
        for where, found in branches.items():
            record.metadata[avro_values.branches_key(where)] = jsontext.dumps(found)
        return [record]

    def _decode_part(
        self,
        message: Message,
        part: Part,
        data: bytes | None,
        branches: dict[str, avro_values.Branches],
    ) -> Any:
        if data is None:
            return None
        where = "key" if part == "key" else "value"
        if part == "key" and self.raw_keys:
            return data
        header = framing.schema_id_header(message.headers, "key" if part == "key" else "value")
        if header is None and data[:1] not in (b"\x00", b"\x01") and part == "key":
            return data  # a raw key: not every producer encodes keys (raw.keys=true says so)
        found: avro_values.Branches = {}
        try:
            value = self.decode_row(data, part, header, found)
        except CodecError as exc:
            raise type(exc)(f"{where}: {exc.reason}", data=data) from None
        if found:
            branches["key" if part == "key" else "payload.after"] = found
        return value

    def decode_row(
        self, data: bytes, part: Part, header: bytes | None, branches: avro_values.Branches
    ) -> dict[str, Any]:
        """Structured data from Confluent-framed bytes; ``branches`` receives the union
        branches JSON would not show (``avro_values.union_branches``)."""
        raise NotImplementedError


class AvroFormat(SchemaRowFormat):
    """Rows as Confluent-framed Avro (module docstring)."""

    name = "avro"
    schema_type = "AVRO"

    @property
    def record_decoder(self) -> RecordDecoder:
        """What reads this format's rows: writer schemas by id, the ``reader`` option's
        reader schema by subject (chosen once per subject for this format)."""
        if self._decoder is None:
            self._decoder = RecordDecoder(
                self.store,
                reader=self.reader_choice,
                subject_strategy=self.strategy_name,
                topic=self.topic,
            )
        return self._decoder

    def check_schema_files(self) -> None:
        for part, option in (("key", "key.schema"), ("payload", "value.schema")):
            text = self.schema_files[part]
            if text is None:
                if self.strategy_name != "topic" and not (part == "key" and self.raw_keys):
                    # Every inferred schema is the record "record": keys and rows of every
                    # table would share one subject.
                    raise FormatOptionError(
                        f"format {self.name!r} option 'subject.strategy': "
                        f"{self.strategy_name} names subjects after the record, and inferred "
                        f"schemas are all named 'record': give --opt {option}=FILE.avsc"
                    )
                continue
            try:
                parsed = parse_avro(text)
            except SchemaError as exc:
                raise FormatOptionError(
                    f"format {self.name!r} option {option!r}: not an Avro schema: {exc}"
                ) from None
            try:
                avro_values.parse_schema(text)
            except SchemaError as exc:
                raise FormatOptionError(f"format {self.name!r} option {option!r}: {exc}") from None
            if parsed.type != "record" and part == "payload":
                raise FormatOptionError(
                    f"format {self.name!r} option {option!r}: a row schema must be an Avro "
                    f"record, not {parsed.type}"
                )

    def _schema_for(self, record: Record, part: Part, data: dict[str, Any]) -> Resolved:
        text = self.schema_files[part]
        if text is None:
            from cdc_connectors.schema.infer import infer_schema_text

            subject = self._subject(record, part, "record")
            current = self._current_schema(subject)
            branches = avro_values.branches_in(record.metadata, where_of(part))
            misfit = None if current is None else _misfit(current, data, branches)
            if current is not None and misfit is None:
                # A row a version of the subject already holds is written with it: inferring
                # anew would register ["null","string"] for a null, then "string" for the next
                # row's text, which the registry refuses as incompatible.
                return current
            try:
                text = infer_schema_text(data, what="key" if part == "key" else "payload.after")
            except SchemaError as exc:
                latest = (
                    "" if current is None else f"; {current.label()} does not hold it: {misfit}"
                )
                raise CodecError(f"no Avro schema can be inferred: {exc}{latest}") from None
            resolved = self.store.register(subject, text)
            self._inferred.add(resolved.schema_id)
            self._current[subject] = resolved
            return resolved
        return self.store.register(self._subject(record, part, _record_name(text)), text)

    def _with_named_schema(
        self, record: Record, part: Part, data: Any, branches: avro_values.Branches | None
    ) -> bytes | None:
        """``data`` written with an Avro record schema the metadata names
        (``opencdc.payload.schema.*``: a Debezium schema block, a registered writer schema),
        registered under the strategy's subject once the data fits it: the row keeps its
        types (a nullable double stays ``["null","double"]``), where inference would give
        each row the types of its values. ``None`` with a schema file of the part, without
        such metadata, when the registry has no such schema, or when the data does not fit."""
        if self.schema_files[part] is not None:
            return None
        try:
            named = framing.conduit_schema(record.metadata, part)
        except CodecError:
            return None  # metadata naming no schema: as without it
        if named is None:
            return None
        found = self.named_record(named)
        if found is None:
            return None
        source, text, full_name = found
        try:
            body = avro_values.encode(
                avro_values.parsed(source), data, avro_values.standalone(source), branches
            )
        except CodecError:
            return None  # no longer the data the schema came with: the format's own way
        registered = self.store.register(self._subject(record, part, full_name), text)
        return framing.frame(registered.schema_id, body)

    def named_record(self, named: tuple[str, int]) -> tuple[Resolved, str, str] | None:
        """The schema of ``named`` (subject, version), its text to register and its record's
        full name, asked once per run; ``None`` when the registry has none or it is no Avro
        record."""
        if named not in self._named:
            self._named[named] = named_avro_record(self.store, named)
        return self._named[named]

    def encode_row(
        self,
        schema: Resolved,
        data: dict[str, Any],
        part: Part,
        branches: avro_values.Branches | None = None,
    ) -> bytes:
        if schema.schema_id in self._inferred:
            data = prepared(data, schema, "")
        body = avro_values.encode(
            avro_values.parsed(schema), data, avro_values.standalone(schema), branches
        )
        return framing.frame(schema.schema_id, body)

    def reframe(self, schema: Resolved, body: bytes, where: str, part: Part) -> bytes:
        try:
            # nothing is written that does not read
            avro_values.decode(body, avro_values.parsed(schema))
        except CodecError as exc:
            raise CodecError(f"{where} {exc.reason} ({schema.label()})") from None
        return framing.frame(schema.schema_id, body)

    def decode_row(
        self, data: bytes, part: Part, header: bytes | None, branches: avro_values.Branches
    ) -> dict[str, Any]:
        value: dict[str, Any] = self.record_decoder.decode_value(
            data, part, header=header, branches=branches
        )
        return value


#: The options of a row format whose values are read as written (no reader schema).
OPTIONS_WITHOUT_READER: Mapping[str, str] = {
    name: text for name, text in SchemaRowFormat.options.items() if name != "reader"
}


def where_of(part: Part) -> str:
    """The place of a row format's part in a record: its key or its after image."""
    return "key" if part == "key" else "payload.after"


def _misfit(
    schema: Resolved, data: dict[str, Any], branches: avro_values.Branches | None
) -> str | None:
    """Why ``schema`` does not write ``data`` exactly as it is; ``None`` when it does."""
    try:
        avro_values.encode(
            avro_values.parsed(schema), data, avro_values.standalone(schema), branches
        )
    except CodecError as exc:
        return exc.reason
    return None


def named_avro_record(
    store: SchemaStore, named: tuple[str, int]
) -> tuple[Resolved, str, str] | None:
    """The schema of ``named`` (subject, version) in ``store``, its text to register (named
    types defined once) and its record's full name; ``None`` when the store has none or it
    is no Avro record."""
    try:
        source = store.by_version(*named)
    except UnknownSchema:
        return None
    if source.schema_type != "AVRO":
        return None
    try:
        shape = named_once(avro_values.standalone(source))
    except CodecError:
        return None
    if not isinstance(shape, dict) or shape.get("type") not in ("record", "error"):
        return None
    text = orjson.dumps(shape).decode()
    return source, text, _record_name(text) or ""


def _record_name(text: str) -> str | None:
    try:
        schema = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(schema, dict) and isinstance(schema.get("name"), str):
        space = schema.get("namespace")
        name: str = schema["name"]
        return f"{space}.{name}" if space and "." not in name else name
    return None
