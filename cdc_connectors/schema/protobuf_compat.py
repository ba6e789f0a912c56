"""Protobuf compatibility, as Confluent's schema diff decides it.

Compatibility is Confluent's (its ``diff-schema-examples``): the writer's and
the reader's main files are compared message by message (by name, nested ones
too) and field by field (by number). Incompatible:

- a changed package; a message of the writer's schema that the reader lacks;
- a proto2 ``required`` field added or removed;
- a field whose kind changes between scalar (enums included), message and map;
- a scalar changing to another wire encoding: the groups are int32 / int64 /
  uint32 / uint64 / bool / enum; sint32 / sint64; string / bytes; fixed32 /
  sfixed32; fixed64 / sfixed64; float; double;
- a message-typed field whose type has another name (package aside), or the
  same name but an incompatible definition (in another file);
- a numeric or enum field whose stated label changes (optional, required,
  repeated: proto3 fields without a label are not compared);
- a field removed from a oneof that still exists (by name or by another
  surviving member); fields that were independent put into one oneof.

Compatible: adding or removing fields (a field's number changing is one removed
and one added), renaming fields, messages added or reordered, enums and enum
values added, removed or renamed, string / bytes between optional and repeated,
message fields between optional and repeated, oneofs added, renamed or removed
whole, a oneof field moved to the top level, a field moved alone into a new
oneof, and types spelled differently that resolve to the same message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeAlias

from google.protobuf import descriptor_pb2

from cdc_connectors.schema.protobuf import FileSet

_FDP: TypeAlias = descriptor_pb2.FieldDescriptorProto
_Messages: TypeAlias = Iterable[descriptor_pb2.DescriptorProto]
_Enums: TypeAlias = Iterable[descriptor_pb2.EnumDescriptorProto]


# Confluent's names of the changes it accepts; every other change is incompatible.
COMPATIBLE_CHANGES = frozenset(
    {
        "MESSAGE_ADDED",
        "MESSAGE_MOVED",
        "ENUM_ADDED",
        "ENUM_REMOVED",
        "ENUM_CONST_ADDED",
        "ENUM_CONST_CHANGED",
        "ENUM_CONST_REMOVED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_NAME_CHANGED",
        "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
        "ONEOF_ADDED",
        "ONEOF_REMOVED",
        "ONEOF_FIELD_ADDED",
        "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
    }
)
# Scalar types that read each other's wire data (an enum reads as the first group).
_SCALAR_GROUPS = {
    **dict.fromkeys(
        [_FDP.TYPE_INT32, _FDP.TYPE_INT64, _FDP.TYPE_UINT32, _FDP.TYPE_UINT64, _FDP.TYPE_BOOL],
        "number",
    ),
    _FDP.TYPE_ENUM: "number",
    _FDP.TYPE_SINT32: "signed number",
    _FDP.TYPE_SINT64: "signed number",
    _FDP.TYPE_STRING: "string or bytes",
    _FDP.TYPE_BYTES: "string or bytes",
    _FDP.TYPE_FIXED32: "fixed32",
    _FDP.TYPE_SFIXED32: "fixed32",
    _FDP.TYPE_FIXED64: "fixed64",
    _FDP.TYPE_SFIXED64: "fixed64",
    _FDP.TYPE_FLOAT: "float",
    _FDP.TYPE_DOUBLE: "double",
}
# Message types compared through other files nest at most this deep.
_MAX_TYPE_DEPTH = 64


class Change(NamedTuple):
    """One difference between a writer's and a reader's schema, named as Confluent names it."""

    kind: str
    path: str
    detail: str

    @property
    def compatible(self) -> bool:
        return self.kind in COMPATIBLE_CHANGES

    def __str__(self) -> str:
        return f"{self.kind} at {self.path}: {self.detail}"


def incompatibilities(reader: FileSet, writer: FileSet) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader``; empty when it can."""
    return [str(c) for c in differences(writer, reader) if not c.compatible]


