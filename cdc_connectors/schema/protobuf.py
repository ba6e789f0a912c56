"""Protobuf schemas: compile ``.proto`` text or serialized descriptors, with references.

A registry holds a Protobuf schema either as ``.proto`` text or, as
confluent-kafka's serializer registers it, as a base64 ``FileDescriptorProto``.
References name the files the schema imports (``name`` is the import path).
``run_protoc`` is the one way this project runs the compiler (grpcio-tools'
``protoc``, in a child process so that its log lines never mix with ours);
its errors say what is wrong and where (``schema.proto:3:5: "strin" is not
defined.``), nothing else. Well-known types (``google/protobuf/*.proto``) come
from grpcio-tools' bundled copies.

Run time: :func:`message_class` turns a registry schema (text and references)
into a message class of a private descriptor pool, picking the message by its
Confluent message-index path (:func:`message_indexes`, :func:`descriptor_at`).
:func:`to_dict` / :func:`from_dict` convert messages to and from exact Python
values, unlike ``json_format``:

| protobuf | Python |
|---|---|
| int32 .. uint64, fixed, sint | int (never a string) |
| double, float, bool, string | float, bool, str |
| bytes | bytes (never base64) |
| enum | the value's name (from_dict takes numbers too) |
| repeated, map | list, dict |
| message | dict of all its fields; None when unset |
| oneof | only the member that is set |
| ``optional`` scalar | None when unset |
| ``Timestamp`` | aware UTC ``datetime`` |
| wrappers (``Int64Value`` ...) | the value, or None |
| ``Struct``, ``Value``, ``ListValue`` | dict, JSON value, list |

Compatibility rules are in :mod:`cdc_connectors.schema.protobuf_compat`.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import functools
import math
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, TypeAlias

from google.protobuf import descriptor_pb2, descriptor_pool, struct_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from cdc_connectors.schema import float32, instants
from cdc_connectors.schema.errors import SchemaError

FileSet: TypeAlias = descriptor_pb2.FileDescriptorSet
_FDP: TypeAlias = descriptor_pb2.FieldDescriptorProto
_Messages: TypeAlias = Iterable[descriptor_pb2.DescriptorProto]
_Enums: TypeAlias = Iterable[descriptor_pb2.EnumDescriptorProto]
DEFAULT_NAME = "schema.proto"
PROTOC_TIMEOUT = 60.0
_MAX_ERROR_LINES = 5
_GRPC_TOOLS = resources.files("grpc_tools")
WELL_KNOWN = str(_GRPC_TOOLS / "_proto")
# The child runs the compiler that ``grpc_tools.protoc.main`` wraps, and imports nothing
# else (isolated, no site): a third of the start-up time of ``python -m grpc_tools.protoc``.
_GRPC_TOOLS_PARENT = str(Path(str(_GRPC_TOOLS)).resolve().parent)
_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); from grpc_tools import _protoc_compiler; "
    "sys.exit(_protoc_compiler.run_main([a.encode() for a in sys.argv[2:]]))"
)
# "<file>.proto:<line>:<column>: <what>" or "<file>.proto: <what>", as protoc reports errors.
_ERROR_LINE = re.compile(r"^\S+?\.proto(:\d+:\d+)?: ")
# What the compiler's logging library writes: "W0000 00:00:... file.cc:12] ..." and its preamble.
_LOG_LINE = re.compile(r"^([IWEF]\d{4} |WARNING: All log messages before absl)")


# --- the compiler ----------------------------------------------------------------------------


def run_protoc(
    files: Sequence[str],
    include: Sequence[str | os.PathLike[str]],
    options: Sequence[str] = (),
) -> None:
    """Run ``protoc`` on ``files`` (paths relative to an ``include`` directory).

    ``options`` are further protoc arguments (``--python_out=DIR``, ...). The
    well-known types are always importable. SchemaError with protoc's error
    lines only (include directories stripped from the paths) when it fails.
    """
    args = [sys.executable, "-I", "-S", "-c", _CHILD, _GRPC_TOOLS_PARENT, "protoc"]
    args += [*(f"-I{p}" for p in include), f"-I{WELL_KNOWN}", *options, *files]
    try:
        result = subprocess.run(args, capture_output=True, text=True, timeout=PROTOC_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise SchemaError(f"protoc did not finish within {PROTOC_TIMEOUT:g} s") from None
    if result.returncode != 0:
        raise SchemaError(_protoc_errors(result.stderr, include))


def _protoc_errors(stderr: str, include: Iterable[str | os.PathLike[str]]) -> str:
    """protoc's error lines, without its log chatter, warnings or our directories."""
    roots = sorted((os.fspath(p).rstrip("/") + "/" for p in include), key=len, reverse=True)
    said: list[str] = []
    for line in stderr.splitlines():
        for root in roots:
            line = line.replace(root, "")
        if line.strip() and not _LOG_LINE.match(line) and line not in said:
            said.append(line)
    errors = [line for line in said if _ERROR_LINE.match(line) and ": warning: " not in line]
    lines = errors or said  # protoc words a few errors (a missing input file) otherwise
    if not lines:
        return "protoc failed without naming an error"
    more = len(lines) - _MAX_ERROR_LINES
    shown = lines[:_MAX_ERROR_LINES] + ([f"({more} more)"] if more > 0 else [])
    return "\n".join(shown)


