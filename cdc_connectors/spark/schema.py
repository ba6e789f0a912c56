"""The OpenCDC record as a Spark schema, compiled from ``opencdc.v1.Record``.

```
position   binary     not null
operation  string     not null   create | update | delete | snapshot | dead-letter
metadata   map<string,string> not null
key        struct<raw_data: binary, structured_data: variant>
payload    struct<before: struct<raw_data, structured_data>, after: struct<...>>
```

Raw data lands in ``raw_data``, structured data in ``structured_data`` as a
VARIANT (``variant_get(payload.after.structured_data, '$.id', 'bigint')``);
absent data is a null struct.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2
from cdc_connectors.spark.proto_types import message_struct

#: The Spark schema of an OpenCDC record.
OPENCDC_SCHEMA: StructType = message_struct(opencdc_pb2.Record.DESCRIPTOR)

#: Its column names, in order.
OPENCDC_COLUMNS: tuple[str, ...] = tuple(OPENCDC_SCHEMA.fieldNames())

#: The same as an explicit Arrow schema, for data sources that yield Arrow batches.
OPENCDC_ARROW_SCHEMA: pa.Schema = to_arrow_schema(OPENCDC_SCHEMA)
