"""`make run`, the end: what the shop pipeline wrote, and the orders as a typed table.

Reads the OpenCDC JSON files that ``cdc-connectors run examples/pipelines/shop.yaml`` wrote
(with the ``cdc-files`` connector), prints a short summary (records by table and operation,
the dead letters and why), then the orders with the columns of their registered schema:
``after.amount`` is a ``decimal(10,2)``, ``after.created_at`` a timestamp; last, the orders
as the Delta table the ``mirror`` pipeline applied them to (``cdc-table``).

``--run PIPELINE.yaml`` first runs the pipeline in this Spark session, as ``cdc-connectors
run`` does (the same code, the same lines on stderr), which saves one Spark start.
"""

from __future__ import annotations

import sys

from pyspark.sql import functions as F

from cdc_connectors.spark import register, typed_view
from cdc_connectors.spark.session import quiet_session

ARGS = sys.argv[1:]
PIPELINE = None
if ARGS[:1] == ["--run"]:
    PIPELINE, ARGS = ARGS[1], ARGS[2:]
OUT = ARGS[0] if ARGS else ".cdc/shop"
REGISTRY = "sqlite:///.cdc/registry.db"

# quiet: errors only from Spark, no progress bars, bound to 127.0.0.1
spark = quiet_session(
    "local[2]", "shop", {"spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC"}
)
register(spark)

if PIPELINE is not None:
    from cdc_connectors.pipeline import load
    from cdc_connectors.pipeline.runner import run

    print(f"== cdc-connectors run {PIPELINE} (in this Spark session)", flush=True)
    status = run(load(PIPELINE), spark)
    if status not in (0, 1):  # 1: the bad lines of the examples went to the dead letters
        sys.exit(status)


def files(path: str):  # type: ignore[no-untyped-def]
    return spark.read.format("cdc-files").option("path", path).load()


records = files(f"{OUT}/records").cache()
letters = files(f"{OUT}/dead-letters")
print("== records by table and operation")
records.groupBy(
    F.col("metadata")["opencdc.collection"].alias("table"), "operation"
).count().orderBy("table", "operation").show(truncate=False)
print("== dead letters")
letters.select(
    F.decode(F.col("position"), "UTF-8").alias("position"),
    F.substring(F.col("metadata")["conduit.dlq.nack.error"], 1, 90).alias("reason"),
).orderBy("position").show(truncate=False)

print("== orders, typed by their registered schema (shop.public.orders.payload)")
orders = typed_view(records, REGISTRY, "shop.public.orders.payload")
print("after.amount is", orders.schema["after"].dataType["amount"].dataType.simpleString())
orders.select(
    "operation",
    F.coalesce("after.id", "before.id").alias("id"),
    "after.status",
    "after.amount",
    "after.created_at",
    "after.ship_date",
).orderBy("id", "operation").show(truncate=False)
orders.where("after IS NOT NULL").agg(F.sum("after.amount").alias("total_amount")).show()

print("== the orders as a table mirroring the database (Delta, after its updates and deletes)")
mirror = spark.read.format("cdc-table").load(f"{OUT}/tables/orders")
mirror.select("id", "status", "amount", "created_at", "ship_date", "_cdc_offset").orderBy(
    "id"
).show(truncate=False)
spark.stop()