def compile_files(
    files: Sequence[str],
    include: Sequence[str | os.PathLike[str]],
    given: FileSet | None = None,
) -> FileSet:
    """Compile ``files`` with their imports into one descriptor set (dependencies first).

    ``given`` holds already compiled files that imports may name.
    """
    with tempfile.TemporaryDirectory(prefix="cdc-protoc-") as tmp:
        out = Path(tmp) / "out.pb"
        options = ["--include_imports", f"--descriptor_set_out={out}"]
        if given is not None and given.file:
            given_path = Path(tmp) / "given.pb"
            given_path.write_bytes(given.SerializeToString())
            options.append(f"--descriptor_set_in={given_path}")
        run_protoc(files, include, options)
        return FileSet.FromString(out.read_bytes())


# --- schemas of the registry -----------------------------------------------------------------


def parse_serialized(schema_str: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The descriptor of a base64 ``FileDescriptorProto`` schema; ``None`` for ``.proto`` text."""
    text = schema_str.strip()
    if not text or any(c in text for c in " \n\t{};"):
        return None
    try:
        raw = base64.b64decode(text, validate=True)
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return fd if fd.name or fd.message_type or fd.package else None


def normalize(schema_str: str) -> str:
    """The schema's identity text: serialized descriptors as given, ``.proto`` text stripped."""
    if not isinstance(schema_str, str):
        raise SchemaError(f"a Protobuf schema must be a string, not {type(schema_str).__name__}")
    return schema_str.strip()


def compile_schema(
    schema_str: str, dependencies: Mapping[str, str] | None = None, name: str = DEFAULT_NAME
) -> FileSet:
    """Compile a schema and its (transitively resolved) imports into a descriptor set.

    ``dependencies`` maps import path -> schema text (``.proto`` or serialized).
    The schema's own file is the last one of the set.
    """
    if not isinstance(schema_str, str):
        raise SchemaError(f"a Protobuf schema must be a string, not {type(schema_str).__name__}")
    deps = tuple(sorted((dependencies or {}).items()))
    for dep_name, dep_str in deps:
        _check_import_path(dep_name)
        if not isinstance(dep_str, str):
            raise SchemaError(f"reference {dep_name!r} is not a string schema")
    return _compile(schema_str, deps, name)


def _check_import_path(name: object) -> None:
    """Reference names become files under a temporary directory: only plain relative paths."""
    if not isinstance(name, str) or not name:
        raise SchemaError(f"a Protobuf reference name must be an import path, not {name!r:.80}")
    parts = PurePosixPath(name).parts
    if (
        name.startswith("/")
        or "\\" in name
        or "\0" in name
        or any(p in (".", "..") for p in parts)
        or "//" in name
        or name.endswith("/")
    ):
        raise SchemaError(
            f"Protobuf reference name {name!r:.80} is not a relative import path "
            "(such as 'shop/money.proto')"
        )


@functools.lru_cache(maxsize=256)
def _compile(schema_str: str, deps: tuple[tuple[str, str], ...], name: str) -> FileSet:
    serialized_deps = FileSet()
    text_deps: dict[str, str] = {}
    for dep_name, dep_str in deps:
        fd = parse_serialized(dep_str)
        if fd is not None:
            fd.name = dep_name  # the import path is what the importer names
            serialized_deps.file.append(fd)
        else:
            text_deps[dep_name] = dep_str
    while name in dict(deps):
        name = "_" + name

    main = parse_serialized(schema_str)
    with tempfile.TemporaryDirectory(prefix="cdc-proto-") as tmp:
        root = Path(tmp)
        for dep_name, text in text_deps.items():
            _write(root / dep_name, text, f"reference {dep_name!r}")
        if main is not None:
            # Serialized main file: compile only its imports, then append it.
            imports = list(main.dependency)
            files = compile_files(imports, [root], serialized_deps) if imports else FileSet()
            main.name = main.name or name
            files.file.append(main)
            _check_builds(files)
            return files
        _write(root / name, schema_str, "the schema")
        try:
            return compile_files([name], [root], serialized_deps)
        except SchemaError as exc:  # the compiler's lines, one a problem: said in one
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            said = "; ".join(line.rstrip(".") for line in lines) if len(lines) > 1 else str(exc)
            raise SchemaError(f"invalid Protobuf schema: {said}") from None


def _write(path: Path, text: str, what: str) -> None:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SchemaError(
            f"invalid Protobuf schema: {what} is not valid Unicode text: {exc.reason}"
        ) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _check_builds(files: FileSet) -> None:
    pool = descriptor_pool.DescriptorPool()
    try:
        for fd in files.file:
            pool.Add(fd)
        pool.FindFileByName(files.file[-1].name)
    except (TypeError, KeyError, ValueError) as exc:
        raise SchemaError(f"invalid Protobuf descriptor: {exc}") from None


def serialized(files: FileSet) -> str:
    """The base64 ``FileDescriptorProto`` of the set's main (last) file."""
    return base64.standard_b64encode(files.file[-1].SerializeToString()).decode("ascii")


# --- messages at run time --------------------------------------------------------------------
#
# A registry schema becomes a message class of its own private descriptor pool: two schemas
# may define the same full name differently, which the default pool would refuse.


def message_class(
    schema_str: str,
    references: Sequence[tuple[str, str]] = (),
    indexes: Sequence[int] = (0,),
) -> type[Message]:
    """The class of the message at ``indexes`` of a registry schema, compiled at run time.

    ``references`` are (import path, schema text), as the registry resolves them;
    ``indexes`` is the Confluent message-index path (``[1, 0]``: the first nested
    message of the second top-level one). Cached by schema text and references.
    """
    refs = []
    for ref in references:
        if not (
            isinstance(ref, tuple | list) and len(ref) == 2 and all(isinstance(x, str) for x in ref)
        ):
            raise SchemaError(f"a reference must be a (name, schema text) pair, not {ref!r:.80}")
        refs.append((ref[0], ref[1]))
    path = tuple(indexes)
    if not all(type(i) is int for i in path):
        raise SchemaError(f"message indexes must be ints, not {list(path)!r:.80}")
    return _message_class(schema_str, tuple(refs), path)


@functools.lru_cache(maxsize=256)
def _message_class(
    schema_str: str, references: tuple[tuple[str, str], ...], indexes: tuple[int, ...]
) -> type[Message]:
    cls: type[Message] = GetMessageClass(
        descriptor_at(_schema_file(schema_str, references), indexes)
    )
    return cls


@functools.lru_cache(maxsize=256)
def _schema_file(schema_str: str, references: tuple[tuple[str, str], ...]) -> FileDescriptor:
    files = compile_schema(schema_str, dict(references))
    pool = descriptor_pool.DescriptorPool()
    try:
        for fd in files.file:
            pool.Add(fd)
        return pool.FindFileByName(files.file[-1].name)
    except (TypeError, KeyError, ValueError) as exc:
        raise SchemaError(f"invalid Protobuf descriptor: {exc}") from None


def message_indexes(descriptor: Descriptor) -> list[int]:
    """The Confluent message-index path of a message: its position, and its parents'."""
    path: list[int] = []
    while descriptor.containing_type is not None:
        parent = descriptor.containing_type
        path.append(_position(parent.nested_types, descriptor))
        descriptor = parent
    path.append(_position(descriptor.file.message_types_by_name.values(), descriptor))
    return path[::-1]


def _position(siblings: Iterable[Descriptor], descriptor: Descriptor) -> int:
    for index, sibling in enumerate(siblings):
        if sibling.full_name == descriptor.full_name:
            return index
    raise SchemaError(f"message {descriptor.full_name} is not among its parent's messages")


def descriptor_at(file: FileDescriptor, indexes: Sequence[int]) -> Descriptor:
    """The message at a Confluent message-index path of ``file``; ``[]`` is ``[0]``.

    SchemaError naming the path and what is there when it does not exist.
    """
    path = list(indexes) or [0]
    messages = list(file.message_types_by_name.values())
    where = f"file {file.name}"
    descriptor: Descriptor = None
    for i in path:
        if not 0 <= i < len(messages):
            raise SchemaError(
                f"message index path {path} does not exist: {where} has {len(messages)} "
                f"message(s), no index {i}"
            )
        descriptor = messages[i]
        messages = list(descriptor.nested_types)
        where = f"message {descriptor.full_name}"
    return descriptor


# --- messages <-> Python values --------------------------------------------------------------
#
# json_format's dicts are JSON: 64-bit integers as strings, bytes as base64, timestamps as
# text. These keep every value exact and typed. A plan of converters is built once per
# message type (descriptor) and reused for every message.

_UTC = datetime.UTC
_Reader: TypeAlias = Callable[[Any], Any]
_Writer: TypeAlias = Callable[[Any], Any]
_FD = FieldDescriptor
_INT_RANGES: dict[int, tuple[int, int]] = {
    _FD.TYPE_INT32: (-(2**31), 2**31 - 1),
    _FD.TYPE_SINT32: (-(2**31), 2**31 - 1),
    _FD.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    _FD.TYPE_UINT32: (0, 2**32 - 1),
    _FD.TYPE_FIXED32: (0, 2**32 - 1),
    _FD.TYPE_INT64: (-(2**63), 2**63 - 1),
    _FD.TYPE_SINT64: (-(2**63), 2**63 - 1),
    _FD.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    _FD.TYPE_UINT64: (0, 2**64 - 1),
    _FD.TYPE_FIXED64: (0, 2**64 - 1),
}
_SCALAR_TYPES: dict[int, tuple[type, ...]] = {
    _FD.TYPE_DOUBLE: (float, int),
    _FD.TYPE_FLOAT: (float, int),
    _FD.TYPE_BOOL: (bool,),
    _FD.TYPE_STRING: (str,),
    _FD.TYPE_BYTES: (bytes, bytearray, memoryview),
}
TIMESTAMP = "google.protobuf.Timestamp"
#: Wrapper message -> the type of its ``value`` field.
WRAPPERS: dict[str, int] = {
    "google.protobuf.DoubleValue": _FD.TYPE_DOUBLE,
    "google.protobuf.FloatValue": _FD.TYPE_FLOAT,
    "google.protobuf.Int64Value": _FD.TYPE_INT64,
    "google.protobuf.UInt64Value": _FD.TYPE_UINT64,
    "google.protobuf.Int32Value": _FD.TYPE_INT32,
    "google.protobuf.UInt32Value": _FD.TYPE_UINT32,
    "google.protobuf.BoolValue": _FD.TYPE_BOOL,
    "google.protobuf.StringValue": _FD.TYPE_STRING,
    "google.protobuf.BytesValue": _FD.TYPE_BYTES,
}
JSON_TYPES = ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue")
# Timestamp's valid range (0001-01-01 .. 9999-12-31), the range of a datetime.
MIN_SECONDS, MAX_SECONDS = -62135596800, 253402300799
#: The largest finite ``float`` (IEEE 754 single precision): a larger double would be
#: written as infinity.
FLOAT_MAX = 3.4028234663852886e38


class _PathError(SchemaError):
    """A problem at a path inside a value; the path grows as the error leaves each level."""

    def __init__(self, problem: str, path: list[str] | None = None):
        super().__init__(problem)
        self.problem = problem
        self.path = path or []

    def at(self, part: str) -> _PathError:
        self.path.insert(0, part)
        return self

    def finished(self) -> SchemaError:
        where = "".join(p if p.startswith("[") else f".{p}" for p in self.path).lstrip(".")
        return SchemaError(f"{where}: {self.problem}" if where else self.problem)


def to_dict(message: Message) -> dict[str, Any]:
    """Every field of ``message`` as an exact Python value.

    int64 and uint64 are ints, bytes bytes, enums their value names (the number when
    the schema has no name for it), repeated fields lists, maps dicts, a set proto2
    extension under its full name in brackets (``[shop.v1.note]``), Timestamps aware
    UTC datetimes (or their ISO 8601 text, where they have nanoseconds), wrappers
    their value, Struct/Value/ListValue plain JSON values. Unset message fields and
    unset fields with presence (proto3 ``optional``, proto2 ``optional``) are None;
    of a oneof only the member that is set appears. Unset proto3 scalars are their
    defaults.
    """
    try:
        result: dict[str, Any] = _reader(message.DESCRIPTOR)(message)
    except _PathError as exc:
        raise exc.finished() from None
    return result


def from_dict(data: Mapping[str, Any], cls: type[Message]) -> Message:
    """A ``cls`` message from the values :func:`to_dict` gives (enum numbers welcome too).

    Missing keys and None leave a field unset. Unknown keys, values of the wrong type
    or out of range raise SchemaError naming the path (``customer.address.zip``).
    Naive datetimes are taken as UTC, as protobuf's ``Timestamp.FromDatetime`` does. A
    Decimal goes into a string field as its exact text; a finite double beyond a float's
    range is refused for a float field (Protobuf would write infinity).
    """
    try:
        message: Message = _writer(cls.DESCRIPTOR)(data)
    except _PathError as exc:
        raise exc.finished() from None
    return message


def _is_repeated(fd: FieldDescriptor) -> bool:
    return bool(fd.is_repeated)


def _is_map(fd: FieldDescriptor) -> bool:
    return bool(
        fd.type == _FD.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry and fd.is_repeated
    )


def synthetic_oneofs(descriptor: Descriptor) -> set[str]:
    """Names of the oneofs that proto3 ``optional`` fields make (one per field)."""
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    return {proto.oneof_decl[f.oneof_index].name for f in proto.field if f.proto3_optional}


# to_dict ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _reader(descriptor: Descriptor) -> _Reader:
    """message -> dict of all its fields, for messages of ``descriptor``."""
    synthetic = synthetic_oneofs(descriptor)
    # Unset fields: implicit proto3 scalars read as their defaults, the rest as None; a
    # member of a real oneof is left out. Repeated fields and maps get fresh containers.
    template: dict[str, Any] = {}
    containers: list[tuple[str, type[list[Any]] | type[dict[Any, Any]]]] = []
    converters: dict[str, _Reader | None] = {}
    for fd in descriptor.fields:
        oneof = fd.containing_oneof
        if oneof is not None and oneof.name not in synthetic:
            pass
        elif _is_map(fd):
            template[fd.name] = None
            containers.append((fd.name, dict))
        elif _is_repeated(fd):
            template[fd.name] = None
            containers.append((fd.name, list))
        elif fd.has_presence:
            template[fd.name] = None
        else:
            template[fd.name] = _scalar_default(fd)
        converters[fd.name] = _field_reader(fd)

    def read(message: Any) -> dict[str, Any]:
        out = template.copy()
        for fd, value in message.ListFields():
            name = fd.name
            if fd.is_extension:
                # as protobuf's JSON mapping names it; no field of the message has brackets
                name = f"[{fd.full_name}]"
                converters.setdefault(name, _field_reader(fd))
            convert = converters[name]
            if convert is None:
                out[name] = value
            else:
                try:
                    out[name] = convert(value)
                except _PathError as exc:
                    raise exc.at(name) from None
        for name, empty in containers:
            if out[name] is None:
                out[name] = empty()
        return out

    return read


def _scalar_default(fd: FieldDescriptor) -> Any:
    if fd.type == _FD.TYPE_ENUM:
        return fd.enum_type.values_by_number.get(0, fd.enum_type.values[0]).name
    return fd.default_value


def _field_reader(fd: FieldDescriptor) -> _Reader | None:
    """The converter of a set field's value (ListFields gives it); None where it is exact."""
    if _is_map(fd):
        value_read = _element_reader(fd.message_type.fields_by_name["value"])
        if value_read is None:
            return dict
        return lambda value: {k: value_read(v) for k, v in value.items()}
    element = _element_reader(fd)
    if _is_repeated(fd):
        if element is None:
            return list
        return lambda values: [element(v) for v in values]
    return element


def _element_reader(fd: FieldDescriptor) -> _Reader | None:
    if fd.type == _FD.TYPE_ENUM:
        names = {number: v.name for number, v in fd.enum_type.values_by_number.items()}
        return lambda number: names.get(number, number)
    if fd.type not in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP):
        return None
    full_name = fd.message_type.full_name
    if full_name == TIMESTAMP:
        return _read_timestamp
    if full_name in WRAPPERS:
        return _read_wrapper
    if full_name in JSON_TYPES:
        return json_value
    return _reader(fd.message_type)


