"""Single-value binary serialization (spec Appendix D) and Java's comparators (Comparators.forType)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest

from planner_service.metadata.conversions import compare, from_bytes, to_bytes
from planner_service.metadata.types import parse_primitive

# (type, spec byte form, internal value): the byte forms are the spec's table ("Binary single-value
# serialization"): little-endian for numbers, big-endian for uuid and decimal's unscaled two's complement.
CASES: list[tuple[str, bytes, Any]] = [
    ("boolean", b"\x01", True),
    ("boolean", b"\x00", False),
    ("int", (-2).to_bytes(4, "little", signed=True), -2),
    ("long", (2**40).to_bytes(8, "little"), 2**40),
    ("float", bytes.fromhex("0000c03f"), 1.5),
    ("double", bytes.fromhex("000000000000f83f"), 1.5),
    ("date", (19723).to_bytes(4, "little"), 19723),  # 2024-01-01
    ("time", (81068000000).to_bytes(8, "little"), 81068000000),  # 22:31:08
    ("timestamp", (-1).to_bytes(8, "little", signed=True), -1),
    ("timestamptz", (1510871468000000).to_bytes(8, "little"), 1510871468000000),
    ("timestamp_ns", (1510871468000000001).to_bytes(8, "little"), 1510871468000000001),
    ("string", "iceberg €".encode(), "iceberg €"),
    ("uuid", bytes.fromhex("f79c3e09677c4bbda4793f349cb785e7"), uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
    ("fixed[3]", b"\x00\x01\x02", b"\x00\x01\x02"),
    ("binary", b"\xff\x00", b"\xff\x00"),
    ("decimal(9, 2)", (1420).to_bytes(2, "big"), Decimal("14.20")),
    ("decimal(9, 2)", (-1).to_bytes(1, "big", signed=True), Decimal("-0.01")),
    ("decimal(38, 2)", (10**37 + 7).to_bytes(16, "big"), Decimal("100000000000000000000000000000000000.07")),
]


@pytest.mark.parametrize(("type_name", "data", "value"), CASES)
def test_decode_and_encode_every_type(type_name: str, data: bytes, value: Any) -> None:
    typ = parse_primitive(type_name)
    assert from_bytes(typ, data) == value
    assert to_bytes(typ, value) == data


def test_promoted_bounds_are_read_widened() -> None:
    # Java Conversions: fewer than 8 bytes for a long / double is an int / float written before promotion
    assert from_bytes(parse_primitive("long"), (7).to_bytes(4, "little")) == 7
    assert from_bytes(parse_primitive("double"), bytes.fromhex("0000c03f")) == 1.5


@pytest.mark.parametrize(
    ("type_name", "a", "b", "expected"),
    [
        ("double", -0.0, 0.0, -1),  # Double.compare
        ("double", float("nan"), float("inf"), 1),
        ("double", float("nan"), float("nan"), 0),
        # UUID.compareTo: signed comparison of the high 64 bits, so 8000... sorts before 0000...
        ("uuid", uuid.UUID("80000000-0000-0000-0000-000000000000"), uuid.UUID(int=0), -1),
        ("decimal(9, 2)", Decimal("1.0"), Decimal("1.00"), 0),  # compareTo ignores scale
        ("string", "\uffff", "\U0001f600", -1),  # code-point order
        ("binary", b"\x80", b"\x7f", 1),  # unsigned bytes
    ],
)
def test_java_comparators(type_name: str, a: Any, b: Any, expected: int) -> None:
    assert compare(parse_primitive(type_name), a, b) == expected
