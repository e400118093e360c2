"""A limit (/plan `limit`, REST `min-rows-requested`): planning stops at the first file by which the
files whose every row matches (no residual, no delete file) hold the rows wanted; the files kept are that prefix
of Iceberg Java's planFiles() order. Otherwise the plan is whole."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.expressions.expression_json import expression_from_json
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from tests.conformance.reference import Conformance


@pytest.fixture(scope="module")
def planner() -> ScanPlanner:
    return ScanPlanner(FileIO())


def _plan(conformance: Conformance, planner: ScanPlanner, case_id: str, limit: int) -> tuple[Any, dict[str, Any]]:
    case = conformance.case(case_id)
    table = load_by_metadata_location(planner.io, conformance.tables[case["table"]]["metadata_location"])
    row_filter = expression_from_json(case["filter"]) if case["filter"] is not None else expression_from_json(True)
    return planner.plan(table, ScanRequest(row_filter=row_filter, limit=limit)), case


def test_a_limit_keeps_the_prefix_of_java_files_that_holds_the_rows(
    conformance: Conformance, planner: ScanPlanner
) -> None:
    case = conformance.case("many_manifests/current")
    java = [(f["path"], f["record_count"]) for f in case["files"]]
    assert len(java) > 4 and all(f["residual"] is True and not f["deletes"] for f in case["files"])
    held = np.cumsum([count for _, count in java])
    for wanted in (1, int(held[0]), int(held[0]) + 1, int(held[2])):
        plan, _ = _plan(conformance, planner, "many_manifests/current", wanted)
        kept = int(np.searchsorted(held, wanted)) + 1
        assert [t.file.path for t in plan.file_tasks] == [path for path, _ in java[:kept]]
        assert plan.metrics.cut_short is True
        assert sum(t.file.record_count for t in plan.file_tasks) >= wanted
    whole, _ = _plan(conformance, planner, "many_manifests/current", int(held[-1]) + 1)
    assert [t.file.path for t in whole.file_tasks] == [path for path, _ in java]
    assert whole.metrics.cut_short is False


@pytest.mark.parametrize("case_id", ["unpartitioned/id-lt", "mor_position_deletes/current"])
def test_no_cut_where_rows_might_not_match(conformance: Conformance, planner: ScanPlanner, case_id: str) -> None:
    """A residual to evaluate, or delete files to apply: the rows a file gives are unknown, so the plan is
    whole (Java's files)."""
    plan, case = _plan(conformance, planner, case_id, 1)
    assert [t.file.path for t in plan.file_tasks] == [f["path"] for f in case["files"]]
    assert plan.metrics.cut_short is False


def test_limit_over_http(conformance: Conformance, conformance_service: str) -> None:
    case = conformance.case("many_manifests/current")
    first = case["files"][0]
    with httpx.Client(base_url=conformance_service, timeout=60) as client:
        body = client.post("/plan", json={"table": "db.many_manifests", "limit": first["record_count"]}).json()
        assert body["metrics"]["cut-short"] is True and [f["data-file"]["file-path"] for f in body["files"]] == [
            first["path"]
        ]
        assert "cut-short" not in client.post("/plan", json={"table": "db.many_manifests"}).json()["metrics"]
        assert client.post("/plan", json={"table": "db.many_manifests", "limit": -1}).status_code == 400
        rest = client.post(
            "/v1/namespaces/db/tables/many_manifests/plan", json={"min-rows-requested": first["record_count"]}
        ).json()
        assert [t["data-file"]["file-path"] for t in rest["file-scan-tasks"]] == [first["path"]]


def test_rest_plans_say_whether_they_were_cut_short_in_a_header(
    conformance: Conformance, conformance_service: str
) -> None:
    """The spec's results have no field for it: `Scan-Planner-Cut-Short` on the plan and on polling it, the
    body as the spec has it; the files Java's planFiles() order gives (every one when none is cut)."""
    java = conformance.case("many_manifests/current")["files"]
    total = sum(f["record_count"] for f in java)
    plan_path = "/v1/namespaces/db/tables/many_manifests/plan"
    with httpx.Client(base_url=conformance_service, timeout=60) as client:
        for wanted, cut_short, kept in ((java[0]["record_count"] + 1, "true", 2), (total + 1, "false", len(java))):
            response = client.post(plan_path, json={"min-rows-requested": wanted})
            assert response.headers["scan-planner-cut-short"] == cut_short
            body = response.json()
            assert set(body) <= {"status", "plan-id", "delete-files", "file-scan-tasks", "plan-tasks"}
            pages = [body["file-scan-tasks"]] + [
                client.post("/v1/namespaces/db/tables/many_manifests/tasks", json={"plan-task": token}).json()[
                    "file-scan-tasks"
                ]
                for token in body["plan-tasks"]
            ]
            paths = [t["data-file"]["file-path"] for page in pages for t in page]
            assert paths == [f["path"] for f in java[:kept]]
            polled = client.get(f"{plan_path}/{body['plan-id']}")
            assert polled.headers["scan-planner-cut-short"] == cut_short
        assert "scan-planner-cut-short" not in client.post(plan_path, json={}).headers