def differences(writer: FileSet, reader: FileSet) -> list[Change]:
    """Every change from ``writer`` to ``reader``, compatible ones included."""
    diff = _Diff(_Types(writer), _Types(reader))
    old, new = writer.file[-1], reader.file[-1]
    if old.package != new.package:
        diff.add("PACKAGE_CHANGED", [], f"package {old.package!r} became {new.package!r}")
    diff.compare_types([], (old.message_type, old.enum_type), (new.message_type, new.enum_type))
    return diff.changes


class _Defined(NamedTuple):
    proto: descriptor_pb2.DescriptorProto | descriptor_pb2.EnumDescriptorProto
    file: descriptor_pb2.FileDescriptorProto
    main: bool  # defined in the schema's own file, not an import


class _Types:
    """Every message and enum of a descriptor set, by full name (no leading dot)."""

    def __init__(self, files: FileSet):
        self.by_name: dict[str, _Defined] = {}
        last = len(files.file) - 1
        for index, fd in enumerate(files.file):
            stack: list[tuple[str, descriptor_pb2.DescriptorProto]] = []
            prefix = f"{fd.package}." if fd.package else ""
            for enum in fd.enum_type:
                self.by_name[prefix + enum.name] = _Defined(enum, fd, index == last)
            stack += [(prefix + m.name, m) for m in fd.message_type]
            while stack:
                full, message = stack.pop()
                self.by_name[full] = _Defined(message, fd, index == last)
                for enum in message.enum_type:
                    self.by_name[f"{full}.{enum.name}"] = _Defined(enum, fd, index == last)
                stack += [(f"{full}.{m.name}", m) for m in message.nested_type]

    def find(self, type_name: str, scope: str) -> tuple[str, _Defined] | None:
        """Resolve a field's type name as protoc does (descriptors hold full names)."""
        if type_name.startswith("."):
            found = self.by_name.get(type_name[1:])
            return (type_name[1:], found) if found else None
        parts = scope.split(".") if scope else []
        while True:
            full = ".".join([*parts, type_name])
            if full in self.by_name:
                return full, self.by_name[full]
            if not parts:
                return None
            parts.pop()


class _Kind(NamedTuple):
    """A field's type as the comparison sees it."""

    kind: str  # "scalar", "message" or "map"
    group: str = ""  # scalars: the wire group; messages: the full name
    label: str = ""  # a readable type name
    key: _FDP | None = None  # maps: the entry's key and value fields
    value: _FDP | None = None


