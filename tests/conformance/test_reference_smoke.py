"""The Iceberg Java reference itself is sane: every table and case is there, planned twice alike, on real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conformance.cases import CASES, TABLES
from tests.conformance.read_cases import READ_TABLES
from tests.conformance.reference import Conformance


def _all_tasks(case: dict[str, Any]) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = case["files"]
    return files + [task for combined in case["tasks"] for task in combined]


def test_generated_by_iceberg_1_10_2(conformance: Conformance) -> None:
    assert conformance.expected["iceberg_version"] == "1.10.2"
    assert conformance.expected["java_version"]


def test_determinism_was_verified(conformance: Conformance) -> None:
    determinism = conformance.expected["determinism"]
    assert determinism["verified"] is True
    assert determinism["plans_per_case"] >= 2


def test_every_table_has_metadata(conformance: Conformance) -> None:
    assert set(conformance.tables) == {*TABLES, *READ_TABLES}
    for name, table in conformance.tables.items():
        assert table["identifier"] == f"db.{name}"
        assert Path(table["metadata_location"]).is_file(), name
        assert table["metadata_location"].startswith(table["location"] + "/metadata/")
        assert table["format_version"] in (1, 2, 3)
    assert conformance.tables["empty"]["current_snapshot_id"] is None
    assert conformance.tables["v3_dv"]["format_version"] == 3
    v1 = conformance.tables["v1_gzip"]
    assert v1["format_version"] == 1 and v1["metadata_location"].endswith(".gz.metadata.json")


def test_cases_are_recorded_in_order_with_snapshots_resolved(conformance: Conformance) -> None:
    assert [c["id"] for c in conformance.cases] == [c["id"] for c in CASES]
    for given, recorded in zip(CASES, conformance.cases, strict=True):
        for key in ("table", "options", "filter", "case_sensitive"):
            assert recorded[key] == given[key], (given["id"], key)
        snapshot = recorded["snapshot"]
        assert snapshot["kind"] == given["snapshot"]["kind"]
        if snapshot["kind"] in ("id", "as_of"):
            assert isinstance(snapshot["value"], int), given["id"]


def test_error_cases_carry_the_java_exception(conformance: Conformance) -> None:
    for case in conformance.cases:
        if case["id"].split("/")[1].startswith("error-"):
            assert case["error"]["class"], case["id"]
            assert case["error"]["message"], case["id"]
            assert case["files"] == case["tasks"] == []
        else:
            assert case["error"] is None, (case["id"], case["error"])


def test_tasks_point_at_real_files_within_their_bounds(conformance: Conformance) -> None:
    for case in conformance.cases:
        planned = {f["path"]: f for f in case["files"]}
        assert len(planned) == len(case["files"]), case["id"]
        for task in _all_tasks(case):
            assert task["path"] in planned, case["id"]
            assert Path(task["path"]).is_file(), task["path"]
            assert task["start"] >= 0 and task["start"] + task["length"] <= task["file_size_in_bytes"]
            assert all(Path(d["path"]).is_file() for d in task["deletes"]), case["id"]
        if case["table"] != "empty" and case["error"] is None and case["filter"] is None:
            assert case["files"] and case["tasks"], case["id"]


def test_the_delete_kinds_are_all_present(conformance: Conformance) -> None:
    kinds = {
        (case["table"], d["content"], d["format"], d["referenced_data_file_location"] is not None)
        for case in conformance.cases
        for task in case["files"]
        for d in task["deletes"]
    }
    assert ("mor_position_deletes", "POSITION_DELETES", "PARQUET", False) in kinds  # partition-scoped
    assert ("mor_position_deletes", "POSITION_DELETES", "PARQUET", True) in kinds  # file-scoped
    assert ("equality_deletes", "EQUALITY_DELETES", "PARQUET", False) in kinds
    assert ("v3_dv", "POSITION_DELETES", "PUFFIN", True) in kinds
