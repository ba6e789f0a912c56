"""Debezium JSON -> OpenCDC, one core and on Spark, against a bare parse of the same lines.

Messages are what Debezium's PostgreSQL connector writes with ``schemas.enable=true`` for an
orders table (a decimal, a MicroTimestamp, a date, an enum, nullable text): about 1.8 KB each.
``debezium_json_vs_json_parse``: :class:`TypedDebeziumDecoder` (the columnar path, typed
columns) against a bare ``orjson.loads`` loop; ``debezium_json_opencdc_vs_json_parse``:
:func:`~cdc_connectors.spark.arrow.decode_batch` to the OpenCDC layout (VARIANT images)
against the same loop. ``debezium_spark_vs_native_json``: the typed OpenCDC DataFrame from
Debezium JSON files on ``local[2]`` (``spark.read.text`` + ``mapInArrow`` calling the typed
decoder) against Spark's ``from_json`` with an explicit schema projected into the same
columns; both written to the ``noop`` sink so every column is materialised.
"""

from __future__ import annotations

import base64
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from bench.common import entry, rates
from cdc_connectors.formats.base import Message
from cdc_connectors.formats.debezium import DebeziumJsonFormat
from cdc_connectors.spark.arrow import decode_batch
from cdc_connectors.spark.debezium_typed import TypedDebeziumDecoder

MESSAGES = 20_000
SPARK_MESSAGES = 100_000
BATCH = 5_000

_OPTIONAL = {"optional": True}
ROW_FIELDS: list[dict[str, Any]] = [
    {"type": "int64", "optional": False, "field": "id"},
    {
        "type": "string",
        "optional": False,
        "name": "io.debezium.data.Enum",
        "parameters": {"allowed": "new,paid,shipped,cancelled"},
        "field": "status",
    },
    {
        "type": "bytes",
        "optional": False,
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "field": "amount",
    },
    {
        "type": "int64",
        "optional": False,
        "name": "io.debezium.time.MicroTimestamp",
        "field": "created_at",
    },
    {
        "type": "int64",
        "optional": True,
        "name": "io.debezium.time.MicroTimestamp",
        "field": "updated_at",
    },
    {"type": "string", **_OPTIONAL, "field": "note"},
    {"type": "int32", "optional": False, "field": "qty"},
]
ROW_SCHEMA = {
    "type": "struct",
    "fields": ROW_FIELDS,
    "optional": True,
    "name": "shop.public.orders.Value",
}
SOURCE_FIELDS = [
    ("version", "string"),
    ("connector", "string"),
    ("name", "string"),
    ("ts_ms", "int64"),
    ("db", "string"),
    ("schema", "string"),
    ("table", "string"),
    ("lsn", "int64"),
]
ENVELOPE_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "shop.public.orders.Envelope",
    "version": 1,
    "fields": [
        {**ROW_SCHEMA, "field": "before"},
        {**ROW_SCHEMA, "field": "after"},
        {
            "type": "struct",
            "optional": False,
            "name": "io.debezium.connector.postgresql.Source",
            "field": "source",
            "fields": [{"type": t, "optional": False, "field": f} for f, t in SOURCE_FIELDS],
        },
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
    ],
}
KEY_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "shop.public.orders.Key",
    "fields": [{"type": "int64", "optional": False, "field": "id"}],
}


