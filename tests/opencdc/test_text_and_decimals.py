"""Text that UTF-8 cannot encode and decimals that are not numbers: refused where they are
put in (metadata) or as a CodecError naming the path (structured data), in both codecs."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_connectors.convert import dead_letter
from cdc_connectors.formats.base import Message
from cdc_connectors.opencdc import (
    CodecError,
    Metadata,
    Record,
    record_from_json,
    record_to_json,
    record_to_proto_bytes,
)

CODECS = [record_to_json, record_to_proto_bytes]


@pytest.mark.parametrize("encode", CODECS)
@pytest.mark.parametrize(
    ("data", "place", "what"),
    [
        ({"a": "\ud800"}, "payload.after.a:", "string"),
        ({"a": [1, {"b": "x\udcff"}]}, "payload.after.a[1].b:", "string"),
        ({"o": {"\udfff": 1}}, "payload.after.o:", "object key"),
    ],
)
def test_a_lone_surrogate_in_structured_data_is_a_codec_error_naming_the_path(
    encode, data, place, what
):
    with pytest.raises(CodecError) as error:
        encode(Record.new("create", after=data))
    assert str(error.value).startswith(place)
    assert f"{what} " in str(error.value) and "lone surrogate" in str(error.value)
    str(error.value).encode("utf-8")  # the message itself can be printed and stored


@pytest.mark.parametrize("encode", CODECS)
def test_a_lone_surrogate_in_a_key_is_named_too(encode):
    with pytest.raises(CodecError, match=r"^key\.id: string"):
        encode(Record.new("create", key={"id": "\ud83d"}))


@pytest.mark.parametrize("metadata", [{"k\ud800": "v"}, {"k": "v\udcff"}], ids=["key", "value"])
def test_metadata_refuses_lone_surrogates_where_they_are_put_in(metadata):
    with pytest.raises(TypeError, match=r"'k.*lone surrogate"):
        Metadata(metadata)
    with pytest.raises(TypeError, match="lone surrogate"):
        Record.new("create", metadata=metadata)
    md = Metadata()
    with pytest.raises(TypeError, match="lone surrogate"):
        md.update(metadata)
    assert md == {}


@pytest.mark.parametrize("encode", CODECS)
def test_metadata_changed_behind_its_back_is_a_codec_error_naming_the_key(encode):
    record = Record.new("create")
    dict.__setitem__(record.metadata, "x", "\ud800")
    with pytest.raises(CodecError, match="'x' holds a lone surrogate"):
        encode(record)


@pytest.mark.parametrize("encode", CODECS)
@pytest.mark.parametrize("number", ["sNaN", "-sNaN", "NaN", "Infinity"])
def test_decimals_that_are_not_finite_numbers_are_codec_errors_naming_the_path(encode, number):
    with pytest.raises(CodecError, match=rf"^payload\.after\.a\[0\]: -?{number}"):
        encode(Record.new("create", after={"a": [Decimal(number)]}))


def test_a_dead_letter_keeps_a_reason_that_holds_a_lone_surrogate():
    record = dead_letter(Message(b"x", where="in:1"), "bad \ud800", "convert")
    assert record.metadata["conduit.dlq.nack.error"] == "bad \\ud800"


def test_invalid_utf8_is_reported_with_its_byte_offset():
    with pytest.raises(CodecError, match="invalid JSON: invalid UTF-8 at byte 5"):
        record_from_json(b'{"a":\xc3("}')
