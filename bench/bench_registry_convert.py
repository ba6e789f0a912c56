"""``convert --from debezium-avro`` (and ``--from avro``, ``--from protobuf``) ``--to
opencdc-proto`` against confluent-kafka's deserializer of the same values, on one core.

``convert_debezium_avro_vs_deserializer``: the events of :mod:`bench.postgres_events`
(an 11-column orders table: a decimal, micro timestamps, a date, an enum, a UUID, a double)
as Confluent's AvroConverter writes them (the Avro schema ``connect_to_avro`` gives for the
schema block, Confluent framing, key and value), converted by the command in this process
(click's runner: files in and out, the registry a SQLite file), against the deserializer
decoding each value alone (no key, nothing written). ``convert_avro_vs_deserializer``: the
same rows alone (each event's ``after``, as a Kafka Avro serializer writes a table's rows),
``--from avro``. ``convert_protobuf_vs_deserializer``: the same rows as a Kafka Protobuf
serializer writes them (:data:`ORDER_PROTO`: the decimal as its text, the timestamps as
``Timestamp``, the status an enum), ``--from protobuf``, against ``ProtobufDeserializer``.
Best of ``BENCH_ROUNDS``, in turn.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import orjson
from click.testing import CliRunner
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from bench.common import entry, rates
from bench.pipeline_runs import ROUNDS
from bench.postgres_events import events
from cdc_connectors.cli import main
from cdc_connectors.registry import open_registry
from cdc_connectors.schema import framing
from cdc_connectors.schema.connect import ConnectSchema, connect_to_avro, parse_connect_schema
from cdc_connectors.schema.protobuf import from_dict, message_class

LINES = 20_000
_CONTEXT = SerializationContext("shop.public.orders", MessageField.VALUE)
#: The orders table's rows as a Protobuf message.
ORDER_PROTO = """
syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Order {
  enum Status {
    STATUS_UNSPECIFIED = 0;
    NEW = 1;
    PAID = 2;
    SHIPPED = 3;
    CANCELLED = 4;
  }
  int64 id = 1;
  int64 customer_id = 2;
  Status status = 3;
  string amount = 4;
  google.protobuf.DoubleValue discount = 5;
  google.protobuf.Timestamp created_at = 6;
  google.protobuf.Timestamp updated_at = 7;
  optional int32 ship_date = 8;
  optional string note = 9;
  int32 qty = 10;
  string tracking = 11;
}
"""
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _datum(node: ConnectSchema, value: Any) -> Any:
    """A Connect JSON value as the Avro datum AvroConverter writes for it."""
    if value is None:
        return None
    if node.name == "org.apache.kafka.connect.data.Decimal":
        unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
        return Decimal(unscaled).scaleb(-int(node.parameters.get("scale", "0")))
    if node.type == "bytes":
        return base64.b64decode(value)
    if node.type == "struct":
        return {name: _datum(child, value.get(name)) for name, child in node.fields}
    if node.type == "array" and node.items is not None:
        return [_datum(node.items, item) for item in value]
    return value


def avro_events(n: int, registry_url: str, rows: bool = False) -> list[tuple[bytes, bytes]]:
    """``n`` events of :mod:`bench.postgres_events` as AvroConverter writes them (``rows``:
    each event's ``after`` row alone), their schemas registered at ``registry_url``."""
    registry = open_registry(registry_url)
    written: list[tuple[bytes, bytes]] = []
    parsed: dict[bytes, tuple[int, Any, ConnectSchema]] = {}
    for key, value in events(2 * n):
        if len(written) == n:
            break
        if rows and orjson.loads(value)["payload"]["after"] is None:
            continue  # a delete: a table's topic holds a tombstone
        out = []
        for part, text in (("key", key), ("value", value)):
            document = orjson.loads(text)
            if rows and part == "value":
                fields = document["schema"]["fields"]
                after = next(f for f in fields if f["field"] == "after")
                document = {
                    "schema": {**after, "optional": False},
                    "payload": document["payload"]["after"],
                }
            block = orjson.dumps(document["schema"])
            if block not in parsed:
                avro = connect_to_avro(document["schema"])
                subject = f"shop.public.orders-{part}"
                schema_id = registry.register_schema(
                    subject, Schema(orjson.dumps(avro).decode(), "AVRO")
                )
                parsed[block] = (
                    schema_id,
                    fastavro.parse_schema(avro),
                    parse_connect_schema(document["schema"]),
                )
            schema_id, avro_schema, connect = parsed[block]
            body = io.BytesIO()
            fastavro.schemaless_writer(body, avro_schema, _datum(connect, document["payload"]))
            out.append(framing.frame(schema_id, body.getvalue()))
        written.append((out[0], out[1]))
    return written


def protobuf_events(n: int, registry_url: str) -> list[tuple[bytes, bytes]]:
    """The rows of ``n`` events of :mod:`bench.postgres_events` as :data:`ORDER_PROTO`
    messages, Confluent-framed (key: the id's text), the schema registered at
    ``registry_url``."""
    registry = open_registry(registry_url)
    schema_id = registry.register_schema(
        "shop.public.orders-value", Schema(ORDER_PROTO, "PROTOBUF")
    )
    order = message_class(ORDER_PROTO)
    written: list[tuple[bytes, bytes]] = []
    for _, value in events(2 * n):
        if len(written) == n:
            break
        row = orjson.loads(value)["payload"]["after"]
        if row is None:
            continue
        unscaled = int.from_bytes(base64.b64decode(row["amount"]), "big", signed=True)
        message = {
            **row,
            "status": row["status"].upper(),
            "amount": str(Decimal(unscaled).scaleb(-2)),
            "created_at": _EPOCH + dt.timedelta(microseconds=row["created_at"]),
            "updated_at": None
            if row["updated_at"] is None
            else _EPOCH + dt.timedelta(microseconds=row["updated_at"]),
        }
        body = from_dict(message, order).SerializeToString()
        framed = b"\x00" + schema_id.to_bytes(4, "big") + b"\x00" + body
        written.append((str(row["id"]).encode(), framed))
    return written


def run() -> dict[str, dict[str, Any]]:
    return {
        "convert_debezium_avro_vs_deserializer": _measured("debezium-avro", rows=False),
        "convert_avro_vs_deserializer": _measured("avro", rows=True),
        "convert_protobuf_vs_deserializer": _measured("protobuf", rows=True),
    }


def _measured(source_format: str, rows: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/registry.db"
        if source_format == "protobuf":
            messages = protobuf_events(LINES, url)
            deserialize = ProtobufDeserializer(
                message_class(ORDER_PROTO), {"use.deprecated.format": False}
            )
            anchor_name = "confluent-kafka's ProtobufDeserializer of each value"
        else:
            messages = avro_events(LINES, url, rows)
            deserialize = AvroDeserializer(open_registry(url))
            anchor_name = "confluent-kafka's AvroDeserializer of each value"
        source = Path(tmp) / "in.kv.jsonl"
        target = Path(tmp) / "records.pb"
        source.write_bytes(
            b"".join(
                orjson.dumps(
                    {"key": base64.b64encode(k).decode(), "value": base64.b64encode(v).decode()}
                )
                + b"\n"
                for k, v in messages
            )
        )
        runner = CliRunner()
        command = ["convert", "--from", source_format, "--to", "opencdc-proto", "--kv"]
        command += ["--registry", url]
        values = [v for _, v in messages]

        def ours() -> None:
            done = runner.invoke(main, [*command, str(source), "-o", str(target)])
            assert done.exit_code == 0, done.output

        def anchor() -> None:
            for value in values:
                deserialize(value, _CONTEXT)

        measured = rates({"ours": ours, "anchor": anchor}, LINES, rounds=ROUNDS)
    return entry(measured["ours"], "msg/s", anchor_name, measured["anchor"])


if __name__ == "__main__":
    for name, row in run().items():
        print(name, row)
