"""Less garbage-collection work in Spark's Python workers.

A reused worker runs ``gc.collect()`` after every task (``pyspark.daemon``), and Python
starts full collections of its own as objects pile up: each walks every object of the
modules a task imports, about a hundred thousand (pyspark, pyarrow, confluent-kafka, ours),
for tens of milliseconds. Measured on a Kafka copy, those collections were an eighth of the
workers' time. :func:`settle` moves what is alive when a task starts to the permanent
generation (``gc.freeze()``), so that collections look at the task's own objects only. What
is alive then is in use (the worker collected after its last task), so nothing is kept that
would have been freed.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """At the start of a task in a Spark worker: leave what exists out of collections."""
    gc.freeze()