def _read_timestamp(value: Any) -> datetime.datetime | str:
    """A Timestamp as an aware UTC ``datetime``, or as its ISO 8601 text where it has
    nanoseconds a ``datetime`` does not hold (``...T00:00:00.123456789+00:00``)."""
    if not MIN_SECONDS <= value.seconds <= MAX_SECONDS or not 0 <= value.nanos < 10**9:
        raise _PathError(f"Timestamp {value.seconds}s {value.nanos}ns is outside 0001..9999")
    moment: datetime.datetime = value.ToDatetime(tzinfo=_UTC)
    if value.nanos % 1_000:
        return (
            moment.replace(microsecond=0).isoformat().replace("+00:00", f".{value.nanos:09d}+00:00")
        )
    return moment


def _read_wrapper(value: Any) -> Any:
    return value.value


def json_value(value: Any) -> Any:
    """Struct, Value or ListValue -> dict, JSON value or list (numbers are floats)."""
    name = value.DESCRIPTOR.full_name
    if name == "google.protobuf.Struct":
        return {k: json_value(v) for k, v in value.fields.items()}
    if name == "google.protobuf.ListValue":
        return [json_value(v) for v in value.values]
    kind = value.WhichOneof("kind")
    if kind == "struct_value" or kind == "list_value":
        return json_value(getattr(value, kind))
    if kind is None or kind == "null_value":
        return None
    return getattr(value, kind)


