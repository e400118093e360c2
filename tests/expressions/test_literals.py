"""Literal conversions that Iceberg Java's Literals makes while binding (api/.../expressions/Literals.java)."""

from __future__ import annotations

import pytest

from planner_service.expressions.literals import Literal, convert
from planner_service.metadata.types import PrimitiveType

DATE = PrimitiveType("date")


@pytest.mark.parametrize(
    ("kind", "value", "day"),
    [
        # TimestampLiteral.to(DATE) = DateTimeUtil.microsToDays: whole days toward the epoch, minus one before
        # it, after adding a microsecond (so 1969-12-31T00:00:00.999999 is day -2, not the calendar's -1)
        ("timestamp", 0, 0),
        ("timestamp", 86_399_999_999, 0),
        ("timestamp", -1, -1),
        ("timestamp", -86_400_000_000, -1),
        ("timestamp", -86_399_000_001, -2),
        ("timestamp", -86_400_000_001, -2),
        # TimestampNanoLiteral.to(DATE) = DateTimeUtil.nanosToDays, the same rule in nanoseconds
        ("timestamp_ns", -86_399_000_000_001, -2),
        ("timestamp_ns", -86_400_000_000_000, -1),
        ("timestamp_ns", 1, 0),
    ],
)
def test_timestamps_become_dates_as_java_converts_them(kind: str, value: int, day: int) -> None:
    assert convert(Literal(kind, value), DATE) == Literal("date", day)
