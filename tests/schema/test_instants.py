"""Instants and times of day as exact counts (:mod:`cdc_connectors.schema.instants`), and
the writers that take them: every digit kept, a finer one refused, never cut."""

from __future__ import annotations

import datetime as dt

import pytest

from cdc_connectors.schema import instants
from cdc_connectors.schema.connect.writers import write_since_epoch, write_time_of_day
from cdc_connectors.schema.protobuf import from_dict, message_class, to_dict

NANOS = 1_000_000_000


def test_text_keeps_every_digit_python_would_drop() -> None:
    assert instants.epoch_nanos("1970-01-01T00:00:00.123456789Z") == 123_456_789
    assert instants.epoch_nanos("1970-01-01T01:00:00.0000001+01:00") == 100
    assert instants.epoch_nanos("1969-12-31T23:59:59.999999999") == -1  # naive: UTC
    assert instants.epoch_nanos(dt.datetime(1970, 1, 1, 0, 0, 1, 5)) == NANOS + 5_000
    assert instants.day_nanos("01:00:00,5000001") == 3600 * NANOS + 500_000_100
    assert instants.epoch_nanos("1970-01-01T00:00:00.1234567890000Z") == 123_456_789
    with pytest.raises(ValueError, match="finer than nanoseconds"):
        instants.epoch_nanos("1970-01-01T00:00:00.1234567891Z")
    with pytest.raises(ValueError):
        instants.day_nanos(5)


def test_a_unit_takes_only_what_it_holds() -> None:
    assert instants.count(1_000_000, 1_000, "x") == 1
    assert instants.count(-2_000_000, 1_000, "x") == -2
    with pytest.raises(ValueError, match="x has a fraction of a second finer than milliseconds"):
        instants.count(1_500_000, 1_000, "x")
    with pytest.raises(ValueError, match="finer than microseconds"):
        instants.count(-1, 1_000_000, "x")


def test_connect_times_refuse_a_finer_fraction_than_their_unit() -> None:
    millis, micros, nanos = (write_since_epoch(n) for n in (1_000, 1_000_000, NANOS))
    stamp = "2023-11-14T22:13:20.123456789+00:00"
    assert nanos(stamp, {}) == 1_700_000_000_123_456_789
    for write, unit in ((millis, "milliseconds"), (micros, "microseconds")):
        with pytest.raises(ValueError, match=f"finer than {unit}"):
            write(stamp, {})
    assert millis("2023-11-14T22:13:20.123000+00:00", {}) == 1_700_000_000_123
    with pytest.raises(ValueError, match="finer than milliseconds"):
        millis(dt.datetime(2023, 11, 14, 22, 13, 20, 123999, tzinfo=dt.UTC), {})
    with pytest.raises(ValueError, match="finer than microseconds"):
        write_time_of_day(1_000_000)("01:02:03.1234567", {})
    assert write_time_of_day(NANOS)("01:02:03.1234567", {}) == 3723 * NANOS + 123_456_700


def test_a_protobuf_timestamp_keeps_its_nanoseconds_both_ways() -> None:
    cls = message_class(
        'syntax = "proto3";\npackage t;\nimport "google/protobuf/timestamp.proto";\n'
        "message M { google.protobuf.Timestamp ts = 1; }\n"
    )
    message = from_dict({"ts": "2024-01-01T00:00:00.123456789Z"}, cls)
    assert (message.ts.seconds, message.ts.nanos) == (1_704_067_200, 123_456_789)
    assert to_dict(message)["ts"] == "2024-01-01T00:00:00.123456789+00:00"
    whole = to_dict(from_dict({"ts": "2024-01-01T00:00:00.5Z"}, cls))["ts"]
    assert whole == dt.datetime(2024, 1, 1, 0, 0, 0, 500_000, tzinfo=dt.UTC)
    with pytest.raises(ValueError, match="finer than nanoseconds"):
        from_dict({"ts": "2024-01-01T00:00:00.1234567891Z"}, cls)