# from_dict ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _writer(descriptor: Descriptor) -> _Writer:
    """dict -> message of ``descriptor``, checking every value."""
    cls = GetMessageClass(descriptor)
    synthetic = synthetic_oneofs(descriptor)
    writers = {fd.name: _field_writer(fd) for fd in descriptor.fields}
    oneofs = [
        (o.name, {f.name for f in o.fields}) for o in descriptor.oneofs if o.name not in synthetic
    ]
    known = ", ".join(writers)

    def write(data: Any) -> Any:
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise _PathError(f"expected a dict for {descriptor.full_name}, got {_kind(data)}")
        values: dict[str, Any] = {}
        for key, value in data.items():
            if value is None and key in writers:
                continue
            field_write = writers.get(key)
            if field_write is None:
                raise _PathError(f"unknown field of {descriptor.full_name} ({known})", [str(key)])
            try:
                values[key] = field_write(value)
            except _PathError as exc:
                raise exc.at(key) from None
        for oneof, members in oneofs:
            both = sorted(members.intersection(values))
            if len(both) > 1:
                raise _PathError(f"{' and '.join(both)} are members of oneof {oneof}: set one")
        try:
            return cls(**values)
        except (TypeError, ValueError) as exc:  # a check above should have caught it first
            raise _PathError(str(exc)) from None

    return write


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.40}"


