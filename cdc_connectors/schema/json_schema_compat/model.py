"""JSON Schemas read into the typed form Confluent's diff compares.

A schema becomes one node per kind of value it constrains: a ``{"type": "string",
"maxLength": 5}`` is one string node, ``{"type": ["string", "null"]}`` an ``anyOf`` of a
string and a null node, and keywords of several kinds (``type`` with ``enum``, or with
``oneOf``) an ``allOf`` of one node per kind. ``$ref`` becomes a reference node resolved
when first followed, so recursive schemas stay finite: one node per JSON pointer.
Draft 2019-09 and 2020-12 read ``prefixItems``, ``dependentRequired``,
``dependentSchemas`` and the ``unevaluated*`` keywords, and ``$ref`` next to other
keywords; earlier drafts ignore the keywords next to a ``$ref``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

NO_DEFAULT = object()
_MODERN = ("2019-09", "2020-12")
_ARRAY_WORDS = ("items", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains")
_MODERN_ARRAY_WORDS = (*_ARRAY_WORDS, "prefixItems", "unevaluatedItems", "minContains")
_OBJECT_WORDS = (
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
)
_MODERN_OBJECT_WORDS = (
    *_OBJECT_WORDS,
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
)
_NUMBER_WORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_STRING_WORDS = ("minLength", "maxLength", "pattern", "format")
_MODERN_STRING_WORDS = ("minLength", "maxLength", "pattern")
_COMBINERS = ("allOf", "anyOf", "oneOf")


@dataclass(eq=False)
class Node:
    """A schema of one kind; ``kind`` is ``true``, ``empty``, ``false``, ``boolean``,
    ``null``, ``conditional`` or the subclass's."""

    kind: str
    id: Any = None
    title: Any = None
    description: Any = None
    default: Any = NO_DEFAULT
    connect_type: Any = None

    @property
    def is_empty(self) -> bool:
        """Accepts anything (``true`` or ``{}``)."""
        return self.kind in ("true", "empty")


@dataclass(eq=False)
class StringNode(Node):
    max_length: int | None = None
    min_length: int | None = None
    pattern: str | None = None


@dataclass(eq=False)
class NumberNode(Node):
    maximum: float | None = None
    minimum: float | None = None
    exclusive_maximum: float | None = None
    exclusive_minimum: float | None = None
    multiple_of: Any = None
    integer: bool = False


@dataclass(eq=False)
class ObjectNode(Node):
    properties: dict[str, Node] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    additional: bool | Node = True  # False, True (absent or true) or a schema
    patterns: list[tuple[str, Node]] = field(default_factory=list)
    property_deps: dict[str, set[str]] = field(default_factory=dict)
    schema_deps: dict[str, Node] = field(default_factory=dict)
    max_properties: int | None = None
    min_properties: int | None = None
    unevaluated: Node | None = None


@dataclass(eq=False)
class ArrayNode(Node):
    all_items: Node | None = None
    item_list: list[Node] = field(default_factory=list)
    additional: bool | Node = True
    unevaluated: Node | None = None
    max_items: int | None = None
    min_items: int | None = None
    unique: bool = False
    max_contains: int | None = None
    min_contains: int | None = None


@dataclass(eq=False)
class EnumNode(Node):
    values: frozenset[bytes] = frozenset()


@dataclass(eq=False)
class ConstNode(Node):
    value: bytes = b""


@dataclass(eq=False)
class CombinedNode(Node):
    criterion: str = "allOf"
    subschemas: list[Node] = field(default_factory=list)
    texts: list[bytes] = field(default_factory=list)  # each subschema as written


@dataclass(eq=False)
class NotNode(Node):
    inner: Node | None = None


@dataclass(eq=False)
class RefNode(Node):
    ref: str = ""
    loader: Loader | None = None
    doc: str = ""

    def target(self) -> Node | None:
        """The schema referred to; None when it cannot be found."""
        assert self.loader is not None
        return self.loader.resolve(self.doc, self.ref)


