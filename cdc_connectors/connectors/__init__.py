"""Connectors: Spark Python data sources that read and write change streams.

One module per connector (``kafka.py``, ``files.py``), each a complete data source with
its settings documented at the top, found through the ``cdc_connectors.connectors``
entry points. :mod:`cdc_connectors.connectors.messages` is what they share: settings ->
format, messages -> OpenCDC Arrow batches with dead-letter rows, and back.
"""