def _field_writer(fd: FieldDescriptor) -> _Writer:
    if _is_map(fd):
        entry = fd.message_type
        key_write = _element_writer(entry.fields_by_name["key"])
        value_write = _element_writer(entry.fields_by_name["value"])

        def write_map(value: Any) -> dict[Any, Any]:
            if not isinstance(value, Mapping):
                raise _PathError(f"expected a dict (map), got {_kind(value)}")
            out = {}
            for k, v in value.items():
                try:
                    out[key_write(k)] = value_write(v)
                except _PathError as exc:
                    raise exc.at(f"[{k!r}]") from None
            return out

        return write_map
    element = _element_writer(fd)
    if _is_repeated(fd):

        def write_list(value: Any) -> list[Any]:
            if not isinstance(value, list | tuple):
                raise _PathError(f"expected a list, got {_kind(value)}")
            out = []
            for i, v in enumerate(value):
                try:
                    out.append(element(v))
                except _PathError as exc:
                    raise exc.at(f"[{i}]") from None
            return out

        return write_list
    return element


def _element_writer(fd: FieldDescriptor) -> _Writer:
    if fd.type == _FD.TYPE_ENUM:
        return _enum_writer(fd.enum_type)
    if fd.type in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP):
        message = fd.message_type
        if message.full_name == TIMESTAMP:
            return _timestamp_writer(GetMessageClass(message))
        if message.full_name in WRAPPERS:
            wrapper = GetMessageClass(message)
            inner = _scalar_writer(WRAPPERS[message.full_name])
            return lambda value: (
                value if isinstance(value, wrapper) else wrapper(value=inner(value))
            )
        if message.full_name in JSON_TYPES:
            return _json_writer(GetMessageClass(message))
        return _writer(message)
    return _scalar_writer(fd.type)


