"""JSON single values (the REST spec's form, Iceberg Java's SingleValueParser): decimals as BigDecimal's
toString at the type's scale, for every precision Iceberg allows (up to 38 digits)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.types import parse_primitive


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