def _unscaled(cents: int) -> str:
    return base64.b64encode(
        cents.to_bytes((cents.bit_length() + 8) // 8, "big", signed=True)
    ).decode()


def lines(n: int = MESSAGES, seed: int = 5) -> list[bytes]:
    """``n`` Debezium JSON update events of an orders table, schema blocks included."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        after = {
            "id": 1_000_000 + i,
            "status": rnd.choice(["new", "paid", "shipped", "cancelled"]),
            "amount": _unscaled(rnd.randrange(100, 10**8)),
            "created_at": 1_735_689_600_000_000 + rnd.randrange(10**13),
            "updated_at": None if i % 4 == 0 else 1_763_769_600_000_000 + i,
            "note": None if i % 3 else "leave at the door",
            "qty": rnd.randrange(1, 20),
        }
        payload = {
            "before": None,  # REPLICA IDENTITY DEFAULT: no before image on updates
            "after": after,
            "source": {
                "version": "2.5.0.Final",
                "connector": "postgresql",
                "name": "shop",
                "ts_ms": 1_763_769_600_000 + i,
                "db": "shop",
                "schema": "public",
                "table": "orders",
                "lsn": 24_000_000 + 64 * i,
            },
            "op": "u",
            "ts_ms": 1_763_769_600_100 + i,
        }
        out.append(orjson.dumps({"schema": ENVELOPE_SCHEMA, "payload": payload}))
    return out


def run() -> dict[str, dict[str, Any]]:
    results = _one_core()
    results.update(_spark())
    return results


def _one_core() -> dict[str, dict[str, Any]]:
    data = lines()
    messages = [Message(line) for line in data]
    fmt = DebeziumJsonFormat()

    typed = TypedDebeziumDecoder.from_message(fmt, messages[0])

    def ours() -> pa.RecordBatch:
        batch, errors = typed.decode(messages)
        assert not errors and batch.num_rows == len(messages)
        return batch

    def opencdc() -> pa.RecordBatch:
        batch, errors = decode_batch(fmt, messages)
        assert not errors and batch.num_rows == len(messages)
        return batch

    def anchor() -> list[Any]:
        return [orjson.loads(line) for line in data]

    size = sum(map(len, data)) / len(data)
    print(f"debezium messages: {size:.0f} bytes on average", file=sys.stderr)
    measured = rates({"ours": ours, "opencdc": opencdc, "anchor": anchor}, len(data))
    return {
        "debezium_json_vs_json_parse": entry(
            measured["ours"], "msg/s", "orjson.loads loop", measured["anchor"]
        ),
        "debezium_json_opencdc_vs_json_parse": entry(
            measured["opencdc"], "msg/s", "orjson.loads loop", measured["anchor"]
        ),
    }


def _typed_partitions(
    decoder: TypedDebeziumDecoder,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            values = batch.column(0)
            for start in range(0, len(values), BATCH):
                decoded, errors = decoder.decode_arrays(values.slice(start, BATCH))
                assert not errors
                yield decoded

    return run


def _spark() -> dict[str, dict[str, Any]]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-debezium")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = lines(SPARK_MESSAGES // 2)
        for part in range(2):
            (folder / f"part-{part}.json").write_bytes(b"\n".join(data) + b"\n")
        path = str(folder)

        decoder = TypedDebeziumDecoder.from_message(DebeziumJsonFormat(), Message(data[0]))
        decode = _typed_partitions(decoder)

        def typed_frame() -> Any:
            return spark.read.text(path).mapInArrow(decode, decoder.spark_schema)

        def ours() -> None:
            typed_frame().write.format("noop").mode("overwrite").save()

        row = (
            "struct<id:bigint,status:string,amount:binary,created_at:bigint,updated_at:bigint,"
            "note:string,qty:int>"
        )
        source = ",".join(
            f"{name}:{'bigint' if kind == 'int64' else 'string'}" for name, kind in SOURCE_FIELDS
        )
        envelope = (
            f"struct<payload:struct<before:{row},after:{row},source:struct<{source}>,"
            "op:string,ts_ms:bigint>>"
        )

        def typed(image: Any) -> Any:
            # The same values ours puts in the images: decimal and ISO-8601 time.
            return F.struct(
                *[image[f].alias(f) for f in ("id", "status", "note", "qty")],
                F.conv(F.hex(image["amount"]), 16, 10).cast("decimal(10,0)").alias("amount")
                / F.lit(100),
                F.timestamp_micros(image["created_at"]).alias("created_at"),
                F.timestamp_micros(image["updated_at"]).alias("updated_at"),
            )

        def native() -> None:
            parsed = spark.read.text(path).select(F.from_json("value", envelope).alias("e"))
            p = F.col("e.payload")
            source_map = F.create_map(
                *[
                    item
                    for name, _ in SOURCE_FIELDS
                    for item in (F.lit(f"debezium.source.{name}"), p["source"][name].cast("string"))
                ]
            )
            df = parsed.select(
                F.lit(b"").alias("position"),
                F.when(p["op"] == "u", "update").otherwise("create").alias("operation"),
                source_map.alias("metadata"),
                F.struct(p["after"]["id"].alias("id")).alias("key"),
                F.struct(
                    typed(p["before"]).alias("before"), typed(p["after"]).alias("after")
                ).alias("payload"),
            )
            df.write.format("noop").mode("overwrite").save()

        assert typed_frame().count() == len(data) * 2
        measured = rates({"ours": ours, "anchor": native}, len(data) * 2, rounds=3)
    spark.stop()
    return {
        "debezium_spark_vs_native_json": entry(
            measured["ours"], "msg/s", "Spark from_json + projection, local[2]", measured["anchor"]
        )
    }


if __name__ == "__main__":
    for name, row in run().items():
        print(name, row)