def _scalar_writer(field_type: int) -> _Writer:
    bounds = _INT_RANGES.get(field_type)
    if bounds is not None:
        low, high = bounds

        def write_int(value: Any) -> Any:
            if type(value) is not int:  # bool is an int, but not one a schema means
                if isinstance(value, int) and not isinstance(value, bool):
                    value = int(value)
                else:
                    raise _PathError(f"expected an int, got {_kind(value)}")
            if not low <= value <= high:
                raise _PathError(f"{value} is out of range [{low}, {high}]")
            return value

        return write_int
    accepted = _SCALAR_TYPES[field_type]
    what = " or ".join(t.__name__ for t in accepted)

    def write_scalar(value: Any) -> Any:
        if isinstance(value, decimal.Decimal) and field_type == _FD.TYPE_STRING:
            return format(value, "f")  # a decimal's exact text
        if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in accepted):
            raise _PathError(f"expected {what}, got {_kind(value)}")
        if isinstance(value, bytearray | memoryview):
            return bytes(value)
        given = value
        if isinstance(value, int) and field_type in (_FD.TYPE_DOUBLE, _FD.TYPE_FLOAT):
            if float(value) != value:
                raise _PathError(f"{value} has no exact {_FD_NAMES[field_type]} value")
            value = float(value)
        if field_type == _FD.TYPE_FLOAT and not float32.holds(value):
            if math.isfinite(value) and abs(value) > FLOAT_MAX:
                raise _PathError(f"{given} is beyond the range of a float")
            raise _PathError(f"{given} would change as a float (32 bits)")
        return value

    return write_scalar


