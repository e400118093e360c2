"""Saved differential cases (regressions/*.json: a history and a request, shrunk from a run), replayed by
Iceberg Java and planned by us on every run: each must agree, or differ only in a tolerated way
(compare.verdict). Java's answers are recorded once per content of the cases and the generator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from tests.differential.compare import our_answer, verdict
from tests.differential.compare_reads import our_rows, restricted_verdict, rows_verdict
from tests.differential.recorded import load_regressions, regression_cases

pytestmark = [pytest.mark.java, pytest.mark.spark]


@pytest.fixture(scope="module")
def replayed() -> dict[str, dict[str, Any]]:
    return load_regressions()


@pytest.mark.parametrize("name", [path.stem for path in regression_cases()])
def test_saved_case_agrees_with_iceberg_java(replayed: dict[str, dict[str, Any]], name: str) -> None:
    case = replayed[name]
    assert "invalid" not in case, f"the case no longer applies to its history: {case.get('invalid')}"
    assert case["metadata_location"] is not None
    skipped = [op for op in case["ops"] if op["skipped"] is not None]
    assert not skipped, f"Spark now refuses ops of the case: {json.dumps(skipped)[:500]}"
    ours = our_answer(ScanPlanner(FileIO()), case["metadata_location"], case["request"])
    finding, _ = verdict(case["answer"], ours, case["request"])
    assert finding is None, finding


@pytest.mark.parametrize("name", [path.stem for path in regression_cases() if '"read": "rows"' in path.read_text()])
def test_saved_read_reads_the_rows_spark_reads(replayed: dict[str, dict[str, Any]], name: str) -> None:
    """A case saved from a finding of the rows Spark + Iceberg reads: our plan, read by the client's reader,
    gives Spark's rows (and, when its request carries a read restriction, Spark SQL's rows under it)."""
    case = replayed[name]
    spark = case["spark"]
    assert spark["rows_read"] is not None and "rows" in spark, spark
    ours = our_rows(ScanPlanner(FileIO()), case["metadata_location"], case["request"])
    finding, tolerated = rows_verdict(spark["rows"], ours)
    assert finding is None and tolerated is None, finding or tolerated
    if "restricted" in spark:  # a request with a read restriction: its rows under it, as Spark SQL's
        ours = our_rows(ScanPlanner(FileIO()), case["metadata_location"], case["request"], restricted=True)
        finding, tolerated = restricted_verdict(spark["restricted"], ours, spark["rows"])
        assert finding is None and tolerated is None, finding or tolerated
