"""Schema languages and schema-encoded data: Avro, Protobuf, JSON Schema, Kafka Connect.

Nothing here knows of Spark. One module per language (``avro``, ``protobuf``,
``json_schema``, ``connect`` for Kafka Connect schemas), ``languages`` to dispatch on the
registry's type name, ``jsontext`` to load JSON schema text safely, ``infer`` for Conduit's
schema inference, ``framing`` for Confluent's and Conduit's wire framing, ``subjects`` for
subject name strategies. Nothing here uses a registry: the schemas of a registry, cached,
and records encoded and decoded through it live beside its client
(:mod:`cdc_connectors.registry.store`, :mod:`cdc_connectors.registry.serde`).
"""

from cdc_connectors.schema.errors import SchemaError

__all__ = ["SchemaError"]