_FD_NAMES = {_FD.TYPE_DOUBLE: "double", _FD.TYPE_FLOAT: "float"}


def _enum_writer(enum: EnumDescriptor) -> _Writer:
    by_name = {name: v.number for name, v in enum.values_by_name.items()}
    numbers = set(enum.values_by_number)
    names = ", ".join(by_name)

    def write_enum(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return by_name[value]
            except KeyError:
                raise _PathError(
                    f"{value!r} is not a value of {enum.full_name} ({names})"
                ) from None
        if type(value) is int:
            # Open (proto3) enums keep numbers the schema does not name.
            if value in numbers or (not enum.is_closed and -(2**31) <= value < 2**31):
                return value
            raise _PathError(f"{value} is not a number of {enum.full_name}")
        raise _PathError(f"expected a {enum.full_name} name or number, got {_kind(value)}")

    return write_enum


def _timestamp_writer(cls: type[Message]) -> _Writer:
    def write_timestamp(value: Any) -> Any:
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            # Structured data carries timestamps as ISO 8601 text (JSON has no time type),
            # to the nanosecond a Timestamp holds.
            try:
                nanos = instants.epoch_nanos(value)
            except ValueError as exc:
                if "finer than" in str(exc):
                    raise _PathError(str(exc)) from None
                raise _PathError(f"{value!r:.60} is not an ISO 8601 timestamp") from None
            stamp = cls()
            stamp.FromNanoseconds(nanos)
            _read_timestamp(stamp)  # in the range of a Timestamp
            return stamp
        if not isinstance(value, datetime.datetime):
            raise _PathError(f"expected a datetime or ISO 8601 text, got {_kind(value)}")
        stamp = cls()
        stamp.FromDatetime(value)
        return stamp

    return write_timestamp


def _json_writer(cls: type[Message]) -> _Writer:
    """Struct / Value / ListValue from dict / JSON value / list, numbers kept exact."""
    name = cls.DESCRIPTOR.full_name

    def write_json(value: Any) -> Any:
        if isinstance(value, cls):
            return value
        _check_json(value)
        message = cls()
        if name == "google.protobuf.Struct":
            if not isinstance(value, Mapping):
                raise _PathError(f"expected a dict (Struct), got {_kind(value)}")
            message.update(value)
        elif name == "google.protobuf.ListValue":
            if not isinstance(value, list | tuple):
                raise _PathError(f"expected a list (ListValue), got {_kind(value)}")
            message.extend(value)
        else:
            # Value has no setter for a Python value; a Struct entry has. Through bytes,
            # as the schema's Value class may come from another pool than struct_pb2's.
            holder = struct_pb2.Struct()
            holder.update({"v": value})
            message.ParseFromString(holder.fields["v"].SerializeToString())
        return message

    return write_json


def _check_json(value: Any) -> None:
    """Struct numbers are doubles: an int a double cannot hold would change; say where."""
    if value is None or isinstance(value, str | bool | float):
        return
    if isinstance(value, int):
        if float(value) != value:
            raise _PathError(f"{value} has no exact double value (Struct numbers are doubles)")
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise _PathError(f"Struct keys must be strings, not {_kind(k)}")
            try:
                _check_json(v)
            except _PathError as exc:
                raise exc.at(k) from None
        return
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            try:
                _check_json(v)
            except _PathError as exc:
                raise exc.at(f"[{i}]") from None
        return
    raise _PathError(f"expected a JSON value, got {_kind(value)}")
