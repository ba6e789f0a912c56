"""Hypothesis strategies: batches of Huawei CDL JSON messages. CDL's Debezium JSON
(``message_version`` 2.0: Debezium's events with CDL's own fields and its decimal and
timestamp text columns), other versions, CDL JSON 1.0 lines, and junk."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import strategies as st

from tests.columnar.debezium_batches import batches

_DECIMAL = {
    "type": "string",
    "optional": True,
    "name": "com.huawei.cdc.data.Decimal",
    "parameters": {"scale": "2", "precision": "10"},
}
_TIMESTAMP = {"type": "string", "optional": True, "name": "com.huawei.cdc.data.timestamp"}
_DECIMALS = st.one_of(
    st.integers(-(10**9), 10**9).map(lambda n: f"{n / 100:.2f}"),
    st.sampled_from(
        [
            "0",
            "1.5",
            "-0",
            "-0.00",
            "+7",
            " 3.25 ",
            "007.10",
            "1e3",
            "NaN",
            "1.234",
            "12345678.9",
            "123456789.12",
            "",
            "abc",
            "0.5",
        ]
    ),
)
_TIMESTAMPS = st.one_of(
    st.datetimes().map(lambda t: t.isoformat()),
    st.datetimes().map(lambda t: t.isoformat(sep=" ", timespec="milliseconds")),
    st.datetimes().map(lambda t: t.isoformat() + "Z"),
    st.sampled_from(
        [
            "2024-02-04T12:34:56+01:00",
            "2024-02-04T12:34:56.1234567",
            "2024-02-30T00:00:00",
            "2024-02-04T24:00:00",
            "0001-01-01T00:00:00+01:00",
            "9999-12-31T23:59:59-01:00",
            "2024-02-04",
            "20240204T123456",
            "0000-01-01T00:00:00",
            "2024-02-04T12:34:56.120000",
        ]
    ),
)
V1_LINES = [
    line
    for line in Path(__file__)
    .parents[2]
    .joinpath("examples/cdl/ct_pg2hudi.jsonl")
    .read_bytes()
    .splitlines()
    if line.strip()
]


def _cdl(value: bytes, draw: st.DrawFn) -> bytes:
    """A Debezium event as CDL's Debezium JSON writes it."""
    try:
        event = orjson.loads(value)
    except orjson.JSONDecodeError:
        return value
    if not isinstance(event, dict) or not isinstance(event.get("payload"), dict):
        return value
    schema, payload = event.get("schema"), event["payload"]
    version = draw(st.sampled_from(["2.0", "2.0", "2.0", "2.0", "1.0", None, "3"]))
    extra = {"message_version": version, "message_type": "0", "LOB_COLUMNS": None}
    payload.update({k: v for k, v in extra.items() if v is not None or k == "LOB_COLUMNS"})
    if isinstance(schema, dict) and isinstance(schema.get("fields"), list):
        for name in ("message_version", "message_type", "LOB_COLUMNS"):
            schema["fields"].append({"type": "string", "optional": True, "field": name})
        for field in schema["fields"]:
            if field.get("field") in ("before", "after") and isinstance(field.get("fields"), list):
                names = {f.get("field") for f in field["fields"]}
                if "dec" not in names:
                    field["fields"] += [{**_DECIMAL, "field": "dec"}, {**_TIMESTAMP, "field": "at"}]
        for image in ("before", "after"):
            if isinstance(payload.get(image), dict):
                payload[image]["dec"] = draw(st.none() | _DECIMALS)
                payload[image]["at"] = draw(st.none() | _TIMESTAMPS)
    return orjson.dumps(event)


@st.composite
def cdl_batches(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of each message of a batch."""
    messages = []
    for key, value in draw(batches(schema_key=False)):
        if value is not None and draw(st.integers(0, 9)):
            value = _cdl(value, draw)
        elif value is not None and draw(st.booleans()):
            value = draw(st.sampled_from(V1_LINES))
        messages.append((key, value))
    return messages
