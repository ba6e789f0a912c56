"""Protobuf schemas: compile ``.proto`` text or serialized descriptors, with references.

A registry holds a Protobuf schema either as ``.proto`` text or, as
confluent-kafka's serializer registers it, as a base64 ``FileDescriptorProto``.
References name the files the schema imports (``name`` is the import path).
``.proto`` text is compiled with ``grpc_tools.protoc``; well-known types
(``google/protobuf/*.proto``) come from grpcio-tools' bundled copies.

Compatibility rules (a writer's data read with a reader's schema), checked
for every message present in both schemas:

- a field number whose type changed to one with another wire encoding
  (varint: int32/int64/uint32/uint64/bool/enum; zigzag: sint32/sint64;
  fixed32/sfixed32; fixed64/sfixed64; string/bytes; float; double), or to
  another message or enum type, is incompatible;
- a field that changed between repeated and singular is incompatible;
- a field name kept with a different number is incompatible;
- a changed package is incompatible, and so is a message of the writer's
  schema that the reader's schema lacks (the reader could not decode it).

Adding and removing fields, messages (on the reader's side) and enum values
is compatible.
"""

from __future__ import annotations

import base64
import binascii
import functools
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import TypeAlias

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from cdc_connectors.schema.errors import SchemaError

FileSet: TypeAlias = descriptor_pb2.FileDescriptorSet
_FDP = descriptor_pb2.FieldDescriptorProto
DEFAULT_NAME = "schema.proto"


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
    return schema_str.strip()


def compile_schema(
    schema_str: str, dependencies: Mapping[str, str] | None = None, name: str = DEFAULT_NAME
) -> FileSet:
    """Compile a schema and its (transitively resolved) imports into a descriptor set.

    ``dependencies`` maps import path -> schema text (``.proto`` or serialized).
    The schema's own file is the last one of the set.
    """
    deps = tuple(sorted((dependencies or {}).items()))
    return _compile(schema_str, deps, name)


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

    main = parse_serialized(schema_str)
    with tempfile.TemporaryDirectory(prefix="cdc-proto-") as tmp:
        root = Path(tmp) / "src"
        for dep_name, text in text_deps.items():
            _write(root / dep_name, text)
        if main is not None:
            # Serialized main file: compile only its imports, then append it.
            imports = [d for d in main.dependency]
            files = _protoc(root, imports, serialized_deps, Path(tmp)) if imports else FileSet()
            main.name = main.name or name
            files.file.append(main)
            _check_builds(files)
            return files
        _write(root / name, schema_str)
        return _protoc(root, [name], serialized_deps, Path(tmp))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _protoc(root: Path, targets: list[str], given: FileSet, tmp: Path) -> FileSet:
    well_known = resources.files("grpc_tools") / "_proto"
    out = tmp / "out.pb"
    args = [sys.executable, "-m", "grpc_tools.protoc", f"-I{root}", f"-I{well_known}"]
    if given.file:
        given_path = tmp / "given.pb"
        given_path.write_bytes(given.SerializeToString())
        args.append(f"--descriptor_set_in={given_path}")
    root.mkdir(parents=True, exist_ok=True)
    args += ["--include_imports", f"--descriptor_set_out={out}", *targets]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        detail = result.stderr.strip().replace(str(root) + "/", "")
        raise SchemaError(f"invalid Protobuf schema: {detail}")
    files: FileSet = FileSet.FromString(out.read_bytes())
    return files


def _check_builds(files: FileSet) -> None:
    from google.protobuf import descriptor_pool

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


# --- compatibility -----------------------------------------------------------------------

_WIRE_GROUPS = [
    {
        _FDP.TYPE_INT32,
        _FDP.TYPE_INT64,
        _FDP.TYPE_UINT32,
        _FDP.TYPE_UINT64,
        _FDP.TYPE_BOOL,
        _FDP.TYPE_ENUM,
    },
    {_FDP.TYPE_SINT32, _FDP.TYPE_SINT64},
    {_FDP.TYPE_FIXED32, _FDP.TYPE_SFIXED32},
    {_FDP.TYPE_FIXED64, _FDP.TYPE_SFIXED64},
    {_FDP.TYPE_STRING, _FDP.TYPE_BYTES},
]


def _wire_compatible(a: int, b: int) -> bool:
    return a == b or any(a in group and b in group for group in _WIRE_GROUPS)


def _messages(fd: descriptor_pb2.FileDescriptorProto) -> dict[str, descriptor_pb2.DescriptorProto]:
    found: dict[str, descriptor_pb2.DescriptorProto] = {}

    def walk(prefix: str, messages: list[descriptor_pb2.DescriptorProto]) -> None:
        for message in messages:
            if message.options.map_entry:
                continue
            full = f"{prefix}.{message.name}" if prefix else message.name
            found[full] = message
            walk(full, list(message.nested_type))

    walk(fd.package, list(fd.message_type))
    return found


def _type_label(field: descriptor_pb2.FieldDescriptorProto) -> str:
    name = _FDP.Type.Name(field.type).removeprefix("TYPE_").lower()
    return f"{name} {field.type_name.lstrip('.')}".strip()


def incompatibilities(reader: FileSet, writer: FileSet) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader``; empty when it can."""
    new, old = reader.file[-1], writer.file[-1]
    problems = []
    if new.package != old.package:
        problems.append(f"package changed from {old.package!r} to {new.package!r}")
    new_messages, old_messages = _messages(new), _messages(old)
    for full_name, old_msg in old_messages.items():
        new_msg = new_messages.get(full_name)
        if new_msg is None:
            problems.append(f"message {full_name} is missing")
            continue
        new_by_number = {f.number: f for f in new_msg.field}
        new_by_name = {f.name: f for f in new_msg.field}
        for field in old_msg.field:
            where = f"{full_name}.{field.name}"
            renumbered = new_by_name.get(field.name)
            if renumbered is not None and renumbered.number != field.number:
                problems.append(
                    f"field {where} changed number from {field.number} to {renumbered.number}"
                )
            other = new_by_number.get(field.number)
            if other is None:
                continue
            repeated = field.label == _FDP.LABEL_REPEATED
            if repeated != (other.label == _FDP.LABEL_REPEATED):
                problems.append(f"field {where} (number {field.number}) changed repeated-ness")
            named = field.type in (_FDP.TYPE_MESSAGE, _FDP.TYPE_GROUP, _FDP.TYPE_ENUM)
            if not _wire_compatible(field.type, other.type) or (
                named and other.type == field.type and other.type_name != field.type_name
            ):
                problems.append(
                    f"field {where} (number {field.number}) changed type from "
                    f"{_type_label(field)} to {_type_label(other)}"
                )
    return problems
