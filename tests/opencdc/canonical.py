"""Conduit's canonical records (OPENCDC.md), as the JSON Conduit writes."""

CONDUIT_TEST_RECORD = (
    b'{"position":"Zm9v","operation":"create","metadata":{"conduit.source.plugin.name":"example"},'
    b'"key":"YmFy","payload":{"before":null,"after":{"baz":"qux","foo":"bar"}}}'
)
SPEC_EXAMPLE_RECORD = (
    b'{"position":"c3RhbmRpbmc=","operation":"update","metadata":{"file.path":"./example.in",'
    b'"opencdc.readAt":"1663858188836816000","opencdc.version":"v1"},"key":"cGFkbG9jay1rZXk=",'
    b'"payload":{"before":"eWVsbG93","after":{"bool":true,"float32":1.2,"float64":1.2,"int":1,'
    b'"int32":1,"int64":1,"string":"orange"}}}'
)
CANONICAL = [CONDUIT_TEST_RECORD, SPEC_EXAMPLE_RECORD]
