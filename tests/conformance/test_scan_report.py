"""The ScanReport of each plan against the one Iceberg Java 1.10.2 reported for the same scan (the generator
records it with an InMemoryMetricsReporter): every counter, the snapshot, schema id, projected field ids
(in Java's order) and names, and the sanitized filter. The table name is the service's own (Java's is
its catalog's, "cat.db.t"); IN lists are compared as sets (Java writes a hash set's order)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.expressions.expression import TRUE
from planner_service.expressions.expression_json import expression_from_json
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_report import scan_report
from planner_service.planning.scan_request import ScanRequest
from tests.conformance.cases import CASES
from tests.conformance.reference import Conformance
from tests.conformance.test_java_parity import _appends, _choice


@pytest.fixture(scope="module")
def planner() -> ScanPlanner:
    return ScanPlanner(FileIO())


def _table_location(conformance: Conformance, table: str) -> str:
    return str(conformance.tables[table]["metadata_location"])


def _sets(node: Any) -> Any:
    """A JSON expression with each IN / NOT IN list sorted."""
    if isinstance(node, dict):
        out = {k: _sets(v) for k, v in node.items()}
        if isinstance(out.get("values"), list):
            out["values"] = sorted(out["values"])
        return out
    return node


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES])
def test_scan_report_matches_iceberg_java(conformance: Conformance, planner: ScanPlanner, case_id: str) -> None:
    case = conformance.case(case_id)
    if case["error"] is not None:
        pytest.skip("Java failed to plan: no report")
    table = load_by_metadata_location(planner.io, _table_location(conformance, case["table"]))
    row_filter = TRUE if case["filter"] is None else expression_from_json(case["filter"])
    request = ScanRequest(
        _choice(case["snapshot"]),
        case.get("options") or None,
        row_filter,
        case["case_sensitive"],
        appends=_appends(case["snapshot"]),
    )
    ours = scan_report(planner.plan(table, request))
    java = case["scan_report"]
    if java is None:
        assert ours is None
        return
    assert ours is not None
    assert ours["table-name"] == table.name
    durations = ours["metrics"].pop("total-planning-duration")
    assert durations["count"] == 1 and durations["time-unit"] == "nanoseconds" and durations["total-duration"] > 0
    assert ours["metrics"] == java["metrics"]
    for key in ("snapshot-id", "schema-id", "projected-field-ids", "projected-field-names"):
        assert ours[key] == java[key], key
    assert _sets(ours["filter"]) == _sets(java["filter"])


def test_each_fresh_plan_logs_its_report(
    conformance: Conformance, planner: ScanPlanner, caplog: pytest.LogCaptureFixture
) -> None:
    from planner_service.metrics import MetricsRegistry
    from planner_service.service.scan_report_sender import ScanReports

    table = load_by_metadata_location(planner.io, _table_location(conformance, "v3_dv"))
    plan = planner.plan(table, ScanRequest())
    with caplog.at_level(logging.INFO, logger="planner_service.service.scan_report_sender"):
        ScanReports(None, MetricsRegistry()).publish(plan)
    (record,) = [r for r in caplog.records if r.getMessage() == "scan report"]
    logged = record.__dict__["scan-report"]
    java = conformance.case("v3_dv/current")["scan_report"]
    assert {k: v["value"] for k, v in logged["metrics"].items() if "value" in v} == {
        k: v["value"] for k, v in java["metrics"].items()
    }
    json.dumps(logged)  # the log line is JSON
