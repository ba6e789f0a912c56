"""Change-data-capture streams through Spark as OpenCDC records."""
