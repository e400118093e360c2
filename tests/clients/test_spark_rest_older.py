"""Spark + Iceberg 1.11 (RESTTableScan) on Spark 3.5 and 4.1, and 1.10.2 (no REST scan client: it plans in
its driver from the metadata the catalog serves), through the service's REST catalog: every table's full read
and every time travel must give Spark + Iceberg 1.10.2's rows (test_spark_rest.py says how; spark_rest.py
runs them)."""

from __future__ import annotations

import pytest

from tests.clients.spark_rest import RUNS, Run, assert_each_batch_scan_planned, assert_every_case_read, read_run
from tests.conformance.reference import Conformance

NAMES = sorted(name for name, (_, _, every_case) in RUNS.items() if not every_case)


@pytest.fixture(scope="module", params=NAMES)
def run(
    request: pytest.FixtureRequest,
    conformance: Conformance,
    conformance_service: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Run:
    return read_run(request.param, conformance, conformance_service, tmp_path_factory)


def test_every_read_case_has_spark_and_iceberg_rows(conformance: Conformance, run: Run) -> None:
    assert_every_case_read(conformance, run)


def test_each_batch_scan_is_planned_by_the_service(run: Run) -> None:
    assert_each_batch_scan_planned(run)
