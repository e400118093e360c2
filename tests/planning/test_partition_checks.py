"""Partition values a plan can state (planning/partition_checks.py): of the kind the spec's field says, and
within what Iceberg's JSON single-value form (spec Appendix D) can write."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.partitioning import PartitionField, PartitionSpec, Transform
from planner_service.metadata.types import NestedField, PrimitiveType, Schema, StructType
from planner_service.planning.partition_checks import check_partitions

SCHEMA = Schema(
    0,
    StructType(
        (
            NestedField(1, "amount", PrimitiveType("decimal(9, 2)", precision=9, scale=2), False),
            NestedField(2, "day", PrimitiveType("date"), False),
            NestedField(3, "name", PrimitiveType("string"), False),
        )
    ),
)
SPEC = PartitionSpec(
    0,
    (
        PartitionField(1, 1000, "amount", Transform("identity")),
        PartitionField(2, 1001, "day", Transform("identity")),
        PartitionField(3, 1002, "name", Transform("truncate", 2)),
    ),
)


def _check(*values: Any) -> int:
    return check_partitions([(0, values)], {0: SPEC}, SCHEMA, lambda p: "s3://b/f.parquet")


def test_values_of_their_kinds_and_nulls_pass() -> None:
    assert _check(Decimal("1.25"), 19_000, "ab") == 1
    assert _check(None, None, None) == 1
    # any int is a day to Java (LocalDate.ofEpochDay, years past 9999 written +10000-...): so here too
    assert _check(Decimal("1.25"), 2**31 - 1, "ab") == 1
    assert _check(Decimal("1.25"), -(2**31), "ab") == 1


@pytest.mark.parametrize(
    ("values", "words"),
    [
        (("1.25", 19_000, "ab"), "field amount (decimal(9, 2)) cannot hold: a str value"),
        ((Decimal("1.25"), "2026-01-01", "ab"), "field day (date) cannot hold: a str value"),
        ((Decimal("1.25"), True, "ab"), "field day (date) cannot hold: a bool value"),
        ((Decimal("1.25"), 19_000, 7), "field name (string) cannot hold: a int value"),
        ((Decimal("Infinity"), 19_000, "ab"), "is out of the type's range"),  # no decimal writes it
    ],
)
def test_values_a_field_cannot_hold_name_the_file_and_field(values: tuple[Any, ...], words: str) -> None:
    with pytest.raises(CorruptMetadataError) as raised:
        _check(*values)
    assert "Content file s3://b/f.parquet" in raised.value.message and words in raised.value.message


def test_among_many_partitions_the_one_that_fails_is_named() -> None:
    good = [(0, (Decimal(f"{k}.25"), 19_000 + k, f"n{k}")) for k in range(1000)]
    for bad in [(0, (Decimal("1.25"), "2026-01-01", "ab")), (0, (Decimal("Infinity"), 1, "ab")), (0, (None, 1, 7))]:
        partitions = [*good[:500], bad, *good[500:]]
        with pytest.raises(CorruptMetadataError) as raised:
            check_partitions(partitions, {0: SPEC}, SCHEMA, lambda p, ps=partitions: f"s3://b/{ps.index(p)}.parquet")
        assert "Content file s3://b/500.parquet" in raised.value.message
    assert check_partitions(good, {0: SPEC}, SCHEMA, str) == 1000
