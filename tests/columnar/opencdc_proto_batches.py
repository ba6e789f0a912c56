"""Hypothesis strategies: batches of OpenCDC protobuf records (``opencdc-proto``): the
records of :mod:`tests.columnar.opencdc_json_batches` as ``opencdc.v1.Record`` messages
(raw payloads, nested values and numbers whole and not included), messages with an
operation the format does not name or numbers JSON has not (NaN, infinities), and bytes
that are no record."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from cdc_connectors.opencdc import CodecError
from cdc_connectors.opencdc.json_codec import record_from_json
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2
from cdc_connectors.opencdc.proto_codec import record_to_proto_bytes
from tests.columnar.opencdc_json_batches import opencdc_json_batches


def _with_number(number: float) -> bytes:
    """A create whose row holds ``number`` (NaN and infinities have no JSON form)."""
    record = opencdc_pb2.Record(operation=1)
    record.payload.after.structured_data.update({"x": number, "ok": 1})
    return record.SerializeToString()


_ODD = st.sampled_from(
    [
        b"\x10\x09",  # operation 9
        b"\x10\x00\x0a\x01p",  # unspecified, with a position
        b"",  # an empty message: unspecified
        b"\xff\xff",
        b"\x0a\x05ab",  # truncated
        b"\x2a\x04\x12\x02\x12\x00",  # payload.after: an empty Struct
        *(_with_number(number) for number in (math.nan, math.inf, -math.inf, 2.0**60, -0.0)),
    ]
)


def _as_proto(value: bytes | None) -> bytes | None:
    if value is None:
        return None
    try:
        return record_to_proto_bytes(record_from_json(value))
    except CodecError:
        return b"\x0a\x03bad\x10\x07"  # operation 7: what a broken record stands for


@st.composite
def opencdc_proto_batches(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """A batch of (Kafka key, value) messages of OpenCDC protobuf records."""
    messages = [(key, _as_proto(value)) for key, value in draw(opencdc_json_batches())]
    odd = draw(st.lists(st.tuples(st.integers(0, len(messages)), _ODD), max_size=3))
    for at, value in odd:
        messages.insert(at, (None, value))
    return messages
