"""JSON single values (the REST spec's form, Iceberg Java's SingleValueParser): decimals as BigDecimal's
toString at the type's scale, for every precision Iceberg allows (up to 38 digits)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from planner_service.metadata.json_values import to_json_column, to_json_scalar, to_json_value
from planner_service.metadata.types import PrimitiveType, parse_primitive


@pytest.mark.parametrize(
    ("typ", "value", "text"),
    [
        ("decimal(9, 2)", Decimal("1.5"), "1.50"),
        ("decimal(38, 10)", Decimal(0), "0E-10"),
        (
            "decimal(38, 0)",
            Decimal("-99999999999999999999999999999999999999"),
            "-99999999999999999999999999999999999999",
        ),
        (
            "decimal(38, 6)",
            Decimal("12345678901234567890123456789012.345678"),
            "12345678901234567890123456789012.345678",
        ),
        (
            "decimal(38, 38)",
            Decimal("0.12345678901234567890123456789012345678"),
            "0.12345678901234567890123456789012345678",
        ),
    ],
)
def test_decimals_as_big_decimal_writes_them(typ: str, value: Decimal, text: str) -> None:
    assert to_json_value(parse_primitive(typ), value) == text


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        ("timestamp", [0, -1, 1_700_000_000_123_456, None, -62_135_596_800_000_000]),
        ("timestamptz", [-86_400_000_001, None, 5]),
        ("date", [-1, 0, 19_723, None, -719_162]),
        ("long", [1, None, -(2**63)]),
        ("double", [1.5, float("nan"), float("-inf"), None]),
    ],
)
def test_a_column_of_values_is_written_as_each_value_is(kind: str, values: list[Any]) -> None:
    """to_json_column (dates and timestamps as one array) writes what to_json_scalar writes value by value."""
    typ = PrimitiveType(kind)
    assert to_json_column(typ, values) == [to_json_scalar(typ, v) for v in values]
