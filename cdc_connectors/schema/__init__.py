"""Schema languages: Avro, Protobuf, JSON Schema; parsing, normal forms, compatibility.

Nothing here knows of Spark or of any registry. One module per language,
``languages`` to dispatch on the registry's type name, and ``jsontext`` to load
JSON schema text safely (no junk, no deep nesting).
"""

from cdc_connectors.schema.errors import SchemaError

__all__ = ["SchemaError"]
