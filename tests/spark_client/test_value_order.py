"""value_order against Spark itself: each type's values sorted by Spark SQL (ORDER BY, MIN, MAX in a local
session) and by value_order's keys come out in the same order, including what Iceberg Java orders otherwise
(-0.0 and 0.0, NaN, UUIDs with the high bit set) and what UTF-16 orders otherwise (characters above U+FFFF)."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Any

import pytest

import value_order

UUIDS = [
    uuid.UUID(text)
    for text in (
        "ffffffff-0000-0000-0000-000000000000",
        "00000000-0000-0000-0000-000000000001",
        "80000000-0000-0000-0000-000000000000",
        "7fffffff-ffff-ffff-ffff-ffffffffffff",
        "00000000-0000-0000-8000-000000000000",
        "00000000-0000-0000-7fff-ffffffffffff",
    )
]
CASES: dict[str, tuple[str, list[Any]]] = {
    "double": ("double", [1.5, -0.0, math.nan, 0.0, -math.inf, math.inf, -1e308, 5e-324, math.nan, -2.0]),
    "float": ("float", [0.5, math.nan, -0.0, 0.0, -0.5, math.inf]),
    "string": ("string", ["b", "a", "é", "\uffff", "\U0001f600", "", "Z", "ab", "a\x00"]),
    "binary": ("binary", [b"\x80", b"\x7f", b"", b"\x00", b"\xff\x00", b"\x7f\xff"]),
    "decimal": ("decimal(10,2)", [Decimal("1.50"), Decimal("-3.00"), Decimal("0.01"), Decimal("-0.01")]),
    "date": ("date", [dt.date(2024, 1, 2), dt.date(1969, 12, 31), dt.date(1, 1, 1), dt.date(9999, 12, 31)]),
    "timestamp": (
        "timestamp_ntz",
        [dt.datetime(2024, 1, 2, 3, 4, 5, 6), dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(1970, 1, 1)],
    ),
    "boolean": ("boolean", [True, False, True]),
    "long": ("bigint", [2**63 - 1, -(2**63), 0, -1, 1]),
}


def _spark_sorted(spark: Any, spark_type: str, values: list[Any]) -> tuple[list[Any], Any, Any]:
    frame = spark.createDataFrame([(i, v) for i, v in enumerate(values)], f"i int, v {spark_type}")
    ordered = [row.v for row in frame.orderBy("v", "i").collect()]
    bounds = frame.selectExpr("min(v) AS least", "max(v) AS greatest").collect()[0]
    return ordered, bounds.least, bounds.greatest


def _keys(values: list[Any]) -> list[Any]:
    return [value_order.key(v) for v in values]


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_sort_as_spark_sorts_them(spark: Any, name: str) -> None:
    spark_type, values = CASES[name]
    ordered, least, greatest = _spark_sorted(spark, spark_type, values)
    assert _keys(ordered) == _keys(sorted(values, key=value_order.key))
    assert value_order.key(value_order.least(values)) == value_order.key(least)
    assert value_order.key(value_order.greatest(values)) == value_order.key(greatest)


def test_uuids_sort_as_spark_sorts_their_text(spark: Any) -> None:
    """Iceberg's Spark type for a uuid is a string: Spark orders uuids as their text, not as Java's UUID
    compares them (signed halves: 8000... before 0000...)."""
    ordered, least, greatest = _spark_sorted(spark, "string", [str(u) for u in UUIDS])
    assert [str(u) for u in sorted(UUIDS, key=value_order.key)] == ordered
    assert (str(value_order.least(UUIDS)), str(value_order.greatest(UUIDS))) == (least, greatest)


def test_nulls_come_first_ascending(spark: Any) -> None:
    rows = [(1, "b"), (None, "a"), (1, None), (0, "z"), (None, None)]
    frame = spark.createDataFrame(rows, "a int, b string")
    spark_rows = [tuple(r) for r in frame.orderBy(frame.a.asc_nulls_first(), frame.b.asc_nulls_first()).collect()]
    assert sorted(rows, key=value_order.ascending) == spark_rows
