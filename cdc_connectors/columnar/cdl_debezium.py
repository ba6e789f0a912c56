"""Huawei CDL JSON messages -> the destinations Debezium JSON's columns write besides
OpenCDC: ``avro`` and ``protobuf`` rows, ``debezium-avro`` envelopes, Debezium JSON.

CDL's Debezium JSON (``message_version`` 2.0) is Debezium's change event with ``cdl.*``
metadata, read by :meth:`CdlJsonFormat.decode` through its Debezium format
(:attr:`CdlJsonFormat.v2`, whose envelope marks the version): each converter here is the
Debezium JSON one over that format, so the columns take exactly the 2.0 events they take of
Debezium JSON. CDL JSON 1.0 messages, and whatever the Debezium columns leave, go the
per-message way (to OpenCDC, :class:`~cdc_connectors.columnar.cdl_opencdc.CdlToOpenCDC`
writes 1.0 from columns too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pyarrow as pa

from cdc_connectors.columnar.debezium_avro_envelopes import DebeziumToDebeziumAvro
from cdc_connectors.columnar.debezium_avro_rows import DebeziumToAvroRows
from cdc_connectors.columnar.debezium_opencdc import Columnar, DebeziumToOpenCDC, layout_of
from cdc_connectors.columnar.debezium_protobuf_rows import DebeziumToProtobufRows
from cdc_connectors.formats.base import Format
from cdc_connectors.formats.debezium.cdl import CdlJsonFormat

__all__ = ["CdlToAvroRows", "CdlToDebeziumAvro", "CdlToDebeziumJson", "CdlToProtobufRows"]


class _CdlAsDebezium:
    """CDL JSON -> what :attr:`debezium` writes of CDL's Debezium JSON (module docstring)."""

    debezium: ClassVar[Any]

    def __init__(
        self,
        fmt: CdlJsonFormat,
        destination: Format,
        topic: Sequence[tuple[str, str | None]] | None = None,
    ):
        self._columns = self.debezium(fmt.v2, destination, topic)

    @classmethod
    def serves(cls, source: Format, destination: Format) -> bool:
        """``cdl-json`` itself, where :attr:`debezium` serves its Debezium format."""
        return type(source) is CdlJsonFormat and bool(cls.debezium.serves(source.v2, destination))

    def convert(
        self,
        values: pa.Array,
        keys: pa.Array | None,
        places: pa.Array,
        headers: pa.Array | None = None,
    ) -> Columnar:
        """The messages of the 2.0 events the columns take; the others are the caller's."""
        found: Columnar = self._columns.convert(values, keys, places, headers)
        return found


class CdlToAvroRows(_CdlAsDebezium):
    """CDL's Debezium JSON -> Confluent-framed ``avro`` rows (the new row of each event)."""

    debezium = DebeziumToAvroRows


class CdlToProtobufRows(_CdlAsDebezium):
    """CDL's Debezium JSON -> Confluent-framed ``protobuf`` rows."""

    debezium = DebeziumToProtobufRows


class CdlToDebeziumAvro(_CdlAsDebezium):
    """CDL's Debezium JSON -> Debezium's Avro change events."""

    debezium = DebeziumToDebeziumAvro


class CdlToDebeziumJson(_CdlAsDebezium):
    """CDL's Debezium JSON -> Debezium JSON (OpenCDC is ``CdlToOpenCDC``'s, which writes 1.0
    from columns too)."""

    debezium = DebeziumToOpenCDC

    @classmethod
    def serves(cls, source: Format, destination: Format) -> bool:
        return layout_of(destination) is None and super().serves(source, destination)
