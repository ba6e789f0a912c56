"""A Connect schema as the Avro schema Confluent's AvroConverter registers for it.

AvroData's naming counter, its schema cache and named types, with the two departures the
package docstring gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_connectors.schema.connect.avro_defaults import avro_json, valid_default
from cdc_connectors.schema.connect.avrodata import (
    DEFAULT_RECORD_NAME,
    FIELD_DEFAULT_FLAG,
    FIELD_DOC_PREFIX,
    MAP_ENTRY_NAME,
    NAMESPACE,
    PRIMITIVE_AVRO,
    RECORD_DOC,
)
from cdc_connectors.schema.connect.node import ConnectSchema, fixed_size, string_keys
from cdc_connectors.schema.connect.parse import parse_connect_schema
from cdc_connectors.schema.errors import SchemaError

__all__ = ["connect_to_avro"]

_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_IN_AVRO_NAME = re.compile(r"[^A-Za-z0-9_]")


def connect_to_avro(schema: Mapping[str, Any] | ConnectSchema) -> dict[str, Any] | list[Any]:
    """The Avro schema (JSON-ready) AvroConverter registers for a Connect ``schema`` block.

    A top-level optional schema is a union (a list); anything else a dict.
    """
    parsed = parse_connect_schema(schema)
    avro = _AvroBuilder(parsed).build(parsed)
    return {"type": avro} if isinstance(avro, str) else avro


@dataclass(frozen=True, slots=True)
class _Record:
    """A named type defined so far: how to refer to it, where it came from, its shape and
    the parameters its definition carries."""

    fullname: str
    namespace: str | None
    path: str
    shape: bytes = b""
    parameters: Mapping[str, str] = field(default_factory=dict)


def _scrubbed(part: str) -> str:
    """``part`` as an Avro name: other characters become ``_``, a leading digit gets one."""
    if _AVRO_NAME.fullmatch(part):
        return part
    scrubbed = _NOT_IN_AVRO_NAME.sub("_", part)
    return scrubbed if scrubbed[:1].isalpha() or scrubbed[:1] == "_" else "_" + scrubbed


class _AvroBuilder:
    """One conversion: AvroData's naming counter, its schema cache and the named types."""

    def __init__(self, root: ConnectSchema) -> None:
        self.defaults = 0
        self.by_identity: dict[bytes, _Record] = {}
        self.by_name: dict[str, _Record] = {}
        self.seen_names: set[str] = set()
        # Dotless names used more than once: see the package docstring.
        counts: dict[str, int] = {}
        for node in _walk(root):
            if node.name and "." not in node.name and _is_named(node):
                counts[node.name] = counts.get(node.name, 0) + 1
        self.repeated = {name for name, count in counts.items() if count > 1}

    def build(self, schema: ConnectSchema, space: str | None = None) -> Any:
        """The Avro type of ``schema``; ``space`` is the enclosing namespace."""
        if schema.optional and schema.type == "struct" and schema.semantic is None:
            # AvroData makes an optional struct ["null", record] even when it has a default.
            return ["null", self._base(schema, space)]
        base = self._base(schema, space)
        if not schema.optional:
            return base
        return [base, "null"] if schema.has_default else ["null", base]

    def _base(self, schema: ConnectSchema, space: str | None) -> Any:
        if schema.type != "map":  # a map reuses only its entry record
            known = self.by_identity.get(schema.identity) or self._same_shape(schema, space)
            if known is not None:
                return _reference(known, space)
        avro: dict[str, Any]
        semantic = schema.semantic
        if semantic is not None:
            spelled = semantic.avro(schema.parameters)
            avro = {k: v for k, v in spelled.items() if k != "logicalType"}
            avro.update(self._props(schema))
            if "logicalType" in spelled:
                avro["logicalType"] = spelled["logicalType"]
        elif schema.type == "struct":
            avro = self._record(schema, space)
        elif schema.type == "array":
            assert schema.items is not None
            avro = {"type": "array", "items": self.build(schema.items, space)}
            avro.update(self._props(schema))
        elif schema.type == "map":
            avro = self._map(schema, space)
        elif fixed_size(schema) is not None:
            avro = self._fixed(schema, space)
        else:
            avro = {"type": PRIMITIVE_AVRO[schema.type], **self._props(schema)}
            if schema.type in ("int8", "int16"):
                # Avro has no 8/16-bit ints; AvroData notes the Connect type to read it back.
                avro["connect.type"] = schema.type
        # AvroData copies parameters named avro* onto the Avro type as they are.
        avro.update((k, v) for k, v in schema.parameters.items() if k.startswith("avro"))
        return avro["type"] if len(avro) == 1 else avro

    def _props(self, schema: ConnectSchema) -> dict[str, Any]:
        props: dict[str, Any] = {}
        if schema.doc is not None:
            props["connect.doc"] = schema.doc
        if schema.version is not None:
            props["connect.version"] = schema.version
        params = {k: v for k, v in schema.parameters.items() if k != FIELD_DEFAULT_FLAG}
        if params:
            props["connect.parameters"] = params
        if schema.has_default and FIELD_DEFAULT_FLAG not in schema.parameters:
            props["connect.default"] = avro_json(schema, schema.default)
        if schema.name is not None:
            props["connect.name"] = schema.name
        return props

    def _named(
        self, schema: ConnectSchema, space: str | None, default: str | None = None
    ) -> tuple[_Record, dict[str, Any]]:
        """Define a named type: its record, and the name keys its definition spells out.

        An unnamed schema gets ``default`` (a map entry's) or the next ``ConnectDefault``.
        """
        if schema.name is None:
            if default is None:
                self.defaults += 1
                default = DEFAULT_RECORD_NAME + (str(self.defaults) if self.defaults > 1 else "")
            namespace, short, fullname = _split(NAMESPACE, default)
        else:
            namespace, short, fullname = self._name_of(schema, space)
        clash = self.by_name.get(fullname)
        if clash is not None:
            raise SchemaError(
                f"{schema.path}: {fullname} is defined differently at {clash.path}; "
                "Avro allows one definition per name (name the schemas apart)"
            )
        record = _Record(fullname, namespace, schema.path, schema.shape, dict(schema.parameters))
        self.by_identity[schema.identity] = record
        self.by_name[fullname] = record
        spelled: dict[str, Any] = {"name": short}
        if namespace != space:
            # "" says "no namespace" inside a namespaced record, as Avro's Java writer does.
            spelled["namespace"] = namespace or ""
        return record, spelled

    def _name_of(self, schema: ConnectSchema, space: str | None) -> tuple[str | None, str, str]:
        """Namespace, short name and full name of a named schema's Avro type."""
        assert schema.name is not None
        if "." in schema.name:
            namespace, _, short = schema.name.rpartition(".")
            return _split(namespace, short)
        if schema.name in self.repeated:
            return _split(space, schema.name)
        return _split(None, schema.name)

    def _same_shape(self, schema: ConnectSchema, space: str | None) -> _Record | None:
        """The named type already defined under this schema's name with its shape, if any.

        Columns of one Connect type whose parameters differ (Debezium's
        ``column.propagate.source.type`` gives each ``Geometry`` column its own
        ``__debezium.source.column.*``) share the first definition, as Confluent's
        AvroConverter registers them; each field keeps its own parameters (``_field``).
        """
        if schema.name is None or not _is_named(schema):
            return None
        found = self.by_name.get(self._name_of(schema, space)[2])
        if found is None or found.shape != schema.shape:
            return None
        self.by_identity[schema.identity] = found
        return found

    def _record(self, schema: ConnectSchema, space: str | None) -> dict[str, Any]:
        record, spelled = self._named(schema, space)
        avro: dict[str, Any] = {"type": "record", **spelled}
        doc = schema.parameters.get(RECORD_DOC)
        if doc is not None:
            avro["doc"] = doc
        fields = []
        for name, child in schema.fields:
            fields.append(
                self._field(
                    name, child, record.namespace, schema.parameters.get(FIELD_DOC_PREFIX + name)
                )
            )
        avro["fields"] = fields
        avro.update(self._props(schema))
        return avro

    def _field(
        self, name: str, child: ConnectSchema, space: str | None, doc: str | None
    ) -> dict[str, Any]:
        if not _AVRO_NAME.fullmatch(name):
            raise SchemaError(f"{child.path}.field: {name!r} is no Avro field name")
        already_seen = child.name is not None and child.name in self.seen_names
        if child.name is not None:
            self.seen_names.add(child.name)
        avro: dict[str, Any] = {"name": name, "type": self.build(child, space)}
        if doc is not None:
            avro["doc"] = doc
        if child.has_default:
            default = avro_json(child, child.default)
            # Avro refuses a default that is not a value of the type; AvroData then drops it.
            if valid_default(child, child.default):
                avro["default"] = default
        elif child.optional:
            avro["default"] = None
        if already_seen and _is_named(child) and child.type != "map":
            # A reused named type cannot carry this use's parameters: the field keeps them
            # (an empty set too, where the definition's are not this use's).
            defined = self.by_identity.get(child.identity)
            theirs = dict(defined.parameters) if defined is not None else {}
            if child.parameters or theirs != dict(child.parameters):
                avro["connect.parameters"] = dict(child.parameters)
        return avro

    def _map(self, schema: ConnectSchema, space: str | None) -> dict[str, Any]:
        assert schema.keys is not None and schema.values is not None
        if string_keys(schema):
            values = self.build(schema.values, space)
            return {"type": "map", "values": values, **self._props(schema)}
        # Other keys: an array of key/value records, named after the map or MapEntry.
        known = self.by_identity.get(schema.identity) or self._same_shape(schema, space)
        if known is not None:
            entries: Any = _reference(known, space)
        else:
            record, spelled = self._named(schema, space, default=MAP_ENTRY_NAME)
            entries = {
                "type": "record",
                **spelled,
                "fields": [
                    self._field("key", schema.keys, record.namespace, None),
                    self._field("value", schema.values, record.namespace, None),
                ],
            }
            if schema.name is not None:
                entries["connect.internal.type"] = MAP_ENTRY_NAME
        return {"type": "array", "items": entries, **self._props(schema)}

    def _fixed(self, schema: ConnectSchema, space: str | None) -> dict[str, Any]:
        _, spelled = self._named(schema, space)
        return {"type": "fixed", **spelled, "size": fixed_size(schema), **self._props(schema)}


