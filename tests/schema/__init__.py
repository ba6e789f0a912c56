"""Tests of the schema languages: Avro, Protobuf, JSON Schema."""
