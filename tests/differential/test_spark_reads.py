"""spark_reads.spark_filter: an Iceberg JSON filter as Spark SQL of the same rows, or Untranslatable when a
literal is one Iceberg converts (an int out of range, a number for a decimal, a zoned timestamp for one
without zone) or a term Spark SQL cannot write (a transform). No JVM: the differential run uses it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.differential.spark_reads import Untranslatable, rows_read, spark_filter

TYPES = {"i": "int", "d": "decimal(9, 2)", "t": "timestamp", "tz": "timestamptz", "s": "string", "s.f": "long"}


@pytest.mark.parametrize(
    ("node", "sql"),
    [
        ({"type": "lt", "term": "i", "value": 3}, "(`i` < CAST(3 AS INT))"),
        ({"type": "not-in", "term": "d", "values": ["1.50"]}, "(`d` NOT IN (CAST('1.50' AS DECIMAL(9, 2))))"),
        ({"type": "not", "child": {"type": "is-null", "term": "I"}}, "(NOT (`I` IS NULL))"),
        (
            {"type": "eq", "term": "tz", "value": "2024-01-01T00:00:00-05:30"},
            "(`tz` = CAST('2024-01-01 00:00:00-05:30' AS TIMESTAMP))",
        ),
        ({"type": "starts-with", "term": "s", "value": "it's"}, "(startswith(`s`, 'it\\'s'))"),
        ({"type": "gt", "term": "s.f", "value": 2}, "(`s`.`f` > CAST(2 AS BIGINT))"),
    ],
)
def test_filters_spark_sql_writes_alike(node: Any, sql: str) -> None:
    assert spark_filter(node, TYPES) == sql


@pytest.mark.parametrize(
    "node",
    [
        {"type": "eq", "term": "i", "value": 2**40},
        {"type": "eq", "term": "i", "value": True},
        {"type": "eq", "term": "d", "value": 1.5},
        {"type": "eq", "term": "d", "value": "1.5"},
        {"type": "eq", "term": "t", "value": "2024-01-01T00:00:00+00:00"},
        {"type": "eq", "term": {"type": "transform", "transform": "day", "term": "t"}, "value": 3},
        {"type": "is-nan", "term": "i"},
        {"type": "eq", "term": "no_such_column", "value": 1},
    ],
)
def test_filters_whose_sql_would_mean_other_rows_are_left_out(node: Any) -> None:
    with pytest.raises(Untranslatable):
        spark_filter(node, TYPES)


def test_rows_are_read_for_snapshots_and_top_level_selects_only() -> None:
    schema = [{"id": 1, "name": "i", "type": "int"}, {"id": 2, "name": "s", "type": "string"}]
    request = {"snapshot": {"kind": "current"}, "filter": None, "select": ["i"]}
    assert rows_read(request, schema) == {"filter": None, "select": ["i"]}
    assert rows_read({**request, "select": ["i", "no_such_column"]}, schema) is None
    assert rows_read({**request, "snapshot": {"kind": "as_of", "value": 1}}, schema) is None
