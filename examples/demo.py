"""`make run`: OpenCDC records as a Spark DataFrame with the OpenCDC schema.

Reads OpenCDC JSON lines (the examples by default), shows them as a DataFrame
and queries the structured payload through VARIANT functions.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cdc_connectors.opencdc import read_json_lines
from cdc_connectors.spark import records_dataframe
from cdc_connectors.spark.session import quiet_session

EXAMPLE = Path(__file__).parent / "opencdc" / "orders.jsonl"


def main(path: Path) -> None:
    with path.open("rb") as stream:
        records = list(read_json_lines(stream, source=str(path)))

    spark = quiet_session(
        "local[*]",
        "cdc-connectors demo",
        {"spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC"},
    )
    try:
        df = records_dataframe(spark, records)
        print(f"{len(records)} OpenCDC records from {path}\n")
        df.printSchema()
        df.select("operation", "metadata", "key", "payload.after").show(truncate=60)

        # the row as it is after the change, or as it was before a delete
        state = "coalesce(payload.after.structured_data, payload.before.structured_data)"
        df.selectExpr("*", f"{state} AS row").createOrReplaceTempView("changes")
        print("Typed values out of the VARIANT payload (ref keeps all 64 bits):")
        spark.sql(
            """
            SELECT operation,
                   metadata['opencdc.collection']                                 AS collection,
                   timestamp_micros(div(cast(metadata['opencdc.createdAt'] AS bigint), 1000))
                                                                                  AS created_at,
                   variant_get(key.structured_data, '$.id', 'bigint')             AS id,
                   variant_get(row, '$.status', 'string')                         AS status,
                   variant_get(row, '$.amount', 'decimal(10,2)')                  AS amount,
                   variant_get(row, '$.ref', 'bigint')                            AS ref
            FROM changes
            WHERE metadata['opencdc.collection'] = 'shop.public.orders'
            ORDER BY position
            """
        ).show(truncate=False)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else EXAMPLE)
