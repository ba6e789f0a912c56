"""`make run`, last part: schema-encoded payloads expanded into typed Spark columns.

Registers two versions of the orders schema (``examples/avro/orders-v1.avsc``, then v2,
which adds ``ref``) in an embedded SQLite registry, writes the shop orders of the examples
with them as Conduit does (plain Avro, the subject and version in the metadata; the first
orders with version 1, order 1003 with version 2), adds a corrupt copy of one, and expands
the payloads in Spark into one typed DataFrame of the latest version.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from pyspark.sql import SparkSession

from cdc_connectors.opencdc import Record, read_json_lines
from cdc_connectors.registry import open_registry
from cdc_connectors.registry.serde import RecordEncoder
from cdc_connectors.registry.store import SchemaStore
from cdc_connectors.schema import framing
from cdc_connectors.spark import expand, records_dataframe
from cdc_connectors.spark.session import quiet_session

HERE = Path(__file__).parent
SUBJECT = "demo:shop.public.orders.payload"


def encoded_orders(registry_url: str) -> list[Record]:
    """The shop orders of the examples, payloads Avro-encoded with version 1 or 2."""
    store = SchemaStore(open_registry(registry_url))
    for name in ("orders-v1.avsc", "orders-v2.avsc"):
        store.register(SUBJECT, (HERE / "avro" / name).read_text())
    with (HERE / "opencdc" / "orders.jsonl").open("rb") as stream:
        orders = [
            r
            for r in read_json_lines(stream, source="orders.jsonl")
            if r.metadata.collection == "shop.public.orders"
        ]
    encoder = RecordEncoder(store)
    out = []
    for record in orders:
        row = record.payload.after or record.payload.before or {}
        metadata = record.metadata.copy()
        framing.set_conduit_schema(metadata, "payload", SUBJECT, 2 if "ref" in row else 1)
        out.append(encoder.encode(replace(record, metadata=metadata)))
    corrupt = out[0].payload.after
    assert isinstance(corrupt, bytes)
    out.append(
        replace(out[0], position=b"corrupt", payload=replace(out[0].payload, after=corrupt[:-3]))
    )
    return out


def main(out: Path, spark: SparkSession | None = None) -> None:
    """The demo, its registry under ``out``, on ``spark`` (else a quiet local session of its
    own, stopped at the end)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "typed-registry.db").unlink(missing_ok=True)
    registry_url = f"sqlite:///{(out / 'typed-registry.db').resolve()}"
    records = encoded_orders(registry_url)

    own = spark is None
    if spark is None:
        spark = quiet_session(
            "local[*]",
            "cdc-connectors typed demo",
            {"spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC"},
        )
    try:
        raw = records_dataframe(spark, records)
        print(f"{len(records)} records with Avro payloads, subject {SUBJECT!r}:")
        raw.selectExpr(
            "operation",
            f"metadata['{framing.keys.PAYLOAD_SCHEMA_VERSION}'] AS version",
            "payload.after.raw_data AS avro",
        ).show(truncate=40)
        typed = expand(raw, registry_url, SUBJECT)  # the latest version: 2
        print("Expanded into the latest version's columns:")
        typed.select("after").printSchema()
        typed.selectExpr(
            "operation",
            "coalesce(after.id, before.id) AS id",
            "after.customer",
            "after.amount",
            "after.status",
            "after.items",
            "after.ref",
            "error",
        ).show(truncate=60)
    finally:
        if own:
            spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".cdc"))
