"""Our plans must equal Iceberg Java 1.10.2's, case by case (tables and expectations: generate.py).

Java's output was recorded with -Diceberg.scan.plan-in-worker-pool=false, so its manifests are read in
HashSet order, one after another; we reproduce that order (planning/java_order.py), so both planFiles()
and the CombinedScanTasks of planTasks() are compared in order, not as sets. Each task's residual is
compared as Java's ExpressionParser.toJson writes it; an error case must raise with Java's message.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.errors import PlannerError
from planner_service.expressions.expression import TRUE
from planner_service.expressions.expression_json import expression_from_json, expression_to_json
from planner_service.io.fileio import FileIO
from planner_service.metadata.content_file import EQUALITY_DELETES, POSITION_DELETES
from planner_service.metadata.snapshot_choice import AppendRange, SnapshotChoice
from planner_service.planning import manifest_reader
from planner_service.planning.manifest_reader import ManifestReader
from planner_service.planning.planned_files import FileScanTask
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from tests.conformance.cases import CASES
from tests.conformance.reference import Conformance, java_message

_CONTENT = {POSITION_DELETES: "POSITION_DELETES", EQUALITY_DELETES: "EQUALITY_DELETES"}
# Java exception messages that our error types carry with the same text
_JAVA_ERRORS = {"IllegalArgumentException", "ValidationException", "NoSuchTableException"}


@pytest.fixture(scope="module")
def planner() -> ScanPlanner:
    return ScanPlanner(FileIO())


def _task(t: FileScanTask) -> dict[str, Any]:
    return {
        "path": t.file.path,
        "start": t.start,
        "length": t.length,
        "spec_id": t.file.spec_id,
        "record_count": t.file.record_count,
        "file_size_in_bytes": t.file.file_size_in_bytes,
        "deletes": [{"path": d.path, "content": _CONTENT[d.content], "format": d.format} for d in t.deletes],
        "residual": expression_to_json(t.residual),
    }


def _expected_task(t: dict[str, Any]) -> dict[str, Any]:
    keep = ("path", "start", "length", "spec_id", "record_count", "file_size_in_bytes", "residual")
    out = {k: t[k] for k in keep}
    out["deletes"] = [{"path": d["path"], "content": d["content"], "format": d["format"]} for d in t["deletes"]]
    return out


def _appends(snapshot: dict[str, Any]) -> AppendRange | None:
    return AppendRange(snapshot["start"], snapshot["end"]) if snapshot["kind"] == "appends" else None


def _choice(snapshot: dict[str, Any]) -> SnapshotChoice:
    kind, value = snapshot["kind"], snapshot.get("value")
    if kind == "id":
        return SnapshotChoice(snapshot_id=int(snapshot["value"]))
    if kind == "as_of":
        return SnapshotChoice(as_of_timestamp_ms=int(snapshot["value"]))
    if kind == "ref":
        return SnapshotChoice(ref=str(value))
    return SnapshotChoice()


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES])
def test_plan_matches_iceberg_java(conformance: Conformance, planner: ScanPlanner, case_id: str) -> None:
    _check_case(conformance, planner, case_id)


def test_plans_match_iceberg_java_whatever_the_caches_hold(conformance: Conformance) -> None:
    """Every case again, in reverse order, by one planner: its caches now hold what later cases left
    (indexes with column statistics before those without, filtered plans before unfiltered ones). With one
    thread, a table's manifests decode in two chunks: manifests of several specs share a chunk."""
    planner = ScanPlanner(FileIO(), threads=1)
    for case in reversed(CASES):
        _check_case(conformance, planner, case["id"])


@pytest.mark.parametrize("cache_bytes", [1, 8 * 1024])
def test_plans_that_stream_their_manifests_match_iceberg_java(
    conformance: Conformance, monkeypatch: pytest.MonkeyPatch, cache_bytes: int
) -> None:
    """Every case by a planner whose manifest cache holds no table's index (1 byte), or a part of some: plans
    that prune decode and prune their manifests a group at a time (here a manifest per group), holding only
    the files they keep, and the cache keeps what fits beside what it holds."""
    monkeypatch.setattr(manifest_reader, "STREAM_GROUP_BYTES", 1)
    streamed = []
    pruned_index = ManifestReader.pruned_index

    def counted(self: ManifestReader, manifests: Any, *args: Any) -> Any:
        streamed.append(len(manifests))
        return pruned_index(self, manifests, *args)

    monkeypatch.setattr(ManifestReader, "pruned_index", counted)
    planner = ScanPlanner(FileIO(), cache_bytes=cache_bytes, threads=1)
    for case in CASES:
        _check_case(conformance, planner, case["id"])
    assert len(streamed) >= (20 if cache_bytes == 1 else 3) and max(streamed) > 3, streamed


def test_filtered_plans_after_unfiltered_ones_match_iceberg_java(conformance: Conformance) -> None:
    """Each filtered case planned right after the same scan without its filter, by one planner: the
    unfiltered plan decodes no column statistics, so the filtered one adds them to the cached manifests."""
    filtered = [c for c in CASES if c["filter"] is not None]
    assert filtered
    for case in filtered:
        recorded = conformance.case(case["id"])
        if recorded["error"] is not None:
            continue
        planner = ScanPlanner(FileIO())
        table = load_by_metadata_location(planner.io, conformance.tables[case["table"]]["metadata_location"])
        unfiltered = ScanRequest(_choice(recorded["snapshot"]), case.get("options") or None)
        planner.plan(table, replace(unfiltered, appends=_appends(recorded["snapshot"])))
        _check_case(conformance, planner, case["id"])


def _check_case(conformance: Conformance, planner: ScanPlanner, case_id: str) -> None:
    case = conformance.case(case_id)
    table = load_by_metadata_location(planner.io, conformance.tables[case["table"]]["metadata_location"])
    row_filter = TRUE if case["filter"] is None else expression_from_json(case["filter"])
    request = ScanRequest(
        _choice(case["snapshot"]),
        case.get("options") or None,
        row_filter,
        case["case_sensitive"],
        appends=_appends(case["snapshot"]),
    )

    if case["error"] is not None:
        with pytest.raises(PlannerError) as err:
            planner.plan(table, request)
        # our message is Java's, sometimes followed by what it refers to (the column); a filter's refusal is
        # said in the service's words, and carries Java's message for it (InvalidFilterError.java_message)
        assert java_message(err.value).startswith(case["error"]["message"])
        return

    plan = planner.plan(table, request)
    assert [_task(t) for t in plan.file_tasks] == [_expected_task(t) for t in case["files"]]
    assert [[_task(t) for t in c.tasks] for c in plan.tasks] == [
        [_expected_task(t) for t in combined] for combined in case["tasks"]
    ]
