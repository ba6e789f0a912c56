"""Schema languages: Avro, Protobuf, JSON Schema; parsing, normal forms, compatibility.

Nothing here knows of Spark or of any registry. One module per language, and
``compatibility`` to apply Confluent's levels across them.
"""

from cdc_connectors.schema.errors import SchemaError

__all__ = ["SchemaError"]