def canonical(value: Any) -> bytes:
    """A JSON value as comparable bytes (keys sorted)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def is_modern(schema: Any) -> bool:
    """Whether the schema names draft 2019-09 or 2020-12 in ``$schema``."""
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    return isinstance(dialect, str) and any(d in dialect for d in _MODERN)


class Loader:
    """Reads a schema and the schemas it references by name into nodes, once per pointer."""

    def __init__(self, root: Any, references: Mapping[str, Any] | None = None):
        self.docs: dict[str, Any] = {"": root, **(references or {})}
        self.nodes: dict[tuple[str, str], Node] = {}

    def root(self) -> Node:
        return self.load("", self.docs[""], "")

    def load(self, doc: str, value: Any, pointer: str) -> Node:
        key = (doc, pointer)
        if key not in self.nodes:
            self.nodes[key] = _Reader(self, doc, is_modern(self.docs[doc])).read(value, pointer)
        return self.nodes[key]

    def resolve(self, doc: str, ref: str) -> Node | None:
        """The node ``ref`` (written in ``doc``) names: a pointer, a name or both."""
        name, _, fragment = ref.partition("#")
        if name:
            found = name if name in self.docs else _by_tail(self.docs, name)
            if found is None:
                return None
            doc = found
        value = self.docs[doc]
        pointer = fragment if fragment.startswith("/") else ""
        for token in pointer.split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and token in value:
                value = value[token]
            elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
                value = value[int(token)]
            else:
                return None
        return self.load(doc, value, pointer)


def _by_tail(docs: Mapping[str, Any], name: str) -> str | None:
    """The reference whose name ends the way ``name`` does (a relative URI)."""
    tail = name.rsplit("/", 1)[-1]
    found = [n for n in docs if n and n.rsplit("/", 1)[-1] == tail]
    return found[0] if found else None


class _Reader:
    """Reads one schema object (and its subschemas) of one document."""

    def __init__(self, loader: Loader, doc: str, modern: bool):
        self.loader, self.doc, self.modern = loader, doc, modern

    def child(self, value: Any, pointer: str) -> Node:
        return self.loader.load(self.doc, value, pointer)

    def read(self, schema: Any, at: str) -> Node:
        if isinstance(schema, bool):
            return Node("true" if schema else "false")
        if not isinstance(schema, dict):
            return Node("empty")
        if "$ref" in schema and not self.modern:
            parts: list[Node] = [self.ref(schema["$ref"])]
        else:
            parts = self.parts(schema, at)
        node = _joined(parts)
        node.id = schema.get("$id", schema.get("id"))
        node.title = schema.get("title")
        node.description = schema.get("description")
        node.default = schema.get("default", NO_DEFAULT)
        node.connect_type = schema.get("connect.type")
        return node

    def ref(self, ref: Any) -> Node:
        return RefNode("ref", ref=str(ref), loader=self.loader, doc=self.doc)

    def parts(self, schema: dict[str, Any], at: str) -> list[Node]:
        parts: list[Node] = []
        if isinstance(schema.get("enum"), list):
            parts.append(EnumNode("enum", values=frozenset(canonical(v) for v in schema["enum"])))
        for word in _COMBINERS:
            if isinstance(schema.get(word), list):
                subs = schema[word]
                nodes = [self.child(s, f"{at}/{word}/{i}") for i, s in enumerate(subs)]
                texts = [canonical(s) for s in subs]
                parts.append(
                    CombinedNode("combined", criterion=word, subschemas=nodes, texts=texts)
                )
        if "not" in schema:
            parts.append(NotNode("not", inner=self.child(schema["not"], f"{at}/not")))
        if "const" in schema:
            parts.append(ConstNode("const", value=canonical(schema["const"])))
        if self.modern and "$ref" in schema:
            parts.append(self.ref(schema["$ref"]))
        kind = schema.get("type")
        if isinstance(kind, str):
            parts.append(self.typed(kind, schema, at))
        elif isinstance(kind, list):
            subs = [self.typed(str(k), schema, at) for k in kind]
            texts = [canonical({"type": k}) for k in kind]
            parts.append(CombinedNode("combined", criterion="anyOf", subschemas=subs, texts=texts))
        else:
            parts += self.sniffed(schema, at)
        if any(w in schema for w in ("if", "then", "else")):
            parts.append(Node("conditional"))
        return parts

    def sniffed(self, schema: dict[str, Any], at: str) -> list[Node]:
        """Nodes for the kinds of value the keywords constrain, without a ``type``."""
        modern = self.modern
        found = []
        for words, kind in (
            (_MODERN_ARRAY_WORDS if modern else _ARRAY_WORDS, "array"),
            (_MODERN_OBJECT_WORDS if modern else _OBJECT_WORDS, "object"),
            (_NUMBER_WORDS, "number"),
            (_MODERN_STRING_WORDS if modern else _STRING_WORDS, "string"),
        ):
            if any(w in schema for w in words):
                found.append(self.typed(kind, schema, at))
        return found

    def typed(self, kind: str, schema: dict[str, Any], at: str) -> Node:
        if kind == "string":
            return StringNode(
                "string",
                max_length=schema.get("maxLength"),
                min_length=schema.get("minLength"),
                pattern=schema.get("pattern"),
            )
        if kind in ("number", "integer"):
            return _number(schema, integer=kind == "integer")
        if kind == "object":
            return self.object(schema, at)
        if kind == "array":
            return self.array(schema, at)
        return Node(kind)

    def object(self, schema: dict[str, Any], at: str) -> ObjectNode:
        node = ObjectNode("object")
        props = schema.get("properties")
        if isinstance(props, dict):
            node.properties = {
                name: self.child(s, f"{at}/properties/{_escaped(name)}")
                for name, s in props.items()
            }
        required = schema.get("required")
        node.required = set(required) if isinstance(required, list) else set()
        node.additional = self.open_or_schema(schema, "additionalProperties", at)
        patterns = schema.get("patternProperties")
        if isinstance(patterns, dict):
            node.patterns = [
                (p, self.child(s, f"{at}/patternProperties/{_escaped(p)}"))
                for p, s in patterns.items()
            ]
        self.dependencies(node, schema, at)
        node.max_properties = schema.get("maxProperties")
        node.min_properties = schema.get("minProperties")
        if self.modern and "unevaluatedProperties" in schema:
            node.unevaluated = self.child(
                schema["unevaluatedProperties"], f"{at}/unevaluatedProperties"
            )
        return node

    def dependencies(self, node: ObjectNode, schema: dict[str, Any], at: str) -> None:
        sources = ["dependencies"]
        if self.modern:
            sources += ["dependentRequired", "dependentSchemas"]
        for word in sources:
            deps = schema.get(word)
            if not isinstance(deps, dict):
                continue
            for name, dep in deps.items():
                if isinstance(dep, list):
                    node.property_deps.setdefault(name, set()).update(dep)
                else:
                    node.schema_deps[name] = self.child(dep, f"{at}/{word}/{_escaped(name)}")

    def array(self, schema: dict[str, Any], at: str) -> ArrayNode:
        node = ArrayNode("array")
        items = schema.get("items")
        prefix = schema.get("prefixItems") if self.modern else None
        if isinstance(items, list):
            node.item_list = [self.child(s, f"{at}/items/{i}") for i, s in enumerate(items)]
            node.additional = self.open_or_schema(schema, "additionalItems", at)
        elif isinstance(prefix, list):
            node.item_list = [self.child(s, f"{at}/prefixItems/{i}") for i, s in enumerate(prefix)]
            node.additional = self.open_or_schema(schema, "items", at)
        elif self.modern and isinstance(items, bool):
            node.additional = items
        elif items is not None:
            node.all_items = self.child(items, f"{at}/items")
            if not self.modern:
                node.additional = self.open_or_schema(schema, "additionalItems", at)
        elif not self.modern:
            node.additional = self.open_or_schema(schema, "additionalItems", at)
        node.max_items = schema.get("maxItems")
        node.min_items = schema.get("minItems")
        node.unique = schema.get("uniqueItems") is True
        if self.modern:
            if "unevaluatedItems" in schema:
                node.unevaluated = self.child(schema["unevaluatedItems"], f"{at}/unevaluatedItems")
            if "contains" in schema:
                node.min_contains = schema.get("minContains", 1)
                node.max_contains = schema.get("maxContains")
        return node

    def open_or_schema(self, schema: dict[str, Any], word: str, at: str) -> bool | Node:
        """``word`` as True (absent or true), False, or the schema it gives."""
        value = schema.get(word, True)
        if isinstance(value, bool):
            return value
        return self.child(value, f"{at}/{word}")


def _number(schema: dict[str, Any], integer: bool) -> NumberNode:
    def limit(word: str) -> float | None:
        value = schema.get(word)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    return NumberNode(
        "number",
        maximum=limit("maximum"),
        minimum=limit("minimum"),
        exclusive_maximum=limit("exclusiveMaximum"),
        exclusive_minimum=limit("exclusiveMinimum"),
        multiple_of=limit("multipleOf"),
        integer=integer,
    )


def _joined(parts: list[Node]) -> Node:
    """One node for the parts a schema object gave: none accepts anything."""
    if not parts:
        return Node("empty")
    if len(parts) == 1:
        return parts[0]
    return CombinedNode("combined", criterion="allOf", subschemas=parts, texts=[])


def _escaped(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
