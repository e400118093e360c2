"""What Spark + Iceberg evaluate again on the rows of a read (planning/post_scan.py), case by case as
Iceberg 1.10's SparkScanBuilder splits a filter: conjuncts that select whole partitions in every spec are
left to the partitions (ExpressionUtil.selectsPartitions), the others kept, and `isnotnull` of the columns
a left conjunct compares (Spark's inferred constraints). tests/differential/regressions/
rows-filter-that-selects-partitions.json holds the reader to Spark's rows on a real table."""

from __future__ import annotations

import pytest

from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.filter_string import parse_filter
from planner_service.metadata.partitioning import PartitionField, PartitionSpec, Transform
from planner_service.metadata.types import NestedField, PrimitiveType, Schema, StructType
from planner_service.planning.post_scan import post_scan_filter, selects_partitions

SCHEMA = Schema(
    0,
    StructType(
        (
            NestedField(1, "id", PrimitiveType("long"), False),
            NestedField(2, "ts", PrimitiveType("timestamptz"), False),
            NestedField(3, "data", PrimitiveType("string"), False),
        )
    ),
)
IDENTITY = {0: PartitionSpec(0, (PartitionField(1, 1000, "id", Transform("identity")),))}
DAYS = {0: PartitionSpec(0, (PartitionField(2, 1000, "ts_day", Transform("day")),))}
EVOLVED = {**IDENTITY, 1: PartitionSpec(1, (PartitionField(1, 1001, "id_bucket", Transform("bucket", 4)),))}
UNPARTITIONED = {0: PartitionSpec(0, ())}


def _post(text: str, specs: dict[int, PartitionSpec]) -> object:
    return expression_to_json(post_scan_filter(parse_filter(text), specs, SCHEMA, True))


@pytest.mark.parametrize(
    ("text", "specs", "kept"),
    [
        ("id != 18 OR id <= 48", IDENTITY, True),  # decided by partitions; OR: no isnotnull
        ("id != 18", IDENTITY, {"type": "not-null", "term": "id"}),
        ("data = 'a' AND id = 1", IDENTITY, {"type": "and", "left": {"type": "eq", "term": "data", "value": "a"},
                                             "right": {"type": "not-null", "term": "id"}}),
        ("id IN (1, 2)", IDENTITY, True),  # IN is not null-intolerant
        ("id != 18", UNPARTITIONED, {"type": "not-eq", "term": "id", "value": 18}),
        ("id != 18", EVOLVED, {"type": "not-eq", "term": "id", "value": 18}),  # not whole in the bucket spec
        ("ts >= TIMESTAMP '2024-01-02 00:00:00+00:00'", DAYS, {"type": "not-null", "term": "ts"}),
        ("ts >= TIMESTAMP '2024-01-02 10:00:00+00:00'", DAYS,
         {"type": "gt-eq", "term": "ts", "value": 1704189600000000}),  # (a literal as parsed: micros)
    ],
)  # fmt: skip
def test_conjuncts_spark_evaluates_again(text: str, specs: dict[int, PartitionSpec], kept: object) -> None:
    assert _post(text, specs) == kept


def test_a_day_boundary_selects_whole_day_partitions_and_an_hour_does_not() -> None:
    whole = parse_filter("ts < TIMESTAMP '2024-03-09 00:00:00+00:00'")
    part = parse_filter("ts < TIMESTAMP '2024-03-09 10:00:00+00:00'")
    assert selects_partitions(whole, DAYS, SCHEMA, True)
    assert not selects_partitions(part, DAYS, SCHEMA, True)
    assert not selects_partitions(whole, UNPARTITIONED, SCHEMA, True)
