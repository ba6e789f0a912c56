from __future__ import annotations

import pytest

from cdc_connectors.opencdc import CodecError, Metadata, Operation, Record, keys
from cdc_connectors.opencdc.proto.metadata.v1 import constants_pb2
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2


def test_standard_keys_have_conduits_names():
    assert keys.COLLECTION == "opencdc.collection"
    assert keys.CREATED_AT == "opencdc.createdAt"
    assert keys.READ_AT == "opencdc.readAt"
    assert keys.PAYLOAD_SCHEMA_VERSION == "opencdc.payload.schema.version"
    assert keys.FILE_CHUNK_COUNT == "opencdc.file.chunk.count"
    assert keys.OPENCDC_VERSION == "v1"
    assert keys.CONDUIT_DLQ_NACK_ERROR == "conduit.dlq.nack.error"
    assert len(keys.STANDARD_KEYS) == 14 + 7


@pytest.mark.parametrize(
    ("extension", "number"),
    [
        (opencdc_pb2.opencdc_version, 9999),
        (opencdc_pb2.metadata_version, 10000),
        (opencdc_pb2.metadata_collection, 10003),
        (opencdc_pb2.metadata_payload_schema_version, 10007),
        (opencdc_pb2.metadata_file_chunk_count, 10013),
        (constants_pb2.metadata_conduit_source_plugin_name, 20000),
        (constants_pb2.metadata_conduit_dlq_nack_node_id, 20006),
    ],
)
def test_file_option_numbers_match_conduit(extension, number):
    assert extension.number == number


def test_record_message_field_numbers_match_conduit():
    fields = {f.name: f.number for f in opencdc_pb2.Record.DESCRIPTOR.fields}
    assert fields == {"position": 1, "operation": 2, "metadata": 3, "key": 4, "payload": 5}
    data = opencdc_pb2.Data.DESCRIPTOR
    assert data.fields_by_name["raw_data"].number == 1
    assert data.fields_by_name["structured_data"].number == 2
    assert data.oneofs_by_name["data"]
    assert opencdc_pb2.Record.DESCRIPTOR.file.package == "opencdc.v1"
    assert opencdc_pb2.DESCRIPTOR.name == "opencdc/v1/opencdc.proto"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("create", Operation.CREATE),
        ("update", Operation.UPDATE),
        ("delete", Operation.DELETE),
        ("snapshot", Operation.SNAPSHOT),
        ("Operation(3)", Operation.DELETE),
        ("Operation(0)", Operation.UNSPECIFIED),
        ("4", Operation.SNAPSHOT),
        (2, Operation.UPDATE),
        ("", Operation.UNSPECIFIED),
        (None, Operation.UNSPECIFIED),
    ],
)
def test_operation_parses_names_numbers_and_conduit_forms(text, expected):
    assert Operation.parse(text) is expected


@pytest.mark.parametrize("bad", ["insert", "Operation(9)", "Operation(x)", 7, -1, True, 1.0])
def test_unknown_operation_is_a_codec_error(bad):
    with pytest.raises(CodecError, match="unknown operation"):
        Operation.parse(bad)


def test_operation_names_are_conduits():
    assert [str(op) for op in Operation] == [
        "Operation(0)",
        "create",
        "update",
        "delete",
        "snapshot",
    ]


def test_metadata_typed_accessors_read_and_write_strings():
    md = Metadata()
    md.collection = "shop.orders"
    md.created_at = 1663858188836816000
    md.read_at = 1663858188836817000
    md.key_schema_subject = "c:orders.key"
    md.key_schema_version = 2
    md.payload_schema_subject = "c:orders.payload"
    md.payload_schema_version = 3
    assert md == {
        "opencdc.collection": "shop.orders",
        "opencdc.createdAt": "1663858188836816000",
        "opencdc.readAt": "1663858188836817000",
        "opencdc.key.schema.subject": "c:orders.key",
        "opencdc.key.schema.version": "2",
        "opencdc.payload.schema.subject": "c:orders.payload",
        "opencdc.payload.schema.version": "3",
    }
    assert md.created_at == 1663858188836816000
    assert md.payload_schema_version == 3
    md.collection = None
    assert "opencdc.collection" not in md
    assert md.version is None


def test_metadata_malformed_integer_names_the_key():
    md = Metadata({"opencdc.readAt": "yesterday"})
    with pytest.raises(CodecError, match=r"opencdc\.readAt.*yesterday"):
        _ = md.read_at


def test_record_new_sets_version_and_standard_metadata():
    record = Record.new("create", key={"id": 1}, after={"id": 1}, collection="t", read_at=5)
    assert record.metadata == {
        "opencdc.version": "v1",
        "opencdc.collection": "t",
        "opencdc.readAt": "5",
    }
    assert record.operation is Operation.CREATE
    with pytest.raises(TypeError, match="unknown standard metadata"):
        Record.new("create", colection="t")


@pytest.mark.parametrize(
    ("misuse", "message"),
    [
        (lambda: Record.new("create", metadata={"n": 1}), "metadata 'n' must be a string, not int"),
        (lambda: Record(metadata={"n": None}), "metadata 'n' must be a string, not NoneType"),
        (lambda: Metadata({"n": 1.5}), "metadata 'n' must be a string, not float"),
        (lambda: Metadata(n=b"x"), "metadata 'n' must be a string, not bytes"),
        (lambda: Metadata({1: "x"}), "metadata key 1 must be a string"),
        (lambda: Metadata().__setitem__("n", 2), "metadata 'n' must be a string, not int"),
        (lambda: Metadata().update({"n": 2}), "metadata 'n' must be a string"),
        (lambda: Metadata().update(n=2), "metadata 'n' must be a string"),
        (lambda: Metadata().update([("n", 2)]), "metadata 'n' must be a string"),
        (lambda: Metadata().setdefault("n", 2), "metadata 'n' must be a string"),
        (lambda: Metadata().__ior__({"n": 2}), "metadata 'n' must be a string"),
        (lambda: setattr(Metadata(), "read_at", "soon"), "'opencdc.readAt' takes int, not str"),
        (lambda: Record.new("create", read_at=True), "'opencdc.readAt' takes int, not bool"),
    ],
)
def test_non_string_metadata_is_refused_where_it_is_put_in_naming_the_key(misuse, message):
    with pytest.raises(TypeError, match=message):
        misuse()


def test_metadata_stays_a_string_map_through_dict_operations():
    md = Metadata({"a": "1"})
    md |= {"b": "2"}
    md.update(c="3")
    assert md.setdefault("a", "x") == "1"
    copy = md.copy()
    assert type(copy) is Metadata and copy == {"a": "1", "b": "2", "c": "3"}
    with pytest.raises(TypeError):
        copy["d"] = 4  # type: ignore[assignment]
