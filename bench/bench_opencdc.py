"""OpenCDC codecs and the Arrow conversion, each against a bare anchor on the same data.

- ``opencdc_json_decode_vs_json_parse``: OpenCDC JSON lines -> records, against
  a bare ``orjson.loads`` of the same lines (ours does strictly more).
- ``opencdc_proto_decode_vs_message_parse``: protobuf bytes -> records, against
  a bare ``opencdc_pb2.Record.FromString``.
- ``opencdc_arrow_vs_json_text_arrow``: records -> Arrow batch with VARIANT
  payloads, against the same batch with payloads as JSON text.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa

from bench.common import entry, order_records, rate
from cdc_connectors.opencdc import (
    record_from_json,
    record_from_proto_bytes,
    record_to_json,
    record_to_proto_bytes,
)
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2
from cdc_connectors.spark import records_to_batch

N = 5000


def _json_text_batch(records: list[Any]) -> pa.RecordBatch:
    rows = [
        {
            "position": r.position,
            "operation": str(r.operation),
            "metadata": list(r.metadata.items()),
            "key": orjson.dumps(r.key),
            "before": orjson.dumps(r.payload.before),
            "after": orjson.dumps(r.payload.after),
        }
        for r in records
    ]
    return pa.RecordBatch.from_pylist(rows)


def run() -> dict[str, dict[str, Any]]:
    records = order_records(N)
    lines = [record_to_json(r) for r in records]
    protos = [record_to_proto_bytes(r) for r in records]
    results = {}

    ours = rate(lambda: [record_from_json(x) for x in lines], N)
    anchor = rate(lambda: [orjson.loads(x) for x in lines], N)
    results["opencdc_json_decode_vs_json_parse"] = entry(
        ours, "records/s", "bare orjson.loads of the same lines", anchor
    )

    ours = rate(lambda: [record_from_proto_bytes(x) for x in protos], N)
    anchor = rate(lambda: [opencdc_pb2.Record.FromString(x) for x in protos], N)
    results["opencdc_proto_decode_vs_message_parse"] = entry(
        ours, "records/s", "bare opencdc_pb2.Record.FromString", anchor
    )

    ours = rate(lambda: records_to_batch(records), N, repeat=3)
    anchor = rate(lambda: _json_text_batch(records), N, repeat=3)
    results["opencdc_arrow_vs_json_text_arrow"] = entry(
        ours, "records/s", "the same Arrow batch with payloads as JSON text", anchor
    )
    return results
