"""Change streams applied to tables: the mirror of a source database in Delta Lake or Iceberg.

```
records.py   OpenCDC records -> a batch of changes (Arrow): keys, order, unset columns, types
plan.py      the merge planner: changes + the table's rows of their keys -> what to replace
apply.py     create the table, evolve its columns, plan, replace in one transaction
evolve.py    which column changes apply (new columns, safe widening) and which refuse
store.py     the protocol of a table format; delta.py (deltalake), iceberg.py (pyiceberg)
layout.py    the columns of a change and those a table keeps beside its own
keys.py      rows picked by key, after a coarse filter of a table's files
```

Nothing here knows Spark: the ``cdc-table`` connector (:mod:`cdc_connectors.connectors.
table`) runs these in its tasks (records -> changes) and its commit (apply).
"""
