"""Protobuf schemas: compile ``.proto`` text or serialized descriptors, with references.

A registry holds a Protobuf schema either as ``.proto`` text or, as
confluent-kafka's serializer registers it, as a base64 ``FileDescriptorProto``.
References name the files the schema imports (``name`` is the import path).
``run_protoc`` is the one way this project runs the compiler (grpcio-tools'
``protoc``, in a child process so that its log lines never mix with ours);
its errors say what is wrong and where (``schema.proto:3:5: "strin" is not
defined.``), nothing else. Well-known types (``google/protobuf/*.proto``) come
from grpcio-tools' bundled copies.

Compatibility rules are in :mod:`cdc_connectors.schema.protobuf_compat`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import TypeAlias

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

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
        except SchemaError as exc:
            raise SchemaError(f"invalid Protobuf schema: {exc}") from None


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
