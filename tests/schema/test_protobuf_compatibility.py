"""Protobuf compatibility as Confluent 8 defines it: each rule, compatible and incompatible.

Each case is (writer's schema, reader's schema) and the changes expected, named
as Confluent names them. Changes outside ``COMPATIBLE_CHANGES`` make the pair
incompatible.
"""

from __future__ import annotations

import pytest

from cdc_connectors.registry import compatibility
from cdc_connectors.schema import languages, protobuf, protobuf_compat

P3 = 'syntax = "proto3";\n'
P2 = 'syntax = "proto2";\n'

MONEY = P3 + "package shop.money;\nmessage Money {\n  int64 units = 1;\n  string currency = 2;\n}\n"
MONEY_OTHER_PACKAGE = MONEY.replace("shop.money", "billing")
MONEY_STRING_UNITS = MONEY.replace("int64 units", "string units")
NESTED_MONEY = (
    P3 + "package shop.money;\nmessage Outer {\n  message Money {\n    int64 units = 1;\n  }\n}\n"
)


def _compiled(text: str, deps: dict[str, str] | None = None) -> protobuf.FileSet:
    return protobuf.compile_schema(text, deps or {})


def changes(
    old: str,
    new: str,
    old_deps: dict[str, str] | None = None,
    new_deps: dict[str, str] | None = None,
) -> list[str]:
    found = protobuf_compat.differences(_compiled(old, old_deps), _compiled(new, new_deps))
    return sorted(f"{c.kind} {c.path}" for c in found)


def incompatible(
    old: str,
    new: str,
    old_deps: dict[str, str] | None = None,
    new_deps: dict[str, str] | None = None,
) -> list[str]:
    reader, writer = _compiled(new, new_deps), _compiled(old, old_deps)
    return protobuf_compat.incompatibilities(reader, writer)


