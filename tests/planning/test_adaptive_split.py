"""The adaptive split size (Spark + Iceberg 1.10: SparkScan.adjustSplitSize, TableScanUtil.adjustSplitSize,
read.split.adaptive-size.enabled): given Spark's parallelism, the planner packs as many tasks as Spark +
Iceberg Java makes partitions for the same table and session (recorded by the conformance generator)."""

from __future__ import annotations

from typing import Any

import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.io.fileio import FileIO
from planner_service.planning.options import adjust_split_size
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from tests.conformance.read_cases import PARTITION_COUNT_CASES
from tests.conformance.reference import Conformance

MIB = 1024 * 1024


def _tables(conformance: Conformance) -> dict[str, Any]:
    return {**conformance.tables, **conformance.expected["sized_tables"]}


@pytest.mark.parametrize("index", range(len(PARTITION_COUNT_CASES)))
def test_tasks_equal_spark_and_iceberg_partitions(conformance: Conformance, index: int) -> None:
    recorded = conformance.expected["partition_counts"][index]
    table_name, shuffle, options = PARTITION_COUNT_CASES[index]
    assert (recorded["table"], recorded["shuffle_partitions"], recorded["options"]) == (table_name, shuffle, options)
    planner = ScanPlanner(FileIO())
    table = load_by_metadata_location(planner.io, _tables(conformance)[table_name]["metadata_location"])
    plan = planner.plan(table, ScanRequest(options=options or None, parallelism=recorded["parallelism"]))
    assert plan.combined is not None and len(plan.combined) == recorded["partitions"]


def test_the_sized_table_shows_each_rule(conformance: Conformance) -> None:
    """400 MiB: 4 splits of 128 MiB hold parallelism 2 (unchanged), not 8 (50 MiB) nor 200 (the 16 MiB floor);
    a split-size option turns the adaptation off."""
    counts = {
        (c["shuffle_partitions"], tuple(c["options"].items())): c["partitions"]
        for c in conformance.expected["partition_counts"]
        if c["table"] == "sized_files"
    }
    assert counts[(2, ())] < counts[(8, ())] < counts[(200, ())]
    assert counts[(200, (("split-size", str(128 * MIB)),))] == counts[(2, ())]


def test_read_split_adaptive_size_enabled_false_keeps_the_split_size(conformance: Conformance) -> None:
    """sized_unadapted (sized_files with read.split.adaptive-size.enabled=false) at parallelism 200: Spark +
    Iceberg packs 128 MiB splits, as sized_files at parallelism 2, not the 16 MiB ones sized_files gets at
    200; the planner too (the table's property beats the parallelism)."""
    recorded = {
        (c["table"], c["shuffle_partitions"]): c["partitions"]
        for c in conformance.expected["partition_counts"]
        if not c["options"]
    }
    assert recorded[("sized_unadapted", 200)] == recorded[("sized_files", 2)] < recorded[("sized_files", 200)]
    planner = ScanPlanner(FileIO())
    table = load_by_metadata_location(planner.io, _tables(conformance)["sized_unadapted"]["metadata_location"])
    plan = planner.plan(table, ScanRequest(parallelism=200))
    assert plan.options.split_size == 128 * MIB
    assert plan.combined is not None and len(plan.combined) == recorded[("sized_unadapted", 200)]


def test_adjust_split_size_rule() -> None:
    assert adjust_split_size(400 * MIB, 2, 128 * MIB) == 128 * MIB  # 4 splits >= 2 slots
    assert adjust_split_size(400 * MIB, 8, 128 * MIB) == 50 * MIB
    assert adjust_split_size(400 * MIB, 200, 128 * MIB) == 16 * MIB  # not below min(16 MiB, split size)
    assert adjust_split_size(1000, 200, 1024) == 1024  # ... nor below a smaller split size