def _split(namespace: str | None, short: str) -> tuple[str | None, str, str]:
    """Namespace, short name and full name as Avro names. Connect names need not be Avro
    names (Debezium's ``server-1.db.orders.Value``): each dotted part is scrubbed into one,
    as Confluent's AvroData does with ``scrub.invalid.names``; the Connect name stays in the
    ``connect.name`` property."""
    if namespace:
        namespace = ".".join(_scrubbed(part) for part in namespace.split("."))
    short = _scrubbed(short)
    return namespace, short, f"{namespace}.{short}" if namespace else short


def _reference(record: _Record, space: str | None) -> str:
    short = record.fullname.rpartition(".")[2]
    return short if record.namespace == space or record.namespace is None else record.fullname


def _is_named(schema: ConnectSchema) -> bool:
    """Whether AvroData makes ``schema`` an Avro named type (record or fixed)."""
    if schema.semantic is not None:
        return False
    if schema.type == "map":
        return schema.name is not None and not string_keys(schema)
    return schema.type == "struct" or fixed_size(schema) is not None


def _walk(root: ConnectSchema) -> Iterator[ConnectSchema]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if node.semantic is not None:
            continue
        stack.extend(child for _, child in node.fields)
        stack.extend(c for c in (node.items, node.keys, node.values) if c is not None)