CASES = [
    # --- field numbers and names ---
    pytest.param(
        P3 + "message M {\n  string name = 1;\n}\n",
        P3 + "message M {\n  string name = 2;\n}\n",
        ["FIELD_ADDED #/M/2", "FIELD_REMOVED #/M/1"],
        True,
        id="changed_field_number_with_same_name_is_a_removal_and_an_addition",
    ),
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n}\n",
        P3 + "message M {\n  int32 b = 1;\n}\n",
        ["FIELD_NAME_CHANGED #/M/1"],
        True,
        id="renamed_field",
    ),
    # --- scalar kinds ---
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n}\n",
        P3 + "message M {\n  int64 a = 1;\n}\n",
        [],
        True,
        id="int32_to_int64",
    ),
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n}\n",
        P3 + "message M {\n  sint32 a = 1;\n}\n",
        ["FIELD_SCALAR_KIND_CHANGED #/M/1"],
        False,
        id="int32_to_sint32",
    ),
    pytest.param(
        P3 + "message M {\n  string a = 1;\n}\n",
        P3 + "message M {\n  bytes a = 1;\n}\n",
        [],
        True,
        id="string_to_bytes",
    ),
    pytest.param(
        P3 + "message M {\n  float a = 1;\n}\n",
        P3 + "message M {\n  double a = 1;\n}\n",
        ["FIELD_SCALAR_KIND_CHANGED #/M/1"],
        False,
        id="float_to_double",
    ),
    pytest.param(
        P3 + "message M {\n  fixed64 a = 1;\n}\n",
        P3 + "message M {\n  sfixed64 a = 1;\n}\n",
        [],
        True,
        id="fixed64_to_sfixed64",
    ),
    pytest.param(
        P3 + "message M {\n  uint64 a = 1;\n}\n",
        P3 + "message M {\n  E a = 1;\n}\nenum E {\n  E_ZERO = 0;\n}\n",
        ["ENUM_ADDED #/E"],
        True,
        id="number_to_enum",
    ),
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n}\n",
        P3 + "message M {\n  N a = 1;\n}\nmessage N {\n  int32 x = 1;\n}\n",
        ["FIELD_KIND_CHANGED #/M/1", "MESSAGE_ADDED #/N"],
        False,
        id="scalar_to_message",
    ),
    pytest.param(
        P3 + "message M {\n  N a = 1;\n}\nmessage N {\n  int32 x = 1;\n}\n",
        P3 + "message M {\n  O a = 1;\n}\nmessage O {\n  int32 x = 1;\n}\n",
        ["FIELD_NAMED_TYPE_CHANGED #/M/1", "MESSAGE_ADDED #/O", "MESSAGE_REMOVED #/N"],
        False,
        id="message_type_renamed",
    ),
    pytest.param(
        P3 + "message M {\n  map<string, int32> a = 1;\n}\n",
        P3 + "message M {\n  map<string, string> a = 1;\n}\n",
        ["FIELD_SCALAR_KIND_CHANGED #/M/1"],
        False,
        id="map_value_type_changed",
    ),
    pytest.param(
        P3 + "message M {\n  map<string, N> a = 1;\n  message N {\n    int32 x = 1;\n  }\n}\n",
        P3 + "message M {\n  map<string, M.N> a = 1;\n  message N {\n    int32 x = 1;\n  }\n}\n",
        [],
        True,
        id="map_value_spelled_with_its_scope",
    ),
    # --- labels: repeated <-> singular ---
    pytest.param(
        P3 + "message M {\n  optional string a = 1;\n}\n",
        P3 + "message M {\n  repeated string a = 1;\n}\n",
        ["FIELD_STRING_OR_BYTES_LABEL_CHANGED #/M/1"],
        True,
        id="optional_string_to_repeated",
    ),
    pytest.param(
        P3 + "message M {\n  optional bytes a = 1;\n}\n",
        P3 + "message M {\n  repeated bytes a = 1;\n}\n",
        ["FIELD_STRING_OR_BYTES_LABEL_CHANGED #/M/1"],
        True,
        id="optional_bytes_to_repeated",
    ),
    pytest.param(
        P3 + "message M {\n  optional int32 a = 1;\n}\n",
        P3 + "message M {\n  repeated int32 a = 1;\n}\n",
        ["FIELD_NUMERIC_LABEL_CHANGED #/M/1"],
        False,
        id="optional_int32_to_repeated",
    ),
    pytest.param(
        P3 + "message M {\n  repeated double a = 1;\n}\n",
        P3 + "message M {\n  optional double a = 1;\n}\n",
        ["FIELD_NUMERIC_LABEL_CHANGED #/M/1"],
        False,
        id="repeated_double_to_optional",
    ),
    pytest.param(
        P3 + "message M {\n  optional E a = 1;\n}\nenum E {\n  E_ZERO = 0;\n}\n",
        P3 + "message M {\n  repeated E a = 1;\n}\nenum E {\n  E_ZERO = 0;\n}\n",
        ["FIELD_NUMERIC_LABEL_CHANGED #/M/1"],
        False,
        id="optional_enum_to_repeated",
    ),
    pytest.param(
        P2 + "message M {\n  optional int32 a = 1;\n}\n",
        P2 + "message M {\n  repeated int32 a = 1;\n}\n",
        ["FIELD_NUMERIC_LABEL_CHANGED #/M/1"],
        False,
        id="proto2_optional_int32_to_repeated",
    ),
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n}\n",
        P3 + "message M {\n  repeated int32 a = 1;\n}\n",
        [],
        True,
        id="proto3_field_without_label_to_repeated_is_not_compared",
    ),
    pytest.param(
        P3 + "message M {\n  optional N a = 1;\n}\nmessage N {\n  int32 x = 1;\n}\n",
        P3 + "message M {\n  repeated N a = 1;\n}\nmessage N {\n  int32 x = 1;\n}\n",
        [],
        True,
        id="optional_message_to_repeated",
    ),
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n}\n",
        P3 + "message M {\n  int32 a = 1;\n  optional int32 b = 2;\n}\n",
        ["FIELD_ADDED #/M/2"],
        True,
        id="proto3_optional_field_is_no_oneof",
    ),
    # --- oneofs ---
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n",
        P3 + "message M {\n  int32 a = 1;\n  oneof o {\n    int32 b = 2;\n  }\n}\n",
        ["ONEOF_ADDED #/M/o"],
        True,
        id="one_field_into_a_new_oneof",
    ),
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n",
        P3 + "message M {\n  oneof o {\n    int32 a = 1;\n    int32 b = 2;\n"
        "    int32 c = 3;\n  }\n}\n",
        ["MULTIPLE_FIELDS_MOVED_TO_ONEOF #/M/o", "ONEOF_ADDED #/M/o", "ONEOF_FIELD_ADDED #/M/o/3"],
        False,
        id="two_fields_into_one_new_oneof",
    ),
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n  oneof o {\n    int32 b = 2;\n  }\n}\n",
        P3 + "message M {\n  oneof o {\n    int32 a = 1;\n    int32 b = 2;\n  }\n}\n",
        ["FIELD_MOVED_TO_EXISTING_ONEOF #/M/o"],
        False,
        id="field_into_an_existing_oneof",
    ),
    pytest.param(
        P3 + "message M {\n  oneof o {\n    int32 a = 1;\n    int32 b = 2;\n  }\n}\n",
        P3 + "message M {\n  oneof o {\n    int32 a = 1;\n  }\n  int32 b = 2;\n}\n",
        ["ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/M/2"],
        True,
        id="field_out_of_a_oneof",
    ),
    pytest.param(
        P3 + "message M {\n  oneof o {\n    int32 a = 1;\n    int32 b = 2;\n  }\n}\n",
        P3 + "message M {\n  oneof o {\n    int32 a = 1;\n  }\n}\n",
        ["ONEOF_FIELD_REMOVED #/M/o/2"],
        False,
        id="member_removed_from_a_oneof",
    ),
    pytest.param(
        P3
        + "message M {\n  int32 x = 3;\n  oneof o {\n    int32 a = 1;\n    int32 b = 2;\n  }\n}\n",
        P3 + "message M {\n  int32 x = 3;\n}\n",
        ["ONEOF_REMOVED #/M/o"],
        True,
        id="whole_oneof_removed",
    ),
    pytest.param(
        P3 + "message M {\n  oneof o {\n    int32 a = 1;\n    int32 b = 2;\n  }\n}\n",
        P3 + "message M {\n  oneof p {\n    int32 a = 1;\n    int32 b = 2;\n  }\n}\n",
        ["ONEOF_ADDED #/M/p", "ONEOF_REMOVED #/M/o"],
        True,
        id="oneof_renamed",
    ),
    pytest.param(
        P3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n",
        P3 + "message M {\n  int32 a = 1;\n  oneof o {\n    sint64 b = 2;\n  }\n}\n",
        ["FIELD_SCALAR_KIND_CHANGED #/M/o/2", "ONEOF_ADDED #/M/o"],
        False,
        id="type_change_while_moving_into_a_oneof",
    ),
    # --- proto2 required ---
    pytest.param(
        P2 + "message M {\n  optional int32 a = 1;\n}\n",
        P2 + "message M {\n  optional int32 a = 1;\n  required int32 b = 2;\n}\n",
        ["REQUIRED_FIELD_ADDED #/M/2"],
        False,
        id="required_field_added",
    ),
    pytest.param(
        P2 + "message M {\n  optional int32 a = 1;\n  required int32 b = 2;\n}\n",
        P2 + "message M {\n  optional int32 a = 1;\n}\n",
        ["REQUIRED_FIELD_REMOVED #/M/2"],
        False,
        id="required_field_removed",
    ),
    pytest.param(
        P2 + "message M {\n  optional int32 a = 1;\n}\n",
        P2 + "message M {\n  optional int32 a = 1;\n  optional int32 b = 2;\n}\n",
        ["FIELD_ADDED #/M/2"],
        True,
        id="proto2_optional_field_added",
    ),
    # --- packages and messages ---
    pytest.param(
        P3 + "package a;\nmessage M {\n  int32 x = 1;\n}\n",
        P3 + "package b;\nmessage M {\n  int32 x = 1;\n}\n",
        ["PACKAGE_CHANGED #/"],
        False,
        id="package_changed",
    ),
    pytest.param(
        P3 + "message M {\n  int32 x = 1;\n}\nmessage N {\n  int32 y = 1;\n}\n",
        P3 + "message M {\n  int32 x = 1;\n}\n",
        ["MESSAGE_REMOVED #/N"],
        False,
        id="message_the_reader_lacks",
    ),
    pytest.param(
        P3 + "message M {\n  int32 x = 1;\n}\n",
        P3 + "message N {\n  int32 y = 1;\n}\nmessage M {\n  int32 x = 1;\n}\n",
        ["MESSAGE_ADDED #/N", "MESSAGE_MOVED #/M"],
        True,
        id="message_added_before_another",
    ),
    pytest.param(
        P3 + "message M {\n  message N {\n    int32 y = 1;\n  }\n}\n",
        P3 + "message M {\n  message N {\n    int32 y = 1;\n    string z = 2;\n  }\n}\n",
        ["FIELD_ADDED #/M/N/2"],
        True,
        id="field_added_to_a_nested_message",
    ),
    pytest.param(
        P3 + "message M {\n  message N {\n    int32 y = 1;\n  }\n}\n",
        P3 + "message M {\n  message N {\n    string y = 1;\n  }\n}\n",
        ["FIELD_SCALAR_KIND_CHANGED #/M/N/1"],
        False,
        id="field_type_changed_in_a_nested_message",
    ),
    pytest.param(
        P3 + "message M {\n  message N {\n    int32 y = 1;\n  }\n}\n",
        P3 + "message M {\n}\n",
        ["MESSAGE_REMOVED #/M/N"],
        False,
        id="nested_message_the_reader_lacks",
    ),
    pytest.param(
        P3 + "package p;\nmessage M {\n  N n = 1;\n  message N {\n    int32 y = 1;\n  }\n}\n",
        P3 + "package p;\nmessage M {\n  .p.M.N n = 1;\n  message N {\n    int32 y = 1;\n  }\n}\n",
        [],
        True,
        id="type_name_written_in_full",
    ),
    # --- enums ---
    pytest.param(
        P3 + "enum E {\n  A = 0;\n  B = 1;\n}\n",
        P3 + "enum E {\n  A = 0;\n  C = 1;\n  D = 2;\n}\n",
        ["ENUM_CONST_ADDED #/E/2", "ENUM_CONST_CHANGED #/E/1"],
        True,
        id="enum_values_added_and_renamed",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected", "is_compatible"), CASES)
def test_protobuf_rule(old: str, new: str, expected: list[str], is_compatible: bool) -> None:
    assert changes(old, new) == sorted(expected)
    problems = incompatible(old, new)
    assert (problems == []) is is_compatible, problems


IMPORTER = P3 + 'import "money.proto";\nmessage Order {\n  {type} total = 1;\n}\n'


def _order(type_name: str, import_path: str = "money.proto") -> str:
    return IMPORTER.replace("{type}", type_name).replace("money.proto", import_path)


def test_imported_type_in_another_package_with_the_same_definition_is_compatible() -> None:
    old = _order(".shop.money.Money")
    new = _order(".billing.Money", "billing.proto")
    assert (
        incompatible(old, new, {"money.proto": MONEY}, {"billing.proto": MONEY_OTHER_PACKAGE}) == []
    )


def test_imported_type_spelled_relative_or_in_full_is_the_same_type() -> None:
    old = _order("shop.money.Money")
    new = _order(".shop.money.Money")
    assert changes(old, new, {"money.proto": MONEY}, {"money.proto": MONEY}) == []


def test_imported_type_changed_incompatibly_is_named_with_its_cause() -> None:
    old = _order(".shop.money.Money")
    new = _order(".shop.money.Money", "money2.proto")
    found = changes(old, new, {"money.proto": MONEY}, {"money2.proto": MONEY_STRING_UNITS})
    assert found == ["FIELD_NAMED_TYPE_CHANGED #/Order/1", "FIELD_SCALAR_KIND_CHANGED #/Money/1"]
    problems = incompatible(old, new, {"money.proto": MONEY}, {"money2.proto": MONEY_STRING_UNITS})
    assert any(p.startswith("FIELD_NAMED_TYPE_CHANGED at #/Order/1") for p in problems)


def test_imported_nested_type_is_compared_by_its_name_within_the_package() -> None:
    nested_other = NESTED_MONEY.replace("shop.money", "billing")
    old = _order(".shop.money.Outer.Money")
    new = _order(".billing.Outer.Money", "billing.proto")
    assert (
        incompatible(old, new, {"money.proto": NESTED_MONEY}, {"billing.proto": nested_other}) == []
    )
    changed = nested_other.replace("int64 units", "double units")
    found = changes(old, new, {"money.proto": NESTED_MONEY}, {"billing.proto": changed})
    assert "FIELD_SCALAR_KIND_CHANGED #/Outer/Money/1" in found


def test_message_moved_into_an_import_is_missing_but_out_of_one_is_not() -> None:
    local = P3 + "message Order {\n  Money total = 1;\n}\nmessage Money {\n  int64 units = 1;\n}\n"
    money = P3 + "package shop.money;\nmessage Money {\n  int64 units = 1;\n}\n"
    imported = _order(".shop.money.Money")
    assert changes(local, imported, {}, {"money.proto": money}) == ["MESSAGE_REMOVED #/Money"]
    assert changes(imported, local, {"money.proto": money}, {}) == ["MESSAGE_ADDED #/Money"]
    assert incompatible(imported, local, {"money.proto": money}, {}) == []


def test_recursive_messages_compare_without_looping() -> None:
    node = P3 + "package t;\nmessage Node {\n  Node next = 1;\n  int32 v = 2;\n}\n"
    tree = P3 + 'import "node.proto";\nmessage Tree {\n  .t.Node root = 1;\n}\n'
    changed = node.replace("int32 v", "string v")
    found = changes(tree, tree, {"node.proto": node}, {"node.proto": changed})
    assert "FIELD_SCALAR_KIND_CHANGED #/Node/2" in found


def test_incompatibility_message_names_the_change_the_path_and_the_field() -> None:
    old = P3 + "message Order {\n  int32 id = 1;\n  int32 qty = 2;\n}\n"
    new = P3 + "message Order {\n  int32 id = 1;\n  string qty = 2;\n}\n"
    (problem,) = incompatible(old, new)
    assert (
        problem == "FIELD_SCALAR_KIND_CHANGED at #/Order/2: field qty changed from int32 to string"
    )


def test_levels_apply_the_rules_in_the_right_direction() -> None:
    old = languages.parse("PROTOBUF", P3 + "message M {\n  int32 x = 1;\n}\nmessage N {}\n")
    new = languages.parse("PROTOBUF", P3 + "message M {\n  int32 x = 1;\n}\n")
    # BACKWARD: the new schema (without N) reads data of the old one, which may hold an N.
    assert compatibility.check("BACKWARD", new, [old])
    assert compatibility.check("FORWARD", new, [old]) == []
    assert compatibility.check("FULL", new, [old])
