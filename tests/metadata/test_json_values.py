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


# Java 17's LocalDate.ofEpochDay(d).toString() and LocalDateTime of the microseconds (ISO_LOCAL_DATE's years:
# four digits at least, '+' past 9999, '-' before year 0), recorded from the JDK the conformance suite runs
JAVA_DATES = [
    (0, "1970-01-01"),
    (-719162, "0001-01-01"),
    (2932896, "9999-12-31"),
    (2932897, "+10000-01-01"),
    (-719163, "0000-12-31"),
    (-719528, "0000-01-01"),
    (-719529, "-0001-12-31"),
    (-800000, "-0221-09-04"),
    (-(2**31), "-5877641-06-23"),
    (2**31 - 1, "+5881580-07-11"),
]
JAVA_TIMESTAMPS = [
    (2**63 - 1, "+294247-01-10T04:00:54.775807"),
    (-(2**63), "-290308-12-21T19:59:05.224192"),
    (-1, "1969-12-31T23:59:59.999999"),
]


@pytest.mark.parametrize(("days", "text"), JAVA_DATES)
def test_dates_past_pythons_years_are_written_as_java_writes_them(days: int, text: str) -> None:
    date = parse_primitive("date")
    assert to_json_value(date, days) == text
    assert to_json_column(date, [days, None]) == [text, None]


@pytest.mark.parametrize(("micros", "text"), JAVA_TIMESTAMPS)
def test_timestamps_past_pythons_years_are_written_as_java_writes_them(micros: int, text: str) -> None:
    assert to_json_value(parse_primitive("timestamp"), micros) == text
    assert to_json_value(parse_primitive("timestamptz"), micros) == text + "+00:00"
    assert to_json_column(parse_primitive("timestamptz"), [micros]) == [text + "+00:00"]


@pytest.mark.parametrize(("days", "text"), JAVA_DATES)
def test_the_pyspark_client_reads_back_every_year_the_service_writes(days: int, text: str) -> None:
    from spark_client.values import epoch_days

    assert epoch_days(text) == days


def test_a_value_of_an_unknown_type_is_written_as_null() -> None:
    """A partition field whose source column was dropped has the type `unknown` (Java: UnknownType, whose
    values Java reads as null, and whose non-null values its SingleValueParser cannot write)."""
    assert to_json_value(PrimitiveType("unknown"), Decimal("1.13")) is None
    assert to_json_value(PrimitiveType("unknown"), None) is None