@dataclass
class _Diff:
    old: _Types
    new: _Types
    changes: list[Change] = field(default_factory=list)
    active: set[str] = field(default_factory=set)  # writer messages being compared
    depth: int = 0

    def add(self, kind: str, path: Sequence[str | int], detail: str) -> None:
        self.changes.append(Change(kind, "#/" + "/".join(str(p) for p in path), detail))

    def compare_types(
        self,
        path: list[str | int],
        old: tuple[_Messages, _Enums],
        new: tuple[_Messages, _Enums],
        old_scope: str = "",
        new_scope: str = "",
    ) -> None:
        """Messages by name (then their fields and nested types), enums by name."""
        if not path:
            old_scope = self._package(self.old)
            new_scope = self._package(self.new)
        old_msgs = [m for m in old[0] if not m.options.map_entry]
        new_msgs = [m for m in new[0] if not m.options.map_entry]
        new_index = {m.name: i for i, m in enumerate(new_msgs)}
        old_names = {m.name for m in old_msgs}
        for index, message in enumerate(old_msgs):
            where = [*path, message.name]
            if message.name not in new_index:
                self.add("MESSAGE_REMOVED", where, f"message {message.name} is missing")
                continue
            other = new_msgs[new_index[message.name]]
            self.compare_message(
                where,
                message,
                other,
                _join(old_scope, message.name),
                _join(new_scope, message.name),
            )
            if new_index[message.name] != index:
                self.add("MESSAGE_MOVED", where, f"message {message.name} moved")
        for message in new_msgs:
            if message.name not in old_names:
                self.add("MESSAGE_ADDED", [*path, message.name], f"message {message.name} added")
        old_enums = {e.name: e for e in old[1]}
        new_enums = {e.name: e for e in new[1]}
        for name in sorted(old_enums.keys() | new_enums.keys()):
            where = [*path, name]
            if name not in new_enums:
                self.add("ENUM_REMOVED", where, f"enum {name} removed")
            elif name not in old_enums:
                self.add("ENUM_ADDED", where, f"enum {name} added")
            else:
                self._compare_enum(where, old_enums[name], new_enums[name])

    def _compare_enum(
        self,
        path: list[str | int],
        old: descriptor_pb2.EnumDescriptorProto,
        new: descriptor_pb2.EnumDescriptorProto,
    ) -> None:
        old_values = {v.number: v.name for v in old.value}
        new_values = {v.number: v.name for v in new.value}
        for number in sorted(old_values.keys() | new_values.keys()):
            if number not in new_values:
                self.add("ENUM_CONST_REMOVED", [*path, number], f"{old_values[number]} removed")
            elif number not in old_values:
                self.add("ENUM_CONST_ADDED", [*path, number], f"{new_values[number]} added")
            elif old_values[number] != new_values[number]:
                detail = f"{old_values[number]} renamed {new_values[number]}"
                self.add("ENUM_CONST_CHANGED", [*path, number], detail)

    @staticmethod
    def _package(types: _Types) -> str:
        mains = [d.file for d in types.by_name.values() if d.main]
        return mains[0].package if mains else ""

    def compare_message(
        self,
        path: list[str | int],
        old: descriptor_pb2.DescriptorProto,
        new: descriptor_pb2.DescriptorProto,
        old_full: str,
        new_full: str,
    ) -> None:
        if old_full not in self.active:
            self.active.add(old_full)
            try:
                self._compare_fields(path, old, new, old_full, new_full)
            finally:
                self.active.discard(old_full)
        self.compare_types(
            path,
            (old.nested_type, old.enum_type),
            (new.nested_type, new.enum_type),
            old_full,
            new_full,
        )

    def _compare_fields(
        self,
        path: list[str | int],
        old: descriptor_pb2.DescriptorProto,
        new: descriptor_pb2.DescriptorProto,
        old_full: str,
        new_full: str,
    ) -> None:
        old_fields, old_oneof, old_groups = _fields(old)
        new_fields, new_oneof, new_groups = _fields(new)
        old_file = self._file(self.old, old_full)
        new_file = self._file(self.new, new_full)

        deleted = self._compare_oneofs(
            path, (old_fields, old_oneof, old_groups), (new_fields, new_oneof, new_groups)
        )

        for number in sorted(old_fields.keys() | new_fields.keys()):
            before, after = old_fields.get(number), new_fields.get(number)
            if after is None:
                assert before is not None
                group = old_oneof.get(number)
                if group is not None:
                    if group not in deleted:
                        detail = f"field {before.name} ({number}) left oneof {group}"
                        self.add("ONEOF_FIELD_REMOVED", [*path, group, number], detail)
                elif _label(before, old_file) == "required":
                    detail = f"required field {before.name} ({number}) removed"
                    self.add("REQUIRED_FIELD_REMOVED", [*path, number], detail)
                else:
                    self.add("FIELD_REMOVED", [*path, number], f"field {before.name} removed")
            elif before is None:
                group = new_oneof.get(number)
                if group is not None:
                    detail = f"field {after.name} added to oneof {group}"
                    self.add("ONEOF_FIELD_ADDED", [*path, group, number], detail)
                elif _label(after, new_file) == "required":
                    detail = f"required field {after.name} ({number}) added"
                    self.add("REQUIRED_FIELD_ADDED", [*path, number], detail)
                else:
                    self.add("FIELD_ADDED", [*path, number], f"field {after.name} added")
            else:
                if number in old_oneof and number not in new_oneof:
                    detail = f"field {after.name} left oneof {old_oneof[number]}"
                    self.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", [*path, number], detail)
                where = (
                    [*path, new_oneof[number], number] if number in new_oneof else [*path, number]
                )
                if before.name != after.name:
                    detail = f"field {number} renamed from {before.name} to {after.name}"
                    self.add("FIELD_NAME_CHANGED", where, detail)
                self._compare_types_of(
                    where,
                    f"field {after.name}",
                    self._kind(self.old, before, old_full),
                    self._kind(self.new, after, new_full),
                    _label(before, old_file),
                    _label(after, new_file),
                )

    def _compare_oneofs(
        self,
        path: list[str | int],
        old: tuple[dict[int, _FDP], dict[int, str], dict[str, list[int]]],
        new: tuple[dict[int, _FDP], dict[int, str], dict[str, list[int]]],
    ) -> set[str]:
        """Oneofs added, removed, or joining fields that were independent; the names of
        the oneofs deleted whole (no member left anywhere)."""
        old_fields, old_oneof, old_groups = old
        new_fields, _, new_groups = new
        # A oneof gone by name with no member left anywhere was deleted whole.
        deleted = {
            name
            for name, numbers in old_groups.items()
            if name not in new_groups and not any(n in new_fields for n in numbers)
        }
        # Members of a new or changed oneof must all come from one earlier group.
        for name, numbers in new_groups.items():
            origins = set()
            moved_in = 0
            for number in numbers:
                if number in old_oneof:
                    origins.add(f"oneof {old_oneof[number]}")
                elif number in old_fields:
                    origins.add(f"field {number}")
                    moved_in += 1
            if len(origins) > 1:
                kind = (
                    "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
                    if moved_in > 1
                    else "FIELD_MOVED_TO_EXISTING_ONEOF"
                )
                detail = f"oneof {name} joins fields that were independent: {sorted(origins)}"
                self.add(kind, [*path, name], detail)
        for name in sorted(old_groups.keys() | new_groups.keys()):
            if name not in new_groups:
                self.add("ONEOF_REMOVED", [*path, name], f"oneof {name} removed")
            elif name not in old_groups:
                self.add("ONEOF_ADDED", [*path, name], f"oneof {name} added")
        return deleted

    @staticmethod
    def _file(types: _Types, full: str) -> descriptor_pb2.FileDescriptorProto | None:
        found = types.by_name.get(full)
        return found.file if found else None

    def _kind(self, types: _Types, fd: _FDP, scope: str) -> _Kind:
        kind = fd.type
        if fd.type_name and kind not in _SCALAR_GROUPS.keys() - {_FDP.TYPE_ENUM}:
            found = types.find(fd.type_name, scope)
            if found is None:
                return _Kind("message", fd.type_name.lstrip("."), fd.type_name.lstrip("."))
            full, defined = found
            if isinstance(defined.proto, descriptor_pb2.EnumDescriptorProto):
                return _Kind("scalar", "number", f"enum {full}")
            if defined.proto.options.map_entry:
                by_name = {f.name: f for f in defined.proto.field}
                return _Kind("map", full, "map", by_name.get("key"), by_name.get("value"))
            return _Kind("message", full, f"message {full}")
        label = _FDP.Type.Name(kind).removeprefix("TYPE_").lower() if kind else "unknown"
        return _Kind("scalar", _SCALAR_GROUPS.get(kind, label), label)

    def _compare_types_of(
        self,
        where: list[str | int],
        what: str,
        old: _Kind,
        new: _Kind,
        old_label: str | None,
        new_label: str | None,
    ) -> None:
        if old.kind != new.kind:
            detail = f"{what} changed from {old.label} to {new.label}"
            self.add("FIELD_KIND_CHANGED", where, detail)
        elif old.kind == "scalar":
            if old.group != new.group:
                detail = f"{what} changed from {old.label} to {new.label}"
                self.add("FIELD_SCALAR_KIND_CHANGED", where, detail)
            elif old_label and new_label and old_label != new_label:
                detail = f"{what} changed from {old_label} to {new_label}"
                if old.group == "string or bytes":
                    self.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED", where, detail)
                else:
                    self.add("FIELD_NUMERIC_LABEL_CHANGED", where, detail)
        elif old.kind == "message":
            self._compare_message_types(where, what, old.group, new.group)
        else:
            for part in ("key", "value"):
                before, after = getattr(old, part), getattr(new, part)
                if before is not None and after is not None:
                    self._compare_types_of(
                        where,
                        f"{what} ({part})",
                        self._kind(self.old, before, old.group),
                        self._kind(self.new, after, new.group),
                        None,
                        None,
                    )

    def _compare_message_types(
        self, where: list[str | int], what: str, old_full: str, new_full: str
    ) -> None:
        before, after = self.old.by_name.get(old_full), self.new.by_name.get(new_full)
        if before is None or after is None:
            if old_full != new_full:
                detail = f"{what} changed type from {old_full} to {new_full}"
                self.add("FIELD_NAMED_TYPE_CHANGED", where, detail)
            return
        old_local, new_local = _local(old_full, before.file), _local(new_full, after.file)
        if old_local != new_local:
            detail = f"{what} changed type from {old_full} to {new_full}"
            self.add("FIELD_NAMED_TYPE_CHANGED", where, detail)
            return
        if before.main and after.main:
            return  # compared as messages of the schemas themselves
        if not before.main and not after.main and before.file == after.file:
            return  # the same imported file
        if self.depth >= _MAX_TYPE_DEPTH:
            detail = f"{what}: types nest deeper than {_MAX_TYPE_DEPTH} levels through imports"
            self.add("FIELD_NAMED_TYPE_CHANGED", where, detail)
            return
        assert isinstance(before.proto, descriptor_pb2.DescriptorProto)
        assert isinstance(after.proto, descriptor_pb2.DescriptorProto)
        sub = _Diff(self.old, self.new, active=self.active, depth=self.depth + 1)
        sub_path: list[str | int] = list(old_local.split("."))
        sub.compare_message(sub_path, before.proto, after.proto, old_full, new_full)
        self.changes += sub.changes
        if any(not c.compatible for c in sub.changes):
            detail = f"{what}: type {new_full} cannot read {old_full}"
            self.add("FIELD_NAMED_TYPE_CHANGED", where, detail)


def _join(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


def _local(full: str, fd: descriptor_pb2.FileDescriptorProto) -> str:
    """A type's name within its package."""
    return full.removeprefix(f"{fd.package}.") if fd.package else full


def _fields(
    message: descriptor_pb2.DescriptorProto,
) -> tuple[dict[int, _FDP], dict[int, str], dict[str, list[int]]]:
    """Fields by number, the oneof of each member, the members of each oneof.

    The synthetic oneofs of proto3 ``optional`` fields are not oneofs here.
    """
    by_number = {f.number: f for f in message.field}
    oneof_of: dict[int, str] = {}
    members: dict[str, list[int]] = {}
    for f in message.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            name = message.oneof_decl[f.oneof_index].name
            oneof_of[f.number] = name
            members.setdefault(name, []).append(f.number)
    return by_number, oneof_of, members


def _label(fd: _FDP, file: descriptor_pb2.FileDescriptorProto | None) -> str | None:
    """The label as written: ``None`` for a proto3 field without one."""
    if fd.proto3_optional:
        return "optional"
    if fd.label == _FDP.LABEL_REPEATED:
        return "repeated"
    if file is not None and file.syntax == "proto3":
        return None
    return "required" if fd.label == _FDP.LABEL_REQUIRED else "optional"
