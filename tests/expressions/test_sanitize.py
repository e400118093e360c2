"""Sanitized filters as Iceberg Java's ExpressionUtil.sanitize writes them (the values Java gives for these
inputs, per its rules: digits and kind for numbers, distance from now for dates and timestamps, a hash of
the value's Java text otherwise). The conformance suite holds the report filters Java wrote for every case
(tests/conformance/test_scan_report.py); these are the rules around "now" that recorded data cannot pin."""

from __future__ import annotations

import datetime as dt

import pytest

from planner_service.expressions.expression import Op, predicate
from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.sanitize import sanitized
from planner_service.metadata.types import parse_schema

SCHEMA = parse_schema(
    {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": 2, "name": "d", "required": False, "type": "date"},
            {"id": 3, "name": "ts", "required": False, "type": "timestamptz"},
            {"id": 4, "name": "s", "required": False, "type": "string"},
            {"id": 5, "name": "x", "required": False, "type": "double"},
        ],
    }
)
NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
NOW_MS = int(NOW.timestamp() * 1000)


def value_of(column: str, value: object, op: Op = Op.EQ) -> object:
    result = expression_to_json(sanitized(predicate(op, column, value), SCHEMA, now_ms=NOW_MS))
    assert isinstance(result, dict)
    return result["value"]


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("id", 0, "(1-digit-int)"),
        ("id", 7, "(1-digit-int)"),
        ("id", 12, "(2-digit-int)"),
        ("id", -12345, "(5-digit-int)"),
        ("x", 0.5, "(1-digit-float)"),
        ("x", 0.05, "(0-digit-float)"),  # Java truncates log10 toward zero
        ("x", 1234.5, "(4-digit-float)"),
        ("s", "c", "(hash-6132d65f)"),  # Java wrote this for 'c' (identity_part/partition-and-column)
        ("s", "2026-11-22", "(date-3-days-ago)"),  # a string that reads as a date is described as one
        ("s", "12:30", "(time)"),
        ("d", "2026-11-25", "(date-today)"),
        ("d", "2026-12-05", "(date-10-days-from-now)"),
        ("d", "2024-01-01", "(date)"),
        ("ts", "2026-11-25T11:58:00+00:00", "(timestamp-about-now)"),
        ("ts", "2026-11-25T09:00:00+00:00", "(timestamp-3-hours-ago)"),
        ("ts", "2026-11-28T12:00:00+00:00", "(timestamp-72-hours-from-now)"),  # up to three days: hours
        ("ts", "2026-11-28T13:00:00+00:00", "(timestamp-3-days-from-now)"),  # 73 hours: whole days
        ("ts", "2024-01-01T00:00:00+00:00", "(timestamp)"),
    ],
)
def test_values_become_descriptions(column: str, value: object, expected: str) -> None:
    assert value_of(column, value) == expected


def test_structure_and_binding_are_kept() -> None:
    expr = predicate(Op.IN, "id", 1, 22, 333)
    assert expression_to_json(sanitized(expr, SCHEMA, now_ms=NOW_MS)) == {
        "type": "in",
        "term": "id",
        "values": ["(1-digit-int)", "(2-digit-int)", "(3-digit-int)"],
    }
    required = predicate(Op.IS_NULL, "id")  # binding folds it: id is required
    assert expression_to_json(sanitized(required, SCHEMA, now_ms=NOW_MS)) is False
    unknown = predicate(Op.EQ, "nope", 5)  # does not bind: sanitized as it is
    assert expression_to_json(sanitized(unknown, SCHEMA, now_ms=NOW_MS)) == {
        "type": "eq",
        "term": "nope",
        "value": "(1-digit-int)",
    }
