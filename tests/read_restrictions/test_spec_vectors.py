"""The spec's definitions of the column-projection actions that test_actions.py leaves out, each expected
value written from the spec's text (Iceberg's REST spec, `ReadRestrictions`), never from this package's
output: truncation of the zone-less and microsecond timestamp types (month, day and time to their
minimum), mask-to-default's listed values of a map (an empty map), of timestamptz_ns and of a struct within
a struct (field by field, recursively), and sha-256-query-local of an int, a long and a binary (SHA-256 of
the salt's bytes followed by the canonical bytes, output as sha-256-global's)."""

from __future__ import annotations

import datetime as dt
import hashlib
import struct
from typing import Any

import pyarrow as pa
import pytest

from read_restrictions import applied, new_salt

UTC = dt.UTC
# 2024-07-15T13:45:30.123456: month, day and every time component above their minimum
INSTANT = dt.datetime(2024, 7, 15, 13, 45, 30, 123456)


@pytest.mark.parametrize(
    ("typ", "arrow", "value", "year", "month"),
    [
        ("timestamp", pa.timestamp("us"), INSTANT, dt.datetime(2024, 1, 1), dt.datetime(2024, 7, 1)),
        (
            "timestamptz",
            pa.timestamp("us", tz="UTC"),
            INSTANT.replace(tzinfo=UTC),
            dt.datetime(2024, 1, 1, tzinfo=UTC),
            dt.datetime(2024, 7, 1, tzinfo=UTC),
        ),
        ("timestamp_ns", pa.timestamp("ns"), INSTANT, dt.datetime(2024, 1, 1), dt.datetime(2024, 7, 1)),
    ],
)
def test_truncation_sets_the_smaller_components_to_their_minimum(
    typ: str, arrow: pa.DataType, value: dt.datetime, year: dt.datetime, month: dt.datetime
) -> None:
    values = pa.array([value, None], arrow)
    assert applied("truncate-to-year", values, typ).to_pylist() == [year, None]
    assert applied("truncate-to-month", values, typ).to_pylist() == [month, None]


def test_a_utc_instant_truncates_in_utc_whatever_zone_wrote_it() -> None:
    # 2024-08-01T01:30+02:00 is 2024-07-31T23:30Z: July in UTC, though August where it was written
    instant = dt.datetime(2024, 8, 1, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    values = pa.array([instant], pa.timestamp("us", tz="UTC"))
    assert applied("truncate-to-month", values, "timestamptz").to_pylist() == [dt.datetime(2024, 7, 1, tzinfo=UTC)]


MAP = {"type": "map", "key-id": 3, "key": "string", "value-id": 4, "value": "long", "value-required": False}
INNER = {"type": "struct", "fields": [{"id": 6, "name": "d", "type": "date", "required": False}]}
OUTER = {
    "type": "struct",
    "fields": [
        {"id": 5, "name": "inner", "type": INNER, "required": False},
        {"id": 7, "name": "n", "type": "long", "required": False},
    ],
}


@pytest.mark.parametrize(
    ("typ", "arrow", "value", "default"),
    [
        (MAP, pa.map_(pa.string(), pa.int64()), [("a", 1)], []),  # "map: empty map {}"
        (
            "timestamptz_ns",
            pa.timestamp("ns", tz="UTC"),
            dt.datetime(2024, 7, 15, tzinfo=UTC),
            dt.datetime(2261, 12, 31, tzinfo=UTC),  # "2261-12-31T00:00:00.000000000+00:00"
        ),
        (
            OUTER,
            pa.struct([("inner", pa.struct([("d", pa.date32())])), ("n", pa.int64())]),
            {"inner": {"d": dt.date(2024, 7, 15)}, "n": 7},
            {"inner": {"d": dt.date(9999, 12, 31)}, "n": 999999999},  # "each field set to its default"
        ),
    ],
    ids=["map", "timestamptz_ns", "struct-in-struct"],
)
def test_mask_to_default_of_the_types_test_actions_leaves_out(
    typ: Any, arrow: pa.DataType, value: Any, default: Any
) -> None:
    masked = applied("mask-to-default", pa.array([value, None], arrow), typ)
    assert masked.type == arrow
    assert masked.to_pylist() == [default, None]


@pytest.mark.parametrize(
    ("typ", "arrow", "value", "canonical", "output"),
    [
        ("int", pa.int32(), -7, struct.pack("<i", -7), lambda d: struct.unpack("<i", d[:4])[0]),
        ("long", pa.int64(), 2**40 + 3, struct.pack("<q", 2**40 + 3), lambda d: struct.unpack("<q", d[:8])[0]),
        ("binary", pa.binary(), b"\x00\xff", b"\x00\xff", lambda d: d),
    ],
)
def test_sha_256_query_local_hashes_the_salt_then_the_canonical_bytes(
    typ: str, arrow: pa.DataType, value: Any, canonical: bytes, output: Any
) -> None:
    salt = new_salt()
    masked = applied("sha-256-query-local", pa.array([value, value, None], arrow), typ, salt).to_pylist()
    expected = output(hashlib.sha256(salt + canonical).digest())
    assert masked == [expected, expected, None]
    assert masked[0] != output(hashlib.sha256(canonical).digest())  # not sha-256-global's
