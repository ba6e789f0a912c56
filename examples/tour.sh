#!/usr/bin/env bash
# `make run`, first half: OpenCDC JSON -> OpenCDC protobuf -> JSON with the command, no Spark.
# Order 1003 carries a 64-bit `ref` that protobuf's Struct (numbers are doubles) would round:
# it is refused and kept whole in the dead-letter file; every other record goes through.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-.venv/bin}
out=${OUT:-.cdc}
mkdir -p "$out"
rm -f "$out/orders.errors.jsonl"

echo "== convert: OpenCDC JSON -> OpenCDC protobuf (length-delimited)"
status=0
"$bin/cdc-connectors" convert --from opencdc-json --to opencdc-proto \
    examples/opencdc/orders.jsonl -o "$out/orders.pb" --errors "$out/orders.errors.jsonl" \
    || status=$?
# exit 1 means "some messages went to --errors": here exactly the one with the 64-bit ref
if [ "$status" -ne 1 ] || [ "$(wc -l < "$out/orders.errors.jsonl")" -ne 1 ]; then
    echo "unexpected: exit $status, dead letters in $out/orders.errors.jsonl" >&2
    exit 1
fi
echo "   dead letter kept in $out/orders.errors.jsonl:"
"$bin/python" -c '
import json, sys
for line in open(sys.argv[1]):
    record = json.loads(line)
    print("  ", record["metadata"]["conduit.dlq.nack.error"])
' "$out/orders.errors.jsonl"

echo "== convert: OpenCDC protobuf -> OpenCDC JSON"
"$bin/cdc-connectors" convert --from opencdc-proto --to opencdc-json "$out/orders.pb" \
    -o "$out/orders.jsonl"

echo "== convert: the shop orders -> Avro rows in Confluent's wire format (a registry in $out)"
rm -f "$out/registry.db"
grep '"shop.public.orders"' examples/opencdc/orders.jsonl \
    | "$bin/cdc-connectors" convert --from opencdc-json --to avro \
        --registry "sqlite:///$out/registry.db" --opt topic=orders \
        --opt value.schema=examples/avro/orders-v2.avsc - -o "$out/orders.avro.jsonl"
head -n 2 "$out/orders.avro.jsonl"
echo "== convert: Avro rows -> OpenCDC JSON (a delete's tombstone is a delete again)"
"$bin/cdc-connectors" convert --from avro --to opencdc-json \
    --registry "sqlite:///$out/registry.db" --opt topic=orders "$out/orders.avro.jsonl"
